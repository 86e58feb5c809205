"""The GPU twin of distsim.ssa.advance_events without a GPU: kernels/ssa_events.cu's ssa_advance_events
compiled for the host by g++ (``cuda_host.h``), launched by the unchanged
``distsim.ssa.gpu_advance_events`` code with NumPy standing in for CuPy (``cuda_on_host.py``), gives
the CPU's particles bit for bit: counts, event work rows, firings, error words and times after every
interval, for every method (warp: the tree's selection, as in the SSA), on the immigration-death
network with a time event, a delayed state event, a self-resetting event and a rule, and on the DSMTS
event and rule cases; chains
with their own parameters in one launch (and one launch per chain when their tables differ) give
what each gives alone on the CPU; the particle filter's estimates (backend 'gpu') are the CPU's.
The device itself: tests/unit/test_advance_events_gpu.py (the same checks). Skipped without g++."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from distsim.models.compile_events import compile_events
from distsim.models.compile_reactions import compile_network
from distsim.ssa import load
from distsim.ssa.advance_events import advance_events, start_events
from distsim.ssa.errors import ERR_MAX_EVENTS
from distsim.ssa.methods import METHODS

from cuda_on_host import GXX
from test_advance_events import DATA, busy, switched
from test_ssa import DSMTS, EVENT_CASES
from test_pmmh_filter_host import host_gpu, host_kernel_dir  # noqa: F401 (fixtures: kernels on the host, NumPy for CuPy)
from test_ssa_events import event, with_events

pytestmark = pytest.mark.skipif(GXX is None, reason="g++ not on PATH")
SAME = (0, 1, 2, 3, 4, 8)  # event rows and the queue length: bit for bit
HYBRID = (11, 12, 13, 14, 15, 16)  # a hybrid network's integrator rows y0 y1 yt ys k and step size: too
QUEUE = (7, 9, 10)  # the queue's times, events and values: compared where a slot is in use (q_len)


def _start(c, ce, n, theta=None, law_arg=None):
    X = np.repeat(c.x0[None, :].astype(np.int64), n, axis=0)
    W, err, _ = start_events(c, ce, X, c.theta if theta is None else theta, c.law_arg if law_arg is None else law_arg)
    assert not err.any()
    return X, W


def same_rows(W1, W2) -> bool:
    """Work rows equal bit for bit (scratch aside: assignment values, program stack, free queue slots, a hybrid
    network's integrator grid state and located triggers, which an advance does not use)."""
    same = SAME + (HYBRID if len(W1) > 11 else ())
    if len(W1) != len(W2) or not all(np.array_equal(W1[i].view(np.uint8), W2[i].view(np.uint8)) for i in same):
        return False
    for r in range(len(W1[8])):
        n = int(W1[8][r, 0])
        if not all(np.array_equal(W1[i][r, :n].view(np.uint8), W2[i][r, :n].view(np.uint8)) for i in QUEUE):
            return False
    return True


def check_twin(c, method: str, cuts, R: int = 64, key: int = 12345, max_events: int = 10_000_000) -> int:
    """CPU and GPU twin advance the same rows interval by interval: equal after each; returns the firings."""
    from distsim.ssa.gpu_advance_events import advance_events_gpu

    m = METHODS[method]
    X, W = _start(c, c.events, R)
    Xg, Wg = X.copy(), tuple(a.copy() for a in W)
    t0, fired = 0.0, 0
    for i, t in enumerate(cuts):
        n, err, tm, _ = advance_events(c, c.events, m.cpu, X, W, t0, t, key=key, e_hi=i + 1, max_events=max_events)
        ng, errg, tmg = advance_events_gpu(c, c.events, m, Xg, Wg, t0, t, key=key, e_hi=i + 1, max_events=max_events)
        assert np.array_equal(X, Xg) and same_rows(W, Wg), (method, t)
        assert np.array_equal(n, ng) and np.array_equal(err, errg) and np.array_equal(tm, tmg), (method, t)
        fired += int(n.sum())
        t0 = t
    if len(W) > 11:
        assert np.all(W[16] > 0.0)  # every hybrid particle carries its integrator's next step size
    return fired


def lvl_net():
    """busy() with a threshold parameter 'lvl' that only an event reads (its program constant)."""
    net = load(DATA / "immigration_death.rxn")
    net = dataclasses.replace(net, parameters=net.parameters + (("lvl", 6.0),))
    return with_events(net, [event(net, "double", "time >= 1.5", {"k1": "2 * k1"}),
                             event(net, "cut", "X >= lvl", {"X": "X - 4"})])


def check_chains(split: bool) -> None:
    """Three chains (own lvl, k1 and key) in one call == each alone on the CPU; ``split``: chain 1's
    events have another table (a persistent trigger), so the twin launches chain by chain."""
    from distsim.ssa.gpu_advance_events import advance_events_device, to_device, to_host

    import cupy as cp

    net = lvl_net()
    c = compile_network(net)
    N, keys, m = 48, np.array([5, 17, 3]), METHODS["direct"]
    ces, starts = [], []
    for g, (lvl, k1) in enumerate([(5.0, 1.0), (7.0, 2.0), (6.0, 0.5)]):
        ce = compile_events(net.with_parameters(lvl=lvl, k1=k1), c.law_start)
        if split and g == 1:
            ce = dataclasses.replace(ce, ev_flags=ce.ev_flags ^ 2)
        th = c.theta.copy()
        th[0] = k1
        ces.append(ce)
        starts.append(_start(c, ce, N, th))
    assert split or not np.array_equal(ces[0].prog_arg, ces[1].prog_arg)
    X = chains_in_one_launch(c, ces, m, starts, keys, [1.0, 1.5, 4.0])
    # the chains differ (parameters, keys): no row of chain 0 equals chain 1's state by construction
    N = len(X) // 3
    assert not np.array_equal(X[:N], X[N:2 * N])


def chains_in_one_launch(c, ces, m, starts, keys, times) -> np.ndarray:
    """Chains g (events ``ces[g]``, rows ``starts[g]`` = (counts, work rows), key ``keys[g]``) advanced together
    on the device through ``times`` == each advanced alone on the CPU, interval by interval (counts, work rows,
    firings, error words, times): the final counts."""
    import cupy as cp

    from distsim.ssa.gpu_advance_events import advance_events_device, to_device, to_host

    N = len(starts[0][0])
    X = np.concatenate([s[0] for s in starts])
    W = tuple(np.concatenate([s[1][i] for s in starts]) for i in range(len(starts[0][1])))
    xs, Wd = cp.asarray(X.copy()), to_device(tuple(a.copy() for a in W))  # (NumPy for CuPy: no copy)
    t0 = 0.0
    for i, t in enumerate(times):
        ev, er, tm = advance_events_device(c, ces, m, xs, Wd, t0, t, keys=keys, e_hi=i, max_events=10_000)
        for g in range(len(ces)):
            rows = slice(g * N, (g + 1) * N)
            Wc = tuple(a[rows] for a in W)
            n, err, tc, _ = advance_events(c, ces[g], m.cpu, X[rows], Wc, t0, t, key=int(keys[g]), e_hi=i,
                                           max_events=10_000)
            assert np.array_equal(cp.asnumpy(xs)[rows], X[rows]) and same_rows(Wc, tuple(a[rows] for a in to_host(Wd)))
            assert np.array_equal(n, cp.asnumpy(ev)[rows]) and np.array_equal(err, cp.asnumpy(er)[rows])
            assert np.array_equal(tc, cp.asnumpy(tm)[rows])
        t0 = t
    return X


def filter_problem():
    """A Poisson observation of busy()'s X (a time event, a delayed state event, a rule), k1 inferred."""
    from test_pmmh_events import _problem

    return _problem(busy(load(DATA / "immigration_death.rxn")), [1, 2, 3, 4, 6], [1, 3, 5, 4, 3])


def check_filter() -> None:
    """log_likelihoods with backend 'gpu' == 'cpu' bit for bit (four chains; the second, k1 = 1e-12,
    cannot explain y = 1 at t = 1 and drops out, with its particles' work rows)."""
    from distsim.pmmh.filter import log_likelihoods

    pr = filter_problem()
    thetas, keys = np.array([[0.8], [1e-12], [1.5], [2.5]]), np.array([3, 7, 9, 4])
    for it in (0, 5):
        a, fa = log_likelihoods(pr, thetas, 64, keys, it, "cpu")
        b, fb = log_likelihoods(pr, thetas, 64, keys, it, "gpu")
        assert np.array_equal(a, b) and fa == fb, (a, b)
        assert a[1] == -np.inf and np.all(np.isfinite(a[[0, 2, 3]])), a


def check_chain() -> None:
    """Eight PMMH iterations of two chains (sampler.iterate) with backend 'gpu' == 'cpu'."""
    from distsim.pmmh import sampler

    pr = filter_problem()
    keys = [sampler.chain_key(4, c) for c in range(2)]
    runs = []
    for backend in ("cpu", "gpu"):
        now, trace = [None, None], []
        for it in range(8):
            now, acc, fired = sampler.iterate(pr, keys, now, it, 32, backend)
            trace.append([(s.phi.tobytes(), s.loglik, a) for s, a in zip(now, acc)] + [fired])
        runs.append(trace)
    assert runs[0] == runs[1]
    assert len({t[0][0] for t in runs[0]}) > 1  # the chains moved


@pytest.mark.parametrize("method", list(METHODS))
def test_twin_equals_cpu_busy_network(host_gpu, method):
    c = compile_network(busy(load(DATA / "immigration_death.rxn")))
    assert check_twin(c, method, [0.4, 1.5, 1.5, 2.2, 4.0, 7.5]) > 1000


@pytest.mark.parametrize("case", EVENT_CASES)
def test_twin_equals_cpu_dsmts(host_gpu, case):
    c = compile_network(load(DSMTS / case / f"{case}-sbml-l3v1.xml"))
    assert check_twin(c, "direct", [1.0, 5.0, 12.5, 30.0, 50.0], R=32) > 0


def test_twin_stops_a_row_as_the_cpu(host_gpu):
    c = compile_network(switched(load(DATA / "immigration_death.rxn")))
    from distsim.ssa.gpu_advance_events import advance_events_gpu

    X, W = _start(c, c.events, 8)
    n, err, t = advance_events_gpu(c, c.events, METHODS["direct"], X, W, 0.0, 50.0, key=1, e_hi=0, max_events=3)
    assert np.all(err == ERR_MAX_EVENTS) and np.all(n == 3) and np.all(t < 50.0)
    check_twin(c, "direct", [2.0, 50.0], R=8, max_events=3)


@pytest.mark.parametrize("split", [False, True])
def test_chains_in_one_launch_equal_each_alone(host_gpu, split):
    check_chains(split)


def test_filter_gpu_equals_cpu(host_gpu):
    check_filter()


def test_chain_gpu_equals_cpu(host_gpu):
    check_chain()


def test_twin_refuses_bad_input(host_gpu):
    import cupy as cp

    from distsim.ssa.gpu_advance_events import advance_events_device, to_device

    c = compile_network(switched(load(DATA / "immigration_death.rxn")))
    X, W = _start(c, c.events, 4)
    xs, m = cp.asarray(X), METHODS["direct"]
    with pytest.raises(ValueError, match="2 chains' events, 1 keys and 4 rows"):
        advance_events_device(c, [c.events, c.events], m, xs, to_device(W), 0.0, 1.0, keys=np.array([1]), e_hi=0)
    with pytest.raises(ValueError, match="works must be"):  # the CPU's int8 trigger values, not to_device's
        advance_events_device(c, [c.events], m, xs, W, 0.0, 1.0, keys=np.array([1]), e_hi=0)
    with pytest.raises(ValueError, match="e_hi must be"):
        advance_events_device(c, [c.events], m, xs, to_device(W), 0.0, 1.0, keys=np.array([1]), e_hi=2**32)
