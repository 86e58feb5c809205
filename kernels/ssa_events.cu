// Exact SSA for networks with SBML events or assignment rules, one realization per thread: the loop
// of distsim/ssa/cpu.py run_realization_events with the same floating-point operation order, so CPU
// and GPU give the same realizations (compile with --fmad=false). kernels/ssa_generic.cu plus the
// hook points of ssa_events.cuh: the realization's own copies of the tables that parameters are
// folded into, the rules and the triggers after every firing, and stops at the instants where a
// time comparison changes (then a fresh waiting time: draw d uses the counter of event d, and draws
// count firings plus stops). The selection method is a compile-time header as in ssa_generic.cu
// (DS_METHOD_HEADER, DS_NEEDS_DEPGRAPH; distsim/ssa/gpu_events.py defines them).
#include "ssa_common.cuh"
#include "ssa_events.cuh"
#ifndef DS_METHOD_HEADER
#define DS_METHOD_HEADER "ssa_method_direct.cuh"
#endif
#include DS_METHOD_HEADER
#ifndef DS_NEEDS_DEPGRAPH
#define DS_NEEDS_DEPGRAPH 1
#endif
#define DS_RECOMPUTE_NONE 0
#define DS_RECOMPUTE_DEPENDENTS 1
#define DS_RECOMPUTE_ALL 2

extern "C" __global__ void ssa_events(
    const int R, const unsigned long long real0, const uint32_t seed, const int S, const int M, const int K,
    const int n_aux, const int L, const long long* __restrict__ x0, const signed char* __restrict__ kind,
    const double* __restrict__ theta, const int* __restrict__ rct_start, const int* __restrict__ rct_species,
    const int* __restrict__ rct_stoich, const int* __restrict__ chg_start, const int* __restrict__ chg_species,
    const int* __restrict__ chg_delta, const int* __restrict__ law_start, const int* __restrict__ law_op,
    const double* __restrict__ law_arg, const int* __restrict__ dep_start, const int* __restrict__ dep_list,
    const double* __restrict__ p0, const int* __restrict__ prog_start, const int* __restrict__ prog_op,
    const double* __restrict__ prog_arg, const int* __restrict__ ev_trigger, const int* __restrict__ ev_priority,
    const int* __restrict__ ev_flags, const int* __restrict__ ev_delay,
    const int* __restrict__ asg_start, const int* __restrict__ asg_target,
    const int* __restrict__ asg_prog, const int* __restrict__ rule_target, const int* __restrict__ rule_prog,
    const int* __restrict__ tc_op, const int* __restrict__ tc_prog, const int* __restrict__ par_theta_start,
    const int* __restrict__ par_theta, const int* __restrict__ par_law_start, const int* __restrict__ par_law,
    const int E, const int NR, const int T, const int P, const double* __restrict__ grid, const long long max_events,
    long long* __restrict__ xs_, double* __restrict__ a_, double* __restrict__ aux_, double* __restrict__ stack_,
    double* __restrict__ thetas_, double* __restrict__ largs_, double* __restrict__ p_, int* __restrict__ prev_,
    long long* __restrict__ pend_, double* __restrict__ vals_, double* __restrict__ est_,
    const int QN, const int QV, double* __restrict__ q_time_, long long* __restrict__ q_len_,
    long long* __restrict__ q_event_, double* __restrict__ q_vals_,
    int* __restrict__ rec, unsigned long long* __restrict__ firings, unsigned long long* __restrict__ events,
    int* __restrict__ errors)
{
    __shared__ double2 logtab[DS_NEGLOG_ENTRIES];
    ds_neglog_load(logtab);
    __syncthreads();
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= R) return;
    const unsigned long long RR = (unsigned long long)R;
    const ds_col<long long> x{xs_ + r, RR};
    const ds_col<double> a{a_ + r, RR}, aux{aux_ + r, RR}, st{stack_ + r, RR};
    const ds_ev_work W{thetas_ + (unsigned long long)r * M, largs_ + (unsigned long long)r * L, {p_ + r, RR},
                       {prev_ + r, RR}, {pend_ + r, RR}, {vals_ + r, RR}, {est_ + r, RR},
                       {q_time_ + r, RR}, {q_len_ + r, RR}, {q_event_ + r, RR}, {q_vals_ + r, RR}, QN, QV};
    const ds_reactions N{kind, W.theta, rct_start, rct_species, rct_stoich, law_start, law_op, W.larg};
    const ds_events V{p0, prog_start, prog_op, prog_arg, ev_trigger, ev_priority, ev_flags, ev_delay, asg_start,
                      asg_target, asg_prog, rule_target, rule_prog, tc_op, tc_prog, par_theta_start, par_theta,
                      par_law_start, par_law, E, NR, T, P};
    const int n_tc = ds_time_stops(V);  // (next_change skipped when 0)
    const uint32_t rid = (uint32_t)(real0 + (unsigned long long)r);
    for (int s = 0; s < S; ++s) x[s] = x0[s];
    for (int d = 0; d < M; ++d) W.theta[d] = theta[d];
    for (int pc = 0; pc < law_start[M]; ++pc) W.larg[pc] = law_arg[pc];
    ds_method_reset(aux, n_aux);
    double t = 0.0;
    int k = 0;
    unsigned long long e = 0ull, draws = 0ull;  // firings; waiting times drawn (firings plus stops)
    int j = -1;
    int todo = DS_RECOMPUTE_ALL;
    const double INF = __longlong_as_double(0x7ff0000000000000LL);
    int n = 0;
    double bad = 0.0;
    int err = ds_ev_reset(x, t, V, W, bad);
    if (err != ERR_NONE) goto done;
    while (true) {
        {
            const bool every = todo == DS_RECOMPUTE_ALL || !DS_NEEDS_DEPGRAPH;
            const int lo = every ? 0 : dep_start[j];
            const int hi = todo == DS_RECOMPUTE_NONE ? lo : (every ? M : dep_start[j + 1]);
            for (int q = lo; q < hi; ++q) {
                const int d = every ? q : dep_list[q];
                const double v = ds_propensity(N, d, x, st);
                if (ds_bad_propensity(v)) { err = DS_ERROR_WORD(ERR_PROPENSITY, d); goto done; }
                a[d] = v;
                ds_method_update(a, aux, n_aux, d, v);
            }
        }
        double u;
        const double t_new = t + ds_method_event(a, aux, M, n_aux, draws, seed, rid, logtab, u);
        const double t_stop = n_tc > 0 ? ds_next_change(x, t, V, W) : INF;
        const bool stop = t_stop <= t_new && t_stop <= grid[K - 1];
        const double t_rec = stop ? t_stop : t_new;
        while (k < K && grid[k] < t_rec) {
            for (int s = 0; s < S; ++s) {
                const long long v = x[s];
                if (v > 2147483647LL) err = ERR_OVERFLOW;
                rec[((unsigned long long)k * S + s) * RR + r] = (int)v;
            }
            ++k;
        }
        if (k >= K) goto done;
        ++draws;
        if (stop) {  // a time comparison changes before the next firing: events, then a fresh waiting time
            t = t_stop;
            n = 0;
            if (V.E > 0) err = ds_fire_events(x, t, V, W, bad, n);
            if (err != ERR_NONE) goto done;
            todo = n > 0 ? DS_RECOMPUTE_ALL : DS_RECOMPUTE_NONE;
            continue;
        }
        if (max_events > 0 && e >= (unsigned long long)max_events) {
            for (int kk = k; kk < K; ++kk)
                for (int s = 0; s < S; ++s) rec[((unsigned long long)kk * S + s) * RR + r] = (int)x[s];
            err = ERR_MAX_EVENTS;
            goto done;
        }
        j = ds_method_select(a, aux, M, n_aux, u);
        t = t_new;
        for (int q = chg_start[j]; q < chg_start[j + 1]; ++q) {
            const long long v = x[chg_species[q]] + chg_delta[q];
            x[chg_species[q]] = v;
            if (v < 0) { err = DS_ERROR_WORD(ERR_NEGATIVE, j); goto done; }
        }
        atomicAdd(&firings[j], 1ull);
        ++e;
        n = 0;
        if (V.NR > 0) err = ds_apply_rules(x, t, V, W, bad);
        if (err == ERR_NONE && V.E > 0) err = ds_fire_events(x, t, V, W, bad, n);
        if (err != ERR_NONE) goto done;
        todo = n > 0 ? DS_RECOMPUTE_ALL : DS_RECOMPUTE_DEPENDENTS;
    }
done:
    events[r] = e;
    errors[r] = err;
}
