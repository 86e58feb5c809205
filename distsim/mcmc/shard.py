"""The MCMC shard task: a block of chains advanced by a block of Gibbs iterations on one device.

The Gibbs chain's state is theta alone (the latent path of iteration ``it`` is drawn afresh from
theta and the Philox addresses of ``it``), so a task is a pure function of its payload -- the
problem, the chains' theta at ``it0`` and the iteration range -- and a rerun anywhere (a lost
worker, another GPU) returns the same draws. Nothing is cached between rounds but compiled kernels.
"""

from __future__ import annotations

import numba
import numpy as np

from ..engine import ShardContext
from . import cpu
from .block import MCMCBlock


def run_block(ctx: ShardContext, b: MCMCBlock) -> dict:
    """Shard task: draws [C, n_iter, P], accepted attempt indices [C, n_iter, n], errors, attempts simulated."""
    if ctx.backend == "gpu":
        from .gpu import run_block_gpu

        return run_block_gpu(b)
    return run_block_cpu(b)


def run_block_cpu(b: MCMCBlock) -> dict:
    pr = b.problem
    C, P, n = len(b.chains), len(pr.prior_shape), len(pr.dts)
    draws = np.zeros((C, b.n_iter, P))
    best = np.zeros((C, b.n_iter, n), dtype=np.int64)
    err = np.zeros((C, 4), dtype=np.int64)
    simulated = np.zeros(1, dtype=np.int64)
    cpu.run_chains(np.uint64(b.seed), np.asarray(b.chains, np.uint64), np.asarray(b.theta0, np.float64), b.it0,
                   b.n_iter, pr.starts, pr.targets, pr.dts, pr.param_of, pr.fixed_theta, pr.prior_shape,
                   pr.prior_rate, pr.rct_start, pr.rct_species, pr.rct_stoich, pr.chg_start, pr.chg_species,
                   pr.chg_delta, pr.dep_start, pr.dep_list, pr.can_inc, pr.can_dec, pr.max_events, pr.max_attempts,
                   numba.get_num_threads(), draws, best, err, simulated)
    return {"draws": draws, "best": best, "err": err, "simulated": int(simulated[0])}
