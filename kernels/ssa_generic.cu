// Exact SSA, one realization per thread, for any model size: the same algorithm and the same
// floating-point operation order as distsim/ssa/cpu.py (run_realization), so CPU and GPU give the
// same realizations (compile with --fmad=false). Per-realization work arrays live in global
// memory with the realization index fastest ([item * R + r]), so a warp's accesses coalesce when
// its threads touch the same item. method 0: direct (linear scan); 1: binary sum tree; 2: the exact
// acceptance-rejection election of seed 001 (exponential race over all reactions).
#include "philox.cuh"
#include "dsmath.cuh"
#include "ssa_common.cuh"

extern "C" __global__ void ssa_generic(
    const int R, const unsigned long long real0, const uint32_t seed, const int method,
    const int S, const int M, const int K, const int P,
    const long long* __restrict__ x0, const signed char* __restrict__ kind, const double* __restrict__ theta,
    const int* __restrict__ rct_start, const int* __restrict__ rct_species, const int* __restrict__ rct_stoich,
    const int* __restrict__ chg_start, const int* __restrict__ chg_species, const int* __restrict__ chg_delta,
    const int* __restrict__ law_start, const int* __restrict__ law_op, const double* __restrict__ law_arg,
    const int* __restrict__ dep_start, const int* __restrict__ dep_list,
    const double* __restrict__ grid, const long long max_events,
    long long* __restrict__ xs_, double* __restrict__ a_, double* __restrict__ tree_, double* __restrict__ stack_,
    int* __restrict__ rec, unsigned long long* __restrict__ firings, unsigned long long* __restrict__ events,
    signed char* __restrict__ errors)
{
    __shared__ double2 logtab[DS_NEGLOG_ENTRIES];
    ds_neglog_load(logtab);
    __syncthreads();
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= R) return;
    const unsigned long long RR = (unsigned long long)R;
#define X(s) xs_[(unsigned long long)(s) * RR + r]
#define A(j) a_[(unsigned long long)(j) * RR + r]
#define TREE(i) tree_[(unsigned long long)(i) * RR + r]
#define STACK(i) stack_[(unsigned long long)(i) * RR + r]
    const uint32_t rid = (uint32_t)(real0 + (unsigned long long)r);
    for (int s = 0; s < S; ++s) X(s) = x0[s];
    if (method == 1) for (int i = 0; i < 2 * P; ++i) TREE(i) = 0.0;
    double t = 0.0;
    int k = 0;
    unsigned long long e = 0ull;
    int j = -1;
    signed char err = ERR_NONE;
    while (true) {
        // (re)compute the propensities that changed: all of them at first, then j's dependents
        const int lo = j < 0 ? 0 : dep_start[j];
        const int hi = j < 0 ? M : dep_start[j + 1];
        for (int q = lo; q < hi; ++q) {
            const int d = j < 0 ? q : dep_list[q];
            double v;
            if (kind[d] == 0) {
                v = theta[d];
                for (int rr = rct_start[d]; rr < rct_start[d + 1]; ++rr) {
                    const double xs = (double)X(rct_species[rr]);
                    double h = xs;
                    for (int m = 1; m < rct_stoich[rr]; ++m) h = h * (xs - m) / (m + 1);
                    v = v * h;
                }
            } else {
                int sp = 0;
                for (int pc = law_start[d]; pc < law_start[d + 1]; ++pc) {
                    const int op = law_op[pc];
                    if (op == OP_PUSH_CONST) { STACK(sp) = law_arg[pc]; ++sp; }
                    else if (op == OP_PUSH_SPECIES) { STACK(sp) = (double)X((int)law_arg[pc]); ++sp; }
                    else if (op == OP_NEG) { STACK(sp - 1) = -STACK(sp - 1); }
                    else if (op >= OP_FUNC_BASE && op - OP_FUNC_BASE <= 6) { STACK(sp - 1) = ds_unary(op - OP_FUNC_BASE, STACK(sp - 1)); }
                    else { STACK(sp - 2) = ds_binary(op, STACK(sp - 2), STACK(sp - 1)); --sp; }
                }
                v = STACK(0);
            }
            if (!(v >= 0.0) || isinf(v)) { err = ERR_PROPENSITY; goto done; }
            A(d) = v;
            if (method == 1) {
                int i = (P + d) >> 1;
                TREE(P + d) = v;
                while (i >= 1) { TREE(i) = TREE(2 * i) + TREE(2 * i + 1); i >>= 1; }
            }
        }
        // waiting time
        double a0;
        if (method == 1) a0 = TREE(1);
        else { a0 = 0.0; for (int jj = 0; jj < M; ++jj) a0 = a0 + A(jj); }
        double u2 = 0.0, t_new;
        int j_ar = -1;
        if (method == 2) {
            double best = __longlong_as_double(0x7ff0000000000000LL);
            for (int jj = 0; jj < M; ++jj) {
                if (A(jj) > 0.0) {
                    const ds_u32x4 w = ds_philox4x32_10(ds_u32x4{(uint32_t)e, (uint32_t)(e >> 32), (uint32_t)(jj >> 1), 1u}, seed, rid);
                    const double u = (jj & 1) == 0 ? ds_u01_f64(w.x, w.y) : ds_u01_f64(w.z, w.w);
                    const double rating = ds_neglog_u01(u, logtab) / A(jj);
                    if (rating < best) { best = rating; j_ar = jj; }
                }
            }
            t_new = t + best;
        } else if (a0 > 0.0) {
            const ds_u32x4 w = ds_philox4x32_10(ds_u32x4{(uint32_t)e, (uint32_t)(e >> 32), 0u, 0u}, seed, rid);
            const double u1 = ds_u01_f64(w.x, w.y);
            u2 = ds_u01_f64(w.z, w.w);
            t_new = t + ds_neglog_u01(u1, logtab) / a0;
        } else {
            t_new = __longlong_as_double(0x7ff0000000000000LL);
        }
        // record the grid points passed before the event
        while (k < K && grid[k] < t_new) {
            for (int s = 0; s < S; ++s) {
                const long long v = X(s);
                if (v > 2147483647LL) err = ERR_OVERFLOW;
                rec[((unsigned long long)k * S + s) * RR + r] = (int)v;
            }
            ++k;
        }
        if (k >= K) goto done;
        if (max_events > 0 && e >= (unsigned long long)max_events) {
            for (int kk = k; kk < K; ++kk)
                for (int s = 0; s < S; ++s) rec[((unsigned long long)kk * S + s) * RR + r] = (int)X(s);
            err = ERR_MAX_EVENTS;
            goto done;
        }
        // which reaction: the first whose cumulative propensity exceeds u2 * a0
        double target = u2 * a0;
        if (method == 2) {
            j = j_ar;
        } else if (method == 1) {
            int i = 1;
            while (i < P) {
                const double left = TREE(2 * i);
                if (target < left) i = 2 * i;
                else { target = target - left; i = 2 * i + 1; }
            }
            j = i - P;
            if (j >= M || A(j) <= 0.0) {
                int jj = j < M - 1 ? j : M - 1;
                while (jj > 0 && A(jj) <= 0.0) --jj;
                while (jj < M - 1 && A(jj) <= 0.0) ++jj;
                j = jj;
            }
        } else {
            double c = 0.0;
            int last = 0;
            j = -1;
            for (int jj = 0; jj < M; ++jj) {
                if (A(jj) > 0.0) last = jj;
                c = c + A(jj);
                if (c > target) { j = jj; break; }
            }
            if (j < 0) j = last;
        }
        // fire
        for (int q = chg_start[j]; q < chg_start[j + 1]; ++q) {
            const long long v = X(chg_species[q]) + chg_delta[q];
            X(chg_species[q]) = v;
            if (v < 0) { err = ERR_NEGATIVE; goto done; }
        }
        atomicAdd(&firings[j], 1ull);
        t = t_new;
        ++e;
    }
done:
    events[r] = e;
    errors[r] = err;
#undef X
#undef A
#undef TREE
#undef STACK
}
