"""Hybrid particles (time-dependent propensities, rate rules) on the GPU (kernels/ssa_hybrid.cu's
ssa_advance_hybrid): the CPU's bits, with the checks of test_advance_hybrid_host.py run on the device
(counts, event and integrator work rows, firings, errors and times after every interval; rows stopped by
max_events; chains in one launch; the filter's estimates; PMMH iterations), and whole PMMH runs with
backend 'gpu' equal to backend 'cpu' (a sine birth rate; a rate-rule input). GPU only."""

from __future__ import annotations

import numpy as np
import pytest

import distsim.pmmh as pmmh
from distsim.models.compile_reactions import compile_network

from test_advance_events_gpu import pmmh_gpu_equals_cpu
from test_advance_hybrid import sine_immigration_death
from test_advance_hybrid_host import CASES, check_chain, check_chains, check_filter, check_twin
from test_ssa_hybrid import decay

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("case", CASES)
def test_gpu_equals_cpu_interval_by_interval(case):
    c = compile_network(CASES[case]())
    assert check_twin(c, [0.4, 1.0, 1.0, 1.7, 3.0, 4.5], R=1000) > 2000


def test_gpu_stops_rows_as_the_cpu():
    check_twin(compile_network(sine_immigration_death()), [2.0, 50.0], R=256, max_events=3)


def test_gpu_chains_equal_each_alone():
    check_chains(N=500)


def test_gpu_filter_and_chains_equal_cpu():
    check_filter(particles=256)
    check_chain(particles=128)


@pytest.mark.parametrize("case", ["sine", "rate-rule"])
def test_gpu_pmmh_run_equals_cpu(case):
    if case == "sine":
        net, obs, exps, prior = sine_immigration_death(), [pmmh.Observable("y", "X", "poisson")], \
            pmmh.Experiment([1, 2, 3, 5], {"y": [2, 5, 6, 4]}), {"d": "gamma:2,1"}
    else:
        net, obs, exps, prior = decay(), [pmmh.Observable("y", "A", "poisson")], \
            pmmh.Experiment([0.5, 1.0, 2.0, 3.0], {"y": [5, 9, 13, 15]}), {"k": "gamma:2,1"}
    name = next(iter(prior))
    gpu_run = pmmh_gpu_equals_cpu(net, obs, exps, prior)
    assert np.unique(gpu_run[name].values).size > 2  # the chains moved
