// Data-augmentation MCMC (seed 003) on the GPU: the whole Gibbs loop in one persistent kernel, with
// the same algorithm, Philox addresses and floating-point operation order as distsim/mcmc/cpu.py
// (compile with --fmad=false), so CPU and GPU give the same draws bit for bit.
//
// A template: distsim/mcmc/gpu.py fills the regions between "//@@ NAME" and "//@@ end" with code
// generated from the network (counts, h_j and propensities in registers). As written it holds a
// birth-death model (0 -> X, X -> 0) for `nvcc --ptx` checks.
//
// The blocks form G groups (block b in group b % G); group g runs the chains c = g, g + G, ... for
// n_iter iterations on its own, with no host involvement and no waiting for other groups. One
// iteration of a group:
//   1. attempts: every warp claims 32 attempt indices at a time (atomicAdd on next[task]) of a task
//      (chain, interval) that has no event yet, runs them and atomicMins each success or error into
//      best[task]. Claims form a prefix of the indices and an attempt is skipped, or abandoned at its
//      next poll, only once its index exceeds best, so best ends as the lowest-index event --
//      whatever the scheduling, exactly the CPU's choice. A success that lowers best stores its
//      firings r_j and integrals b_j of h_j (one of MCMC_SLOTS slots per task), so the accepted path
//      is not simulated again (unless the slots ran out).
//   2. group barrier; the group's first block finishes each chain (one warp per chain): errors as
//      cpu.lowest_events, theta_p ~ Gamma(shape_p + R_p, rate_p + B_p) (Marsaglia-Tsang on Philox,
//      cpu.gamma_draw), the draw and accepted indices written out, the tasks reset; group barrier.
// Every block of the grid must be resident at once (the host sizes the grid by the occupancy API).
#include "kinetics.cuh"

//@@ defs
#define MCMC_S 1
#define MCMC_M 2
#define MCMC_SLOTS 8
//@@ end

#define MCMC_NONE 0xFFFFFFFFu
#define MCMC_TAG 0xFFFFFFFFu
#define MCMC_POLL 15  // an attempt looks at its task's best every MCMC_POLL + 1 events
#define ERR_NONE 0
#define ERR_MAX_ATTEMPTS 1
#define ERR_MAX_EVENTS 2
#define ERR_SHAPE 3
#define ERR_RATE 4
#define MCMC_HIT 1
#define MCMC_MISS 0
#define MCMC_TOO_LONG (-1)

// One forward attempt from `start` over [0, dt] (cpu.run_attempt, want=True): MCMC_HIT, MCMC_MISS or
// MCMC_TOO_LONG (max_events). r[j] / b[j] get the firings and integrals of h_j. It gives up (MCMC_MISS)
// once its index exceeds *best, read every MCMC_POLL + 1 events. `th` is written between iterations:
// never read through the read-only (non-coherent) path.
__device__ __forceinline__ int mcmc_attempt(const uint32_t seed, const uint32_t chain, const uint32_t it,
                                            const uint32_t interval, const uint32_t idx,
                                            const long long* __restrict__ start, const long long* __restrict__ target,
                                            const double dt, const double* th, const long long max_events,
                                            const volatile unsigned int* best, long long* r, double* b) {
    const double INF = __longlong_as_double(0x7ff0000000000000LL);
    //@@ state
    long long x0 = start[0];
    const long long T0 = target[0];
    const double th0 = th[0], th1 = th[1];
    double h0 = 1.0, h1 = 1.0 * ds_choose((double)x0, 1);
    double p0 = th0 * h0, p1 = th1 * h1;
    long long r0 = 0, r1 = 0;
    double b0 = 0.0, b1 = 0.0;
    //@@ end
    double t = 0.0;
    unsigned long long e = 0ull;
    ds_u32x4 w = ds_philox4x32_10(ds_u32x4{0u, idx, it, interval}, seed, chain);
    while (true) {
        // c_k = p_0 + ... + p_k in the CPU's order; a0 = c_{M-1}
        //@@ sum
        const double c0 = 0.0 + p0; const double c1 = c0 + p1; const double a0 = c1;
        //@@ end
        const double lg = ds_log(ds_u01_f64(w.x, w.y));
        const double u2w = ds_u01_f64(w.z, w.w);
        // the next event's words do not depend on the state: drawn here, off the critical path
        w = ds_philox4x32_10(ds_u32x4{(uint32_t)(e + 1ull), idx, it, interval}, seed, chain);
        double u2 = 0.0, t_new = INF;
        if (a0 > 0.0) { u2 = u2w; t_new = t - lg / a0; }
        if (t_new > dt) {
            //@@ finish
            b0 = b0 + h0 * (dt - t); b1 = b1 + h1 * (dt - t);
            r[0] = r0; r[1] = r1; b[0] = b0; b[1] = b1;
            return (x0 == T0) ? MCMC_HIT : MCMC_MISS;
            //@@ end
        }
        if (e >= (unsigned long long)max_events) return MCMC_TOO_LONG;
        const double target_a = u2 * a0;
        // the first reaction whose c_k exceeds target_a (c is nondecreasing); if none (rounding), the
        // last one with a positive propensity (the CPU's selection)
        //@@ step
        b0 = b0 + h0 * (t_new - t); b1 = b1 + h1 * (t_new - t);
        int j = (c0 <= target_a);
        if (!(a0 > target_a)) { j = 0; if (p1 > 0.0) j = 1; }
        switch (j) {
            case 0: x0 += 1; r0 += 1; h1 = 1.0 * ds_choose((double)x0, 1); p1 = th1 * h1; break;
            default: x0 -= 1; r1 += 1; h1 = 1.0 * ds_choose((double)x0, 1); p1 = th1 * h1; break;
        }
        //@@ end
        t = t_new;
        ++e;
        if ((e & MCMC_POLL) == 0ull && idx > *best) return MCMC_MISS;
    }
}

// Standard Gamma(shape) (cpu.gamma_draw).
__device__ double gamma_draw(double shape, uint32_t seed, uint32_t chain, uint32_t it, uint32_t p) {
    const bool boost = shape < 1.0;
    const double al = boost ? shape + 1.0 : shape;
    const double d = al - 1.0 / 3.0;
    const double c = 1.0 / sqrt(9.0 * d);
    unsigned long long k = 0ull;
    double g;
    while (true) {
        const ds_u32x4 w = ds_philox4x32_10(ds_u32x4{(uint32_t)(2ull * k), p, it, MCMC_TAG}, seed, chain);
        const double u = 2.0 * ds_u01_f64(w.x, w.y) - 1.0;
        const double v = 2.0 * ds_u01_f64(w.z, w.w) - 1.0;
        const double s = u * u + v * v;
        if (s < 1.0) {
            const double z = u * sqrt(-2.0 * ds_log(s) / s);
            const double tt = 1.0 + c * z;
            if (tt > 0.0) {
                const double v3 = tt * tt * tt;
                const ds_u32x4 y = ds_philox4x32_10(ds_u32x4{(uint32_t)(2ull * k + 1ull), p, it, MCMC_TAG}, seed,
                                                    chain);
                const double uu = ds_u01_f64(y.x, y.y);
                if (ds_log(uu) < 0.5 * z * z + d - d * v3 + d * ds_log(v3)) { g = d * v3; break; }
            }
        }
        ++k;
    }
    if (boost) {
        const ds_u32x4 w = ds_philox4x32_10(ds_u32x4{0xFFFFFFFFu, p, it, MCMC_TAG}, seed, chain);
        g = g * ds_exp(ds_log(ds_u01_f64(w.x, w.y)) / shape);
    }
    return g;
}

__device__ __forceinline__ unsigned long long mcmc_clock() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// All blocks of one group meet (bar = {arrivals, generation} of the group; nb blocks).
__device__ __forceinline__ void group_barrier(unsigned int* bar, const unsigned int nb) {
    __syncthreads();
    if (threadIdx.x == 0) {
        volatile unsigned int* gen = bar + 1;
        const unsigned int g0 = *gen;
        __threadfence();
        if (atomicAdd(bar, 1u) == nb - 1u) {
            bar[0] = 0u;
            __threadfence();
            atomicAdd(bar + 1, 1u);
        } else {
            while (*gen == g0) __nanosleep(32);
        }
        __threadfence();
    }
    __syncthreads();
}

// The kernel's arrays ([T] per task t = c * n + i, slots [T, MCMC_SLOTS(, M)]).
struct McmcArgs {
    int C, n, P, n_iter, G;
    uint32_t it0, seed;
    long long max_events;
    unsigned int max_attempts;
    const unsigned int* chain_ids;
    const long long* starts; const long long* targets; const double* dts;
    const int* param_of; const double* fixed_theta; const double* prior_shape; const double* prior_rate;
    const double* weight;  // [T] expected attempts: warps start on tasks in proportion
    double* theta; double* theta_rx;  // [C, P], [C, M]
    unsigned int* next; unsigned int* best; unsigned int* bad; unsigned int* rec_n;
    unsigned int* rec_idx; long long* rec_r; double* rec_b;
    long long* rs; double* bs;  // [C, n, M] statistics of the accepted paths
    unsigned int* bar;  // [G, 2]
    long long* err;  // [C, 4] code, iteration, interval or parameter, detail
    unsigned long long* simulated;
    double* draws; long long* best_out;  // [C, n_iter, P], [C, n_iter, n]
};

// task q of group g (its chains g, g + G, ...)
__device__ __forceinline__ int mcmc_task(const McmcArgs& A, const int g, const int q) {
    return (g + (q / A.n) * A.G) * A.n + q % A.n;
}

// A success at idx lowers best: keep its statistics in a free slot.
__device__ __forceinline__ void mcmc_record(const McmcArgs& A, const int t, const unsigned int idx, const long long* r,
                                            const double* b) {
    if (idx >= atomicMin(&A.best[t], idx)) return;
    const unsigned int k = atomicAdd(&A.rec_n[t], 1u);
    if (k >= MCMC_SLOTS) return;
    const long long s = (long long)t * MCMC_SLOTS + k;
#pragma unroll
    for (int j = 0; j < MCMC_M; ++j) { A.rec_r[s * MCMC_M + j] = r[j]; A.rec_b[s * MCMC_M + j] = b[j]; }
    A.rec_idx[s] = idx;
}

// Step 1 for one warp: claim and run attempts until no task of the group lacks an event.
__device__ void mcmc_attempts(const McmcArgs& A, const int g, const int Tg, const int home, const uint32_t it,
                              unsigned long long& nsim) {
    const int lane = threadIdx.x & 31;
    const volatile unsigned int* vbest = A.best;
    const volatile long long* verr = A.err;
    while (true) {
        int found = -1;
        for (int k0 = 0; k0 < Tg && found < 0; k0 += 32) {
            const int q = (home + k0 + lane) % Tg;
            const int t = mcmc_task(A, g, q);
            const bool open = k0 + lane < Tg && vbest[t] == MCMC_NONE && verr[(t / A.n) * 4] == ERR_NONE;
            const unsigned int m = __ballot_sync(0xffffffffu, open);
            if (m) found = (home + k0 + __ffs(m) - 1) % Tg;
        }
        if (found < 0) return;
        const int t = mcmc_task(A, g, found);
        const int c = t / A.n, i = t % A.n;
        unsigned int base = 0u;
        if (lane == 0) base = atomicAdd(&A.next[t], 32u);
        base = __shfl_sync(0xffffffffu, base, 0);
        if (base >= A.max_attempts) {  // every index below max_attempts is taken: best gets the sentinel
            if (lane == 0) atomicMin(&A.best[t], A.max_attempts);
            continue;
        }
        const unsigned int idx = base + (unsigned int)lane;
        const bool go = idx < A.max_attempts && idx < vbest[t];
        nsim += __popc(__ballot_sync(0xffffffffu, go));
        if (go) {
            long long r[MCMC_M];
            double b[MCMC_M];
            const int res = mcmc_attempt(A.seed, A.chain_ids[c], it, (uint32_t)i, idx,
                                         A.starts + (long long)i * MCMC_S, A.targets + (long long)i * MCMC_S, A.dts[i],
                                         A.theta_rx + (long long)c * MCMC_M, A.max_events, A.best + t, r, b);
            if (res == MCMC_HIT) mcmc_record(A, t, idx, r, b);
            if (res == MCMC_TOO_LONG) { atomicMin(&A.bad[t], idx); atomicMin(&A.best[t], idx); }
        }
        __syncwarp();
    }
}

// Step 2 for chain c (one warp): the accepted paths' statistics (lane i: interval i), errors, theta.
__device__ void mcmc_finish(const McmcArgs& A, const int c, const int step, const uint32_t it) {
    const int lane = threadIdx.x & 31;
    const int n = A.n;
    const bool live = A.err[c * 4] == ERR_NONE;
    for (int i = lane; i < n; i += 32) {
        const int t = c * n + i;
        const unsigned int bi = A.best[t];
        const bool ok = bi < A.bad[t] && bi < A.max_attempts;
        A.best_out[((long long)c * A.n_iter + step) * n + i] = ok ? bi : 0;
        long long* r = A.rs + (long long)t * MCMC_M;
        double* b = A.bs + (long long)t * MCMC_M;
        if (live && ok) {
            int k = 0;
            const int used = min(A.rec_n[t], (unsigned int)MCMC_SLOTS);
            while (k < used && A.rec_idx[(long long)t * MCMC_SLOTS + k] != bi) ++k;
            if (k < used) {
                const long long s = (long long)t * MCMC_SLOTS + k;
                for (int j = 0; j < MCMC_M; ++j) { r[j] = A.rec_r[s * MCMC_M + j]; b[j] = A.rec_b[s * MCMC_M + j]; }
            } else {  // the slots ran out: simulate the accepted path again
                long long rr[MCMC_M];
                double bb[MCMC_M];
                mcmc_attempt(A.seed, A.chain_ids[c], it, (uint32_t)i, bi, A.starts + (long long)i * MCMC_S,
                             A.targets + (long long)i * MCMC_S, A.dts[i], A.theta_rx + (long long)c * MCMC_M,
                             A.max_events, A.best + t, rr, bb);
                for (int j = 0; j < MCMC_M; ++j) { r[j] = rr[j]; b[j] = bb[j]; }
            }
        }
    }
    __syncwarp();
    if (lane == 0) {
        long long* er = A.err + c * 4;
        for (int pass = 0; pass < 2 && live; ++pass) {  // errors first, then exhausted intervals (lowest_events)
            for (int i = 0; i < n && er[0] == ERR_NONE; ++i) {
                const unsigned int bi = A.best[c * n + i], bd = A.bad[c * n + i];
                if (pass == 0 && bd <= bi) { er[0] = ERR_MAX_EVENTS; er[1] = it; er[2] = i; er[3] = bd; }
                if (pass == 1 && bi >= A.max_attempts) {
                    er[0] = ERR_MAX_ATTEMPTS; er[1] = it; er[2] = i; er[3] = A.max_attempts;
                }
            }
        }
        double* th = A.theta + (long long)c * A.P;
        for (int p = 0; p < A.P && er[0] == ERR_NONE; ++p) {  // cpu.gibbs_theta
            long long R = 0;
            double B = 0.0;
            for (int j = 0; j < MCMC_M; ++j)
                if (A.param_of[j] == p)
                    for (int i = 0; i < n; ++i) {
                        const long long q = ((long long)c * n + i) * MCMC_M + j;
                        R += A.rs[q];
                        B = B + A.bs[q];
                    }
            const double shape = A.prior_shape[p] + (double)R;
            const double rate = A.prior_rate[p] + B;
            if (!(shape > 0.0)) { er[0] = ERR_SHAPE; er[1] = it; er[2] = p; break; }
            if (!(rate > 0.0)) { er[0] = ERR_RATE; er[1] = it; er[2] = p; break; }
            th[p] = gamma_draw(shape, A.seed, A.chain_ids[c], it, (uint32_t)p) / rate;
        }
        for (int p = 0; p < A.P; ++p) A.draws[((long long)c * A.n_iter + step) * A.P + p] = th[p];
        for (int j = 0; j < MCMC_M; ++j)
            A.theta_rx[c * MCMC_M + j] = A.param_of[j] >= 0 ? th[A.param_of[j]] : A.fixed_theta[j];
    }
    __syncwarp();
    for (int i = lane; i < n; i += 32) {
        const int t = c * n + i;
        A.next[t] = 0u; A.best[t] = MCMC_NONE; A.bad[t] = MCMC_NONE; A.rec_n[t] = 0u;
    }
}

extern "C" __global__ void mcmc_loop(
    const int C, const int n, const int P, const int n_iter, const int G, const uint32_t it0, const uint32_t seed,
    const long long max_events, const unsigned int max_attempts, const unsigned int* __restrict__ chain_ids,
    const long long* __restrict__ starts, const long long* __restrict__ targets, const double* __restrict__ dts,
    const int* __restrict__ param_of, const double* __restrict__ fixed_theta, const double* __restrict__ prior_shape,
    const double* __restrict__ prior_rate, const double* __restrict__ weight, double* theta, double* theta_rx,
    unsigned int* next, unsigned int* best, unsigned int* bad, unsigned int* rec_n, unsigned int* rec_idx,
    long long* rec_r, double* rec_b, long long* rs, double* bs, unsigned int* bar, long long* err,
    unsigned long long* simulated, double* draws, long long* best_out, unsigned long long* stamps,
    const unsigned long long budget_ns, unsigned int* halt, int* done)
{
    const McmcArgs A{C, n, P, n_iter, G, it0, seed, max_events, max_attempts, chain_ids, starts, targets, dts, param_of,
                     fixed_theta, prior_shape, prior_rate, weight, theta, theta_rx, next, best, bad, rec_n, rec_idx,
                     rec_r, rec_b, rs, bs, bar, err, simulated, draws, best_out};
    const int g = blockIdx.x % A.G;
    const unsigned int nb = (gridDim.x - g + A.G - 1) / A.G;  // blocks in the group
    const int wpb = blockDim.x >> 5;
    const int warp = threadIdx.x >> 5;
    const int wg = (blockIdx.x / A.G) * wpb + warp, nw = (int)nb * wpb;  // warp within the group, warps
    const int nc = (A.C - g + A.G - 1) / A.G, Tg = nc * A.n;  // chains and tasks of the group
    int home = 0;  // the task this warp looks at first: warps spread in proportion to A.weight
    if ((threadIdx.x & 31) == 0) {
        double tot = 0.0, acc = 0.0;
        for (int q = 0; q < Tg; ++q) tot += A.weight[mcmc_task(A, g, q)];
        const double at = (wg + 0.5) * tot / nw;
        home = Tg - 1;
        for (int q = 0; q < Tg; ++q) {
            acc += A.weight[mcmc_task(A, g, q)];
            if (acc > at) { home = q; break; }
        }
    }
    home = __shfl_sync(0xffffffffu, home, 0);
    unsigned long long nsim = 0ull;
    // stamps (optional, [G, n_iter + 1, 2]): the group's start, then per iteration the ends of steps 1 and 2 (ns)
    unsigned long long* st = nullptr;
    if (stamps != nullptr && blockIdx.x == g && threadIdx.x == 0) st = stamps + 2ll * g * (n_iter + 1);
    if (st) st[0] = st[1] = mcmc_clock();
    // the run's time limit (budget_ns > 0): the group's first block looks at the clock after each
    // iteration and halts the group there (done[g]: iterations finished). An iteration itself is
    // bounded by the attempt budget (max_attempts), so no iteration is abandoned half-way.
    const unsigned long long t_start = (budget_ns && blockIdx.x == g && threadIdx.x == 0) ? mcmc_clock() : 0ull;
    for (int step = 0; step < A.n_iter; ++step) {
        const uint32_t it = A.it0 + (uint32_t)step;
        mcmc_attempts(A, g, Tg, home, it, nsim);
        group_barrier(A.bar + 2 * g, nb);
        if (st) st[2 * step + 2] = mcmc_clock();
        if (blockIdx.x == g)
            for (int k = warp; k < nc; k += wpb) mcmc_finish(A, g + k * A.G, step, it);
        if (blockIdx.x == g && threadIdx.x == 0) {
            done[g] = step + 1;
            if (budget_ns && step + 1 < A.n_iter && mcmc_clock() - t_start > budget_ns) halt[g] = 1u;
        }
        group_barrier(A.bar + 2 * g, nb);  // its fence publishes halt[g] to every block of the group
        if (st) st[2 * step + 3] = mcmc_clock();
        if (*(volatile unsigned int*)(halt + g)) break;
    }
    if ((threadIdx.x & 31) == 0 && nsim) atomicAdd(A.simulated, nsim);
}
