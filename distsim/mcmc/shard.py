"""The MCMC shard task: a block of chains advanced by a block of Gibbs iterations on one device.

The Gibbs chain's state is theta alone (the latent path of iteration ``it`` is drawn afresh from
theta and the Philox addresses of ``it``), so a task is a pure function of its payload -- the
problem, the chains' theta at ``it0`` and the iteration range -- and a rerun anywhere (a lost
worker, another GPU) returns the same draws. Nothing is cached between rounds but compiled kernels.

On CPUs the Numba loop runs in slices of about ``SLICE_SECONDS`` (a budget of attempts, resumed
mid-iteration with the same draws), so that between slices the task sees Ctrl-C (in-process), the
run's time limit and a cancellation by its client: it then returns the iterations done so far
(``done``), which are those of a run asking for that many.
"""

from __future__ import annotations

import time

import numba
import numpy as np

from ..engine import ShardContext, task_cancelled
from . import cpu
from .block import MCMCBlock

SLICE_SECONDS = 0.25  # between two looks at the clock, Ctrl-C and cancellation
FIRST_SLICE = 64  # attempts per thread in the first slice (the next are sized by the measured rate)


def run_block(ctx: ShardContext, b: MCMCBlock) -> dict:
    """Shard task: draws [C, n_iter, P], accepted attempt indices [C, n_iter, n], errors, attempts simulated,
    iterations done (``n_iter`` unless the time limit or a cancellation stopped the block)."""
    if ctx.backend == "gpu":
        from .gpu import run_block_gpu

        return run_block_gpu(b)
    return run_block_cpu(b)


def run_block_cpu(b: MCMCBlock) -> dict:
    pr = b.problem
    C, P, n = len(b.chains), len(pr.prior_shape), len(pr.dts)
    W = numba.get_num_threads()
    deadline = None if b.time_left is None else time.monotonic() + b.time_left
    draws = np.zeros((C, b.n_iter, P))
    best = np.zeros((C, b.n_iter, n), dtype=np.int64)
    err = np.zeros((C, 4), dtype=np.int64)
    simulated = np.zeros(1, dtype=np.int64)
    theta = np.array(b.theta0, np.float64)
    claims = np.zeros((3, C * n), dtype=np.int64)
    first = np.empty((W, C * n, 2), dtype=np.int64)
    step, budget = 0, FIRST_SLICE * W
    while step < b.n_iter:
        t0, before = time.perf_counter(), int(simulated[0])
        step = cpu.run_chains(np.uint64(b.seed), np.asarray(b.chains, np.uint64), theta, b.it0, b.n_iter, step,
                              pr.starts, pr.targets, pr.dts, pr.param_of, pr.fixed_theta, pr.prior_shape,
                              pr.prior_rate, pr.rct_start, pr.rct_species, pr.rct_stoich, pr.chg_start,
                              pr.chg_species, pr.chg_delta, pr.dep_start, pr.dep_list, pr.can_inc, pr.can_dec,
                              pr.max_events, pr.max_attempts, budget, draws, best, err, simulated, claims, first)
        if step >= b.n_iter:
            break
        if (deadline is not None and time.monotonic() > deadline) or task_cancelled():
            break
        rate = (int(simulated[0]) - before) / max(time.perf_counter() - t0, 1e-6)
        budget = int(np.clip(rate * SLICE_SECONDS, W, 8 * budget))
    out = {"draws": draws[:, :step], "best": best[:, :step], "err": err, "simulated": int(simulated[0]), "done": step}
    if step < b.n_iter and claims[2, 0]:  # stopped inside an iteration: the attempts each interval has run
        out["unfinished"] = np.minimum(claims[0], pr.max_attempts).reshape(C, n)
    return out
