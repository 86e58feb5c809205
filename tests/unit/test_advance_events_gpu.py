"""Particles of networks with SBML events and rules on the GPU (kernels/ssa_events.cu's
ssa_advance_events): the CPU's bits, with the checks of test_advance_events_host.py run on the device
(counts, work rows, firings, errors and times after every interval for every method; the DSMTS
event and rule cases; chains in one launch and chain by chain; the filter's estimates; PMMH
iterations), and a whole PMMH run with backend 'gpu' equal to backend 'cpu'. GPU only."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import distsim.pmmh as pmmh
from distsim.errors import ConvergenceWarning
from distsim.models.compile_reactions import compile_network
from distsim.ssa import load
from distsim.ssa.methods import METHODS

from test_advance_events import DATA, busy, switched
from test_advance_events_host import check_chain, check_chains, check_filter, check_twin
from test_ssa import DSMTS, EVENT_CASES

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("method", list(METHODS))
def test_gpu_equals_cpu_busy_network(method):
    c = compile_network(busy(load(DATA / "immigration_death.rxn")))
    assert check_twin(c, method, [0.4, 1.5, 1.5, 2.2, 4.0, 7.5], R=2000) > 10_000


@pytest.mark.parametrize("case", EVENT_CASES)
def test_gpu_equals_cpu_dsmts(case):
    c = compile_network(load(DSMTS / case / f"{case}-sbml-l3v1.xml"))
    assert check_twin(c, "direct", [1.0, 5.0, 12.5, 30.0, 50.0], R=1000) > 0


def test_gpu_stops_rows_as_the_cpu():
    check_twin(compile_network(switched(load(DATA / "immigration_death.rxn"))), "direct", [2.0, 50.0], R=256,
               max_events=3)


@pytest.mark.parametrize("split", [False, True])
def test_gpu_chains_equal_each_alone(split):
    check_chains(split)


def test_gpu_filter_and_chains_equal_cpu():
    check_filter()
    check_chain()


def test_gpu_pmmh_run_equals_cpu():
    net = busy(load(DATA / "immigration_death.rxn"))
    pmmh_gpu_equals_cpu(net, [pmmh.Observable("y", "X", "poisson")],
                        pmmh.Experiment([1, 2, 3, 5], {"y": [1, 3, 6, 4]}), {"k1": "gamma:2,1"})


def pmmh_gpu_equals_cpu(net, obs, exps, prior):
    """A short PMMH run on the GPU == the same on the CPU (draws, log-likelihoods, acceptances): the GPU's run."""
    runs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for backend in ("cpu", "gpu"):
            runs.append(pmmh.infer(net, obs, exps, prior=prior, backend=backend, iterations=40, burn_in=10, chains=2,
                                   particles=64, seed=3, progress=False))
    assert runs[1].attrs["backend"] == "gpu"
    for v in (*prior, "log_likelihood", "accepted"):
        assert np.array_equal(runs[0][v].values, runs[1][v].values), v
    return runs[1]


def test_gpu_refuses_located_triggers_naming_the_cpu_backend():
    # hybrid particles run on the GPU (test_advance_hybrid_gpu.py), but triggers on rate-rule variables (located on
    # CPUs) do not: the device advance and a PMMH run with backend 'gpu' refuse them before running anything
    import cupy as cp

    from distsim.errors import ModelError
    from distsim.ssa.advance_events import start_events
    from distsim.ssa.gpu_advance_events import advance_events_device, to_device

    from test_advance_hybrid import located

    net = located()
    c = compile_network(net)
    X = np.repeat(c.x0[None, :].astype(np.int64), 4, axis=0)
    W, _, _ = start_events(c, c.events, X, c.theta, c.law_arg)
    with pytest.raises(ValueError, match=r"runs on the CPU only \(backend='cpu'"):
        advance_events_device(c, [c.events], METHODS["direct"], cp.asarray(X), to_device(W), 0.0, 1.0,
                              keys=np.array([1]), e_hi=0)
    with pytest.raises(ModelError, match=r"the CPU backend does \(backend='cpu'\)"):
        pmmh.infer(net, [pmmh.Observable("y", "A", "poisson")], pmmh.Experiment([1, 2], {"y": [2, 4]}),
                   prior={"k": "gamma:2,1"}, backend="gpu", iterations=5, burn_in=1, chains=1, particles=8,
                   progress=False)
