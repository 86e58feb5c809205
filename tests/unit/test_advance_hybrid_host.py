"""The GPU twin of the hybrid particle advance without a GPU: kernels/ssa_hybrid.cu's ssa_advance_hybrid
(ds_hybrid_loop, the SSA hybrid kernel's loop) compiled for the host by g++ (``cuda_host.h``), launched by
the unchanged ``distsim.ssa.gpu_advance_events`` code with NumPy standing in for CuPy (``cuda_on_host.py``),
gives the CPU's particles (distsim.ssa.advance_events: cpu.hybrid_loop) bit for bit: counts, event and
integrator work rows, firings, error words and times after every interval, for a sine birth rate, a
rate-rule input with a state event, a time event on the input, an SBML species with a rate rule, and rows
stopped by max_events; chains with their own parameters in one launch give what each gives alone on the
CPU; the particle filter's estimates and PMMH iterations (backend 'gpu') are the CPU's for hybrid
networks. A trigger on a rate-rule variable (located on CPUs) is refused. The device itself:
tests/unit/test_advance_hybrid_gpu.py (the same checks). Skipped without g++."""

from __future__ import annotations

import numpy as np
import pytest

from distsim.models.arith import Num, Param, Species
from distsim.models.compile_events import compile_events
from distsim.models.compile_reactions import compile_network
from distsim.models.events import Assignment, Compare, Event
from distsim.models.formats.sbml import read_sbml_string
from distsim.ssa.advance_events import advance_events
from distsim.ssa.errors import ERR_MAX_EVENTS
from distsim.ssa.methods import METHODS

from cuda_on_host import GXX
from test_advance_events_host import _start, chains_in_one_launch, same_rows
from test_advance_events_host import check_twin as events_twin
from test_pmmh_filter_host import host_gpu, host_kernel_dir  # noqa: F401 (fixtures: kernels on the host)
from test_advance_hybrid import located, refilled, sine_immigration_death
from test_hybrid_species import input_species
from test_ssa_hybrid import decay

pytestmark = pytest.mark.skipif(GXX is None, reason="g++ not on PATH")


def state_event():
    """The decaying rate-rule input refilled to x0 when the count A reaches 5 (a trigger on a species)."""
    return decay(events=[Event("refill", Compare(">=", Species(0), Num(5.0)), (Assignment("X", -1, Param("x0")),))])


CASES = {"sine": sine_immigration_death, "rate-rule-state-event": state_event, "time-event": refilled,
         "species-rate-rule": lambda: read_sbml_string(input_species())}


def check_twin(c, cuts, R: int = 48, key: int = 777, max_events: int = 10_000_000, method: str = "direct") -> int:
    """CPU and GPU twin advance the same hybrid rows interval by interval: equal after each; returns the firings."""
    assert c.events.hybrid
    return events_twin(c, method, cuts, R, key, max_events)


def check_chains(N: int = 40) -> None:
    """Three chains of the sine birth rate (own a, b, d and key) in one launch == each alone on the CPU."""
    net = sine_immigration_death()
    c = compile_network(net)
    keys, m = np.array([5, 17, 3]), METHODS["direct"]
    ces, starts = [], []
    for a, b, d in [(2.0, 1.5, 0.3), (3.0, 0.5, 0.6), (1.0, 1.0, 0.1)]:
        at = net.with_parameters(a=a, b=b, d=d)
        ca = compile_network(at)
        ce = compile_events(at, c.law_start)
        ces.append(ce)
        starts.append(_start(c, ce, N, ca.theta, ca.law_arg))
    assert not np.array_equal(ces[0].prog_arg, ces[1].prog_arg)  # the moving propensities' constants differ
    X = chains_in_one_launch(c, ces, m, starts, keys, [0.8, 2.0, 2.0, 4.5])
    assert not np.array_equal(X[:N], X[N:2 * N])  # the chains differ (parameters, keys)


def rate_rule_problem():
    """test_pmmh_hybrid's births driven by the decaying rate-rule input, observed with Poisson noise; k inferred."""
    import distsim.pmmh as pmmh
    from distsim.pmmh import sampler

    return sampler.build_problem(decay(), [pmmh.Observable("y", "A", "poisson")],
                                 [pmmh.Experiment([0.5, 1.0, 2.0, 3.0], {"y": [5, 9, 13, 15]})], {"k": "gamma:2,1"})


def sine_problem():
    import distsim.pmmh as pmmh
    from distsim.pmmh import sampler

    return sampler.build_problem(sine_immigration_death(), [pmmh.Observable("y", "X", "poisson")],
                                 [pmmh.Experiment([1, 2, 3, 4], {"y": [2, 5, 6, 6]}),
                                  pmmh.Experiment([0.5, 2.5], {"y": [1, 4]})], {"d": "gamma:2,1"})


def check_filter(particles: int = 48) -> None:
    """log_likelihoods with backend 'gpu' == 'cpu' bit for bit: the rate-rule input (four chains; the second,
    k = 1e-12, makes no A and drops out with its particles' work rows) and the sine birth rate (two
    experiments)."""
    from distsim.pmmh.filter import log_likelihoods

    pr = rate_rule_problem()
    thetas, keys = np.array([[3.0], [1e-12], [1.5], [6.0]]), np.array([3, 7, 9, 4])
    for it in (0, 5):
        a, fa = log_likelihoods(pr, thetas, particles, keys, it, "cpu")
        b, fb = log_likelihoods(pr, thetas, particles, keys, it, "gpu")
        assert np.array_equal(a, b) and fa == fb > 0, (a, b)
        assert a[1] == -np.inf and np.all(np.isfinite(a[[0, 2, 3]])), a
    pr = sine_problem()
    thetas, keys = np.array([[0.3], [0.1], [0.9]]), np.array([11, 2, 8])
    a, fa = log_likelihoods(pr, thetas, particles, keys, 2, "cpu")
    b, fb = log_likelihoods(pr, thetas, particles, keys, 2, "gpu")
    assert np.array_equal(a, b) and fa == fb > 0 and np.all(np.isfinite(a)), (a, b)


def check_chain(particles: int = 32) -> None:
    """Eight PMMH iterations of two chains (sampler.iterate) of the rate-rule input with backend 'gpu' == 'cpu'."""
    from distsim.pmmh import sampler

    pr = rate_rule_problem()
    keys = [sampler.chain_key(4, c) for c in range(2)]
    runs = []
    for backend in ("cpu", "gpu"):
        now, trace = [None, None], []
        for it in range(8):
            now, acc, fired = sampler.iterate(pr, keys, now, it, particles, backend)
            trace.append([(s.phi.tobytes(), s.loglik, a) for s, a in zip(now, acc)] + [fired])
        runs.append(trace)
    assert runs[0] == runs[1]
    assert len({t[0][0] for t in runs[0]}) > 1  # the chains moved


@pytest.mark.parametrize("case", CASES)
def test_twin_equals_cpu_interval_by_interval(host_gpu, case):
    c = compile_network(CASES[case]())
    assert check_twin(c, [0.4, 1.0, 1.0, 1.7, 3.0, 4.5]) > 100


def test_twin_ignores_the_method_as_the_cpu(host_gpu):
    # hybrid particles use the direct method's selection whatever the method (as the SSA's hybrid loop)
    check_twin(compile_network(sine_immigration_death()), [1.0, 2.5], R=16, method="tree")


def test_twin_stops_a_row_as_the_cpu(host_gpu):
    from distsim.ssa.gpu_advance_events import advance_events_gpu

    c = compile_network(sine_immigration_death())
    X, W = _start(c, c.events, 8)
    n, err, t = advance_events_gpu(c, c.events, METHODS["direct"], X, W, 0.0, 50.0, key=1, e_hi=0, max_events=3)
    assert np.all(err == ERR_MAX_EVENTS) and np.all(n == 3) and np.all(t < 50.0)
    check_twin(c, [2.0, 50.0], R=8, max_events=3)


def test_chains_in_one_launch_equal_each_alone(host_gpu):
    check_chains()


def test_filter_gpu_equals_cpu(host_gpu):
    check_filter()


def test_chain_gpu_equals_cpu(host_gpu):
    check_chain()


def test_located_triggers_are_refused_naming_the_cpu_backend(host_gpu):
    import cupy as cp

    from distsim.ssa.gpu_advance_events import advance_events_device, to_device

    c = compile_network(located())
    X, W = _start(c, c.events, 4)
    with pytest.raises(ValueError, match=r"read rate-rule variables .* runs on the CPU only \(backend='cpu'"):
        advance_events_device(c, [c.events], METHODS["direct"], cp.asarray(X), to_device(W), 0.0, 1.0,
                              keys=np.array([1]), e_hi=0)
