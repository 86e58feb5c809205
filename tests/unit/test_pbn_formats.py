"""PBN file formats: ASSA-PBN (read/write), bnet/BoolNet and BNMPy readers, malformed files."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from distsim.errors import ModelError
from distsim.models.boolean import FALSE, TRUE, Var, evaluate, to_text, truth_table, variables
from distsim.models.formats import (detect_format, load, parse_assa, parse_bnmpy, parse_boolnet, read_assa,
                                    to_assa_text, write_assa)
from distsim.models.pbn import PBN, Predictor

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "pbn"
DATA = ROOT / "tests" / "data"
BAD = DATA / "bad"

SHMULEVICH = EXAMPLES / "bnmpy_shmulevich2002_examplePBN_3n.txt"
FAURE = EXAMPLES / "bbm023_faure2006_mammalian_cell_cycle_10n.bnet"

# file -> (reader, nodes, functions, free inputs or None, max in-degree)
EXPECTED = {
    "bbm023_faure2006_mammalian_cell_cycle_10n.bnet": ("boolnet", 10, 10, 1, 6),
    "bbm070_grieco2013_mapk_cancer_cell_fate_53n.bnet": ("boolnet", 53, 53, 4, 5),
    "bbm209_sizek2019_cell_cycle_apoptosis_87n.bnet": ("boolnet", 87, 87, 2, 10),
    "bbm083_montagud2022_prostate_cancer_133n.bnet": ("boolnet", 133, 133, 11, 13),
    "bbm004_helikar2013_erbb_receptor_signaling_247n.bnet": ("boolnet", 247, 247, 22, 27),
    "bbm001_raza2008_macrophage_activation_321n.bnet": ("boolnet", 321, 321, 19, 10),
    "bnmpy_shmulevich2002_examplePBN_3n.txt": ("bnmpy", 3, 5, 0, 3),
    "kgbn_aspc1_optimized_pbn_48n_80f.txt": ("bnmpy", 48, 80, 0, 6),
    "bang_example_network.pbn": ("assa", 3, 5, None, 3),
    "bang_test2_perturbation0.2.pbn": ("assa", 3, 5, None, 3),
    "bang_example_6node_bn.assa": ("assa", 6, 6, None, 3),
}

_CACHE: dict[str, PBN] = {}


def loaded(name: str) -> PBN:
    if name not in _CACHE:
        _CACHE[name] = load(EXAMPLES / name)
    return _CACHE[name]


def model_files() -> list[str]:
    return sorted(p.name for p in EXAMPLES.iterdir() if p.suffix in (".bnet", ".pbn", ".assa", ".txt"))


def test_every_example_is_expected():
    assert model_files() == sorted(EXPECTED)
    for f in EXPECTED:
        if f.endswith(".bnet"):
            assert (EXAMPLES / f.replace(".bnet", ".metadata.json")).is_file()
    assert (EXAMPLES / "README.md").is_file()


@pytest.mark.parametrize("fname", sorted(EXPECTED))
def test_examples_load(fname):
    reader, n, nf, n_free, maxdeg = EXPECTED[fname]
    assert detect_format(EXAMPLES / fname) == reader
    pbn = loaded(fname)
    assert pbn.n == n and pbn.n_functions == nf
    assert max(len(p.parents) for plist in pbn.predictors for p in plist) == maxdeg
    assert pbn.name == Path(fname).stem and pbn.source == str(EXAMPLES / fname)
    assert pbn.contexts is None
    if n_free is not None:  # free inputs come last and keep their value by default
        assert pbn.perturbation == 0.0 and pbn.fixed == frozenset()
        for i in range(n - n_free, n):
            assert pbn.predictors[i] == (Predictor(Var(i), 1.0),)
    for plist in pbn.predictors:
        assert math.isclose(sum(p.probability for p in plist), 1.0, abs_tol=1e-12)


def test_bbm_names_and_erbb():
    faure = loaded(FAURE.name)
    assert faure.nodes[:9] == ("v_Cdc20", "v_Cdh1", "v_CycA", "v_CycB", "v_CycE", "v_E2F", "v_Rb",
                               "v_UbcH10", "v_p27")
    assert faure.nodes[9] == "v_CycD"
    erbb = loaded("bbm004_helikar2013_erbb_receptor_signaling_247n.bnet")
    degrees = [len(plist[0].parents) for plist in erbb.predictors]
    assert max(degrees) == 27 and sum(d > 16 for d in degrees) == 6


def test_assa_example_semantics():
    pbn = loaded("bang_example_network.pbn")
    assert pbn.nodes == ("x0", "x1", "x2")
    assert pbn.perturbation == 0.0 and pbn.fixed == frozenset({2})
    assert [len(p) for p in pbn.predictors] == [1, 2, 2]
    (f0,) = pbn.predictors[0]
    assert f0.probability == 1.0 and f0.parents == (0, 1)
    assert truth_table(f0.expr).tolist() == [False, False, False, True]
    a, b = pbn.predictors[1]
    assert (a.probability, b.probability) == pytest.approx((0.3, 0.7), abs=1e-12)
    # rows x0 x1 x2 = 000, 001, ..., 111 (lowest index most significant)
    assert truth_table(a.expr, (0, 1, 2)).astype(int).tolist() == [0, 0, 1, 0, 1, 0, 1, 0]  # !x2 & (x1|x0)
    assert truth_table(b.expr, (0, 1, 2)).astype(int).tolist() == [0, 0, 0, 1, 0, 0, 0, 0]  # !x0 & x1 & x2
    assert [p.probability for p in pbn.predictors[2]] == pytest.approx([0.4, 0.6], abs=1e-12)
    t2 = loaded("bang_test2_perturbation0.2.pbn")
    assert t2.perturbation == 0.2 and t2.predictors == pbn.predictors and t2.fixed == pbn.fixed
    six = loaded("bang_example_6node_bn.assa")
    assert six.perturbation == 1e-4
    assert {six.nodes[i] for i in six.fixed} == {"x1", "x2", "x4", "x5"}
    assert to_text(six.predictors[0][0].expr, six.nodes) == "!(x1 & x2)"


def test_assa_normalises_and_accepts_variants():
    text = ("// header\ntype=rmgrorm   // async scheme, accepted\nn = 2\nnodeNames\na\nb\nendNodeNames\n"
            "node a\n2: b   // trailing comment\n6 :!b\nendNode\nnode b\n0.5:a|b\nendNode\n")
    pbn = parse_assa(text, file="x.pbn")
    assert [p.probability for p in pbn.predictors[0]] == pytest.approx([0.25, 0.75])
    assert pbn.predictors[1][0].probability == 1.0
    assert pbn.perturbation == 0.0 and pbn.fixed == frozenset()


def test_shmulevich_bnmpy_semantics():
    pbn = loaded(SHMULEVICH.name)
    assert pbn.nodes == ("x1", "x2", "x3")
    assert [[p.probability for p in plist] for plist in pbn.predictors] == [[0.6, 0.4], [1.0], [0.5, 0.5]]
    x3b = pbn.predictors[2][1].expr
    assert truth_table(x3b, (0, 1, 2)).astype(int).tolist() == [0, 0, 0, 0, 0, 0, 0, 1]


def test_kgbn_comments_and_probabilities():
    pbn = loaded("kgbn_aspc1_optimized_pbn_48n_80f.txt")
    akt = pbn.predictors[pbn.index("AKT1")]
    assert [p.probability for p in akt] == pytest.approx([0.4273, 0.5727])
    assert to_text(akt[1].expr, pbn.nodes) == "AktM & AktP"


def test_boolnet_with_probabilities_equals_bnmpy():
    a = load(DATA / "shmulevich2002_boolnet.txt")
    b = loaded(SHMULEVICH.name)
    assert detect_format(DATA / "shmulevich2002_boolnet.txt") == "boolnet"
    assert a.nodes == b.nodes and a.predictors == b.predictors
    assert a.perturbation == b.perturbation and a.fixed == b.fixed


def test_boolnet_uniform_and_functions(tmp_path):
    f = tmp_path / "uniform.txt"
    f.write_text("# repeated targets, no probabilities\ntargets, factors\nA, B\nA , !B\nA,B & C\n"
                 "B, maj(A, C, D)\nC, sumgt(A, B, D, 1)\nD, sumlt(A,B,1)\n", encoding="utf-8")
    pbn = load(f)
    assert pbn.nodes == ("A", "B", "C", "D")
    assert [p.probability for p in pbn.predictors[0]] == pytest.approx([1 / 3] * 3)
    rows = np.array([[(r >> (3 - k)) & 1 for k in range(4)] for r in range(16)], dtype=bool)
    count = rows.sum(axis=1)
    maj = evaluate(pbn.predictors[1][0].expr, rows)
    assert (maj == ((rows[:, 0].astype(int) + rows[:, 2] + rows[:, 3]) >= 2)).all()
    assert (evaluate(pbn.predictors[2][0].expr, rows) == ((count - rows[:, 2]) > 1)).all()
    assert (evaluate(pbn.predictors[3][0].expr, rows) == ~(rows[:, 0] | rows[:, 1])).all()
    # commas inside functions do not split the probability column
    g = parse_boolnet("targets, factors, probabilities\nA, maj(A, B, B), 0.25\nA, A, 0.75\nB, B, 1\n")
    assert [p.probability for p in g.predictors[0]] == [0.25, 0.75]


@pytest.mark.parametrize("policy", ["keep", "zero", "one", "random"])
def test_free_input_policies(policy):
    pbn = load(FAURE, inputs=policy)
    i = pbn.index("v_CycD")
    assert i == 9 and pbn.n == 10
    expected = {
        "keep": (Predictor(Var(9), 1.0),),
        "zero": (Predictor(FALSE, 1.0),),
        "one": (Predictor(TRUE, 1.0),),
        "random": (Predictor(FALSE, 0.5), Predictor(TRUE, 0.5)),
    }[policy]
    assert pbn.predictors[i] == expected
    assert pbn.predictors[:9] == loaded(FAURE.name).predictors[:9]
    assert pbn.perturbation == 0.0


def test_free_inputs_bnmpy_and_order():
    pbn = parse_bnmpy("# c\nA = Z & Y, 2\nA = A, 2\nB = Y | X\n", inputs="random")
    assert pbn.nodes == ("A", "B", "Z", "Y", "X")
    assert [p.probability for p in pbn.predictors[0]] == [0.5, 0.5]
    assert pbn.predictors[4] == (Predictor(FALSE, 0.5), Predictor(TRUE, 0.5))
    with pytest.raises(ValueError, match="free-input policy"):
        load(FAURE, inputs="sometimes")


def _assert_same_network(p: PBN, q: PBN) -> None:
    assert q.nodes == p.nodes
    assert q.perturbation == p.perturbation and q.fixed == p.fixed
    assert [len(x) for x in q.predictors] == [len(x) for x in p.predictors]
    for plist, qlist in zip(p.predictors, q.predictors):
        for a, b in zip(plist, qlist):
            assert abs(a.probability - b.probability) <= 1e-12
            assert variables(a.expr) == variables(b.expr)
            if len(a.parents) <= 16:
                assert np.array_equal(truth_table(a.expr), truth_table(b.expr))
            else:
                assert to_text(a.expr, p.nodes) == to_text(b.expr, q.nodes)


@pytest.mark.parametrize("fname", sorted(EXPECTED))
def test_assa_round_trip(fname):
    p = loaded(fname)
    q = parse_assa(to_assa_text(p), file="roundtrip.pbn")
    _assert_same_network(p, q)


def test_write_assa_file(tmp_path):
    p = loaded("bang_example_6node_bn.assa").with_perturbation(0.123456789012345)
    out = tmp_path / "six.pbn"
    write_assa(p, out)
    q = read_assa(out)
    _assert_same_network(p, q)
    assert q.name == "six" and q.source == str(out) and load(out) == q
    p2 = load(FAURE, inputs="random")
    q2 = parse_assa(to_assa_text(p2))
    _assert_same_network(p2, q2)


def test_dependent_pbn_cannot_be_written():
    dep = PBN.create(["a"], [[Predictor(Var(0), 0.5), Predictor(FALSE, 0.5)]],
                     contexts=[((0,), 0.5), ((1,), 0.5)])
    with pytest.raises(ValueError, match="dependent"):
        to_assa_text(dep)


def test_detect_and_override(tmp_path):
    shm = SHMULEVICH.read_text(encoding="utf-8")
    f = tmp_path / "model.dat"
    f.write_text(shm, encoding="utf-8")
    assert detect_format(f) == "bnmpy"
    assert load(f).predictors == loaded(SHMULEVICH.name).predictors
    g = tmp_path / "assa.txt"
    g.write_text(to_assa_text(loaded("bang_example_network.pbn")), encoding="utf-8")
    assert detect_format(g) == "assa"
    h = tmp_path / "plain.txt"
    h.write_text("# headerless bnet\nA, !B\nB, A\n", encoding="utf-8")
    assert detect_format(h) == "boolnet" and load(h).n == 2
    bnet_as_txt = tmp_path / "faure.dat"
    bnet_as_txt.write_text(FAURE.read_text(encoding="utf-8"), encoding="utf-8")
    assert load(bnet_as_txt, format="bnet").nodes == loaded(FAURE.name).nodes
    with pytest.raises(ModelError):
        load(f, format="assa")
    with pytest.raises(ModelError, match="unknown Boolean-network format .sbml."):
        load(f, format="sbml")
    with pytest.raises(FileNotFoundError, match="nope.pbn"):
        load(tmp_path / "nope.pbn")


def test_never_executes_input(tmp_path):
    f = tmp_path / "evil.txt"
    f.write_text("A = __import__('os').system('echo hi'), 1\n", encoding="utf-8")
    with pytest.raises(ModelError):
        load(f)


def test_not_utf8(tmp_path):
    f = tmp_path / "latin1.bnet"
    f.write_bytes(b"A, B\nB, A\nC\xe9, A\n")
    with pytest.raises(ModelError, match=r"latin1\.bnet:3:2: .*UTF-8"):
        load(f)


# (file, line, column or None, phrase in the message)
BAD_CASES = [
    ("missing_endnode.pbn", 10, None, "missing endNode"),
    ("unknown_node.pbn", 8, 10, "unknown node 'x9'"),
    ("prob_zero.pbn", 8, 1, "0 is not allowed"),
    ("prob_negative.pbn", 7, 1, "must be a positive number"),
    ("prob_nan.pbn", 7, 1, "must be a positive number"),
    ("n_mismatch.pbn", 2, None, "n=3 but nodeNames lists 2 names"),
    ("duplicate_name.pbn", 5, None, "duplicate node name 'x0'"),
    ("bad_perturbation.pbn", 3, None, "perturbation must be a number in [0, 1)"),
    ("unknown_keyword.pbn", 6, None, "unknown keyword"),
    ("unbalanced_paren.pbn", 8, 13, "expected ')'"),
    ("digit_name.pbn", 5, 1, "cannot start with a digit"),
    ("missing_node_block.pbn", 5, None, "node 'x1' has no 'node x1' block"),
    ("duplicate_block.pbn", 9, None, "duplicate node block for 'x0'"),
    ("empty_block.pbn", 7, None, "has no function"),
    ("bad_type.pbn", 1, None, "unknown type 'parallel'"),
    ("boolnet_prob_sum.txt", 5, None, "probabilities of gene 'x1' sum to 0.9, not 1"),
    ("bnet_no_comma.bnet", 3, None, "no comma"),
    ("bnmpy_bad_prob.txt", 2, 10, "must be a positive number"),
]


def test_every_bad_file_is_tested():
    assert sorted(p.name for p in BAD.iterdir()) == sorted(c[0] for c in BAD_CASES)


@pytest.mark.parametrize("fname,line,column,phrase", BAD_CASES)
def test_malformed_files(fname, line, column, phrase):
    path = BAD / fname
    with pytest.raises(ModelError) as info:
        load(path)
    err = info.value
    msg = str(err)
    assert fname in msg and err.file == str(path)
    assert err.line == line and f"{fname}:{line}:" in msg, msg
    if column is not None:
        assert err.column == column, msg
    assert phrase in msg, msg


@pytest.mark.parametrize("parser,text,line,phrase", [
    (parse_boolnet, "targets, factors\nA, B, 0.5\n", 2, "header has no probabilities column"),
    (parse_boolnet, "A, B, 0.5\nA, !B\n", 2, "some functions have a probability"),
    (parse_boolnet, "targets, factor\nA, B\n", 1, "bad header"),
    (parse_boolnet, "A, B, 0.5, 3\n", 1, "too many comma-separated fields"),
    (parse_boolnet, "# nothing\n", 1, "defines no node"),
    (parse_bnmpy, "x1 = x2, 0\n", 1, "0 is not allowed"),
    (parse_bnmpy, "x1 x2\n", 1, "expected 'NAME = expression"),
    (parse_assa, "n=1\nnodeNames\nx0\n", 3, "missing endNodeNames"),
    (parse_assa, "n=1\nnodeNames\nx0\nendNodeNames\nnode x0\n1 : x0\n", 6, "missing endNode"),
    (parse_assa, "nodeNames\nx0\nendNodeNames\nnode x0\n1 : x0\nendNode\nnpNode\nx7\nendNpNode\n", 8,
     "npNode lists 'x7'"),
    (parse_assa, "nodeNames\nx0\nendNodeNames\nnode x0\n1 : x0\nendNode\n", 6, "missing n="),
    (parse_assa, "n=1\nn=1\n", 2, "given twice"),
    (parse_assa, "n=1\nnodeNames\ntrue\nendNodeNames\n", 3, "constant"),
])
def test_inline_errors(parser, text, line, phrase):
    with pytest.raises(ModelError) as info:
        parser(text, file="inline.txt")
    assert info.value.line == line and phrase in str(info.value) and "inline.txt" in str(info.value)


def test_assa_update_type_is_kept_and_written(tmp_path):
    """`type=asynchronous` is the network's stated update scheme; the writer keeps it (issue 20)."""
    from distsim.models.formats import write_assa
    from distsim.pbn import load
    from distsim.pbn.inputs import resolve_mode

    text = "type=asynchronous\nn=2\nnodeNames\na\nb\nendNodeNames\nnode a\n1 : b\nendNode\nnode b\n1 : !a\nendNode\n"
    (tmp_path / "m.pbn").write_text(text)
    net = load(tmp_path / "m.pbn")
    assert net.update == "async" and resolve_mode(None, net) == "async"
    with pytest.warns(UserWarning, match="states the update scheme 'async'"):
        assert resolve_mode("sync", net) == "sync"
    write_assa(net, tmp_path / "back.pbn")
    assert "type=asynchronous" in (tmp_path / "back.pbn").read_text() and load(tmp_path / "back.pbn").update == "async"
    (tmp_path / "r.pbn").write_text(text.replace("asynchronous", "rog"))
    with pytest.raises(ValueError, match="states the update scheme 'rog'.*mode="):
        resolve_mode(None, load(tmp_path / "r.pbn"))
