"""GPU data-augmentation MCMC: the same draws as the CPU (bit for bit) and bridge hit rates vs the CME.

CPU and GPU use the same Philox addresses, distsim's own log/exp, no fused multiply-adds and the same
summation orders, and both accept the lowest-index successful attempt (independent of scheduling),
so the draws must be *identical*, not merely equal in distribution.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import distsim.mcmc as mcmc
from distsim.engine import LocalExecutor
from distsim.models.formats.reaction_text import parse_reactions
from distsim.ssa import load

# short runs: their ConvergenceWarning is expected
pytestmark = [pytest.mark.gpu, pytest.mark.filterwarnings("ignore::distsim.errors.ConvergenceWarning")]

ROOT = Path(__file__).resolve().parents[2]
MM = ROOT / "examples" / "mcmc" / "michaelis_menten.rxn"
MM_DATA = ROOT / "examples" / "mcmc" / "mm_observations.csv"
MM_PRIOR = {"k1": (2.0, 1000.0), "k2": (2.0, 10.0), "k3": (2.0, 10.0)}
CME_HIT = [7.31e-4, 3.93e-3, 2.17e-3, 2.26e-3, 7.31e-3, 2.21e-3, 9.17e-3, 1.02e-2, 1.76e-2, 1.14e-2]


def _pair(net, data, **kw):
    a = mcmc.infer_rates(net, data, client=LocalExecutor("cpu"), **kw)
    b = mcmc.infer_rates(net, data, client=LocalExecutor("gpu"), **kw)
    assert b.attrs["backend"] == "gpu"
    return a, b


def test_mm_gpu_draws_equal_cpu():
    net = load(MM)
    a, b = _pair(net, MM_DATA, prior=MM_PRIOR, iterations=150, burn_in=0, chains=3, seed=9,
                 derived={"K_M": "(k2 + k3) / k1"})
    for v in ("k1", "k2", "k3", "K_M", "attempts"):
        assert np.array_equal(a[v].values, b[v].values), v


def test_birth_death_gpu_draws_equal_cpu():
    net = parse_reactions("0 -> X ; kb = 2.0\nX -> 0 ; kd = 0.5\ninit: X = 5\n", file="bd.rxn")
    import pandas as pd

    data = pd.DataFrame({"time": np.arange(6.0), "X": [5, 6, 4, 4, 7, 5]})
    a, b = _pair(net, data, prior={"kb": (0.5, 1.0), "kd": (2.0, 4.0)}, iterations=400, burn_in=0, chains=5, seed=2)
    for v in ("kb", "kd", "attempts"):
        assert np.array_equal(a[v].values, b[v].values), v


def test_gpu_hit_rates_match_cme():
    """A prior concentrated at theta = (0.001, 0.2, 0.1) (relative sd 1e-4) fixes theta, so attempts per
    interval are geometric with the CME hit probability p: the estimate draws / sum(attempts) over
    4 x 3000 iterations must lie within 4 standard errors (p sqrt((1-p)/N)) of p, per interval."""
    net = load(MM)
    prior = {k: (1e8, 1e8 / v) for k, v in (("k1", 0.001), ("k2", 0.2), ("k3", 0.1))}
    ds = mcmc.infer_rates(net, MM_DATA, prior=prior, iterations=3000, burn_in=0, chains=4, seed=1,
                          client=LocalExecutor("gpu"))
    att = ds.attempts.values.reshape(-1, 10)
    N = att.shape[0]
    p_hat = N / att.sum(axis=0)
    p = np.array(CME_HIT)
    z = (p_hat - p) / (p * np.sqrt((1 - p) / N))
    assert np.all(np.abs(z) < 4.0), (p_hat, z)


CONVERSION = "0 -> A ; kb = 3.0\nA -> B ; kc = 0.5\nB -> 0 ; kd = 0.4\ninit: A = 4, B = 2\n"


def test_conversion_chain_gpu_draws_equal_cpu():
    """A generated kernel with two species and a reaction without reactants (h = 1)."""
    import pandas as pd

    net = parse_reactions(CONVERSION, file="conv.rxn")
    data = pd.DataFrame({"time": np.arange(5.0), "A": [4, 5, 4, 6, 5], "B": [2, 3, 4, 3, 4]})
    a, b = _pair(net, data, prior={"kb": (2.0, 1.0), "kc": (2.0, 4.0), "kd": (2.0, 4.0)}, iterations=300, burn_in=0,
                 chains=3, seed=5)
    for v in ("kb", "kc", "kd", "attempts"):
        assert np.array_equal(a[v].values, b[v].values), v


def test_gpu_draws_do_not_depend_on_grid_or_slots(monkeypatch):
    """Fewer blocks than chains (several chains per group of blocks, finished in turn), and one recorded
    success per task (most accepted paths are then simulated again): still the CPU's draws."""
    import pandas as pd

    import distsim.mcmc.gpu as mg

    net = parse_reactions("0 -> X ; kb = 2.0\nX -> 0 ; kd = 0.5\ninit: X = 5\n", file="bd.rxn")
    data = pd.DataFrame({"time": np.arange(6.0), "X": [5, 6, 4, 4, 7, 5]})
    kw = dict(prior={"kb": (0.5, 1.0), "kd": (2.0, 4.0)}, iterations=200, burn_in=0, chains=5, seed=3)
    ref = mcmc.infer_rates(net, data, client=LocalExecutor("cpu"), **kw)
    for blocks, slots in ((1, 8), (3, 8), (2, 1)):
        monkeypatch.setattr(mg, "grid", lambda fn, sms, k=blocks: k)
        monkeypatch.setattr(mg, "SLOTS", slots)
        got = mcmc.infer_rates(net, data, client=LocalExecutor("gpu"), **kw)
        for v in ("kb", "kd", "attempts"):
            assert np.array_equal(ref[v].values, got[v].values), (blocks, slots, v)


def test_gpu_errors_equal_cpu():
    """The same error, interval and iteration on both backends: attempts running out, and an improper
    posterior (Gamma(0, .) under the 1/theta prior)."""
    net = load(MM)
    cases = [(net, MM_DATA, dict(prior=MM_PRIOR, max_attempts=40, iterations=20, chains=2)),
             (parse_reactions("0 -> X ; kb = 1e-9\nX -> 0 ; kd = 0.5\ninit: X = 8\n", file="bd.rxn"),
              __import__("pandas").DataFrame({"time": np.arange(4.0), "X": [8, 6, 5, 3]}),
              dict(improper_prior=True, iterations=5, chains=1))]
    for model, data, kw in cases:
        msgs = []
        for backend in ("cpu", "gpu"):
            with pytest.raises(RuntimeError) as e:
                mcmc.infer_rates(model, data, burn_in=0, client=LocalExecutor(backend), **kw)
            msgs.append(str(e.value))
        assert msgs[0] == msgs[1]
