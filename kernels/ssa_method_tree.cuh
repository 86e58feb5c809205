// Method 'tree' in kernels/ssa_generic.cu (distsim/ssa/methods/tree.py): a binary sum tree over the
// propensities in aux (n_aux = 2P, P the power of two >= M: node i sums nodes 2i and 2i + 1, leaf
// P + d holds a_d), O(log M) update and selection. Interface: kernels/ssa_method_direct.cuh.
#pragma once
#include "kinetics.cuh"

__device__ __forceinline__ void ds_method_reset(const ds_col<double>& aux, const int n_aux) {
    for (int i = 0; i < n_aux; ++i) aux[i] = 0.0;
}

__device__ __forceinline__ void ds_method_update(const ds_col<double>& a, const ds_col<double>& aux, const int n_aux,
                                                 const int d, const double v) {
    const int P = n_aux >> 1;
    int i = (P + d) >> 1;
    aux[P + d] = v;
    while (i >= 1) { aux[i] = aux[2 * i] + aux[2 * i + 1]; i >>= 1; }
}

__device__ __forceinline__ double ds_method_event(const ds_col<double>& a, const ds_col<double>& aux, const int M,
                                                  const int n_aux, const unsigned long long e, const uint32_t seed,
                                                  const uint32_t rid, const double2* __restrict__ logtab, double& u) {
    const double a0 = aux[1];
    u = 0.0;
    if (!(a0 > 0.0)) return __longlong_as_double(0x7ff0000000000000LL);
    double u1, u2;
    ds_event_uniforms(e, seed, rid, u1, u2);
    u = u2 * a0;
    return ds_waiting_time(u1, a0, logtab);
}

// descend from the root to the leaf whose cumulative range holds target = u2 a0
__device__ __forceinline__ int ds_method_select(const ds_col<double>& a, const ds_col<double>& aux, const int M,
                                                const int n_aux, double target) {
    const int P = n_aux >> 1;
    int i = 1;
    while (i < P) {
        const double left = aux[2 * i];
        if (target < left) i = 2 * i;
        else { target = target - left; i = 2 * i + 1; }
    }
    int j = i - P;
    if (j >= M || a[j] <= 0.0) {  // rounding at a boundary: the nearest reaction that can fire
        j = j < M - 1 ? j : M - 1;
        while (j > 0 && a[j] <= 0.0) --j;
        while (j < M - 1 && a[j] <= 0.0) ++j;
    }
    return j;
}
