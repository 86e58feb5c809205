"""``time_limit`` on SSA ensembles and DA-MCMC (issue 14: one vocabulary across commands): a run that
stops at its time limit returns exactly what a run asking for the work it did returns, says so in
its attrs, and the CLI takes --time-limit for every command."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import distsim.mcmc as mcmc
import distsim.ssa as ssa
from distsim.cli import build_parser
from distsim.engine import LocalExecutor

ROOT = Path(__file__).resolve().parents[2]
CPU = LocalExecutor("cpu")
PRIOR = {"k1": (2, 1000), "k2": (2, 10), "k3": (2, 10)}


def test_ssa_time_limit_equals_the_realizations_done():
    net = ssa.load(ROOT / "examples" / "ssa" / "michaelis_menten.rxn")
    kw = dict(t_end=50, points=6, seed=11, client=CPU)
    a = ssa.simulate(net, realizations=10**8, time_limit=0.2, **kw)
    n = a.attrs["realizations"]
    assert a.attrs["stopped_by"] == "time_limit" and 256 <= n < 10**8
    b = ssa.simulate(net, realizations=n, **kw)
    assert b.attrs["stopped_by"] == "realizations"
    for v in ("mean", "variance", "firings", "quantile_value", "bin_width"):
        np.testing.assert_array_equal(a[v].values, b[v].values)


def test_mcmc_time_limit_equals_the_iterations_done():
    net = ssa.load(ROOT / "examples" / "mcmc" / "michaelis_menten.rxn")
    data = ROOT / "examples" / "mcmc" / "mm_observations.csv"
    kw = dict(prior=PRIOR, chains=2, burn_in=1, seed=5, client=CPU)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # short chains: the convergence warning
        mcmc.infer_rates(net, data, iterations=3, **kw)  # kernels compiled or loaded: the limit counts sampling
        a = mcmc.infer_rates(net, data, iterations=10**6, time_limit=2.0, **kw)
        n = a.attrs["iterations"]
        b = mcmc.infer_rates(net, data, iterations=n, **kw)
    assert a.attrs["stopped_by"] == "time_limit" and 1 < n < 10**6 and b.attrs["stopped_by"] == "iterations"
    for v in ("k1", "k2", "k3"):
        np.testing.assert_array_equal(a[v].values, b[v].values)


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), "1"])
def test_bad_time_limits_are_refused(bad):
    net = ssa.load(ROOT / "examples" / "ssa" / "michaelis_menten.rxn")
    with pytest.raises(ValueError, match="time_limit"):
        ssa.simulate(net, t_end=1, realizations=10, time_limit=bad, client=CPU)


@pytest.mark.parametrize("command", [["pbn", "steady-state"], ["pbn", "influence"], ["ssa", "simulate"],
                                     ["grn", "infer"], ["mcmc", "rates"]])
def test_every_long_command_takes_a_time_limit(command):
    parser = build_parser()
    sub = parser._subparsers._group_actions[0].choices[command[0]]
    if len(command) > 1:
        sub = sub._subparsers._group_actions[0].choices[command[1]]
    assert any("--time-limit" in a.option_strings for a in sub._actions)
