// Method 'direct' in kernels/ssa_generic.cu (distsim/ssa/methods/direct.py): a0 by summation in
// reaction order; the reaction is the first whose cumulative propensity exceeds u2 a0 (linear scan).
//
// A method header defines, for one realization (a: its propensities, aux: its n_aux work entries),
// the twins of the method's CPU functions:
//   ds_method_reset(aux, n_aux)                before the first propensities;
//   ds_method_update(a, aux, n_aux, d, v)      propensity d is now v (a[d] holds it already);
//   ds_method_event(a, aux, M, n_aux, e, seed, rid, logtab, u)
//                                              event e's waiting time (inf when no reaction can fire),
//                                              and in u what the selection needs;
//   ds_method_select(a, aux, M, n_aux, u)      the reaction that fires.
#pragma once
#include "kinetics.cuh"

__device__ __forceinline__ void ds_method_reset(const ds_col<double>& aux, const int n_aux) {}

__device__ __forceinline__ void ds_method_update(const ds_col<double>& a, const ds_col<double>& aux, const int n_aux,
                                                 const int d, const double v) {}

__device__ __forceinline__ double ds_method_event(const ds_col<double>& a, const ds_col<double>& aux, const int M,
                                                  const int n_aux, const unsigned long long e, const uint32_t seed,
                                                  const uint32_t rid, const double2* __restrict__ logtab, double& u) {
    double a0 = 0.0;
    for (int jj = 0; jj < M; ++jj) a0 = a0 + a[jj];
    u = 0.0;
    if (!(a0 > 0.0)) return __longlong_as_double(0x7ff0000000000000LL);
    double u1, u2;
    ds_event_uniforms(e, seed, rid, u1, u2);
    u = u2 * a0;
    return ds_waiting_time(u1, a0, logtab);
}

// the first reaction whose cumulative propensity exceeds target = u2 a0
__device__ __forceinline__ int ds_method_select(const ds_col<double>& a, const ds_col<double>& aux, const int M,
                                                const int n_aux, const double target) {
    double c = 0.0;
    int last = 0;
    for (int jj = 0; jj < M; ++jj) {
        if (a[jj] > 0.0) last = jj;
        c = c + a[jj];
        if (c > target) return jj;
    }
    return last;  // u2 a0 rounded up to a0: the last reaction that can fire
}
