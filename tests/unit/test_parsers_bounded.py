"""Bounded, non-recursive parsers (issues 2, 6, 8 and 30): each case of the issues reproduced and
shown fixed.

* SBML-qual: MathML nested 10,000 deep killed the process (SIGSEGV) and 1,000 deep raised
  RecursionError; a DOCTYPE with entities was accepted. Loaded here in a worker process, so a crash
  would be an outcome, not a dead test session.
* Boolean formulas: nesting is bounded by memory (MAX_DEPTH 100,000), not 100: the Biodivine models
  that were refused load, and every walk of a tree (==, hash, pickle, repr, to_text, evaluate,
  remap, the logic of MaBoSS/SBML-qual terms) works far beyond Python's recursion limit.
* Sizes: a 10 MB bnet line is refused at once; a 10 MB TOML string no longer peaks at 1.4 GB.
* antimony imports come from the model's folder only; bad UTF-8 and NUL bytes name the file.
"""

from __future__ import annotations

import pickle
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import distsim.pbn as pbn
from distsim.errors import ModelError
from distsim.models.boolean import (MAX_DEPTH, MAX_LINE_CHARS, And, Not, Or, Var, children, evaluate,
                                    parse_expression, postorder, remap, to_text, truth_table, variables)
from distsim.models.formats.boolnet import parse_boolnet, read_boolnet
from distsim.models.logic import Logic, cases, equivalent, substitute, to_bool

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import fuzzing  # noqa: E402 (the worker-process loader of the fuzz tests)

DATA = Path(__file__).resolve().parents[1] / "data"
DEEP = DATA / "biodivine_deep"
LIMIT = sys.getrecursionlimit()


@pytest.fixture(scope="module")
def runner():
    r = fuzzing.Runner(timeout=60, warm=("distsim.pbn",))
    yield r
    r.close()


# ------------------------------------------------------------------------------------------------
# SBML-qual (issue 2)

def _not_chain(n: int) -> str:
    return "<apply><not/>" * n + "<apply><eq/><ci>x</ci><cn type='integer'>1</cn></apply>" + "</apply>" * n


@pytest.mark.parametrize("depth", [1_000, 10_000])
def test_sbml_qual_deep_mathml_is_a_clean_error_not_a_dead_process(runner, depth):
    outcome, detail, _ = runner.run("SBML-qual", {"model.sbml": fuzzing._qual_doc(_not_chain(depth))})
    assert outcome == "clean", detail
    assert "nest more than 1000 deep" in detail


@pytest.mark.parametrize("depth", [9, 990, 991])
def test_sbml_qual_mathml_within_the_limit_converts_exactly(tmp_path, depth):
    p = tmp_path / "deep.sbml"
    p.write_bytes(fuzzing._qual_doc(_not_chain(depth)))
    net = pbn.load(p)
    x = Var(net.nodes.index("x"))
    assert net.predictors[net.nodes.index("y")][0].expr == (Not(x) if depth % 2 else x)


def test_sbml_qual_refuses_a_doctype_with_entities(tmp_path):
    doctype = '<!DOCTYPE sbml [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>'
    p = tmp_path / "entities.sbml"
    p.write_bytes(fuzzing._qual_doc("<apply><eq/><ci>x</ci><cn>1</cn></apply>", doctype))
    with pytest.raises(ModelError) as e:
        pbn.load(p)
    assert e.value.file == str(p) and e.value.line == 1 and "DOCTYPE" in str(e.value)


# ------------------------------------------------------------------------------------------------
# Boolean formulas without recursion (issue 30)

NAMES = ["A", "B", "C"]


def _resolve(name: str) -> int:
    return NAMES.index(name)


def _all_states(k: int = 3) -> np.ndarray:
    rows = np.arange(1 << k)
    return ((rows[:, None] >> np.arange(k)) & 1).astype(bool)


def test_nesting_far_beyond_the_recursion_limit_parses_and_every_walk_works():
    n = 20 * LIMIT
    e = parse_expression("(" * n + "A" + ")" * n, _resolve)
    assert e == Var(0)
    # alternating operators: a tree as deep as the text
    text = "A"
    for k in range(n // 4):
        text = f"!({text} | B) & C" if k % 2 else f"({text} ^ C)"
    e = parse_expression(text, _resolve)
    depth = {}
    for x in postorder(e):
        depth[id(x)] = 1 + max((depth[id(c)] for c in children(x)), default=0)
    assert depth[id(e)] > 4 * LIMIT
    f = parse_expression(to_text(e, NAMES), _resolve)
    assert f == e and hash(f) == hash(e) and f is not e  # to_text, ==, hash
    assert pickle.loads(pickle.dumps(e)) == e and repr(e).startswith("And(args=(Not(arg=Or(")
    assert remap(remap(e, {0: 2, 1: 1, 2: 0}), {0: 2, 1: 1, 2: 0}) == e
    assert variables(e) == (0, 1, 2)
    # the value by hand: t_k follows the loop above
    states = _all_states()
    want = states[:, 0].copy()
    for k in range(n // 4):
        want = ~(want | states[:, 1]) & states[:, 2] if k % 2 else want ^ states[:, 2]
    assert np.array_equal(evaluate(e, states), want)
    assert equivalent(substitute(e, 1, True), parse_expression(to_text(e, NAMES).replace("B", "1"), _resolve))


def test_negations_and_calls_nest_without_limit_below_max_depth():
    n = 10 * LIMIT
    e = parse_expression("!" * (n + 1) + "A", _resolve)
    assert np.array_equal(evaluate(e, _all_states()), ~_all_states()[:, 0])
    e = parse_expression("maj(" * n + "A, B, C" + ")" * n, _resolve)  # maj of one argument is that argument
    assert np.array_equal(truth_table(e, (0, 1, 2)), truth_table(parse_expression("maj(A, B, C)", _resolve), (0, 1, 2)))
    with pytest.raises(ModelError, match="nested too deeply") as err:
        parse_expression("(" * (MAX_DEPTH + 1) + "A", _resolve, file="f.bnet", line=3)
    assert (err.value.line, err.value.column) == (3, MAX_DEPTH + 1)


def test_logic_terms_of_mathml_and_maboss_convert_without_recursion():
    n = 10 * LIMIT
    t = Var(0)
    for _ in range(n):
        t = Logic("not", (t,))
    assert to_bool(t) == Var(0)  # an even number of negations
    assert set(cases(Logic("not", (t,)))) == {0.0, 1.0}


def _flatten(e):
    """``e`` with associative runs merged (``a & (b & c)`` -> ``a & b & c``): an equivalent, flat formula."""
    new = {}
    for x in postorder(e):
        if isinstance(x, (And, Or)):
            args = []
            for a in x.args:
                a = new[id(a)]
                args.extend(a.args if type(a) is type(x) else (a,))
            new[id(x)] = type(x)(tuple(args))
        elif isinstance(x, Not):
            new[id(x)] = Not(new[id(x.arg)])
        else:
            new[id(x)] = x
    return new[id(e)]


def _depth(e) -> int:
    d = {}
    for x in postorder(e):
        d[id(x)] = 1 + max((d[id(c)] for c in children(x)), default=0)
    return d[id(e)]


@pytest.mark.parametrize("name", ["bbm146_faure2009_budding_yeast_40n", "bbm151_tcr_redox_metabolism_130n"])
def test_deep_biodivine_models_load_and_equal_their_flat_formulas(name):
    net = pbn.load(DEEP / f"{name}.bnet")  # refused before: "nested too deeply (... more than 100 deep)"
    deepest = max(_depth(p.expr) for row in net.predictors for p in row)
    assert deepest > 100
    back = pickle.loads(pickle.dumps(net))  # as Dask sends it to workers
    assert [p.expr for row in back.predictors for p in row] == [p.expr for row in net.predictors for p in row]
    flat = parse_boolnet(_flat_text(net), file="flat.bnet")
    assert flat.nodes == net.nodes
    assert max(_depth(p.expr) for row in flat.predictors for p in row) < 20
    # the same function: on every state where it has at most 12 parents, else on 4096 random states
    sample = np.random.default_rng(0).integers(0, 2, (4096, net.n)).astype(bool)
    for a, b in zip(net.predictors, flat.predictors):
        if len(variables(a[0].expr)) <= 12:
            assert equivalent(a[0].expr, b[0].expr) is True
        else:
            assert np.array_equal(evaluate(a[0].expr, sample), evaluate(b[0].expr, sample))


def _flat_text(net) -> str:
    return "targets, factors\n" + "".join(f"{nm}, {to_text(_flatten(row[0].expr), net.nodes)}\n"
                                          for nm, row in zip(net.nodes, net.predictors))


def test_deep_model_simulates_like_its_flat_formula():
    """TCR redox metabolism (130 nodes, nested 111 deep, refused before): the same trajectories,
    bit for bit, as the network written with flat formulas (a function gives the same bits whatever its shape)."""
    net = read_boolnet(DEEP / "bbm151_tcr_redox_metabolism_130n.bnet")
    flat = parse_boolnet(_flat_text(net), file="flat.bnet", name=net.name)
    a = pbn.simulate(net, steps=30, trajectories=64, seed=7, backend="cpu", progress=False, keep_states=True)
    b = pbn.simulate(flat, steps=30, trajectories=64, seed=7, backend="cpu", progress=False, keep_states=True)
    assert a["final_state"].shape == (64, net.n) and a["final_state"].values.any()
    for v in ("final_state", "final_frequency", "frequency"):
        assert np.array_equal(a[v].values, b[v].values)


def test_faure_2009_simulates_like_its_flat_formula():
    net = read_boolnet(DEEP / "bbm146_faure2009_budding_yeast_40n.bnet")
    flat = parse_boolnet(_flat_text(net), file="flat.bnet", name=net.name)
    a = pbn.simulate(net, steps=30, trajectories=64, seed=7, backend="cpu", progress=False, keep_states=True)
    b = pbn.simulate(flat, steps=30, trajectories=64, seed=7, backend="cpu", progress=False, keep_states=True)
    for v in ("final_state", "final_frequency", "frequency"):
        assert np.array_equal(a[v].values, b[v].values)


# ------------------------------------------------------------------------------------------------
# sizes and time (issue 6)

@pytest.mark.parametrize("fname,text,line", [
    ("long.bnet", "A, B\nB, " + "(A & " * 104 + "A" * 10_000_000 + "\n", 2),
    ("long.txt", "A = B\nB = " + "A|" * 5_000_000 + "A\n", 2),
    ("long.pbn", "n=1\nnodeNames\nx\nendNodeNames\nnode x\n1 : " + "x&" * 2_500_000 + "x\nendNode\n", 6),
])
def test_a_line_beyond_the_limit_is_refused_at_once(tmp_path, fname, text, line):
    p = tmp_path / fname
    p.write_text(text)
    t0 = time.perf_counter()
    with pytest.raises(ModelError, match=f"more than the limit of {MAX_LINE_CHARS:,}") as e:
        pbn.load(p)
    assert time.perf_counter() - t0 < 5  # was > 60 s and 0.9-1.5 GB
    assert (e.value.file, e.value.line) == (str(p), line)


def test_a_file_beyond_the_size_limit_is_refused_unread(tmp_path):
    from distsim.models.formats.assa import MAX_FILE_BYTES

    p = tmp_path / "huge.bnet"
    with open(p, "wb") as fh:  # sparse: nothing is written
        fh.truncate(MAX_FILE_BYTES + 1)
    with pytest.raises(ModelError, match="more than the limit") as e:
        pbn.load(p)
    assert e.value.file == str(p)


def test_a_long_line_within_the_limit_parses_in_linear_time():
    def seconds(n: int) -> float:
        text = "A | " * n + "A"
        t0 = time.perf_counter()
        e = parse_expression(text, _resolve)
        assert isinstance(e, Or) and len(e.args) == n + 1
        return time.perf_counter() - t0

    seconds(1000)
    small, big = min(seconds(20_000) for _ in range(2)), min(seconds(200_000) for _ in range(2))
    assert big < 30 * small  # 10x the input: about 10x the time (a quadratic tokeniser would take 100x)


def test_grn_toml_nesting_check_takes_constant_memory():
    from distsim.grn.problem import _check_nesting

    text = 'name = "' + "a" * 10_000_000 + '"\n' + "x = [" * 40 + "]" * 40 + "\n"
    tracemalloc.start()
    try:
        with pytest.raises(Exception, match="nest more than 32 deep") as e:
            _check_nesting(text, "p.toml", toml=True)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 10_000_000  # was 1.4 GB (a regex with a repeated alternation)
    assert e.value.line == 2


def test_grn_nesting_check_skips_strings_and_comments_as_before():
    from distsim.grn.problem import _check_nesting

    deep = "[" * 40
    _check_nesting(f'a = "{deep}\\"{deep}"\nb = \'{deep}\'\n# {deep}\nc = "{deep}\n', "p.toml", toml=True)
    _check_nesting(f'{{"a": "{deep}\\"{deep}"}}', "p.json", toml=False)
    with pytest.raises(Exception, match="nest more than"):
        _check_nesting(f"# {deep}\nc = {deep}\n", "p.toml", toml=True)


# ------------------------------------------------------------------------------------------------
# antimony and names (issue 8)

ANT = "J1: A -> B; k*A\nk = 0.5; A = 10; B = 0\n"


def _antimony():
    pytest.importorskip("antimony")
    import distsim.ssa as ssa

    return ssa


def test_antimony_import_of_a_file_outside_the_model_folder_is_refused(tmp_path):
    ssa = _antimony()
    p = tmp_path / "m.ant"
    for target in ("/etc/passwd", "../outside.ant", str(tmp_path.parent / "outside.ant")):
        (tmp_path.parent / "outside.ant").write_text("model sub()\n J0: -> A; 1\nend\n")
        p.write_text(f'// a model\nimport "{target}"\n' + ANT)
        with pytest.raises(ModelError, match="imports may only come from") as e:
            ssa.load(p)
        assert (e.value.file, e.value.line) == (str(p), 2)
        assert "reserved word" not in str(e.value)  # /etc/passwd was not read (its 'root' is one)


def test_antimony_imports_come_from_the_model_folder_not_the_current_directory(tmp_path, monkeypatch):
    ssa = _antimony()
    (tmp_path / "model").mkdir()
    (tmp_path / "cwd").mkdir()
    (tmp_path / "model" / "sub.ant").write_text("model sub()\n J1: A -> B; k*A\n k = 0.5; A = 10; B = 0\nend\n")
    (tmp_path / "cwd" / "sub.ant").write_text("model sub()\n J1: X -> Y; k*X\n k = 0.5; X = 10; Y = 0\nend\n")
    p = tmp_path / "model" / "main.ant"
    p.write_text('import "sub.ant"\nmodel main()\n s: sub()\nend\n')
    monkeypatch.chdir(tmp_path / "cwd")  # libantimony would read ./sub.ant first
    net = ssa.load(p)
    assert net.species == ("s_A", "s_B")
    from distsim.models.formats.antimony import parse_antimony

    with pytest.raises(ModelError, match="imports may only come from nowhere"):  # text in memory: no folder
        parse_antimony('import "sub.ant"\n' + ANT)
    assert parse_antimony('import "sub.ant"\n' + ANT, import_dirs=[tmp_path / "model"],
                          folder=tmp_path / "model").species == ("A", "B")


def test_antimony_errors_name_the_file_and_line_they_come_from(tmp_path):
    ssa = _antimony()
    (tmp_path / "sub.ant").write_text("model sub()\n J1: A -> B; k*A\n k = 10 +\nend\n")
    p = tmp_path / "main.ant"
    p.write_text('import "sub.ant"\nmodel main()\n s: sub()\nend\n')
    with pytest.raises(ModelError, match="line 3") as e:
        ssa.load(p)
    assert (e.value.file, e.value.line) == (str(tmp_path / "sub.ant"), 3)
    (tmp_path / "sub.ant").write_bytes(b"model sub()\n J1: A -> B; k*A // \xff\xfe\nend\n")
    with pytest.raises(ModelError, match="not UTF-8") as e:
        ssa.load(p)
    assert (e.value.file, e.value.line) == (str(tmp_path / "sub.ant"), 2)
    p.write_bytes(b"J1: A -> B; k*A\nk = 1 // \xc3\n")
    with pytest.raises(ModelError, match="not UTF-8") as e:
        ssa.load(p)
    assert (e.value.file, e.value.line) == (str(p), 2)


@pytest.mark.parametrize("expr", ["k*" + "!" * 5000 + "A", "(" * 300 + "k*A" + ")" * 300, "k*" + "- " * 400 + "A"])
def test_antimony_nesting_that_kills_libantimony_is_refused_first(runner, expr):
    _antimony()
    text = f"model m\n  J1: A -> B; {expr}\n  k = 1; A = 10; B = 0\nend\n"
    outcome, detail, _ = runner.run("antimony", {"model.ant": text.encode()})
    assert outcome == "clean" and ":2: " in detail, detail  # 5,000 '!' was SIGSEGV in libantimony


@pytest.mark.parametrize("text,line", [("A, B\nB, A\x00x\n", 2), ("A\x00, B\nB, A\n", 1), ("A, B\nB, A\x07\n", 2)])
def test_control_characters_in_node_names_are_refused(tmp_path, text, line):
    p = tmp_path / "m.bnet"
    p.write_text(text)
    with pytest.raises(ModelError, match="control characters") as e:
        pbn.load(p)
    assert (e.value.file, e.value.line) == (str(p), line)
