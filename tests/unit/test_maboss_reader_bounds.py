"""The MaBoSS reader on deeply nested input: the .bnd/.cfg expression parser and every walk over its
trees use explicit stacks, so nesting costs memory, never Python recursion; beyond
``boolean.MAX_DEPTH`` open parentheses, calls, conditionals and prefix operators it refuses the file
with a :class:`ModelError` naming file and line. A nested formula means exactly what its flat
equivalent means: the same flip-rate table in every state and the same PBN. And ``pbn.load(bnd)``
never drops an initial distribution of the .cfg silently."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import distsim.pbn as pbn
from distsim.errors import ModelError
from distsim.maboss import exact, load as load_model
from distsim.models.boolean import evaluate
from distsim.models.formats import maboss
from distsim.models.formats.maboss import read_maboss

DEEP = 10_000  # ten times Python's default recursion limit
MID = 300  # within it: the reader once handled this depth by recursion


def _write(tmp_path: Path, name: str, bnd: str, cfg: str | None = None) -> Path:
    p = tmp_path / f"{name}.bnd"
    p.write_text(bnd)
    if cfg is not None:
        (tmp_path / f"{name}.cfg").write_text(cfg)
    return p


def _model(a_logic: str, rates: str = "", b: str = "logic = A | C;", c: str = "logic = !B;") -> str:
    return f"Node A {{ logic = {a_logic}; {rates} }}\nNode B {{ {b} }}\nNode C {{ {c} }}\n"


def _pbn_tables(path: Path) -> list[list[tuple[float, bytes]]]:
    """Each node's predictors as (probability, truth table over every state), sorted."""
    net, _ = read_maboss(path)
    n = len(net.nodes)
    X = ((np.arange(1 << n)[:, None] >> np.arange(n)[None, :]) & 1).astype(bool)
    return [sorted((p.probability, np.asarray(evaluate(p.expr, X), dtype=bool).tobytes()) for p in preds)
            for preds in net.predictors]


def _same_model(deep: Path, flat: Path) -> None:
    assert sys.getrecursionlimit() < DEEP  # the deep files can only load without recursion
    a, b = load_model(deep), load_model(flat)
    assert a.rates.nodes == b.rates.nodes and a.rates.maboss_order == b.rates.maboss_order
    assert a.rates.config.max_rate == b.rates.config.max_rate
    np.testing.assert_array_equal(exact.flip_rates(a), exact.flip_rates(b))  # every node's rate in every state
    assert _pbn_tables(deep) == _pbn_tables(flat)


def _forms(d: int) -> dict[str, tuple[str, str]]:
    """name -> (a nested model, its flat equivalent); ``d`` is even."""
    return {
        "not": (_model("!" * d + "(B & C)"), _model("B & C")),
        "NOT keyword": (_model("NOT " * d + "B"), _model("B")),
        "parentheses": (_model("(" * d + "B | C" + ")" * d), _model("B | C")),
        "not-parentheses": (_model("!(" * d + "B" + ")" * d), _model("B")),
        "and, right-nested": (_model("(B & " * d + "C" + ")" * d), _model("B & C")),
        "or, left-nested": (_model("(" * d + "B" + " | C)" * d), _model("B | C")),
        "conditional (then)": (_model("B ? " * d + "1" + " : 0" * d), _model("B")),
        "conditional (else)": (_model("B ? 1 : " * d + "C"), _model("B | C")),
        # rates: negations, a sum, a product of calls, an @attribute
        "rate: minus": (_model("B", "rate_up = " + "-" * d + "(C ? 2 : 0.5);"), _model("B", "rate_up = C ? 2 : 0.5;")),
        "rate: sum": (_model("B", "rate_up = " + "(" * d + "0" + " + B * 0.5)" * d + ";"),
                      _model("B", f"rate_up = B * {d * 0.5};")),
        "rate: calls": (_model("B", "rate_up = C + " + "exp(0 * " * d + "C" + ")" * d + ";"),  # exp(0) = 1
                        _model("B", "rate_up = C + 1;")),
        "rate: @attribute": (_model("B", "k = " + "(" * d + "C ? 3 : 1" + ")" * d + "; rate_up = @k * @logic;"),
                             _model("B", "rate_up = (C ? 3 : 1) * B;")),
    }


@pytest.mark.parametrize("depth", [DEEP, MID])
@pytest.mark.parametrize("form", list(_forms(2)))
def test_nested_formula_equals_flat(tmp_path, form, depth):
    deep, flat = _forms(depth)[form]
    _same_model(_write(tmp_path, "deep", deep), _write(tmp_path, "flat", flat))


def test_deep_cfg_expressions(tmp_path):
    """.cfg values nest as deeply: $variables, settings and istate probabilities."""
    bnd = _model("B", "rate_up = $k;")
    cfg = ("$k = " + "-" * DEEP + "(" * DEEP + "2 * exp(0)" + ")" * DEEP + ";\n"
           "max_time = " + "(" * DEEP + "5" + ")" * DEEP + ";\n"
           "[A].istate = " + "(" * DEEP + "0.25" + ")" * DEEP + " [0], 0.75 [1];\n")
    path = _write(tmp_path, "m", bnd, cfg)
    model = load_model(path)
    assert model.rates.config.variables == {"$k": 2.0}
    assert model.rates.config.settings["max_time"] == 5.0
    assert model.rates.config.istates[("A",)] == ((0.25, (0,)), (0.75, (1,)))
    with pytest.warns(UserWarning, match="istate of A is a distribution"):  # the PBN starts A uniformly
        _same_model(path, _write(tmp_path, "flat", _model("B", "rate_up = 2;"), "max_time = 5;"))


@pytest.mark.parametrize("make, column", [  # a formula nested d deep; the column of its (d)th opening
    (lambda d: "!" * d + "B", lambda d: d),
    (lambda d: "(" * d + "B" + ")" * d, lambda d: d),
    (lambda d: "exp(" * d + "B" + ")" * d, lambda d: 4 * d - 3),
    (lambda d: "B ? " * d + "1" + " : 0" * d, lambda d: 4 * d - 1),
    (lambda d: "-" * (d // 2) + "(" * (d - d // 2) + "B" + ")" * (d - d // 2), lambda d: d),
], ids=["not", "parentheses", "calls", "conditionals", "minus-parentheses"])
def test_nesting_cap(tmp_path, monkeypatch, make, column):
    """Beyond the cap: a ModelError naming file, line and the column of the opening one too many."""
    monkeypatch.setattr(maboss, "MAX_DEPTH", 50)
    head = "Node B { logic = B; }\n\nNode A {\n  logic = "  # the formula starts at line 4, column 11
    read_maboss(_write(tmp_path, "ok", head + make(50) + ";\n}\n"))
    with pytest.raises(ModelError, match=r"capped\.bnd:4:.*nested too deeply.*more than 50 deep") as e:
        read_maboss(_write(tmp_path, "capped", head + make(51) + ";\n}\n"))
    assert e.value.column == 10 + column(51)


def test_cap_in_cfg(tmp_path, monkeypatch):
    monkeypatch.setattr(maboss, "MAX_DEPTH", 50)
    path = _write(tmp_path, "m", _model("B"), "$k = 1;\n$x = " + "(" * 51 + "1" + ")" * 51 + ";\n")
    with pytest.raises(ModelError, match=r"m\.cfg:2:.*nested too deeply"):
        read_maboss(path)


# ---- pbn.load and the .cfg's initial states ---------------------------------------------------------

def test_pbn_load_warns_about_istate_it_cannot_keep(tmp_path):
    """An istate the PBN workload cannot draw (a probability other than 0, 1/2, 1, or a correlated
    group) is never dropped silently: a warning per group names its nodes, says they start uniformly
    random and points to distsim maboss; the warning is attributed to the caller's line."""
    bnd = _write(tmp_path, "m", _model("B"), "A.istate = 1; [C].istate = 0.3 [0], 0.7 [1];\n"
                                             "[B, A2].istate = 0.5 [0, 0], 0.5 [1, 1];\n")
    bnd.write_text(bnd.read_text() + "Node A2 { logic = A2; }\n")
    with pytest.warns(UserWarning) as rec:
        net = pbn.load(bnd)
    assert net.nodes == ("A", "B", "C", "A2")
    msgs = [str(w.message) for w in rec]
    assert len(msgs) == 3, msgs
    assert "fixes the initial values of 1 node(s) (A=1)" in msgs.pop()  # the certain one: pass it as initial=
    assert "istate of C is a distribution (0.3 [0], 0.7 [1])" in msgs[0] and "start it uniformly random" in msgs[0]
    assert "istate of B, A2 is a distribution (0.5 [0, 0], 0.5 [1, 1])" in msgs[1] and "start them" in msgs[1]
    assert all("m.cfg" in m and "'distsim maboss'" in m for m in msgs)
    assert {Path(w.filename).name for w in rec} == {Path(__file__).name}
    # distsim maboss keeps that distribution: P(C = 1) = 0.7, P(B = A2) = 1
    p0 = exact.initial(load_model(bnd))
    X = ((np.arange(p0.size)[:, None] >> np.arange(4)[None, :]) & 1).astype(bool)
    assert p0[X[:, 2]].sum() == pytest.approx(0.7, abs=1e-12)
    assert p0[X[:, 1] != X[:, 3]].sum() == 0 and p0[X[:, 0]].sum() == pytest.approx(1.0, abs=1e-12)


def test_pbn_load_is_quiet_about_istate_it_keeps(tmp_path):
    """Random (-1), 1/2 each, and a group uniform over all its values: no warning; certain values (0, 1),
    which a PBN does not carry, only the one that names them for initial=."""
    bnd = _write(tmp_path, "m", _model("B") + "Node D { logic = D; }\n",
                 "A.istate = 1; B.istate = -1; [C].istate = 0.5 [0], 0.5 [1];\n"
                 "[D].istate = 0 [1], 2 [0];\n")
    with pytest.warns(UserWarning) as rec:
        pbn.load(bnd)
    assert len(rec) == 1 and "the .cfg fixes the initial values of 2 node(s) (A=1, D=0)" in str(rec[0].message)
    assert read_maboss(bnd)[1].initial == {"A": 1, "D": 0}
    bnd2 = _write(tmp_path, "g", _model("B"), "[B, C].istate = 1 [0, 0], 1 [0, 1], 1 [1, 0], 1 [1, 1];\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pbn.load(bnd2)


def test_maboss_load_parses_once_per_contents(tmp_path, monkeypatch):
    """distsim.maboss.load parses a model once per process for the same files, contents and variables
    (the repeated parse was a fixed cost of every maboss() call), and again when a file changes."""
    from distsim.maboss import model as mm

    calls = []
    real = mm.read_rates
    monkeypatch.setattr(mm, "read_rates", lambda *a, **k: calls.append(a) or real(*a, **k))
    monkeypatch.setattr(mm, "_RATES", {})
    bnd, cfg = tmp_path / "m.bnd", tmp_path / "m.cfg"
    bnd.write_text("Node A { rate_up = $u; rate_down = 1; }\nNode B { logic = A; rate_up = @logic ? 1 : 0; "
                   "rate_down = @logic ? 0 : 1; }\n")
    cfg.write_text("$u = 2;\nmax_time = 3;\n")
    a = mm.load(bnd, cfg)
    b = mm.load(bnd, cfg, max_time=5)
    assert len(calls) == 1 and a.rates is b.rates and b.settings.max_time == 5
    c = mm.load(bnd, cfg, variables={"u": 3.0})
    assert len(calls) == 2 and c.rates is not a.rates
    cfg.write_text("$u = 4;\nmax_time = 3;\n")
    d = mm.load(bnd, cfg)
    assert len(calls) == 3 and d.rates is not a.rates
    assert mm.load(bnd).rates is d.rates and len(calls) == 3  # the .cfg found beside: the same files
    with pytest.raises(FileNotFoundError):
        mm.load(tmp_path / "missing.bnd", cfg)
