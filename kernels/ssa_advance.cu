// Advance given states by exact SSA for a time dt, one particle per thread: the twin of
// distsim/ssa/advance.py (advance_one) with the same floating-point operation order, so CPU and GPU
// give the same particles (compile with --fmad=false). Row r is particle p = r - g per of group
// g = r / per (a chain: its rate and law constants theta[g], law_arg[g]): Philox key (keys[g], p),
// event n of the call at counter (n, e_hi, 0, 0). States are rows xs[p * S + s] (the CPU's [N, S] layout); the work
// arrays are columns (ds_col) as in ssa_generic.cu. The method comes in as in ssa_generic.cu.
#include "ssa_common.cuh"
#ifndef DS_METHOD_HEADER
#define DS_METHOD_HEADER "ssa_method_direct.cuh"
#endif
#include DS_METHOD_HEADER
#ifndef DS_NEEDS_DEPGRAPH
#define DS_NEEDS_DEPGRAPH 1
#endif

extern "C" __global__ void ssa_advance(
    const int N, const int per, const uint32_t* __restrict__ keys, const int L, const unsigned int e_hi, const double dt, const int S, const int M,
    const int n_aux, const long long* __restrict__ x0, const signed char* __restrict__ kind,
    const double* __restrict__ theta, const int* __restrict__ rct_start, const int* __restrict__ rct_species,
    const int* __restrict__ rct_stoich, const int* __restrict__ chg_start, const int* __restrict__ chg_species,
    const int* __restrict__ chg_delta, const int* __restrict__ law_start, const int* __restrict__ law_op,
    const double* __restrict__ law_arg, const int* __restrict__ dep_start, const int* __restrict__ dep_list,
    const unsigned long long max_events, long long* __restrict__ xs, double* __restrict__ a_,
    double* __restrict__ aux_, double* __restrict__ stack_, unsigned long long* __restrict__ events,
    int* __restrict__ errors)
{
    __shared__ double2 logtab[DS_NEGLOG_ENTRIES];
    ds_neglog_load(logtab);
    __syncthreads();
    const int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= N) return;
    const int g = p / per;
    const uint32_t key = keys[g];
    theta += (long long)g * M;
    law_arg += (long long)g * L;
    const unsigned long long NN = (unsigned long long)N;
    long long* x = xs + (unsigned long long)p * S;
    const ds_col<double> a{a_ + p, NN}, aux{aux_ + p, NN}, st{stack_ + p, NN};
    const ds_reactions R{kind, theta, rct_start, rct_species, rct_stoich, law_start, law_op, law_arg};
    const ds_col<long long> xc{x, 1ull};
    const unsigned long long hi = ((unsigned long long)e_hi) << 32;
    ds_method_reset(aux, n_aux);
    double t = 0.0;
    unsigned long long n = 0ull;
    int j = -1;
    int err = ERR_NONE;
    while (true) {
        const bool every = j < 0 || !DS_NEEDS_DEPGRAPH;
        const int lo = every ? 0 : dep_start[j];
        const int up = every ? M : dep_start[j + 1];
        for (int q = lo; q < up; ++q) {
            const int d = every ? q : dep_list[q];
            const double v = ds_propensity(R, d, xc, st);
            if (ds_bad_propensity(v)) { err = DS_ERROR_WORD(ERR_PROPENSITY, d); goto done; }
            a[d] = v;
            ds_method_update(a, aux, n_aux, d, v);
        }
        double u;
        const double t_new = t + ds_method_event(a, aux, M, n_aux, hi | n, key, (uint32_t)(p - g * per), logtab, u);
        if (!(t_new <= dt)) goto done;
        if (n >= max_events) { err = ERR_MAX_EVENTS; goto done; }
        j = ds_method_select(a, aux, M, n_aux, u);
        t = t_new;
        for (int q = chg_start[j]; q < chg_start[j + 1]; ++q) {
            const long long v = x[chg_species[q]] + chg_delta[q];
            x[chg_species[q]] = v;
            if (v < 0) { err = DS_ERROR_WORD(ERR_NEGATIVE, j); goto done; }
        }
        ++n;
    }
done:
    events[p] = n;
    errors[p] = err;
}
