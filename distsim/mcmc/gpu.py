"""GPU backend of the Gibbs sampler: ``kernels/mcmc_bridge.cu`` (CuPy RawModule, NVRTC, --fmad=false).

A block of iterations is one launch of a persistent kernel: groups of thread blocks each run their
chains' Gibbs loop on the device (attempts claimed 32 at a time, lowest-index acceptance, Gamma
draws); the draws, accepted attempt indices and error words are copied back once per block. With a
time limit (``MCMCBlock.time_left``) each group halts after the iteration that passes it; the block
returns the iterations all groups finished (``done``), those of a run asking for that many. The
attempt is generated from the network (:func:`generate`) with counts and propensities in
registers, in the CPU's operation order. Warps start on the tasks (chain, interval) in proportion
to the attempts each needed in the previous block (``effort``), which never changes a draw.
"""

from __future__ import annotations

import numpy as np

from ..backends import cuda
from .block import MCMCBlock, Problem

OPTIONS = ("--fmad=false",)
THREADS = 128
BLOCKS_PER_SM = 2  # at most (fewer if the occupancy calculator says so): measured, benchmarks/mcmc.py
MAX_ATTEMPTS = 1 << 31  # attempt indices are 32-bit on the device
SLOTS = 8  # successes recorded per task and iteration (more: the accepted path is simulated again)


def _h(pr: Problem, j: int) -> str:
    """h_j(x) = prod_i C(x_i, r_ij), multiplied in from 1.0 as models.kinetics.mass_action(1.0, ...)."""
    factors = ["1.0"] + [f"ds_choose((double)x{int(pr.rct_species[q])}, {int(pr.rct_stoich[q])})"
                         for q in range(pr.rct_start[j], pr.rct_start[j + 1])]
    return f"h{j} = {' * '.join(factors)}; p{j} = th{j} * h{j};"


def _fire(pr: Problem, j: int) -> str:
    """Reaction j fires: counts, the early stop of cpu.run_attempt, r_j, the propensities it changes."""
    out = []
    for q in range(pr.chg_start[j], pr.chg_start[j + 1]):
        s, d = int(pr.chg_species[q]), int(pr.chg_delta[q])
        out.append(f"x{s} += {d}LL;")
    dead = []
    for q in range(pr.chg_start[j], pr.chg_start[j + 1]):
        s = int(pr.chg_species[q])
        dead += ([] if pr.can_inc[s] else [f"x{s} < T{s}"]) + ([] if pr.can_dec[s] else [f"x{s} > T{s}"])
    if dead:
        out.append(f"if ({' || '.join(dead)}) return MCMC_MISS;")
    out.append(f"r{j} += 1;")
    out += [_h(pr, int(pr.dep_list[q])) for q in range(pr.dep_start[j], pr.dep_start[j + 1])]
    return " ".join(out + ["break;"])


def generate(pr: Problem) -> str:
    """CUDA source of the persistent Gibbs kernel for this problem's network."""
    S, M = pr.starts.shape[1], len(pr.param_of)
    rx = range(M)
    state = [f"long long x{s} = start[{s}]; const long long T{s} = target[{s}];" for s in range(S)]
    state += [f"const double th{j} = th[{j}]; double h{j}, p{j}; long long r{j} = 0; double b{j} = 0.0;" for j in rx]
    state += [_h(pr, j) for j in rx]
    sums = ["const double c0 = 0.0 + p0;"] + [f"const double c{j} = c{j - 1} + p{j};" for j in range(1, M)]
    finish = [f"b{j} = b{j} + h{j} * (dt - t); r[{j}] = r{j}; b[{j}] = b{j};" for j in rx]
    finish.append(f"return ({' && '.join(f'x{s} == T{s}' for s in range(S)) or 'true'}) ? MCMC_HIT : MCMC_MISS;")
    step = [f"b{j} = b{j} + h{j} * (t_new - t);" for j in rx]
    step.append(f"int j = {' + '.join(f'(c{k} <= target_a)' for k in range(M - 1)) or '0'};")
    step.append("if (!(a0 > target_a)) { j = 0; " + " ".join(f"if (p{k} > 0.0) j = {k};" for k in range(1, M)) + " }")
    step.append("switch (j) {")
    step += [f"    {'default' if j == M - 1 else f'case {j}'}: {_fire(pr, j)}" for j in rx]
    step.append("}")
    regions = {"defs": f"#define MCMC_S {S}\n#define MCMC_M {M}\n#define MCMC_SLOTS {SLOTS}", "state": "\n".join(state),
               "sum": " ".join(sums + [f"const double a0 = c{M - 1};"]), "finish": "\n".join(finish),
               "step": "\n".join(step)}
    return cuda.fill_template(cuda.kernel_source("mcmc_bridge.cu"), regions)


def grid(fn, sms: int) -> int:
    """Blocks of the persistent kernel: all must be resident at once (group barriers wait for them)."""
    import cupy as cp

    try:
        fit = cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(fn.kernel.ptr, THREADS, 0)
    except (AttributeError, RuntimeError):  # no occupancy calculator: 64K registers per SM
        fit = 65536 // (max(fn.num_regs, 32) * THREADS)
    return sms * max(1, min(BLOCKS_PER_SM, fit))


def run_block_gpu(b: MCMCBlock, stamps: bool = False) -> dict:
    """The shard task on a GPU; ``stamps``: also the device clock (ns, [G, n_iter + 1, 2]) at the start of
    each group of blocks and at the end of each iteration's attempts and of the iteration (benchmarks)."""
    import cupy as cp

    pr = b.problem
    C, P, n = len(b.chains), len(pr.prior_shape), len(pr.dts)
    M = len(pr.param_of)
    T = C * n
    fn = cuda.load_module(generate(pr), OPTIONS).get_function("mcmc_loop")
    blocks = grid(fn, cp.cuda.Device().attributes["MultiProcessorCount"])
    G = min(C, blocks)
    g = {k: cp.asarray(getattr(pr, k)) for k in ("starts", "targets", "dts", "param_of", "fixed_theta", "prior_shape",
                                                  "prior_rate")}
    theta0 = np.asarray(b.theta0, np.float64)
    theta_rx = np.stack([np.where(pr.param_of >= 0, t[np.maximum(pr.param_of, 0)], pr.fixed_theta) for t in theta0])
    u32 = lambda k, v=0: cp.full(k, v, dtype=cp.uint32)  # noqa: E731
    none = 0xFFFFFFFF
    draws = cp.zeros(C * b.n_iter * P, dtype=cp.float64)
    best_out = cp.zeros(C * b.n_iter * n, dtype=cp.int64)
    err = cp.zeros(C * 4, dtype=cp.int64)
    simulated = cp.zeros(1, dtype=cp.uint64)
    args = (np.int32(C), np.int32(n), np.int32(P), np.int32(b.n_iter), np.int32(G), np.uint32(b.it0),
            np.uint32(b.seed), np.int64(pr.max_events), np.uint32(min(pr.max_attempts, MAX_ATTEMPTS)),
            cp.asarray(np.asarray(b.chains, np.uint32)), g["starts"], g["targets"], g["dts"], g["param_of"],
            g["fixed_theta"], g["prior_shape"], g["prior_rate"], cp.asarray(np.asarray(b.effort, np.float64).ravel()),
            cp.asarray(theta0), cp.asarray(theta_rx), u32(T), u32(T, none), u32(T, none), u32(T), u32(T * SLOTS, none),
            cp.zeros(T * SLOTS * M, dtype=cp.int64), cp.zeros(T * SLOTS * M), cp.zeros(T * M, dtype=cp.int64),
            cp.zeros(T * M), u32(2 * G), err, simulated, draws, best_out)
    clock = cp.zeros(G * (b.n_iter + 1) * 2, dtype=cp.uint64) if stamps else np.uint64(0)  # 0: a null pointer
    budget = np.uint64(0 if b.time_left is None else max(1, int(b.time_left * 1e9)))  # the time limit, ns
    done = cp.zeros(G, dtype=cp.int32)
    fn((blocks,), (THREADS,), args + (clock, budget, cp.zeros(G, dtype=cp.uint32), done))
    k = int(cp.asnumpy(done).min())  # the iterations every group finished (a group halts at the time limit)
    out = {"draws": cp.asnumpy(draws).reshape(C, b.n_iter, P)[:, :k],
           "best": cp.asnumpy(best_out).reshape(C, b.n_iter, n)[:, :k],
           "err": cp.asnumpy(err).reshape(C, 4), "simulated": int(cp.asnumpy(simulated)[0]), "done": k}
    if stamps:
        out["stamps"] = cp.asnumpy(clock).reshape(G, b.n_iter + 1, 2)
    return out
