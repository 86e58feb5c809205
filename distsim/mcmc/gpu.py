"""GPU backend of the Gibbs sampler: ``kernels/mcmc_bridge.cu`` (CuPy RawModule, NVRTC, --fmad=false).

A block of iterations is two launches per iteration queued on one stream with no host
synchronisation; the draws, accepted attempt indices and error words are copied back once per
block. Persistent warps are spread over the (chain, interval) tasks in proportion to the attempts
each needed in the previous block (``wave0``), which adapts the effort to per-interval acceptance
without changing any draw.
"""

from __future__ import annotations

import numpy as np

from ..backends import cuda
from .block import MCMCBlock

OPTIONS = ("--fmad=false",)
THREADS = 128
BLOCKS_PER_SM = 8


def _module(S: int, M: int):
    return cuda.load_module(cuda.kernel_source("mcmc_bridge.cu"), OPTIONS + (f"-DMCMC_S={S}", f"-DMCMC_M={M}"))


def schedule(weights: np.ndarray, n_warps: int) -> np.ndarray:
    """Start task of each warp: tasks get warps in proportion to ``weights`` (at least one each)."""
    w = np.asarray(weights, np.float64).ravel()
    share = np.maximum(1, np.floor(w / w.sum() * n_warps)).astype(np.int64)
    return np.repeat(np.arange(len(w), dtype=np.int32), share)


def run_block_gpu(b: MCMCBlock) -> dict:
    import cupy as cp

    pr = b.problem
    C, P, n = len(b.chains), len(pr.prior_shape), len(pr.dts)
    S, M = pr.starts.shape[1], len(pr.param_of)
    mod = _module(S, M)
    k_att = mod.get_function("mcmc_attempts")
    k_fin = mod.get_function("mcmc_finish")
    dev = cp.cuda.Device()
    sms = dev.attributes["MultiProcessorCount"]
    blocks = sms * BLOCKS_PER_SM
    n_warps = blocks * THREADS // 32
    g = {k: cp.asarray(getattr(pr, k)) for k in ("starts", "targets", "dts", "rct_start", "rct_species", "rct_stoich",
                                                  "chg_start", "chg_species", "chg_delta", "dep_start", "dep_list",
                                                  "can_inc", "can_dec", "param_of", "fixed_theta", "prior_shape",
                                                  "prior_rate")}
    net = (g["rct_start"], g["rct_species"], g["rct_stoich"], g["chg_start"], g["chg_species"], g["chg_delta"],
           g["dep_start"], g["dep_list"], g["can_inc"], g["can_dec"])
    chain_ids = cp.asarray(np.asarray(b.chains, np.uint32))
    theta0 = np.asarray(b.theta0, np.float64)
    theta = cp.asarray(theta0)
    theta_rx = cp.asarray(np.stack([np.where(pr.param_of >= 0, t[np.maximum(pr.param_of, 0)], pr.fixed_theta)
                                    for t in theta0]))
    sched = cp.asarray(schedule(np.asarray(b.wave0, np.float64), n_warps))
    nxt = cp.zeros(C * n, dtype=cp.uint32)
    best = cp.full(C * n, 0xFFFFFFFF, dtype=cp.uint32)
    err = cp.zeros(C * 4, dtype=cp.int64)
    simulated = cp.zeros(1, dtype=cp.uint64)
    rs = cp.zeros(C * n * M, dtype=cp.int64)
    bs = cp.zeros(C * n * M, dtype=cp.float64)
    draws = cp.zeros(C * b.n_iter * P, dtype=cp.float64)
    best_out = cp.zeros(C * b.n_iter * n, dtype=cp.int64)
    max_att = np.uint32(min(pr.max_attempts, 0xFFFFFFFE))
    for step in range(b.n_iter):
        it = np.uint32(b.it0 + step)
        k_att((blocks,), (THREADS,), (np.int32(C), np.int32(n), it, np.uint32(b.seed), chain_ids, theta_rx, g["starts"],
                                      g["targets"], g["dts"], *net, np.int64(pr.max_events), max_att, sched,
                                      np.int32(len(sched)), nxt, best, err, simulated))
        k_fin((C,), (THREADS,), (np.int32(C), np.int32(n), np.int32(P), it, np.int32(step), np.int32(b.n_iter),
                                 np.uint32(b.seed), chain_ids, theta, theta_rx, g["starts"], g["targets"], g["dts"], *net,
                                 g["param_of"], g["fixed_theta"], g["prior_shape"], g["prior_rate"],
                                 np.int64(pr.max_events), max_att, nxt, best, err, rs, bs, draws, best_out))
    return {"draws": cp.asnumpy(draws).reshape(C, b.n_iter, P), "best": cp.asnumpy(best_out).reshape(C, b.n_iter, n),
            "err": cp.asnumpy(err).reshape(C, 4), "simulated": int(cp.asnumpy(simulated)[0])}
