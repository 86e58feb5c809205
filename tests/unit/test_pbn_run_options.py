"""What a steady-state run honours and reports: the file's update mode, knockouts, frozen nodes,
runs that do not converge (no interval, exit status 3), per-class answers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from distsim.cli import main
from distsim.pbn import load, simulate, steady_state

EX = Path(__file__).resolve().parents[2] / "examples" / "pbn"
ASYNC_PBN = """type=asynchronous
n=3
perturbation=0.02
nodeNames
a
b
c
endNodeNames
node a
0.7 : b | c
0.3 : b
endNode
node b
1 : !a
endNode
node c
1 : a & !b
endNode
"""
FROZEN = ASYNC_PBN.replace("node c\n1 : a & !b", "node c\n1 : c") + "npNode\nc\nendNpNode\n"
KW = dict(precision=5e-3, seed=3, backend="cpu", client=None)


def test_file_mode_is_the_default(tmp_path):
    path = tmp_path / "m.pbn"
    path.write_text(ASYNC_PBN)
    net = load(path)
    default = steady_state(net, "a=1", **KW)
    explicit = steady_state(net.with_perturbation(0.02), "a=1", mode="async", **KW)
    with pytest.warns(UserWarning, match="states the update scheme 'async'; running mode='sync'"):
        sync = steady_state(path, "a=1", mode="sync", **KW)
    assert default.attrs["mode"] == "async" and sync.attrs["mode"] == "sync"
    assert np.array_equal(default.probability.values, explicit.probability.values)
    assert not np.array_equal(default.probability.values, sync.probability.values)
    assert simulate(path, steps=10, trajectories=64, seed=1).attrs["mode"] == "async"


def test_knockouts(tmp_path):
    path = tmp_path / "m.pbn"
    path.write_text(ASYNC_PBN)
    a = steady_state(path, "a=1", fixed={"b": 0}, **KW)
    b = steady_state(load(path).with_fixed({"b": 0}), "a=1", **KW)
    assert np.array_equal(a.probability.values, b.probability.values)
    out = tmp_path / "ko.nc"
    assert main(["--in-process", "-q", "pbn", "steady-state", str(path), "--target", "a=1", "-r", "5e-3",
                 "--fix", "b=0", "-o", str(out)]) == 0


def test_frozen_nodes_are_named_up_front_and_classes_on_request(tmp_path, capsys):
    path = tmp_path / "frozen.pbn"
    path.write_text(FROZEN)
    with pytest.raises(ValueError, match=r"node\(s\) c never change.*initial=.*by_class"):
        steady_state(path, "a=1", **KW)
    assert main(["--in-process", "-q", "pbn", "steady-state", str(path), "--target", "a=1"]) == 2
    assert "--initial c=0" in capsys.readouterr().err
    ds = steady_state(path, "a=1", by_class=True, **KW)
    assert list(ds.frozen_class.values) == ["c=0", "c=1"] and ds.attrs["frozen_nodes"] == "c"
    for k, c in enumerate((0, 1)):
        from distsim.rng import derive_seeds

        one = steady_state(path, "a=1", **{**KW, "seed": int(derive_seeds(3, k))}, initial={"c": c})
        assert float(one.probability[0]) == float(ds.probability.sel(frozen_class=f"c={c}")[0])


def test_a_run_that_does_not_converge_has_no_interval_and_exit_status_3(tmp_path, capsys):
    path = tmp_path / "two.bnet"  # p = 0: two fixed points and a 2-cycle; random starts never mix
    path.write_text("targets, factors\na, b\nb, a\n")
    with pytest.warns(UserWarning, match="p = 0"):
        ds = steady_state(path, "a=1", precision=1e-2, max_length=2**12, backend="cpu", client=None)
    assert ds.attrs["converged"] == 0 and "did not converge" in ds.attrs["note"]
    assert np.isnan(ds.ci_low.values).all() and np.isnan(ds.ci_high.values).all()
    assert np.isnan(ds.half_width.values).all()
    with pytest.warns(UserWarning, match="p = 0"):
        assert main(["--in-process", "-q", "pbn", "steady-state", str(path), "--target", "a=1", "-r", "1e-2",
                     "--max-length", "4096"]) == 3
    out = capsys.readouterr().out
    assert "not converged: R-hat" in out and "(not converged)" in out


def test_interval_is_the_achieved_one_and_rounds_match_history(tmp_path):
    ds = steady_state(EX / "bnmpy_shmulevich2002_examplePBN_3n.txt", "x1=1", perturbation=0.01, **KW)
    hw = ds.half_width.values
    assert (hw <= 5e-3).all() and np.allclose(ds.ci_high - ds.ci_low, 2 * hw)
    assert ds.sizes["round"] == ds.attrs["rounds"]
    assert np.all(np.diff(ds.history_length.values) > 0)


def test_maboss_cfg_initial_states_from_the_cli(capsys):
    bnd = next(EX.glob("maboss_*.bnd"))
    assert main(["--in-process", "-q", "pbn", "simulate", str(bnd), "--steps", "20", "--trajectories", "64"]) == 0
    assert "(async)" in capsys.readouterr().out
