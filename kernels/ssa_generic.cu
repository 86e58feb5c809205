// Exact SSA, one realization per thread, for any model size: the loop of distsim/ssa/cpu.py
// (run_realization) with the same floating-point operation order, so CPU and GPU give the same
// realizations (compile with --fmad=false). The selection method is chosen at compile time
// (distsim/ssa/gpu.py generic_source defines them): DS_METHOD_HEADER, "ssa_method_NAME.cuh" (the
// method's cuda_header), and DS_NEEDS_DEPGRAPH 0 for a method that recomputes every propensity.
// Per-realization work arrays live in global memory with the realization index fastest
// ([item * R + r], ds_col), so a warp's accesses coalesce when its threads touch the same item.
#include "ssa_common.cuh"
#ifndef DS_METHOD_HEADER
#define DS_METHOD_HEADER "ssa_method_direct.cuh"
#endif
#include DS_METHOD_HEADER
#ifndef DS_NEEDS_DEPGRAPH
#define DS_NEEDS_DEPGRAPH 1
#endif

extern "C" __global__ void ssa_generic(
    const int R, const unsigned long long real0, const uint32_t seed, const int S, const int M, const int K,
    const int n_aux, const long long* __restrict__ x0, const signed char* __restrict__ kind,
    const double* __restrict__ theta, const int* __restrict__ rct_start, const int* __restrict__ rct_species,
    const int* __restrict__ rct_stoich, const int* __restrict__ chg_start, const int* __restrict__ chg_species,
    const int* __restrict__ chg_delta, const int* __restrict__ law_start, const int* __restrict__ law_op,
    const double* __restrict__ law_arg, const int* __restrict__ dep_start, const int* __restrict__ dep_list,
    const double* __restrict__ grid, const long long max_events,
    long long* __restrict__ xs_, double* __restrict__ a_, double* __restrict__ aux_, double* __restrict__ stack_,
    int* __restrict__ rec, unsigned long long* __restrict__ firings, unsigned long long* __restrict__ events,
    int* __restrict__ errors DS_BATCH_ARGS)
{
    __shared__ double2 logtab[DS_NEGLOG_ENTRIES];
    ds_neglog_load(logtab);
    __syncthreads();
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= R) return;
    DS_BATCH_POINT(r, R)
#ifdef DS_BATCHED
    if (!DS_LIVE(r, R)) return;
    DS_POINT_TABLES(S, M)
#endif
    const unsigned long long RR = (unsigned long long)R;
    const ds_col<long long> x{xs_ + r, RR};
    const ds_col<double> a{a_ + r, RR}, aux{aux_ + r, RR}, st{stack_ + r, RR};
    const ds_reactions N{kind, theta, rct_start, rct_species, rct_stoich, law_start, law_op, law_arg};
    const uint32_t rid = DS_RID(real0, r);
    for (int s = 0; s < S; ++s) x[s] = x0[s];
    ds_method_reset(aux, n_aux);
    double t = 0.0;
    int k = 0;
    unsigned long long e = 0ull;
    int j = -1;  // the reaction that fired (-1: initialisation, every propensity is computed)
    int err = ERR_NONE;
    while (true) {
        // (re)compute the propensities that changed: all of them at first, then j's dependents
        const bool every = j < 0 || !DS_NEEDS_DEPGRAPH;
        const int lo = every ? 0 : dep_start[j];
        const int hi = every ? M : dep_start[j + 1];
        for (int q = lo; q < hi; ++q) {
            const int d = every ? q : dep_list[q];
            const double v = ds_propensity(N, d, x, st);
            if (ds_bad_propensity(v)) { err = DS_ERROR_WORD(ERR_PROPENSITY, d); goto done; }
            a[d] = v;
            ds_method_update(a, aux, n_aux, d, v);
        }
        double u;
        const double t_new = t + ds_method_event(a, aux, M, n_aux, e, DS_SEED, rid, logtab, u);
        // record the grid points passed before the event
        while (k < K && grid[k] < t_new) {
            for (int s = 0; s < S; ++s) {
                const long long v = x[s];
                if (v > 2147483647LL) err = ERR_OVERFLOW;
                rec[((unsigned long long)k * S + s) * RR + r] = (int)v;
            }
            ++k;
        }
        if (k >= K) goto done;
        if (max_events > 0 && e >= (unsigned long long)max_events) {
            for (int kk = k; kk < K; ++kk)
                for (int s = 0; s < S; ++s) rec[((unsigned long long)kk * S + s) * RR + r] = (int)x[s];
            err = ERR_MAX_EVENTS;
            goto done;
        }
        // fire the selected reaction
        j = ds_method_select(a, aux, M, n_aux, u);
        t = t_new;
        for (int q = chg_start[j]; q < chg_start[j + 1]; ++q) {
            const long long v = x[chg_species[q]] + chg_delta[q];
            x[chg_species[q]] = v;
            if (v < 0) { err = DS_ERROR_WORD(ERR_NEGATIVE, j); goto done; }
        }
        atomicAdd(&firings[j], 1ull);
        ++e;
    }
done:
    events[r] = e;
    errors[r] = err;
}
