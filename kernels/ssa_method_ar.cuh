// Method 'ar' in kernels/ssa_generic.cu (distsim/ssa/methods/ar.py): seed 001's parallel
// acceptance-rejection election with the exact exponential rating, an exponential race: reaction
// jj's clock is -log(u_jj) / a_jj (u_jj from words 2(jj%2), 2(jj%2)+1 of the Philox block at counter
// (e lo, e hi, jj / 2, 1)); the lowest clock wins and is tau. Interface: kernels/ssa_method_direct.cuh.
#pragma once
#include "kinetics.cuh"

__device__ __forceinline__ void ds_method_reset(const ds_col<double>& aux, const int n_aux) {}

__device__ __forceinline__ void ds_method_update(const ds_col<double>& a, const ds_col<double>& aux, const int n_aux,
                                                 const int d, const double v) {}

__device__ __forceinline__ double ds_method_event(const ds_col<double>& a, const ds_col<double>& aux, const int M,
                                                  const int n_aux, const unsigned long long e, const uint32_t seed,
                                                  const uint32_t rid, const double2* __restrict__ logtab, double& u) {
    double best = __longlong_as_double(0x7ff0000000000000LL);
    int j = -1;
    for (int jj = 0; jj < M; ++jj) {
        if (a[jj] > 0.0) {
            const ds_u32x4 w = ds_philox4x32_10(ds_u32x4{(uint32_t)e, (uint32_t)(e >> 32), (uint32_t)(jj >> 1), 1u}, seed, rid);
            const double uj = (jj & 1) == 0 ? ds_u01_f64(w.x, w.y) : ds_u01_f64(w.z, w.w);
            const double rating = ds_waiting_time(uj, a[jj], logtab);
            if (rating < best) { best = rating; j = jj; }
        }
    }
    u = (double)j;  // the race decides the reaction too: ds_method_select reads it back
    return best;
}

__device__ __forceinline__ int ds_method_select(const ds_col<double>& a, const ds_col<double>& aux, const int M,
                                                const int n_aux, const double winner) {
    return (int)winner;
}
