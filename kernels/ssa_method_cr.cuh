// Method 'cr' in kernels/ssa_generic.cu (distsim/ssa/methods/cr.py, which explains it): composition-
// rejection over groups of propensities with the same binary exponent, each group's sum kept exactly
// as two integer mantissa sums. The same operations in the same order as the CPU, so the same bits.
// aux (n_aux = 3M + 4 * DS_CR_G + 4): registered value [M], position [M], members [M], segment starts
// [G + 1], high and low mantissa sums [G], group values [G], then lo, hi, count.
// Interface: kernels/ssa_method_direct.cuh.
#pragma once
#include "kinetics.cuh"

#define DS_CR_G 2047
#define DS_CR_MAX_TRIALS 64
#define DS_CR_TWO27 134217728.0

struct ds_cr_layout {
    int pos, perm, start, sh, sl, gv, meta;
    __device__ __forceinline__ explicit ds_cr_layout(const int m)
        : pos(m), perm(2 * m), start(3 * m), sh(3 * m + DS_CR_G + 1), sl(3 * m + 2 * DS_CR_G + 1),
          gv(3 * m + 3 * DS_CR_G + 1), meta(3 * m + 4 * DS_CR_G + 1) {}
};

// group of v > 0 and the high / low parts of its 53-bit mantissa (exact)
__device__ __forceinline__ int ds_cr_split(const double v, double& hi, double& lo) {
    int ex;
    const double f = frexp(v, &ex);
    int e;
    double m;
    if (ex > -1022) { e = ex + 1022; m = ldexp(f, 53); }
    else { e = 0; m = ldexp(v, 1074); }
    hi = floor(m * (1.0 / DS_CR_TWO27));
    lo = m - hi * DS_CR_TWO27;
    return e;
}

__device__ __forceinline__ double ds_cr_value(const ds_col<double>& aux, const ds_cr_layout& L, const int e) {
    return (aux[L.sh + e] * DS_CR_TWO27 + aux[L.sl + e]) * ldexp(1.0, (e > 0 ? e : 1) - 1075);
}

__device__ __forceinline__ void ds_cr_put(const ds_col<double>& aux, const ds_cr_layout& L, const int p, const int d) {
    aux[L.perm + p] = (double)d;
    aux[L.pos + d] = (double)p;
}

// move reaction d from group g to group h (-1: no group), segment by segment
__device__ void ds_cr_move(const ds_col<double>& aux, const int m, const int d, int g, const int h) {
    const ds_cr_layout L(m);
    int lo = (int)aux[L.meta], hi = (int)aux[L.meta + 1], n = (int)aux[L.meta + 2];
    if (g < 0) {  // enter as the last member of the top group (the window grows to hold h)
        if (n == 0) {
            lo = hi = h;
            aux[L.start + h] = 0.0;
            aux[L.start + h + 1] = 0.0;
        }
        while (hi < h) { ++hi; aux[L.start + hi + 1] = (double)n; }
        while (lo > h) { --lo; aux[L.start + lo] = 0.0; }
        ds_cr_put(aux, L, n, d);
        ++n;
        aux[L.start + hi + 1] = (double)n;
        g = hi;
    } else if (h > hi) {
        while (hi < h) { ++hi; aux[L.start + hi + 1] = (double)n; }
    } else if (0 <= h && h < lo) {
        while (lo > h) { --lo; aux[L.start + lo] = 0.0; }
    }
    int p = (int)aux[L.pos + d];
    const int top = h < 0 ? hi + 1 : h;  // leaving: past the end of the top group
    while (g < top) {  // up: swap with the last member of g, which then ends one earlier
        const int last = (int)aux[L.start + g + 1] - 1;
        ds_cr_put(aux, L, p, (int)aux[L.perm + last]);
        ds_cr_put(aux, L, last, d);
        aux[L.start + g + 1] = (double)last;
        p = last;
        ++g;
    }
    while (h >= 0 && g > h) {  // down: swap with the first member of g, which then starts one later
        const int first = (int)aux[L.start + g];
        ds_cr_put(aux, L, p, (int)aux[L.perm + first]);
        ds_cr_put(aux, L, first, d);
        aux[L.start + g] = (double)(first + 1);
        p = first;
        --g;
    }
    if (h < 0) {  // d is now past the last member of the top group: drop it
        --n;
        aux[L.start + hi + 1] = (double)n;
    }
    while (hi >= lo && aux[L.start + hi] == aux[L.start + hi + 1]) --hi;
    while (lo <= hi && aux[L.start + lo] == aux[L.start + lo + 1]) { ++lo; aux[L.start + lo] = 0.0; }
    aux[L.meta] = (double)lo;
    aux[L.meta + 1] = (double)hi;
    aux[L.meta + 2] = (double)n;
}

__device__ __forceinline__ void ds_method_reset(const ds_col<double>& aux, const int n_aux) {
    for (int i = 0; i < n_aux; ++i) aux[i] = 0.0;
    const ds_cr_layout L((n_aux - (4 * DS_CR_G + 4)) / 3);
    aux[L.meta] = (double)DS_CR_G;  // an empty window: lo > hi
    aux[L.meta + 1] = -1.0;
}

__device__ __forceinline__ void ds_method_update(const ds_col<double>& a, const ds_col<double>& aux, const int n_aux,
                                                 const int d, const double v) {
    const int m = (n_aux - (4 * DS_CR_G + 4)) / 3;
    const ds_cr_layout L(m);
    const double old = aux[d];
    if (old == v) return;
    int g = -1, h = -1;
    double hi, lo;
    if (old > 0.0) {
        g = ds_cr_split(old, hi, lo);
        aux[L.sh + g] = aux[L.sh + g] - hi;
        aux[L.sl + g] = aux[L.sl + g] - lo;
        aux[L.gv + g] = ds_cr_value(aux, L, g);
    }
    if (v > 0.0) {
        h = ds_cr_split(v, hi, lo);
        aux[L.sh + h] = aux[L.sh + h] + hi;
        aux[L.sl + h] = aux[L.sl + h] + lo;
        aux[L.gv + h] = ds_cr_value(aux, L, h);
    }
    aux[d] = v;
    if (g != h) ds_cr_move(aux, m, d, g, h);
}

// a member of group grp with probability proportional to its propensity
__device__ __forceinline__ int ds_cr_member(const ds_col<double>& a, const ds_col<double>& aux, const ds_cr_layout& L,
                                            const unsigned long long e, const uint32_t seed, const uint32_t rid,
                                            const int grp) {
    const int first = (int)aux[L.start + grp];
    const int n = (int)aux[L.start + grp + 1] - first;
    const double bound = ldexp(1.0, grp - 1022);  // above every member of the group
    for (int t = 0; t < DS_CR_MAX_TRIALS; ++t) {
        const ds_u32x4 w = ds_philox4x32_10(ds_u32x4{(uint32_t)e, (uint32_t)(e >> 32), (uint32_t)t, 2u}, seed, rid);
        const int i = (int)(ds_u01_f64(w.x, w.y) * n);
        const int j = (int)aux[L.perm + first + (i < n ? i : n - 1)];
        if (ds_u01_f64(w.z, w.w) * bound < a[j]) return j;
    }
    const ds_u32x4 w = ds_philox4x32_10(ds_u32x4{(uint32_t)e, (uint32_t)(e >> 32), (uint32_t)DS_CR_MAX_TRIALS, 2u},
                                        seed, rid);
    const double target = ds_u01_f64(w.x, w.y) * aux[L.gv + grp];
    double c = 0.0;
    int j = (int)aux[L.perm + first];
    for (int q = first; q < first + n; ++q) {
        j = (int)aux[L.perm + q];
        c = c + a[j];
        if (c > target) break;
    }
    return j;
}

__device__ __forceinline__ double ds_method_event(const ds_col<double>& a, const ds_col<double>& aux, const int M,
                                                  const int n_aux, const unsigned long long e, const uint32_t seed,
                                                  const uint32_t rid, const double2* __restrict__ logtab, double& u) {
    const ds_cr_layout L(M);
    const int lo = (int)aux[L.meta], hi = (int)aux[L.meta + 1];
    double a0 = 0.0;
    for (int g = lo; g <= hi; ++g) a0 = a0 + aux[L.gv + g];
    u = 0.0;
    if (!(a0 > 0.0)) return __longlong_as_double(0x7ff0000000000000LL);
    double u1, u2;
    ds_event_uniforms(e, seed, rid, u1, u2);
    const double target = u2 * a0;
    double c = 0.0;
    int grp = -1;
    for (int g = lo; g <= hi; ++g) {
        if (aux[L.gv + g] > 0.0) {
            grp = g;
            c = c + aux[L.gv + g];
            if (c > target) break;
        }
    }
    u = (double)ds_cr_member(a, aux, L, e, seed, rid, grp);  // the reaction: ds_method_select reads it back
    return ds_waiting_time(u1, a0, logtab);
}

__device__ __forceinline__ int ds_method_select(const ds_col<double>& a, const ds_col<double>& aux, const int M,
                                                const int n_aux, const double winner) {
    return (int)winner;
}
