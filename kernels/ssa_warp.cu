// Exact SSA for large models, one warp (or a group of 16, 8 or 4 of its lanes) per realization (after
// seed 004, Komarov & D'Souza 2012). The propensities (level 0) are grouped into blocks of 32 and summed
// level by level (level l+1 entry b = the sum of level l entries 32b..32b+31) until a level has at most
// 32 entries: the top (in registers, or shared memory for 8 or 4 lanes). A realization's G = DS_LANES
// lanes hold E = 32 / G entries of a block each, in pairs (DS_POS: one 16-byte load per pair, the group's
// loads contiguous); a block's sum is each lane's entries added in order, then the lanes' sums scanned
// across the group, and selection takes the entries in that order (lane, entry). An event is
//   time: -log(u1) / a0; lane i computes event (e & ~(G-1)) + i's uniforms once per G events (the
//     same Philox words as every other kernel: key (seed, realization), counter = event);
//   selection: from the top down, at each level the first entry whose prefix sum exceeds u2 a0: the
//     lane by a ballot over the scanned lane sums, then the entry within that lane; one read per level
//     (levels 1..L-1 in shared memory, level 0, the propensities, in global memory);
//   firing: one lane per item of the reaction's firing table (its net changes, then its dependents
//     in order, each with its rate index and up to two reactants), so the counts are read once, in
//     parallel, and the dependents' reactant counts after the firing come from the changing lanes by
//     shuffles; dependents with a general kinetic law (or more than two reactants) are evaluated
//     from the counts in memory;
//   update: every touched block's sum is recomputed from its 32 entries (the fired block's entries
//     are already in registers), then the entries above it up to the top.
// Every entry is the sum of its 32 children in one fixed order, never an increment, so the sums carry
// no drift and a realization depends only on (seed, realization, G). The sums are taken in another
// order than the CPU's, so realizations match the CPU's in distribution, not bit for bit. Several
// realizations per warp (G < 32) spend fewer instructions per event where firing tables are short
// (distsim/ssa/gpu.py warp_lanes).
//
// Compile-time choices (distsim/ssa/gpu.py): DS_LANES; DS_X_SHARED keeps the counts x[S] in shared
// memory, DS_UP_SHARED levels 1..L-1 (otherwise they are per-realization global arrays); DS_GENERAL 0
// leaves out the path for long firing tables and general dependents when a model has none (then
// DS_STRIDE > 0 pads every firing table to DS_STRIDE items, so none needs item_start), and
// DS_CHECK_PROPENSITY 0 the checks of mass-action propensities that cannot be bad. Level 0 is global
// (a[Mp] per realization, M padded with zeros to whole blocks). Grid states go to rec[(k * R + r) * S + s]
// (coalesced across species).
#include "ssa_common.cuh"

#ifndef DS_LANES
#define DS_LANES 32  // lanes per realization: 32 (a warp), 16, 8 or 4
#endif
#define DS_LOG_LANES (DS_LANES == 32 ? 5 : DS_LANES == 16 ? 4 : DS_LANES == 8 ? 3 : 2)
static_assert(DS_LANES == 32 || DS_LANES == 16 || DS_LANES == 8 || DS_LANES == 4, "DS_LANES: 32, 16, 8 or 4");
#define DS_E (32 / DS_LANES)  // entries of a block per lane
#define DS_LOW (DS_LANES == 32 ? 0xffffffffu : (1u << DS_LANES) - 1u)  // a group's lanes, from its first
// lane i of a group holds entries e = 0..E-1 of a block at positions DS_POS(i, e): pairs, the group's
// lanes side by side (lane i: 2i, 2i+1, then 2i+2G, 2i+2G+1, ...), so one 16-byte load per pair and the
// group reads 16 G contiguous bytes per load; the block's entries are taken in the order (lane, e)
#define DS_POS(i, e) (DS_E == 1 ? (i) : (((e) >> 1) << (DS_LOG_LANES + 1)) | ((i) << 1) | ((e) & 1))
#define DS_LANE_OF(p) (DS_E == 1 ? (p) : ((p) >> 1) & (DS_LANES - 1))
#define DS_ENTRY_OF(p) (DS_E == 1 ? 0 : (((p) >> (DS_LOG_LANES + 1)) << 1) | ((p) & 1))
#ifndef DS_MAX_STACK
#define DS_MAX_STACK 16
#endif
#ifndef DS_WARPS_PER_BLOCK
#define DS_WARPS_PER_BLOCK 4
#endif
#define DS_GROUPS (32 * DS_WARPS_PER_BLOCK / DS_LANES)  // realizations per thread block
#ifndef DS_MIN_BLOCKS
#define DS_MIN_BLOCKS 8  // 8 x 4 warps per SM: <= 64 registers
#endif
#ifndef DS_X_SHARED
#define DS_X_SHARED 0
#endif
#ifndef DS_UP_SHARED
#define DS_UP_SHARED 1
#endif
#ifndef DS_GENERAL
#define DS_GENERAL 1  // 0: no firing table is longer than G items or has a general dependent
#endif
#ifndef DS_CHECK_PROPENSITY
#define DS_CHECK_PROPENSITY 1  // 0: no mass-action propensity can be negative, NaN or infinite
#endif
#ifndef DS_STRIDE
#define DS_STRIDE 0  // > 0: reaction j's firing table is items[j * DS_STRIDE ...], padded (no item_start)
#endif
static_assert(DS_STRIDE == 0 || (!DS_GENERAL && DS_STRIDE <= DS_LANES), "DS_STRIDE: short, simple tables only");
#ifndef DS_TOP_SHARED
#define DS_TOP_SHARED 0  // 1: the top level in shared memory (32 doubles per realization), not registers
#endif
#define DS_MAX_LEVELS 6
#ifndef DS_RAISE_BATCH
#define DS_RAISE_BATCH (DS_E > 2 ? 1 : 2)  // touched blocks whose entries are read together (registers allowing)
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

// a realization's lanes: the warp's lanes base..base+G-1 (mask), and this lane's place among them;
// every collective below takes the group's mask, so groups of one warp may diverge
struct ds_group {
    unsigned mask;
    int base, lane;
};

// bit i: lane i of the group. For groups narrower than a warp the ballot is taken by shuffles: a vote
// whose mask differs between the warp's groups is run once per group (nvcc 13, sm_90: 8 times at
// G = 4), a shuffle once for the warp when it is converged (DS_VOTE_SHFL 0: the vote, to measure)
#ifndef DS_VOTE_SHFL
#define DS_VOTE_SHFL 1
#endif
__device__ __forceinline__ unsigned ds_ballot(const ds_group& g, const bool p) {
#if DS_VOTE_SHFL && DS_LANES < 32
    unsigned b = (unsigned)p << g.lane;
#pragma unroll
    for (int m = 1; m < DS_LANES; m <<= 1) b |= __shfl_xor_sync(g.mask, b, m, DS_LANES);
    return b;
#else
    return (__ballot_sync(g.mask, p) >> g.base) & DS_LOW;
#endif
}
template <class T> __device__ __forceinline__ T ds_shfl(const ds_group& g, const T v, const int src) {
    return __shfl_sync(g.mask, v, src, DS_LANES);
}
template <class T> __device__ __forceinline__ T ds_shfl_up(const ds_group& g, const T v, const int d) {
    return __shfl_up_sync(g.mask, v, d, DS_LANES);
}
__device__ __forceinline__ bool ds_any(const ds_group& g, const bool p) {
#if DS_VOTE_SHFL && DS_LANES < 32
    return ds_ballot(g, p) != 0u;
#else
    return __any_sync(g.mask, p);
#endif
}
__device__ __forceinline__ void ds_sync(const ds_group& g) { __syncwarp(g.mask); }

// a block of 32 entries as the group holds it: lane i has entries DS_POS(i, 0 .. E - 1)
struct ds_row {
    double v[DS_E];
};

// block b of a level of n entries at src (0 past the end; every level is 16-byte aligned and padded
// with zeros to whole blocks, so a pair starting before n is read whole)
__device__ __forceinline__ ds_row ds_load(const ds_group& g, const double* src, const int b, const int n) {
    ds_row r;
#if DS_E == 1
#pragma unroll
    for (int e = 0; e < DS_E; ++e) {
        const int c = (b << 5) + DS_POS(g.lane, e);
        r.v[e] = c < n ? src[c] : 0.0;
    }
#else
#pragma unroll
    for (int e = 0; e < DS_E; e += 2) {
        const int c = (b << 5) + DS_POS(g.lane, e);
        const double2 p = c < n ? *reinterpret_cast<const double2*>(src + c) : make_double2(0.0, 0.0);
        r.v[e] = p.x;
        r.v[e + 1] = p.y;
    }
#endif
    return r;
}

// inclusive prefix sums of the lanes' sums (fixed order); lane G-1 ends with the block's total
__device__ __forceinline__ double ds_scan(const ds_group& g, const ds_row& r) {
    double v = r.v[0];
#pragma unroll
    for (int e = 1; e < DS_E; ++e) v = v + r.v[e];
#pragma unroll
    for (int m = 1; m < DS_LANES; m <<= 1) {
        const double o = ds_shfl_up(g, v, m);
        if (g.lane >= m) v = v + o;
    }
    return v;
}

// the block's total (every lane)
__device__ __forceinline__ double ds_total(const ds_group& g, const ds_row& r) {
    return ds_shfl(g, ds_scan(g, r), DS_LANES - 1);
}

// the lowest of the lanes' values (every lane gets it)
__device__ __forceinline__ int ds_group_min(const ds_group& g, int v) {
#pragma unroll
    for (int m = DS_LANES / 2; m >= 1; m >>= 1) {
        const int o = __shfl_xor_sync(g.mask, v, m, DS_LANES);
        v = o < v ? o : v;
    }
    return v;
}

// one level of the selection: the first entry of the block whose prefix sum exceeds target (its entry is
// positive, as sums never decrease), or, if rounding leaves none, the last entry that adds to the sum:
// first the lane (a ballot over the scanned lane sums), then the entry within it; target becomes the
// rest inside the entry (cum: ds_scan of the block)
__device__ __forceinline__ int ds_pick(const ds_group& g, const ds_row& r, const double cum, double& target) {
    const unsigned over = ds_ballot(g, cum > target);
    int f = __ffs(over) - 1;
    if (!over) {
        const double prev = ds_shfl_up(g, cum, 1);
        const unsigned pos = ds_ballot(g, cum > (g.lane ? prev : 0.0));
        f = pos ? 31 - __clz(pos) : 0;
    }
    const double before = ds_shfl(g, cum, (f + DS_LANES - 1) & (DS_LANES - 1));
    double t = f ? target - before : target;
#if DS_E == 1
    target = t;
    return f;
#else
    int k = -1;  // within lane f (every lane computes its own; lane f's is taken)
    double rest = t, p = 0.0;
#pragma unroll
    for (int e = 0; e < DS_E; ++e) {
        const double pn = p + r.v[e];
        if (k < 0 && pn > t) { k = e; rest = t - p; }
        p = pn;
    }
    if (k < 0) {
        p = 0.0;
#pragma unroll
        for (int e = 0; e < DS_E; ++e) {
            if (r.v[e] > 0.0) { k = e; rest = t - p; }
            p = p + r.v[e];
        }
        if (k < 0) k = 0;
    }
    target = ds_shfl(g, rest, f);
    return DS_POS(f, ds_shfl(g, k, f));
#endif
}

// entry i (< 32, a position) of a block the group holds is now v
__device__ __forceinline__ void ds_set(const ds_group& g, ds_row& r, const int i, const double v) {
    const int at = g.lane == DS_LANE_OF(i) ? DS_ENTRY_OF(i) : -1;
#pragma unroll
    for (int e = 0; e < DS_E; ++e) r.v[e] = e == at ? v : r.v[e];  // selects: r stays in registers
}

// the top level (at most 32 entries, the block above which nothing is summed): in registers with its
// scan kept from the last update, or (DS_TOP_SHARED, for wide rows that would crowd the registers) in
// shared memory, read and scanned when needed; written by set (one entry) or assign (a whole row)
struct ds_top {
#if DS_TOP_SHARED
    double* m;
    __device__ __forceinline__ ds_row row(const ds_group& g) const { return ds_load(g, m, 0, 32); }
    __device__ __forceinline__ double refresh(const ds_group& g) { return ds_total(g, row(g)); }
    __device__ __forceinline__ int pick(const ds_group& g, double& target) const {
        const ds_row r = row(g);
        return ds_pick(g, r, ds_scan(g, r), target);
    }
    __device__ __forceinline__ void set(const ds_group& g, const int i, const double v) { if (g.lane == 0) m[i] = v; }
    __device__ __forceinline__ void assign(const ds_group& g, const ds_row& r) {
#pragma unroll
        for (int e = 0; e < DS_E; ++e) m[DS_POS(g.lane, e)] = r.v[e];
    }
#else
    ds_row r;
    double cum;  // ds_scan(r), refreshed after every update
    __device__ __forceinline__ ds_row row(const ds_group&) const { return r; }
    __device__ __forceinline__ double refresh(const ds_group& g) {
        cum = ds_scan(g, r);
        return ds_shfl(g, cum, DS_LANES - 1);
    }
    __device__ __forceinline__ int pick(const ds_group& g, double& target) const { return ds_pick(g, r, cum, target); }
    __device__ __forceinline__ void set(const ds_group& g, const int i, const double v) { ds_set(g, r, i, v); }
    __device__ __forceinline__ void assign(const ds_group&, const ds_row& v) { r = v; }
#endif
};

// per-realization view of the levels: sizes and offsets (into `up`) of levels 0..L
struct ds_levels {
    const int* size;
    const int* off;
    double* up;  // levels 1..L-1
    int L;
};

// level 1 entry b is now s (every lane holds it): the sums above it, up to the top
__device__ __forceinline__ void ds_raise(const ds_group& g, const ds_levels& lv, int b, double s, ds_top& top) {
    for (int l = 1; l < lv.L; ++l) {
        if (g.lane == 0) lv.up[lv.off[l] + b] = s;
        ds_sync(g);
        b >>= 5;
        s = ds_total(g, ds_load(g, lv.up + lv.off[l], b, lv.size[l]));
    }
    top.set(g, b, s);
}

// the lanes whose dependent (of level-0 block bl) leads its block: dependents are sorted, so each
// block's first one
__device__ __forceinline__ unsigned ds_leads(const ds_group& g, const bool dep, const int bl) {
    const int pb = ds_shfl_up(g, bl, 1);
    const bool pdep = ds_shfl_up(g, (int)dep, 1);
    return ds_ballot(g, dep && (g.lane == 0 || !pdep || pb != bl));
}

// recompute the level-0 blocks whose lanes lead in `lead` (their block index in `bl`): the fired block
// b0 from its entries v0 (registers), the others read from a (after the writes), DS_RAISE_BATCH at a time
__device__ __forceinline__ void ds_raise_blocks(const ds_group& g, const ds_levels& lv, unsigned lead, const int bl,
                                                const int b0, const ds_row& v0, const double* __restrict__ a,
                                                const int M, ds_top& top) {
    while (lead) {
        int b[DS_RAISE_BATCH];
        ds_row v[DS_RAISE_BATCH];
#pragma unroll
        for (int i = 0; i < DS_RAISE_BATCH; ++i) {
            b[i] = -1;
            if (lead) { b[i] = ds_shfl(g, bl, __ffs(lead) - 1); lead &= lead - 1; }
        }
#pragma unroll
        for (int i = 0; i < DS_RAISE_BATCH; ++i) {
            const ds_row u = ds_load(g, a, b[i] >= 0 ? b[i] : 0, b[i] >= 0 && b[i] != b0 ? M : 0);
#pragma unroll
            for (int e = 0; e < DS_E; ++e) v[i].v[e] = b[i] == b0 ? v0.v[e] : u.v[e];
        }
#pragma unroll
        for (int i = 0; i < DS_RAISE_BATCH; ++i)
            if (b[i] >= 0) ds_raise(g, lv, b[i], ds_total(g, v[i]), top);
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
    __shared__ double2 batch[32 * DS_WARPS_PER_BLOCK];  // per group: (-log u1, u2) of events (e & ~(G-1)) + i
    __shared__ __align__(16) double topsh[DS_TOP_SHARED ? 32 * DS_GROUPS : 2];  // per group: the top level
    extern __shared__ __align__(16) double ds_dyn[];
    ds_neglog_load(logtab);
    if (threadIdx.x <= L) { lsize[threadIdx.x] = level_size[threadIdx.x]; loff[threadIdx.x] = level_off[threadIdx.x]; }
    __syncthreads();
    const int gbase = (threadIdx.x & 31) & ~(DS_LANES - 1);
    const ds_group g{DS_LOW << gbase, gbase, (int)(threadIdx.x & (DS_LANES - 1))};
    const int lane = g.lane;
    const int w = threadIdx.x >> DS_LOG_LANES;  // the group in the block
    double2* const mybatch = batch + (threadIdx.x & ~(DS_LANES - 1));
    const int r = blockIdx.x * DS_GROUPS + w;
    if (r >= R) return;  // whole groups only
    DS_BATCH_POINT(r, R)
#ifdef DS_BATCHED
    if (!DS_LIVE(r, R)) return;
    DS_POINT_TABLES(S, M)
#endif
    // this realization's arrays: a_ holds level 0 (M, padded to Mp), up_ (or dynamic shared memory, per
    // group) levels 1..L-1 (LV, each padded to whole blocks), then x (if placed there, padded to 16 bytes)
    const int Mp = (M + 31) & ~31;
    const int wdoubles = (DS_UP_SHARED ? LV : 0) + (DS_X_SHARED ? (S + 3) / 4 * 2 : 0);
    double* const mine = ds_dyn + (unsigned long long)w * wdoubles;
    double* const up = DS_UP_SHARED ? mine : up_ + (unsigned long long)r * LV;
    int* const x = DS_X_SHARED ? (int*)(mine + (DS_UP_SHARED ? LV : 0)) : xs_ + (unsigned long long)r * S;
    double* const a = a_ + (unsigned long long)r * Mp;
    const ds_levels lv{lsize, loff, up, L};
    const uint32_t rid = DS_RID(real0, r);
    const double INF = __longlong_as_double(0x7ff0000000000000LL);
    const ds_reactions N{kind, theta, rct_start, rct_species, rct_stoich, law_start, law_op, law_arg};
    double st[DS_MAX_STACK];  // kinetic-law stack
    int err = ERR_NONE;

    for (int s = lane; s < S; s += DS_LANES) x[s] = (int)x0[s];
    ds_sync(g);
    int bad = M;  // the lowest reaction with a bad propensity (M: none), the CPU's first in order
    for (int d = lane; d < M; d += DS_LANES) {
        const double v = ds_propensity(N, d, x, st);
        if (ds_bad_propensity(v) && d < bad) bad = d;
        a[d] = v;
    }
    for (int d = M + lane; d < Mp; d += DS_LANES) a[d] = 0.0;  // the padding
    for (int d = lane; d < LV; d += DS_LANES) up[d] = 0.0;  // the levels' padding (their entries follow)
    ds_sync(g);
    if (ds_any(g, bad < M)) err = DS_ERROR_WORD(ERR_PROPENSITY, ds_group_min(g, bad));
    ds_top top;
#if DS_TOP_SHARED
    top.m = topsh + w * 32;
#endif
    top.assign(g, ds_load(g, a, 0, L == 0 ? M : 0));
    ds_sync(g);
    for (int l = 0; l < L; ++l) {  // the sums, bottom-up
        for (int b = 0; b < lsize[l + 1]; ++b) {
            const double s = ds_total(g, ds_load(g, l == 0 ? a : up + loff[l], b, lsize[l]));
            if (l + 1 == L) top.set(g, b, s);
            else if (lane == 0) up[loff[l + 1] + b] = s;
        }
        ds_sync(g);
    }
    double a0 = top.refresh(g);

    double t = 0.0;
    int k = 0;
    double gk = grid[0];
    unsigned long long e = 0ull;
    while (err == ERR_NONE) {
        if ((e & (DS_LANES - 1)) == 0ull) {  // lane i draws event e + i's uniforms
            double u1, u2;
            ds_event_uniforms(e + (unsigned long long)lane, DS_SEED, rid, u1, u2);
            mybatch[lane] = make_double2(ds_neglog_u01(u1, logtab), u2);
            ds_sync(g);
        }
        double target = 0.0, t_new = INF;
        if (a0 > 0.0) {
            const double2 u = mybatch[e & (DS_LANES - 1)];
            t_new = t + u.x / a0;  // ds_waiting_time(u1, a0)
            target = u.y * a0;
        }
        while (k < K && gk < t_new) {  // record the grid points passed before the event
            int* out = rec + ((unsigned long long)k * R + r) * S;
            for (int s = lane; s < S; s += DS_LANES) out[s] = x[s];
            ++k;
            gk = grid[k < K ? k : K - 1];
        }
        if (k >= K) break;
        if (max_events > 0 && e >= (unsigned long long)max_events) {
            for (; k < K; ++k) {
                int* out = rec + ((unsigned long long)k * R + r) * S;
                for (int s = lane; s < S; s += DS_LANES) out[s] = x[s];
            }
            err = ERR_MAX_EVENTS;
            break;
        }
        // ---- selection, from the top down: one read and one vote per level
        int blk = top.pick(g, target);
        for (int l = L - 1; l >= 1; --l) {
            const ds_row u = ds_load(g, up + loff[l], blk, lsize[l]);
            blk = (blk << 5) + ds_pick(g, u, ds_scan(g, u), target);
        }
        int j = blk;
        ds_row v0 = ds_load(g, a, blk, L > 0 ? M : 0);  // level 0 entries of the fired reaction's block
        if (L == 0) v0 = top.row(g);
        else j = (blk << 5) + ds_pick(g, v0, ds_scan(g, v0), target);
        const int b0 = j >> 5;
#if DS_STRIDE
        const int q0 = j * DS_STRIDE, nq = DS_STRIDE;  // padded with DS_ITEM_NONE
#else
        const int q0 = item_start[j], nq = item_start[j + 1] - q0;
#endif
        // ---- firing
        bool neg = false, ovf = false;
        int4 it = make_int4(0, 0, 0, DS_ITEM_NONE);
#if DS_GENERAL
        bool fast = nq <= DS_LANES;  // one item per lane, mass-action dependents only
        if (fast) {
            if (lane < nq) it = items[q0 + lane];
            fast = !ds_any(g, it.w == DS_ITEM_GENERAL);
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
            const int nc = __popc(ds_ballot(g, chg));  // the changes come first
            ds_sync(g);  // every count is read before any is written
            if (chg) {
                const int nx = (int)((unsigned int)xa + (unsigned int)it.y);
                x[it.x] = nx;
                if (nx < 0) { if (it.y > 0) ovf = true; else neg = true; }
            }
            for (int i = 0; i < nc; ++i) {  // the reactants' counts after the firing
                const int sc = ds_shfl(g, it.x, i), dc = ds_shfl(g, it.y, i);
                if (dep && it.y >= 0 && (it.y & DS_RCT_MASK) == sc) xa += dc;
                if (dep && it.z >= 0 && (it.z & DS_RCT_MASK) == sc) xb += dc;
            }
            if (ds_any(g, ovf)) { err = DS_ERROR_WORD(ERR_OVERFLOW, j); break; }
            if (ds_any(g, neg)) { err = DS_ERROR_WORD(ERR_NEGATIVE, j); break; }
            if (lane == 0) atomicAdd(&firings[j], 1ull);
            if (dep) {  // theta * C(x_a, r_a) * C(x_b, r_b), the operation order of ds_mass_action
                if (it.y >= 0) v = v * ds_choose((double)xa, it.y >> DS_RCT_SHIFT);
                if (it.z >= 0) v = v * ds_choose((double)xb, it.z >> DS_RCT_SHIFT);
            }
#if DS_CHECK_PROPENSITY
            if (dep && ds_bad_propensity(v) && it.x < bad) bad = it.x;
            if (ds_any(g, bad < M)) { err = DS_ERROR_WORD(ERR_PROPENSITY, ds_group_min(g, bad)); ++e; break; }
#endif
            if (dep) a[it.x] = v;
            const int bl = it.x >> 5;
            const unsigned in0 = ds_ballot(g, dep && bl == b0);
            for (unsigned m = in0; m; m &= m - 1) {  // into v0
                const int q = __ffs(m) - 1;
                ds_set(g, v0, ds_shfl(g, it.x, q) & 31, ds_shfl(g, v, q));
            }
            if (L == 0) {
                top.assign(g, v0);
            } else if (in0 == ds_ballot(g, dep)) {  // every dependent is in the fired block (or none)
                if (in0) ds_raise(g, lv, b0, ds_total(g, v0), top);
            } else {
                const unsigned lead = ds_leads(g, dep, bl);
                ds_sync(g);  // the propensities written above are visible to every lane
                ds_raise_blocks(g, lv, lead, bl, b0, v0, a, M, top);
            }
        }
#if DS_GENERAL
        else {  // a long firing table: the changes, then the dependents, G items at a time
            for (int q = q0 + lane; q < q0 + nq; q += DS_LANES) {
                const int4 it = items[q];
                if (it.w == DS_ITEM_CHANGE) {
                    const int nx = (int)((unsigned int)x[it.x] + (unsigned int)it.y);
                    x[it.x] = nx;
                    if (nx < 0) { if (it.y > 0) ovf = true; else neg = true; }
                }
            }
            ds_sync(g);
            if (ds_any(g, ovf)) { err = DS_ERROR_WORD(ERR_OVERFLOW, j); break; }
            if (ds_any(g, neg)) { err = DS_ERROR_WORD(ERR_NEGATIVE, j); break; }
            if (lane == 0) atomicAdd(&firings[j], 1ull);
            for (int base = 0; base < nq; base += DS_LANES) {
                const int4 it = base + lane < nq ? items[q0 + base + lane] : make_int4(0, 0, 0, DS_ITEM_NONE);
                const bool dep = it.w == DS_ITEM_MASS || it.w == DS_ITEM_GENERAL;
                if (!ds_any(g, dep)) continue;
                const double v = dep ? ds_propensity(N, it.x, x, st) : 0.0;
                if (dep && ds_bad_propensity(v) && it.x < bad) bad = it.x;
                if (dep) a[it.x] = v;
                const int bl = it.x >> 5;
                const unsigned lead = ds_leads(g, dep, bl);
                ds_sync(g);
                if (L == 0) top.assign(g, ds_load(g, a, 0, M));
                else ds_raise_blocks(g, lv, lead, bl, -1, ds_row{}, a, M, top);
            }
            if (ds_any(g, bad < M)) { err = DS_ERROR_WORD(ERR_PROPENSITY, ds_group_min(g, bad)); ++e; break; }
        }
#endif
        ds_sync(g);  // the sums written above are visible to every lane
        a0 = top.refresh(g);
        t = t_new;
        ++e;
    }
    if (lane == 0) {
        events[r] = e;
        errors[r] = err;
    }
}
