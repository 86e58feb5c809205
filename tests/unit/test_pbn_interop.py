"""Interop: MaBoSS .bnd/.cfg (exact CTMC mapping), SBML-qual, bnet writer, pyboolnet empty functions
and primes."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import distsim.pbn as pbn
from distsim.models.boolean import Const, Not, Var, evaluate
from distsim.errors import ModelError
from distsim.models.formats import (detect_format, from_primes, load, parse_boolnet, read_boolnet, read_maboss,
                                    read_sbml_qual, to_bnet_text, write_bnet)
from distsim.models.pbn import PBN, random_pbn
from distsim.pbn.reference import all_states, stationary_distribution, transition_matrix

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "pbn"
DATA = ROOT / "tests" / "data"
CELL_FATE = EXAMPLES / "maboss_calzone2010_cell_fate_28n.bnd"
FAURE_BNET = EXAMPLES / "bbm023_faure2006_mammalian_cell_cycle_10n.bnet"
FAURE_SBML = EXAMPLES / "bbm023_faure2006_mammalian_cell_cycle_10n.sbml"


def functions_by_name(net: PBN) -> dict[str, np.ndarray]:
    """Each node's single function as a truth vector over all states of the sorted node names."""
    names = sorted(net.nodes)
    X = all_states(len(names))  # column k = names[k]
    cols = X[:, [names.index(nm) for nm in net.nodes]]  # reorder to the network's node order
    out = {}
    for nm, plist in zip(net.nodes, net.predictors):
        assert len(plist) == 1
        out[nm] = evaluate(plist[0].expr, cols)
    return out


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


# ---- MaBoSS: the language --------------------------------------------------------------------------

def test_maboss_language(tmp_path):
    bnd = write(tmp_path, "m.bnd", """
// comment
/* block
   comment */
# hash comment at the start of a line
Node A { logic = NOT c AND b; description = "text; with } inside"; }
node b { logic = A OR c xor A; }
c : (b & !A) | 0;
d, c ^ b
targets, factors
NODE e { }
f : 2 > 1 ? A : b;
g : A + b + c >= 2;
""")
    net, cfg = read_maboss(bnd)
    assert net.nodes == ("A", "b", "c", "d", "e", "f", "g")
    X = all_states(net.n)
    A, b, c = X[:, 0], X[:, 1], X[:, 2]
    expected = {
        "A": ~c & b,
        "b": (A | c) ^ A,  # XOR binds weaker than OR in MaBoSS
        "c": b & ~A,
        "d": c ^ b,
        "e": X[:, 4],  # no logic, no rates: an input keeps its value
        "f": A,
        "g": (A.astype(int) + b + c) >= 2,
    }
    for i, nm in enumerate(net.nodes):
        (p,) = net.predictors[i]
        assert np.array_equal(evaluate(p.expr, X), expected[nm]), nm
    assert cfg.max_rate == 1.0 and cfg.step_rate == 7.0 and cfg.cfg is None and cfg.initial == {}


@pytest.mark.parametrize("text, cfg, message", [
    ("Node A { logic = B; }", None, "node 'B' used but not defined"),
    ("Node A { logic = A; }\nNode A { logic = 1; }", None, "node 'A' already defined"),
    ("Node A { logic = A; rate_up = $k; }", None, "variable $k is not defined (no .cfg"),
    ("Node A { logic = A; rate_up = $k; }", "$k = 2 - 3;", "rate_up is -1.0 in some states"),
    ("Node A { logic = A; rate_down = 1/0; }", None, "rate_down is inf"),
    ("Node A { logic = foo(A); }", None, "unknown function 'foo'"),
    ("Node A { logic = A; rate_up = @nope; }", None, "has no attribute 'nope'"),
    ("Node A { logic = @logic; }", None, "@logic refers to itself"),
    ("Node A { logic = A }", None, "expected ';'"),
    ("/* open", None, "never closed"),
    ("division { rate = 1; }", None, "PopMaBoSS"),
    ("Node A { logic = A; }", "B.istate = 1;", "node 'B' is not defined in the .bnd"),
    ("Node A { logic = A; }", "A.istate = 1; [A].istate = 1 [0];", "given twice"),
    ("Node A { logic = A; }", "[A].istate = 1 [0, 1];", "gives 2 value(s) for 1 node"),
    ("Node A { logic = A; }", "A.colour = 1;", "unknown node attribute"),
    ("Node A { logic = A; }", "$x = A;", "node name 'A' in a .cfg expression"),
])
def test_maboss_errors(tmp_path, text, cfg, message):
    bnd = write(tmp_path, "bad.bnd", text)
    if cfg is not None:
        write(tmp_path, "bad.cfg", cfg)
    with pytest.raises(ModelError, match=r"bad\.(bnd|cfg)(:\d+)?.*" + re.escape(message)):
        read_maboss(bnd)


def test_maboss_cfg(tmp_path):
    bnd = write(tmp_path, "m.bnd", "Node A { logic = B; } Node B { logic = A; } Node C { logic = C; } "
                                   "Node D { logic = D; } Node E { logic = E; }")
    cfg = write(tmp_path, "other.cfg", """
$a = 2; $b = $a * 3 + exp(0);  // 7
A.istate = TRUE; B.istate = -1; [C].istate = 0.3 [0], 0.7 [1];
[D, E].istate = 1 [0, 1], 0 [1, 1];
time_tick = 0.5; max_time = 10; discrete_time = 1; C.is_internal = 1;
""")
    with pytest.warns(UserWarning) as rec:
        net, conf = read_maboss(bnd, cfg)
    assert conf.variables == {"$a": 2.0, "$b": 7.0}
    assert conf.initial == {"A": 1, "D": 0, "E": 1}
    assert conf.istates[("B",)] == ((0.5, (0,)), (0.5, (1,)))
    assert conf.settings == {"time_tick": 0.5, "max_time": 10.0, "discrete_time": 1.0}
    assert conf.internal == ("C",)
    assert len(conf.notes) == 2 and "C" in conf.notes[0] and "discrete_time" in conf.notes[1]
    assert len(rec) == 2
    # the .cfg beside the .bnd is found by full name, then by stem
    write(tmp_path, "m.cfg", "A.istate = 1;")
    assert read_maboss(bnd)[1].initial == {"A": 1}
    write(tmp_path, "m.bnd.cfg", "A.istate = 0;")
    assert read_maboss(bnd)[1].initial == {"A": 0}
    assert detect_format(bnd) == "maboss" and load(bnd).nodes == net.nodes
    with pytest.raises(ModelError, match="load the .bnd"):
        load(cfg)
    txt = write(tmp_path, "m.txt", bnd.read_text())
    assert detect_format(txt) == "maboss"


# ---- MaBoSS: the exact mapping of the continuous-time chain ------------------------------------------

SMALL_BND = """
Node A { logic = !C; rate_up = @logic ? $ua : 0; rate_down = @logic ? 0 : $da; }
Node B { logic = A; rate_up = @logic ? 1 + 2 * D : 0; rate_down = (NOT @logic) ? 0.5 : 0.0; }
Node C { logic = B; }
Node D { logic = A AND NOT B; rate_up = @logic ? 3 : 0; rate_down = @logic ? 0 : $dd; }
"""


def small_rates(x: tuple[int, ...], equal: bool) -> list[float]:
    """Flip rates of the model above, written out by hand (independent of the reader)."""
    A, B, C, D = x
    logic = [1 - C, A, B, A * (1 - B)]
    if equal:
        return [1.0 if x[i] != logic[i] else 0.0 for i in range(4)]
    ua, da, dd = 2.0, 0.7, 0.25
    rA = (ua if logic[0] else 0.0) if A == 0 else (0.0 if logic[0] else da)
    rB = ((1 + 2 * D) if logic[1] else 0.0) if B == 0 else (0.5 if not logic[1] else 0.0)
    rC = (1.0 if logic[2] else 0.0) if C == 0 else (0.0 if logic[2] else 1.0)
    rD = (3.0 if logic[3] else 0.0) if D == 0 else (0.0 if logic[3] else dd)
    return [rA, rB, rC, rD]


def generator(n: int, rates) -> np.ndarray:
    Q = np.zeros((1 << n, 1 << n))
    for s in range(1 << n):
        x = tuple((s >> i) & 1 for i in range(n))
        for i, r in enumerate(rates(x)):
            Q[s, s ^ (1 << i)] += r
        Q[s, s] = -Q[s].sum()
    return Q


def ctmc_stationary(Q: np.ndarray) -> np.ndarray:
    """pi Q = 0, sum pi = 1, by least squares (unique: one closed class)."""
    N = Q.shape[0]
    A = np.vstack([Q.T, np.ones(N)])
    b = np.zeros(N + 1)
    b[-1] = 1.0
    pi = np.linalg.lstsq(A, b, rcond=None)[0]
    assert np.linalg.norm(A @ pi - b) < 1e-12
    return pi


@pytest.mark.parametrize("equal", [True, False])
def test_maboss_is_the_uniformized_ctmc(tmp_path, equal):
    text = SMALL_BND
    if equal:  # the default rates: @logic ? 1 : 0 up, @logic ? 0 : 1 down
        text = "\n".join(line.split(";")[0] + "; }" if "rate_up" in line else line for line in text.splitlines())
    bnd = write(tmp_path, "small.bnd", text)
    write(tmp_path, "small.cfg", "$ua = 2; $da = 0.7; $dd = 0.25;")
    net, conf = read_maboss(bnd)
    Q = generator(4, lambda x: small_rates(x, equal))
    L = 1.0 if equal else 3.0  # the largest flip rate: B's 1 + 2 D, D's 3
    assert conf.max_rate == L and conf.step_rate == 4 * L
    if equal:
        assert all(len(p) == 1 for p in net.predictors)  # the plain asynchronous Boolean network
    P = transition_matrix(net, "async")
    assert np.max(np.abs(P - (np.eye(16) + Q / (4 * L)))) < 1e-12
    pi = stationary_distribution(net, "async")
    assert np.max(np.abs(pi - ctmc_stationary(Q))) < 1e-12


def test_maboss_example_loads_and_runs():
    net = pbn.load(CELL_FATE)
    _, conf = read_maboss(CELL_FATE)
    assert net.n == 28 and net.n_functions == 28 and net.perturbation == 0
    assert conf.max_rate == 1.0 and conf.notes == ()
    assert conf.initial == {nm: 0 for nm in net.nodes}
    assert conf.variables["$u_TNF"] == 1.0 and len(conf.variables) == 56
    rip1 = net.predictors[net.index("RIP1")][0].expr
    rng = np.random.default_rng(0)
    S = rng.random((4096, net.n)) < 0.5
    t, d, c = (S[:, net.index(nm)] for nm in ("TNFR", "DISC_FAS", "CASP8"))
    assert np.array_equal(evaluate(rip1, S), (~t & d & ~c) | (t & ~c))
    ds = pbn.simulate(net, steps=200, trajectories=256, mode="async", seed=1, keep_states=True,
                      initial=conf.initial, backend="cpu", progress=False)
    assert ds.sizes["trajectory"] == 256


# ---- SBML-qual -----------------------------------------------------------------------------------

def test_sbml_qual_matches_bnet():
    with pytest.warns(UserWarning, match="schema errors that do not affect the logic"):
        q = read_sbml_qual(FAURE_SBML)
    b = read_boolnet(FAURE_BNET)
    assert sorted(q.nodes) == sorted(b.nodes) and q.n == 10
    fq, fb = functions_by_name(q), functions_by_name(b)
    for nm in b.nodes:
        assert np.array_equal(fq[nm], fb[nm]), nm
    assert detect_format(FAURE_SBML) == "sbml-qual"


def test_the_ssa_reader_refuses_sbml_qual_naming_the_boolean_command():
    import distsim.ssa as ssa

    # refused before libsbml's schema errors (the Faure export lacks qual:compartment), at the <sbml> element
    with pytest.raises(ModelError, match=r"requires the SBML package 'qual'.*'distsim pbn simulate MODEL'") as e:
        ssa.load(FAURE_SBML)
    assert (e.value.file, e.value.line) == (str(FAURE_SBML), 1)


QUAL = """<?xml version="1.0" encoding="UTF-8"?>
<sbml xmlns="http://www.sbml.org/sbml/level3/version1/core" level="3" version="1"
      xmlns:qual="http://www.sbml.org/sbml/level3/version1/qual/version1" qual:required="true">
  <model id="toy">
    <listOfCompartments><compartment id="c" constant="true"/></listOfCompartments>
    <qual:listOfQualitativeSpecies>
      <qual:qualitativeSpecies qual:id="A" qual:compartment="c" qual:constant="false" qual:maxLevel="{maxA}"/>
      <qual:qualitativeSpecies qual:id="B" qual:compartment="c" qual:constant="false" qual:maxLevel="1"/>
      <qual:qualitativeSpecies qual:id="K" qual:compartment="c" qual:constant="true" qual:initialLevel="1"/>
      <qual:qualitativeSpecies qual:id="U" qual:compartment="c" qual:constant="false"/>
    </qual:listOfQualitativeSpecies>
    <qual:listOfTransitions>
      <qual:transition qual:id="tA">
        <qual:listOfInputs>
          <qual:input qual:id="inB" qual:qualitativeSpecies="B" qual:transitionEffect="none" qual:thresholdLevel="1"/>
        </qual:listOfInputs>
        <qual:listOfOutputs>
          <qual:output qual:qualitativeSpecies="A" qual:transitionEffect="{effect}"/>
        </qual:listOfOutputs>
        <qual:listOfFunctionTerms>
          <qual:defaultTerm qual:resultLevel="0"/>
          <qual:functionTerm qual:resultLevel="1">
            <math xmlns="http://www.w3.org/1998/Math/MathML">
              <apply><and/><apply><geq/><ci>B</ci><ci>inB</ci></apply><apply><eq/><ci>K</ci><cn type="integer">1</cn></apply></apply>
            </math>
          </qual:functionTerm>
          <qual:functionTerm qual:resultLevel="{level2}">
            <math xmlns="http://www.w3.org/1998/Math/MathML"><apply><lt/><ci>U</ci><cn type="integer">1</cn></apply></math>
          </qual:functionTerm>
        </qual:listOfFunctionTerms>
      </qual:transition>
      <qual:transition qual:id="tB">
        <qual:listOfOutputs><qual:output qual:qualitativeSpecies="B" qual:transitionEffect="assignmentLevel"/></qual:listOfOutputs>
        <qual:listOfFunctionTerms>
          <qual:defaultTerm qual:resultLevel="1"/>
          <qual:functionTerm qual:resultLevel="0">
            <math xmlns="http://www.w3.org/1998/Math/MathML"><apply><neq/><ci>A</ci><ci>U</ci></apply></math>
          </qual:functionTerm>
        </qual:listOfFunctionTerms>
      </qual:transition>
    </qual:listOfTransitions>
  </model>
</sbml>
"""


def qual_file(tmp_path, name="toy.xml", maxA=1, effect="assignmentLevel", level2=1) -> Path:
    return write(tmp_path, name, QUAL.format(maxA=maxA, effect=effect, level2=level2))


def test_sbml_qual_semantics(tmp_path):
    f = qual_file(tmp_path)
    assert detect_format(f) == "sbml-qual"
    net = load(f)
    assert net.nodes == ("A", "B", "K", "U") and net.fixed == frozenset({2})
    X = all_states(4)
    A, B, K, U = X.T
    want = {"A": (B & K) | ~U, "B": ~(A ^ U), "K": np.ones(16, bool), "U": U}
    for i, nm in enumerate(net.nodes):
        assert np.array_equal(evaluate(net.predictors[i][0].expr, X), want[nm]), nm
    assert [len(p) for p in load(f, inputs="random").predictors] == [1, 1, 1, 2]


@pytest.mark.parametrize("kw, message", [
    ({"maxA": 2}, "maxLevel 2: multi-valued models are not supported"),
    ({"effect": "production"}, "only the output effect 'assignmentLevel'"),
    ({"level2": 0}, "levels 0 and 1 hold in the same state"),
])
def test_sbml_qual_refusals(tmp_path, kw, message):
    with pytest.raises(ModelError, match=message):
        read_sbml_qual(qual_file(tmp_path, **kw))


def test_sbml_qual_bad_documents(tmp_path):
    broken = write(tmp_path, "broken.sbml", QUAL.format(maxA=1, effect="assignmentLevel", level2=1)[:600])
    with pytest.raises(ModelError, match="broken.sbml:\\d+.*invalid SBML"):
        load(broken)
    plain = DATA / "dsmts"
    sbml = next(p for p in sorted(plain.rglob("*.xml")))
    with pytest.raises(ModelError, match="not an SBML-qual model"):
        read_sbml_qual(sbml)
    with pytest.raises(ModelError, match="not an SBML-qual model.*read by distsim.ssa"):
        load(sbml)  # a reaction model given to the Boolean-network loader
    with pytest.raises(FileNotFoundError):
        read_sbml_qual(tmp_path / "missing.sbml")


# ---- bnet writer, pyboolnet --------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["bbm023_faure2006_mammalian_cell_cycle_10n.bnet",
                                  "bbm209_sizek2019_cell_cycle_apoptosis_87n.bnet",
                                  "bnmpy_shmulevich2002_examplePBN_3n.txt", "kgbn_aspc1_optimized_pbn_48n_80f.txt",
                                  "bang_example_network.pbn"])
def test_bnet_round_trip(tmp_path, name):
    net = load(EXAMPLES / name).with_perturbation(0.0)
    out = tmp_path / "out.bnet"
    write_bnet(net, out)
    back = read_boolnet(out)
    assert back.nodes == net.nodes
    assert back.digest() == replace(net, fixed=frozenset()).digest()
    assert to_bnet_text(back) == out.read_text()


def test_bnet_writer_refusals():
    with pytest.raises(ValueError, match="no perturbation"):
        to_bnet_text(random_pbn(4, perturbation=0.01))
    with pytest.raises(ValueError, match="dependent PBN"):
        to_bnet_text(random_pbn(4, perturbation=0.0, contexts=2))


def test_pyboolnet_empty_function():
    f = DATA / "pyboolnet_empty_function.bnet"
    with pytest.warns(UserWarning, match="v_B: empty function, read as a free input"):
        net = read_boolnet(f)
    assert net.predictors[1][0].expr == Var(1)
    with pytest.warns(UserWarning):
        assert evaluate(read_boolnet(f, inputs="one").predictors[1][0].expr, np.zeros((1, 2), bool))[0]
    with pytest.raises(ModelError, match="must be the node's only function"):
        parse_boolnet("A, \nA, B\nB, A\n")


def test_from_primes():
    primes = {"Erk": [[{"Mek": 0}, {"Erk": 0, "Raf": 0}], [{"Erk": 1, "Mek": 1}, {"Mek": 1, "Raf": 1}]],
              "Mek": [[{"Erk": 0, "Raf": 0}, {"Erk": 0, "Mek": 0}], [{"Erk": 1}, {"Mek": 1, "Raf": 1}]],
              "Raf": [[{"Erk": 1, "Raf": 1}], [{"Erk": 0}, {"Raf": 0}]],
              "On": [[], [{}]], "Off": [[{}], []]}
    net = from_primes(primes, name="mapk")
    assert net.nodes == ("Erk", "Mek", "Raf", "On", "Off")
    X = all_states(5)
    erk, mek, raf = X[:, 0], X[:, 1], X[:, 2]
    want = [(erk & mek) | (mek & raf), erk | (mek & raf), ~erk | ~raf, np.ones(32, bool), np.zeros(32, bool)]
    for i in range(5):
        assert np.array_equal(evaluate(net.predictors[i][0].expr, X), want[i])
    bad = dict(primes, Raf=[[{"Erk": 1}], [{"Erk": 0}, {"Raf": 0}]])
    with pytest.raises(ModelError, match="not the complement"):
        from_primes(bad)
    with pytest.raises(ModelError, match="names 'Ras', which is not a node"):
        from_primes({"A": [[{"Ras": 0}], [{"Ras": 1}]]})
    with pytest.raises(ModelError, match="must be \\[zero implicants, one implicants\\]"):
        from_primes({"A": [[{}]]})


# ---- the compiler of mixed expressions -------------------------------------------------------------

def test_logic_compiler():
    from distsim.models.arith import BinOp, Call, Num
    from distsim.models.logic import Cmp, Cond, Logic, cases, to_bool

    a, b, c = Var(0), Var(1), Var(2)
    X = all_states(3)
    A, B, C = X.T
    two_of_three = Cmp(">=", BinOp("+", BinOp("+", a, b), c), Num(2.0))
    assert np.array_equal(evaluate(to_bool(two_of_three), X), (A.astype(int) + B + C) >= 2)
    rate = Cond(Logic("and", (a, Logic("not", (b,)))), BinOp("*", Num(2.0), BinOp("+", Num(1.0), c)), Num(0.0))
    table = cases(rate)
    assert set(table) == {0.0, 2.0, 4.0}
    value = sum(v * evaluate(g, X) for v, g in table.items())
    assert np.array_equal(value, np.where(A & ~B, 2.0 * (1 + C), 0.0))
    assert sum(evaluate(g, X).astype(int) for g in table.values()).tolist() == [1] * 8  # a partition
    assert to_bool(Cmp("==", Call("log", (Num(8.0), Num(2.0))), Num(3.0))) == Const(True)
    assert to_bool(Cmp("==", a, Num(0.0))) == Not(a) and to_bool(Cmp(">", Num(0.5), b)) == Not(b)
    assert to_bool(Logic("or", (a, Logic("not", (a,))))) == Const(True)


def test_maboss_steady_state_estimate(tmp_path):
    """The estimator on a MaBoSS model with unequal rates, against the CTMC's exact answer. r is the
    95% half-width (1.96 sigma); 2 r is about 4 sigma."""
    bnd = write(tmp_path, "small.bnd", SMALL_BND)
    write(tmp_path, "small.cfg", "$ua = 2; $da = 0.7; $dd = 0.25;")
    net, _ = read_maboss(bnd)
    pi = ctmc_stationary(generator(4, lambda x: small_rates(x, False)))
    exact = float(pi[all_states(4)[:, 3]].sum())  # P(D = 1)
    r = 0.01
    with pytest.warns(UserWarning, match="perturbation p = 0"):  # MaBoSS has no perturbations
        ds = pbn.steady_state(net, "D=1", mode="async", precision=r, seed=5, backend="cpu", progress=False)
    assert abs(float(ds["probability"].values[0]) - exact) < 2 * r


def test_pbn_load_says_when_the_cfg_fixes_initial_states(tmp_path):
    """pbn.load returns a network only: the .cfg's certain initial values are named in a warning, never
    dropped silently, and read_maboss gives them for initial=."""
    import warnings

    import distsim.pbn as pbn

    (tmp_path / "m.bnd").write_text("node A { logic = !B; rate_up = @logic ? 1 : 0; rate_down = @logic ? 0 : 1; }\n"
                                    "node B { logic = A; rate_up = @logic ? 1 : 0; rate_down = @logic ? 0 : 1; }\n")
    (tmp_path / "m.cfg").write_text("A.istate = 1;\nB.istate = 0;\n")
    with pytest.warns(UserWarning, match=r"fixes the initial values of 2 node\(s\) \(A=1, B=0\)"):
        pbn.load(tmp_path / "m.bnd")
    assert pbn.read_maboss(tmp_path / "m.bnd")[1].initial == {"A": 1, "B": 0}
    (tmp_path / "m.cfg").write_text("A.istate = -1;\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pbn.load(tmp_path / "m.bnd")
