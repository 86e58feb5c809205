// Exact SSA for large models, one warp per realization (after seed 004, Komarov & D'Souza 2012):
// the propensities are grouped into blocks of 32 (one per lane) and summed level by level
// (block sums of 32 blocks, ...) until one warp-wide read gives a0. An event is
//   a0: the lanes' top-level entries reduced across the warp;
//   selection: a three-level (for up to 32^3 reactions; more levels beyond) search, each level one
//     coalesced read, a warp prefix scan and a warp vote for the first entry whose cumulative sum
//     exceeds u2 * a0;
//   update: the lanes recompute the fired reaction's dependents (dependency graph) in parallel, then
//     each touched block's sum is recomputed from its 32 entries, up to the top.
// Block sums are recomputed, never incremented, so they carry no drift and every sum has a fixed
// order: a realization depends only on (seed, realization), not on what else runs. The random
// numbers are those of the other kernels (Philox key (seed, realization), counter = event), but the
// sums are taken in a different order than the CPU's, so realizations match the CPU's in
// distribution, not bit for bit.
//
// Per-realization work arrays (global memory): x [S] int32, a [M] double, levels [sum of level
// sizes] double. Grid states go to rec[(k * R + r) * S + s] (coalesced across species).
#include "ssa_common.cuh"

#define DS_FULL 0xffffffffu
#ifndef DS_MAX_STACK
#define DS_MAX_STACK 16
#endif
#define DS_MAX_LEVELS 6

__device__ __forceinline__ double ds_warp_sum(double v) {
    // xor butterfly: every lane ends with the same bits (IEEE addition is commutative)
#pragma unroll
    for (int m = 16; m >= 1; m >>= 1) v = v + __shfl_xor_sync(DS_FULL, v, m);
    return v;
}

// the lowest of the lanes' values (every lane gets it)
__device__ __forceinline__ int ds_warp_min(int v) {
#pragma unroll
    for (int m = 16; m >= 1; m >>= 1) { const int o = __shfl_xor_sync(DS_FULL, v, m); v = o < v ? o : v; }
    return v;
}

// recompute the sums above entry `i` of level 0 (the propensities), up to the top level
__device__ __forceinline__ void ds_update_path(int i, double* __restrict__ lv, const int* __restrict__ off,
                                               const int* __restrict__ size, const int L, const int lane) {
    for (int l = 0; l < L; ++l) {
        const int b = i >> 5;
        const int c = (b << 5) + lane;
        const double v = ds_warp_sum(c < size[l] ? lv[off[l] + c] : 0.0);
        if (lane == 0) lv[off[l + 1] + b] = v;
        __syncwarp();
        i = b;
    }
}

extern "C" __global__ void ssa_warp(
    const int R, const unsigned long long real0, const uint32_t seed, const int S, const int M, const int K,
    const int L, const int* __restrict__ level_off, const int* __restrict__ level_size, const int LV,
    const long long* __restrict__ x0, const signed char* __restrict__ kind, const double* __restrict__ theta,
    const int* __restrict__ rct_start, const int* __restrict__ rct_species, const int* __restrict__ rct_stoich,
    const int* __restrict__ chg_start, const int* __restrict__ chg_species, const int* __restrict__ chg_delta,
    const int* __restrict__ law_start, const int* __restrict__ law_op, const double* __restrict__ law_arg,
    const int* __restrict__ dep_start, const int* __restrict__ dep_list,
    const double* __restrict__ grid, const long long max_events,
    int* __restrict__ xs_, double* __restrict__ lv_, int* __restrict__ rec,
    unsigned long long* __restrict__ firings, unsigned long long* __restrict__ events, int* __restrict__ errors
    DS_BATCH_ARGS)
{
    __shared__ double2 logtab[DS_NEGLOG_ENTRIES];
    ds_neglog_load(logtab);
    __syncthreads();
    const int lane = threadIdx.x & 31;
    const int r = (int)((blockIdx.x * (unsigned)blockDim.x + threadIdx.x) >> 5);
    if (r >= R) return;  // whole warps only: blockDim.x is a multiple of 32
    DS_BATCH_POINT(r, R)
#ifdef DS_BATCHED
    if (!DS_LIVE(r, R)) return;
    x0 += (long long)batch_p * S; theta += (long long)batch_p * M; law_arg += (long long)batch_p * batch_nlaw;
    firings += (long long)batch_p * M;
#endif
    int off[DS_MAX_LEVELS + 1], size[DS_MAX_LEVELS + 1];
    for (int l = 0; l <= L; ++l) { off[l] = level_off[l]; size[l] = level_size[l]; }
    int* x = xs_ + (unsigned long long)r * S;
    double* lv = lv_ + (unsigned long long)r * LV;  // level 0 = the propensities
    const uint32_t rid = DS_RID(real0, r);
    const double INF = __longlong_as_double(0x7ff0000000000000LL);
    const ds_reactions N{kind, theta, rct_start, rct_species, rct_stoich, law_start, law_op, law_arg};
    double st[DS_MAX_STACK];  // kinetic-law stack
    int err = ERR_NONE;

    for (int s = lane; s < S; s += 32) x[s] = (int)x0[s];
    __syncwarp();
    int bad = M;  // the lowest reaction with a bad propensity (M: none), the CPU's first in order
    for (int d = lane; d < M; d += 32) {
        const double v = ds_propensity(N, d, x, st);
        if (ds_bad_propensity(v) && d < bad) bad = d;
        lv[d] = v;
    }
    __syncwarp();
    if (__any_sync(DS_FULL, bad < M)) err = DS_ERROR_WORD(ERR_PROPENSITY, ds_warp_min(bad));
    for (int l = 0; l < L; ++l) {  // build the block sums bottom-up
        for (int b = 0; b < size[l + 1]; ++b) {
            const int c = (b << 5) + lane;
            const double v = ds_warp_sum(c < size[l] ? lv[off[l] + c] : 0.0);
            if (lane == 0) lv[off[l + 1] + b] = v;
        }
        __syncwarp();
    }

    double t = 0.0;
    int k = 0;
    double gk = grid[0];
    unsigned long long e = 0ull;
    while (err == ERR_NONE) {
        const double a0 = ds_warp_sum(lane < size[L] ? lv[off[L] + lane] : 0.0);
        double u2 = 0.0, t_new = INF;
        if (a0 > 0.0) {
            double u1;
            ds_event_uniforms(e, DS_SEED, rid, u1, u2);
            t_new = t + ds_waiting_time(u1, a0, logtab);
        }
        while (k < K && gk < t_new) {  // record the grid points passed before the event
            int* out = rec + ((unsigned long long)k * R + r) * S;
            for (int s = lane; s < S; s += 32) out[s] = x[s];
            ++k;
            gk = grid[k < K ? k : K - 1];
        }
        if (k >= K) break;
        if (max_events > 0 && e >= (unsigned long long)max_events) {
            for (; k < K; ++k) {
                int* out = rec + ((unsigned long long)k * R + r) * S;
                for (int s = lane; s < S; s += 32) out[s] = x[s];
            }
            err = ERR_MAX_EVENTS;
            break;
        }
        // selection: descend from the top level; at each level the first entry whose cumulative
        // sum exceeds the target (or the last positive one, if rounding leaves none)
        double target = u2 * a0;
        int blk = 0;
        for (int l = L; l >= 0; --l) {
            const int c = (blk << 5) + lane;
            const double v = c < size[l] ? lv[off[l] + c] : 0.0;
            double cum = v;
#pragma unroll
            for (int m = 1; m < 32; m <<= 1) {
                const double o = __shfl_up_sync(DS_FULL, cum, m);
                if (lane >= m) cum = cum + o;
            }
            double before = __shfl_up_sync(DS_FULL, cum, 1);  // exclusive prefix
            if (lane == 0) before = 0.0;
            const unsigned over = __ballot_sync(DS_FULL, cum > target && v > 0.0);
            const unsigned pos = __ballot_sync(DS_FULL, v > 0.0);
            const int f = over ? __ffs(over) - 1 : (pos ? 31 - __clz(pos) : 0);
            target = target - __shfl_sync(DS_FULL, before, f);
            blk = (blk << 5) + f;
        }
        const int j = blk;
        // fire: one lane per changed species
        bool neg = false, ovf = false;
        for (int q = chg_start[j] + lane; q < chg_start[j + 1]; q += 32) {
            const int d = chg_delta[q];
            const int v = (int)((unsigned int)x[chg_species[q]] + (unsigned int)d);
            x[chg_species[q]] = v;
            if (v < 0) { if (d > 0) ovf = true; else neg = true; }
        }
        __syncwarp();
        if (__any_sync(DS_FULL, ovf)) { err = DS_ERROR_WORD(ERR_OVERFLOW, j); break; }
        if (__any_sync(DS_FULL, neg)) { err = DS_ERROR_WORD(ERR_NEGATIVE, j); break; }
        if (lane == 0) atomicAdd(&firings[j], 1ull);
        // dependents, one lane each; then the sums above every touched block
        for (int q = dep_start[j] + lane; q < dep_start[j + 1]; q += 32) {
            const int d = dep_list[q];
            const double v = ds_propensity(N, d, x, st);
            if (ds_bad_propensity(v) && d < bad) bad = d;
            lv[d] = v;
        }
        __syncwarp();
        if (__any_sync(DS_FULL, bad < M)) { err = DS_ERROR_WORD(ERR_PROPENSITY, ds_warp_min(bad)); break; }
        int prev = -1;
        for (int q = dep_start[j]; q < dep_start[j + 1]; ++q) {  // dep_list is sorted: blocks in order
            const int b = dep_list[q] >> 5;
            if (b != prev) { ds_update_path(dep_list[q], lv, off, size, L, lane); prev = b; }
        }
        t = t_new;
        ++e;
    }
    if (lane == 0) {
        events[r] = e;
        errors[r] = err;
    }
}
