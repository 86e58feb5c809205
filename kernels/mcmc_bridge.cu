// Data-augmentation MCMC (seed 003) on the GPU: the same algorithm, Philox addresses and
// floating-point operation order as distsim/mcmc/cpu.py (compile with --fmad=false), so CPU and
// GPU give the same draws bit for bit.
//
// One Gibbs iteration = two launches queued without host synchronisation:
//   mcmc_attempts: persistent warps claim 32 attempt indices at a time (atomicAdd on next[task]) for
//     a task (chain, interval) that has no success yet, simulate them and atomicMin the successes
//     into best[task]. Claims form a prefix of the indices and an attempt is skipped only when its
//     index already exceeds best, so when the kernel ends best[task] is the lowest successful index
//     -- whatever the scheduling, exactly the CPU's choice.
//   mcmc_finish: one block per chain replays the accepted paths (sufficient statistics r_j, b_j),
//     draws theta ~ Gamma (Marsaglia-Tsang on Philox) and resets the tasks for the next iteration.
// MCMC_S / MCMC_M (species, reactions) are set by the host with -D.
#include "kinetics.cuh"

#ifndef MCMC_S
#define MCMC_S 4
#endif
#ifndef MCMC_M
#define MCMC_M 3
#endif
#define MCMC_NONE 0xFFFFFFFFu
#define MCMC_TAG 0xFFFFFFFFu
#define ERR_NONE 0
#define ERR_MAX_ATTEMPTS 1
#define ERR_MAX_EVENTS 2
#define ERR_SHAPE 3
#define ERR_RATE 4

struct Net {
    const int* rct_start; const int* rct_species; const int* rct_stoich;
    const int* chg_start; const int* chg_species; const int* chg_delta;
    const int* dep_start; const int* dep_list;
    const signed char* can_inc; const signed char* can_dec;
};

// mass-action h_j(x) = prod_i C(x_i, r_i) (cpu._h)
__device__ __forceinline__ double h_of(const Net& N, const long long* x, int j) {
    return ds_mass_action(1.0, j, x, N.rct_start, N.rct_species, N.rct_stoich);
}

// One forward attempt (cpu.run_attempt). Returns 1 hit, 0 miss, -1 max_events. With want, adds the
// firings to r[j] and the integrals of h_j to b[j].
__device__ int run_attempt(const Net& N, uint32_t seed, uint32_t chain, uint32_t it, uint32_t interval, uint32_t idx,
                           const long long* start, const long long* target, double dt, const double* theta_rx,
                           long long max_events, bool want, long long* r, double* b) {
    long long x[MCMC_S];
    double h[MCMC_M], a[MCMC_M];
    for (int s = 0; s < MCMC_S; ++s) x[s] = start[s];
    for (int j = 0; j < MCMC_M; ++j) { h[j] = h_of(N, x, j); a[j] = theta_rx[j] * h[j]; }
    double t = 0.0;
    unsigned long long e = 0ull;
    while (true) {
        double a0 = 0.0;
        for (int jj = 0; jj < MCMC_M; ++jj) a0 = a0 + a[jj];
        double u2 = 0.0, t_new;
        if (a0 > 0.0) {
            const ds_u32x4 w = ds_philox4x32_10(ds_u32x4{(uint32_t)e, idx, it, interval}, seed, chain);
            const double u1 = ds_u01_f64(w.x, w.y);
            u2 = ds_u01_f64(w.z, w.w);
            t_new = t - ds_log(u1) / a0;
        } else {
            t_new = __longlong_as_double(0x7ff0000000000000LL);
        }
        if (t_new > dt) {
            if (want) for (int jj = 0; jj < MCMC_M; ++jj) b[jj] = b[jj] + h[jj] * (dt - t);
            for (int s = 0; s < MCMC_S; ++s) if (x[s] != target[s]) return 0;
            return 1;
        }
        if (e >= (unsigned long long)max_events) return -1;
        if (want) for (int jj = 0; jj < MCMC_M; ++jj) b[jj] = b[jj] + h[jj] * (t_new - t);
        const double target_a = u2 * a0;
        double c = 0.0;
        int j = -1, last = 0;
        for (int jj = 0; jj < MCMC_M; ++jj) {
            if (a[jj] > 0.0) last = jj;
            c = c + a[jj];
            if (c > target_a) { j = jj; break; }
        }
        if (j < 0) j = last;
        bool dead = false;
        for (int q = N.chg_start[j]; q < N.chg_start[j + 1]; ++q) {
            const int s = N.chg_species[q];
            x[s] += N.chg_delta[q];
            if ((x[s] < target[s] && !N.can_inc[s]) || (x[s] > target[s] && !N.can_dec[s])) dead = true;
        }
        if (want) r[j] += 1;
        if (dead) return 0;
        for (int q = N.dep_start[j]; q < N.dep_start[j + 1]; ++q) {
            const int d = N.dep_list[q];
            h[d] = h_of(N, x, d);
            a[d] = theta_rx[d] * h[d];
        }
        t = t_new;
        ++e;
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
                const ds_u32x4 y = ds_philox4x32_10(ds_u32x4{(uint32_t)(2ull * k + 1ull), p, it, MCMC_TAG}, seed, chain);
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

#define NET_PARAMS \
    const int* __restrict__ rct_start, const int* __restrict__ rct_species, const int* __restrict__ rct_stoich, \
    const int* __restrict__ chg_start, const int* __restrict__ chg_species, const int* __restrict__ chg_delta, \
    const int* __restrict__ dep_start, const int* __restrict__ dep_list, \
    const signed char* __restrict__ can_inc, const signed char* __restrict__ can_dec
#define NET_INIT Net N{rct_start, rct_species, rct_stoich, chg_start, chg_species, chg_delta, dep_start, dep_list, \
                       can_inc, can_dec}

extern "C" __global__ void mcmc_attempts(
    const int C, const int n, const uint32_t it, const uint32_t seed, const unsigned int* __restrict__ chain_ids,
    const double* __restrict__ theta_rx, const long long* __restrict__ starts, const long long* __restrict__ targets,
    const double* __restrict__ dts, NET_PARAMS, const long long max_events, const unsigned int max_attempts,
    const int* __restrict__ sched, const int n_sched, unsigned int* next, unsigned int* best, long long* err,
    unsigned long long* simulated)
{
    NET_INIT;
    const int lane = threadIdx.x & 31;
    const int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int T = C * n;
    int task = sched[warp % n_sched];
    volatile unsigned int* vbest = best;
    volatile long long* verr = err;
    while (true) {
        int found = -1;
        unsigned int base = 0u;
        if (lane == 0) {
            for (int q = 0; q < T; ++q) {
                const int t = (task + q) % T;
                if (vbest[t] == MCMC_NONE && verr[(t / n) * 4] == ERR_NONE) { found = t; break; }
            }
            if (found >= 0) {
                base = atomicAdd(&next[found], 32u);
                if (base >= max_attempts) { atomicMin(&best[found], max_attempts); }
            }
        }
        found = __shfl_sync(0xffffffffu, found, 0);
        base = __shfl_sync(0xffffffffu, base, 0);
        if (found < 0) break;
        task = found;
        const int c = found / n, i = found % n;
        const unsigned int idx = base + (unsigned int)lane;
        const bool go = base < max_attempts && idx < max_attempts && idx < vbest[found];
        const unsigned int nsim = __popc(__ballot_sync(0xffffffffu, go));
        if (lane == 0 && nsim) atomicAdd(simulated, (unsigned long long)nsim);
        if (go) {
            const int res = run_attempt(N, seed, chain_ids[c], it, (uint32_t)i, idx, starts + (long long)i * MCMC_S,
                                        targets + (long long)i * MCMC_S, dts[i], theta_rx + (long long)c * MCMC_M,
                                        max_events, false, nullptr, nullptr);
            if (res == 1) atomicMin(&best[found], idx);
            if (res < 0 && atomicCAS((unsigned long long*)&err[c * 4], 0ull, (unsigned long long)ERR_MAX_EVENTS) == 0ull) {
                err[c * 4 + 1] = it; err[c * 4 + 2] = i; err[c * 4 + 3] = idx;
            }
        }
        __syncwarp();
    }
}

// One block per chain (blockIdx.x = local chain c). rs/bs: [C, n, M] scratch.
extern "C" __global__ void mcmc_finish(
    const int C, const int n, const int P, const uint32_t it, const int step, const int n_iter, const uint32_t seed,
    const unsigned int* __restrict__ chain_ids, double* theta, double* theta_rx, const long long* __restrict__ starts,
    const long long* __restrict__ targets, const double* __restrict__ dts, NET_PARAMS,
    const int* __restrict__ param_of, const double* __restrict__ fixed_theta, const double* __restrict__ prior_shape,
    const double* __restrict__ prior_rate, const long long max_events, const unsigned int max_attempts,
    unsigned int* next, unsigned int* best, long long* err, long long* rs, double* bs, double* draws,
    long long* best_out)
{
    NET_INIT;
    const int c = blockIdx.x;
    const uint32_t chain = chain_ids[c];
    long long* r_c = rs + (long long)c * n * MCMC_M;
    double* b_c = bs + (long long)c * n * MCMC_M;
    __shared__ int ok;
    if (threadIdx.x == 0) ok = err[c * 4] == ERR_NONE;
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        const unsigned int bi = best[c * n + i];
        for (int j = 0; j < MCMC_M; ++j) { r_c[i * MCMC_M + j] = 0; b_c[i * MCMC_M + j] = 0.0; }
        if (ok && bi < max_attempts)
            run_attempt(N, seed, chain, it, (uint32_t)i, bi, starts + (long long)i * MCMC_S, targets + (long long)i * MCMC_S,
                        dts[i], theta_rx + (long long)c * MCMC_M, max_events, true, r_c + i * MCMC_M, b_c + i * MCMC_M);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int i = 0; i < n; ++i) {
            const unsigned int bi = best[c * n + i];
            if (ok && bi >= max_attempts) {
                err[c * 4] = ERR_MAX_ATTEMPTS; err[c * 4 + 1] = it; err[c * 4 + 2] = i; err[c * 4 + 3] = max_attempts;
                ok = 0;
            }
            best_out[((long long)c * n_iter + step) * n + i] = bi >= max_attempts ? 0 : bi;
        }
        if (ok) {
            for (int p = 0; p < P; ++p) {
                long long R = 0;
                double B = 0.0;
                for (int j = 0; j < MCMC_M; ++j)
                    if (param_of[j] == p)
                        for (int i = 0; i < n; ++i) { R += r_c[i * MCMC_M + j]; B = B + b_c[i * MCMC_M + j]; }
                const double shape = prior_shape[p] + (double)R;
                const double rate = prior_rate[p] + B;
                if (!(shape > 0.0)) { err[c * 4] = ERR_SHAPE; err[c * 4 + 1] = it; err[c * 4 + 2] = p; break; }
                if (!(rate > 0.0)) { err[c * 4] = ERR_RATE; err[c * 4 + 1] = it; err[c * 4 + 2] = p; break; }
                theta[c * P + p] = gamma_draw(shape, seed, chain, it, (uint32_t)p) / rate;
            }
        }
        for (int p = 0; p < P; ++p) draws[((long long)c * n_iter + step) * P + p] = theta[c * P + p];
        for (int j = 0; j < MCMC_M; ++j)
            theta_rx[c * MCMC_M + j] = param_of[j] >= 0 ? theta[c * P + param_of[j]] : fixed_theta[j];
    }
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += blockDim.x) { next[c * n + i] = 0u; best[c * n + i] = MCMC_NONE; }
}
