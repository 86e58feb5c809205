// Exact SSA for large models, one warp per realization (after seed 004, Komarov & D'Souza 2012):
// the propensities (level 0) are grouped into blocks of 32, one per lane, and summed level by level
// (level l+1 entry b = the sum of level l entries 32b..32b+31) until a level has at most 32 entries:
// the top, held in registers (lane i holds entry i and its inclusive prefix sum, whose last lane is
// a0). An event is
//   time: -log(u1) / a0; lane i computes event (e & ~31) + i's uniforms once per 32 events (the
//     same Philox words as every other kernel: key (seed, realization), counter = event);
//   selection: from the top down, at each level the first entry whose inclusive prefix sum exceeds
//     u2 a0 (a warp ballot), one read per level: levels 1..L-1 in shared memory, level 0 (the
//     propensities) in global memory, read with the fired block's firing-table offsets;
//   firing: one lane per item of the reaction's firing table (its net changes, then its dependents
//     in order, each with its rate index and up to two reactants), so the counts are read once, in
//     parallel, and the dependents' reactant counts after the firing come from the changing lanes by
//     shuffles; dependents with a general kinetic law (or more than two reactants) are evaluated
//     from the counts in memory;
//   update: every touched block's sum is recomputed from its 32 entries (the fired block's entries
//     are already in registers), then the entries above it up to the top.
// Every entry is the sum of its 32 children in one fixed order (the warp's inclusive scan), never an
// increment, so the sums carry no drift and a realization depends only on (seed, realization). The
// sums are taken in another order than the CPU's, so realizations match the CPU's in distribution,
// not bit for bit.
//
// Compile-time choices (distsim/ssa/gpu.py): DS_X_SHARED keeps the counts x[S] in shared memory,
// DS_UP_SHARED levels 1..L-1 (otherwise they are per-realization global arrays); DS_GENERAL 0 leaves
// out the path for long firing tables and general dependents when a model has none, and
// DS_CHECK_PROPENSITY 0 the checks of mass-action propensities that cannot be bad. Level 0 is global
// (a[M] per realization). Grid states go to rec[(k * R + r) * S + s] (coalesced across species).
#include "ssa_common.cuh"

#define DS_FULL 0xffffffffu
#ifndef DS_MAX_STACK
#define DS_MAX_STACK 16
#endif
#ifndef DS_WARPS_PER_BLOCK
#define DS_WARPS_PER_BLOCK 4
#endif
#ifndef DS_MIN_BLOCKS
#define DS_MIN_BLOCKS 8  // 8 x 4 warps per SM: <= 64 registers, so 4,096 realizations run in one wave
#endif
#ifndef DS_X_SHARED
#define DS_X_SHARED 0
#endif
#ifndef DS_UP_SHARED
#define DS_UP_SHARED 1
#endif
#ifndef DS_GENERAL
#define DS_GENERAL 1  // 0: no firing table is longer than 32 items or has a general dependent
#endif
#ifndef DS_CHECK_PROPENSITY
#define DS_CHECK_PROPENSITY 1  // 0: no mass-action propensity can be negative, NaN or infinite
#endif
#define DS_MAX_LEVELS 6
#ifndef DS_RAISE_BATCH
#define DS_RAISE_BATCH 2  // touched blocks whose entries are read together
#endif
// firing-table items (int4): change (species, delta, 0, 0); dependent (reaction, reactant 1, reactant
// 2, DS_ITEM_MASS) with reactant = species | stoichiometry << DS_RCT_SHIFT or -1 (none); dependent
// (reaction, 0, 0, DS_ITEM_GENERAL) for any other propensity; (0, 0, 0, DS_ITEM_NONE) beyond the end.
#define DS_ITEM_CHANGE 0
#define DS_ITEM_MASS 1
#define DS_ITEM_GENERAL 2
#define DS_ITEM_NONE 3
#define DS_RCT_SHIFT 26
#define DS_RCT_MASK ((1 << DS_RCT_SHIFT) - 1)

// inclusive prefix sum across the warp (fixed order); lane 31 ends with the total
__device__ __forceinline__ double ds_warp_scan(double v, const int lane) {
#pragma unroll
    for (int m = 1; m < 32; m <<= 1) {
        const double o = __shfl_up_sync(DS_FULL, v, m);
        if (lane >= m) v = v + o;
    }
    return v;
}

// the lowest of the lanes' values (every lane gets it)
__device__ __forceinline__ int ds_warp_min(int v) {
#pragma unroll
    for (int m = 16; m >= 1; m >>= 1) { const int o = __shfl_xor_sync(DS_FULL, v, m); v = o < v ? o : v; }
    return v;
}

// one level of the selection from its inclusive prefix sums (a lane past the level's end holds 0):
// the first lane whose sum exceeds target (its entry is positive, as sums never decrease), or, if
// rounding leaves none, the last lane whose entry adds to the sum; target becomes the rest inside it
__device__ __forceinline__ int ds_pick(const double cum, double& target, const int lane) {
    const unsigned over = __ballot_sync(DS_FULL, cum > target);
    int f = __ffs(over) - 1;
    if (!over) {
        const double prev = __shfl_up_sync(DS_FULL, cum, 1);
        const unsigned pos = __ballot_sync(DS_FULL, cum > (lane ? prev : 0.0));
        f = pos ? 31 - __clz(pos) : 0;
    }
    const double before = __shfl_sync(DS_FULL, cum, (f + 31) & 31);
    if (f) target = target - before;
    return f;
}

// per-warp view of the levels: sizes and offsets (into `up`) of levels 0..L, and where they live
struct ds_levels {
    const int* size;
    const int* off;
    double* up;   // levels 1..L-1: entries
    double* upc;  // levels 1..L-1: inclusive prefix sums within each block of 32
    double* ac;   // level 0: inclusive prefix sums within each block of 32 (the entries are in a)
    int L;
};

// a block of 32 entries at level l (lane i holds entry 32b + i, 0 past the end): store its prefix
// sums (level 0 in ac, above in upc) and return its total, the entry b of level l + 1 (every lane)
__device__ __forceinline__ double ds_block_sums(const ds_levels& lv, const int l, const int b, const double v,
                                                const int lane) {
    const double cum = ds_warp_scan(v, lane);
    const int c = (b << 5) + lane;
    if (c < lv.size[l]) {
        if (l == 0) lv.ac[c] = cum;
        else lv.upc[lv.off[l] + c] = cum;
    }
    return __shfl_sync(DS_FULL, cum, 31);
}

// level 1 entry b is now s (every lane holds it): the sums above it, up to the top entry (registers)
__device__ __forceinline__ void ds_raise(const ds_levels& lv, int b, double s, double& top, const int lane) {
    for (int l = 1; l < lv.L; ++l) {
        if (lane == 0) lv.up[lv.off[l] + b] = s;
        __syncwarp();
        b >>= 5;
        const int c = (b << 5) + lane;
        s = ds_block_sums(lv, l, b, c < lv.size[l] ? lv.up[lv.off[l] + c] : 0.0, lane);
    }
    if (lane == b) top = s;
}

// recompute the level-0 blocks whose lanes lead in `lead` (their block index in `bl`): the fired block
// b0 from its entries v0 (registers), the others read from a (after the writes), DS_RAISE_BATCH at a time
__device__ __forceinline__ void ds_raise_blocks(const ds_levels& lv, unsigned lead, const int bl, const int b0,
                                                const double v0, const double* __restrict__ a, const int M,
                                                double& top, const int lane) {
    while (lead) {
        int b[DS_RAISE_BATCH];
        double v[DS_RAISE_BATCH];
#pragma unroll
        for (int i = 0; i < DS_RAISE_BATCH; ++i) {
            b[i] = -1;
            if (lead) { b[i] = __shfl_sync(DS_FULL, bl, __ffs(lead) - 1); lead &= lead - 1; }
        }
#pragma unroll
        for (int i = 0; i < DS_RAISE_BATCH; ++i) {
            const int c = (b[i] << 5) + lane;
            v[i] = b[i] == b0 ? v0 : (b[i] >= 0 && c < M ? a[c] : 0.0);
        }
#pragma unroll
        for (int i = 0; i < DS_RAISE_BATCH; ++i)
            if (b[i] >= 0) ds_raise(lv, b[i], ds_block_sums(lv, 0, b[i], v[i], lane), top, lane);
    }
}

extern "C" __global__ void __launch_bounds__(32 * DS_WARPS_PER_BLOCK, DS_MIN_BLOCKS) ssa_warp(
    const int R, const unsigned long long real0, const uint32_t seed, const int S, const int M, const int K,
    const int L_arg, const int* __restrict__ level_off, const int* __restrict__ level_size, const int LV,
    const long long* __restrict__ x0, const signed char* __restrict__ kind, const double* __restrict__ theta,
    const int* __restrict__ rct_start, const int* __restrict__ rct_species, const int* __restrict__ rct_stoich,
    const int* __restrict__ law_start, const int* __restrict__ law_op, const double* __restrict__ law_arg,
    const int* __restrict__ item_start, const int4* __restrict__ items,
    const double* __restrict__ grid, const long long max_events,
    int* __restrict__ xs_, double* __restrict__ a_, double* __restrict__ up_, int* __restrict__ rec,
    unsigned long long* __restrict__ firings, unsigned long long* __restrict__ events, int* __restrict__ errors
    DS_BATCH_ARGS)
{
#ifdef DS_LEVELS
    const int L = DS_LEVELS;  // fixed at compile time: the level loops unroll
#else
    const int L = L_arg;
#endif
    __shared__ double2 logtab[DS_NEGLOG_ENTRIES];
    __shared__ int lsize[DS_MAX_LEVELS + 1], loff[DS_MAX_LEVELS + 1];
    __shared__ double2 batch[DS_WARPS_PER_BLOCK][32];  // per warp: (-log u1, u2) of events (e & ~31) + i
    extern __shared__ double ds_dyn[];
    ds_neglog_load(logtab);
    if (threadIdx.x <= L) { lsize[threadIdx.x] = level_size[threadIdx.x]; loff[threadIdx.x] = level_off[threadIdx.x]; }
    __syncthreads();
    const int lane = threadIdx.x & 31;
    const int w = threadIdx.x >> 5;
    const int r = blockIdx.x * DS_WARPS_PER_BLOCK + w;
    if (r >= R) return;  // whole warps only
    DS_BATCH_POINT(r, R)
#ifdef DS_BATCHED
    if (!DS_LIVE(r, R)) return;
    DS_POINT_TABLES(S, M)
#endif
    // this realization's arrays: a_ holds [entries][prefix sums] of level 0 (2M), up_ (or dynamic
    // shared memory, per warp) [entries][prefix sums] of levels 1..L-1 (2LV), then x (if placed there)
    const int wdoubles = (DS_UP_SHARED ? 2 * LV : 0) + (DS_X_SHARED ? (S + 1) / 2 : 0);
    double* const mine = ds_dyn + (unsigned long long)w * wdoubles;
    double* const up = DS_UP_SHARED ? mine : up_ + (unsigned long long)r * 2 * LV;
    int* const x = DS_X_SHARED ? (int*)(mine + (DS_UP_SHARED ? 2 * LV : 0)) : xs_ + (unsigned long long)r * S;
    double* const a = a_ + (unsigned long long)r * 2 * M;
    const ds_levels lv{lsize, loff, up, up + LV, a + M, L};
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
        a[d] = v;
    }
    __syncwarp();
    if (__any_sync(DS_FULL, bad < M)) err = DS_ERROR_WORD(ERR_PROPENSITY, ds_warp_min(bad));
    double top = L == 0 && lane < M ? a[lane] : 0.0;
    for (int l = 0; l < L; ++l) {  // the sums, bottom-up
        for (int b = 0; b < lsize[l + 1]; ++b) {
            const int c = (b << 5) + lane;
            const double s = ds_block_sums(lv, l, b, c < lsize[l] ? (l == 0 ? a[c] : up[loff[l] + c]) : 0.0, lane);
            if (l + 1 == L) { if (lane == b) top = s; }
            else if (lane == 0) up[loff[l + 1] + b] = s;
        }
        __syncwarp();
    }
    double cum_top = ds_warp_scan(top, lane);
    double a0 = __shfl_sync(DS_FULL, cum_top, 31);

    double t = 0.0;
    int k = 0;
    double gk = grid[0];
    unsigned long long e = 0ull;
    while (err == ERR_NONE) {
        if ((e & 31ull) == 0ull) {  // lane i draws event e + i's uniforms
            double u1, u2;
            ds_event_uniforms(e + (unsigned long long)lane, DS_SEED, rid, u1, u2);
            batch[w][lane] = make_double2(ds_neglog_u01(u1, logtab), u2);
            __syncwarp();
        }
        double target = 0.0, t_new = INF;
        if (a0 > 0.0) {
            const double2 u = batch[w][e & 31ull];
            t_new = t + u.x / a0;  // ds_waiting_time(u1, a0)
            target = u.y * a0;
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
        // ---- selection, from the top down: one read of prefix sums and one vote per level
        int blk = ds_pick(cum_top, target, lane);
        for (int l = L - 1; l >= 1; --l) {
            const int c = (blk << 5) + lane;
            blk = (blk << 5) + ds_pick(c < lsize[l] ? lv.upc[loff[l] + c] : 0.0, target, lane);
        }
        int j = blk, c0 = lane;
        double v0 = top;  // level 0 entries of the fired reaction's block (registers)
        double cv = 0.0;
        if (L > 0) {
            c0 = (blk << 5) + lane;
            if (c0 < M) { v0 = a[c0]; cv = lv.ac[c0]; } else v0 = 0.0;
        }
        const int qs = c0 < M ? item_start[c0] : 0, qe = c0 < M ? item_start[c0 + 1] : 0;
        if (L > 0) j = (blk << 5) + ds_pick(cv, target, lane);
        const int f = j & 31, b0 = j >> 5;
        const int q0 = __shfl_sync(DS_FULL, qs, f), nq = __shfl_sync(DS_FULL, qe, f) - q0;
        // ---- firing
        bool neg = false, ovf = false;
        int4 it = make_int4(0, 0, 0, DS_ITEM_NONE);
#if DS_GENERAL
        bool fast = nq <= 32;  // one item per lane, mass-action dependents only
        if (fast) {
            if (lane < nq) it = items[q0 + lane];
            fast = !__any_sync(DS_FULL, it.w == DS_ITEM_GENERAL);
        }
        if (fast) {
#else  // every firing table is short and simple (distsim/ssa/gpu.py warp_general)
        if (lane < nq) it = items[q0 + lane];
        {
#endif
            const bool chg = it.w == DS_ITEM_CHANGE, dep = it.w == DS_ITEM_MASS;
            int xa = 0, xb = 0;
            double v = 0.0;
            if (chg) xa = x[it.x];
            if (dep) {
                v = theta[it.x];
                if (it.y >= 0) xa = x[it.y & DS_RCT_MASK];
                if (it.z >= 0) xb = x[it.z & DS_RCT_MASK];
            }
            const int nc = __popc(__ballot_sync(DS_FULL, chg));  // the changes come first
            __syncwarp();  // every count is read before any is written
            if (chg) {
                const int nx = (int)((unsigned int)xa + (unsigned int)it.y);
                x[it.x] = nx;
                if (nx < 0) { if (it.y > 0) ovf = true; else neg = true; }
            }
            for (int i = 0; i < nc; ++i) {  // the reactants' counts after the firing
                const int sc = __shfl_sync(DS_FULL, it.x, i), dc = __shfl_sync(DS_FULL, it.y, i);
                if (dep && it.y >= 0 && (it.y & DS_RCT_MASK) == sc) xa += dc;
                if (dep && it.z >= 0 && (it.z & DS_RCT_MASK) == sc) xb += dc;
            }
            if (__any_sync(DS_FULL, ovf)) { err = DS_ERROR_WORD(ERR_OVERFLOW, j); break; }
            if (__any_sync(DS_FULL, neg)) { err = DS_ERROR_WORD(ERR_NEGATIVE, j); break; }
            if (lane == 0) atomicAdd(&firings[j], 1ull);
            if (dep) {  // theta * C(x_a, r_a) * C(x_b, r_b), the operation order of ds_mass_action
                if (it.y >= 0) v = v * ds_choose((double)xa, it.y >> DS_RCT_SHIFT);
                if (it.z >= 0) v = v * ds_choose((double)xb, it.z >> DS_RCT_SHIFT);
            }
#if DS_CHECK_PROPENSITY
            if (dep && ds_bad_propensity(v) && it.x < bad) bad = it.x;
            if (__any_sync(DS_FULL, bad < M)) { err = DS_ERROR_WORD(ERR_PROPENSITY, ds_warp_min(bad)); ++e; break; }
#endif
            if (dep) a[it.x] = v;
            const int bl = it.x >> 5;
            const unsigned in0 = __ballot_sync(DS_FULL, dep && bl == b0);
            for (unsigned m = in0; m; m &= m - 1) {  // into v0
                const int q = __ffs(m) - 1;
                const int dq = __shfl_sync(DS_FULL, it.x, q);
                const double vq = __shfl_sync(DS_FULL, v, q);
                if (lane == (dq & 31)) v0 = vq;
            }
            if (L == 0) {
                top = v0;
            } else if (in0 == __ballot_sync(DS_FULL, dep)) {  // every dependent is in the fired block (or none)
                if (in0) ds_raise(lv, b0, ds_block_sums(lv, 0, b0, v0, lane), top, lane);
            } else {  // dependents are sorted, so each block's first dependent leads it
                const int pb = __shfl_up_sync(DS_FULL, bl, 1);
                const bool pdep = __shfl_up_sync(DS_FULL, (int)dep, 1);
                const unsigned lead = __ballot_sync(DS_FULL, dep && (lane == 0 || !pdep || pb != bl));
                __syncwarp();  // the propensities written above are visible to every lane
                ds_raise_blocks(lv, lead, bl, b0, v0, a, M, top, lane);
            }
        }
#if DS_GENERAL
        else {  // a long firing table: the changes, then the dependents, 32 items at a time
            for (int q = q0 + lane; q < q0 + nq; q += 32) {
                const int4 it = items[q];
                if (it.w == DS_ITEM_CHANGE) {
                    const int nx = (int)((unsigned int)x[it.x] + (unsigned int)it.y);
                    x[it.x] = nx;
                    if (nx < 0) { if (it.y > 0) ovf = true; else neg = true; }
                }
            }
            __syncwarp();
            if (__any_sync(DS_FULL, ovf)) { err = DS_ERROR_WORD(ERR_OVERFLOW, j); break; }
            if (__any_sync(DS_FULL, neg)) { err = DS_ERROR_WORD(ERR_NEGATIVE, j); break; }
            if (lane == 0) atomicAdd(&firings[j], 1ull);
            for (int base = 0; base < nq; base += 32) {
                const int4 it = base + lane < nq ? items[q0 + base + lane] : make_int4(0, 0, 0, DS_ITEM_NONE);
                const bool dep = it.w == DS_ITEM_MASS || it.w == DS_ITEM_GENERAL;
                if (!__any_sync(DS_FULL, dep)) continue;
                const double v = dep ? ds_propensity(N, it.x, x, st) : 0.0;
                if (dep && ds_bad_propensity(v) && it.x < bad) bad = it.x;
                if (dep) a[it.x] = v;
                const int bl = it.x >> 5;
                const int pb = __shfl_up_sync(DS_FULL, bl, 1);
                const bool pdep = __shfl_up_sync(DS_FULL, (int)dep, 1);
                const unsigned lead = __ballot_sync(DS_FULL, dep && (lane == 0 || !pdep || pb != bl));
                __syncwarp();
                if (L == 0) top = lane < M ? a[lane] : 0.0;
                else ds_raise_blocks(lv, lead, bl, -1, 0.0, a, M, top, lane);
            }
            if (__any_sync(DS_FULL, bad < M)) { err = DS_ERROR_WORD(ERR_PROPENSITY, ds_warp_min(bad)); ++e; break; }
        }
#endif
        __syncwarp();  // the prefix sums written above are visible to every lane
        cum_top = ds_warp_scan(top, lane);
        a0 = __shfl_sync(DS_FULL, cum_top, 31);
        t = t_new;
        ++e;
    }
    if (lane == 0) {
        events[r] = e;
        errors[r] = err;
    }
}
