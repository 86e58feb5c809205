// Exact SSA for networks with SBML events or assignment rules, one realization per thread: the loop
// of distsim/ssa/cpu.py run_realization_events with the same floating-point operation order, so CPU
// and GPU give the same realizations (compile with --fmad=false). kernels/ssa_generic.cu plus the
// hook points of ssa_events.cuh: the realization's own copies of the tables that parameters are
// folded into, the rules and the triggers after every firing, and stops at the instants where a
// time comparison changes (then a fresh waiting time: draw d uses the counter of event d, and draws
// count firings plus stops). The selection method is a compile-time header as in ssa_generic.cu
// (DS_METHOD_HEADER, DS_NEEDS_DEPGRAPH; distsim/ssa/gpu_events.py defines them).
// The loop is one device function (ds_events_loop, the twin of cpu.events_loop) run by the SSA kernel
// (ssa_events: from t = 0, recording the grid) and by ssa_advance_events (particles with their event
// work rows from t0 to t1: distsim/ssa/gpu_advance_events.py, the twin of advance_events.py).
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


// the event loop (cpu.events_loop) from the state (x, W) at time t, before grid[0], until the last of the
// K grid points: draw d at counter (ctr_hi << 32) | d, while rec is not exhausted; e: the
// firings; returns the error word (t: its time, bad: a refused value of the event functions)
template <class X, class REC>
__device__ __forceinline__ int ds_events_loop(
    const X& x, const ds_col<double>& a, const ds_col<double>& aux, const ds_col<double>& st, const int M,
    const int n_aux, const ds_reactions& N, const ds_events& V, const ds_ev_work& W, const int* __restrict__ chg_start,
    const int* __restrict__ chg_species, const int* __restrict__ chg_delta, const int* __restrict__ dep_start,
    const int* __restrict__ dep_list, const double* __restrict__ grid, const int K, const uint32_t seed,
    const uint32_t rid, const unsigned long long ctr_hi, const long long max_events,
    const double2* __restrict__ logtab, const REC& rec, double& t, unsigned long long& e, double& bad)
{
    const int n_tc = ds_time_stops(V);  // (next_change skipped when 0)
    ds_method_reset(aux, n_aux);
    int k = 0;
    e = 0ull;
    unsigned long long ctr = ctr_hi << 32;  // the next draw's counter: firings plus stops so far in the low word
    int j = -1;
    int todo = DS_RECOMPUTE_ALL;
    const double INF = __longlong_as_double(0x7ff0000000000000LL);
    int n = 0;
    int err = ERR_NONE;
    while (true) {
        {
            const bool every = todo == DS_RECOMPUTE_ALL || !DS_NEEDS_DEPGRAPH;
            const int lo = every ? 0 : dep_start[j];
            const int hi = todo == DS_RECOMPUTE_NONE ? lo : (every ? M : dep_start[j + 1]);
            for (int q = lo; q < hi; ++q) {
                const int d = every ? q : dep_list[q];
                const double v = ds_propensity(N, d, x, st);
                if (ds_bad_propensity(v)) return DS_ERROR_WORD(ERR_PROPENSITY, d);
                a[d] = v;
                ds_method_update(a, aux, n_aux, d, v);
            }
        }
        if (rec.exhausted(ctr)) {
            rec.fill(k, K, x);
            return ERR_MAX_EVENTS;
        }
        double u;
        const double t_new = t + ds_method_event(a, aux, M, n_aux, ctr, seed, rid, logtab, u);
        const double t_stop = n_tc > 0 ? ds_next_change(x, t, V, W) : INF;
        const bool stop = t_stop <= t_new && t_stop <= grid[K - 1];
        const double t_rec = stop ? t_stop : t_new;
        while (k < K && grid[k] < t_rec) {
            rec.put(k, x, err);
            ++k;
        }
        if (k >= K) return err;
        ++ctr;
        if (stop) {  // a time comparison changes before the next firing: events, then a fresh waiting time
            t = t_stop;
            n = 0;
            if (V.E > 0) err = ds_fire_events(x, t, V, W, bad, n);
            if (err != ERR_NONE) return err;
            todo = n > 0 ? DS_RECOMPUTE_ALL : DS_RECOMPUTE_NONE;
            continue;
        }
        if (max_events > 0 && e >= (unsigned long long)max_events) {
            rec.fill(k, K, x);
            return ERR_MAX_EVENTS;
        }
        j = ds_method_select(a, aux, M, n_aux, u);
        t = t_new;
        for (int q = chg_start[j]; q < chg_start[j + 1]; ++q) {
            const long long v = x[chg_species[q]] + chg_delta[q];
            x[chg_species[q]] = v;
            if (v < 0) return DS_ERROR_WORD(ERR_NEGATIVE, j);
        }
        rec.fired(j);
        ++e;
        n = 0;
        if (V.NR > 0) err = ds_apply_rules(x, t, V, W, bad);
        if (err == ERR_NONE && V.E > 0) err = ds_fire_events(x, t, V, W, bad, n);
        if (err != ERR_NONE) return err;
        todo = n > 0 ? DS_RECOMPUTE_ALL : DS_RECOMPUTE_DEPENDENTS;
    }
}

extern "C" __global__ void ssa_events(
    const int R, const unsigned long long real0, const uint32_t seed, const int S, const int M, const int K,
    const int n_aux, const int L, DS_EVENT_KERNEL_TABLES,
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
    const ds_ev_work W = DS_KERNEL_WORK_COLUMNS(r, RR);
    const ds_reactions N{kind, W.theta, rct_start, rct_species, rct_stoich, law_start, law_op, W.larg};
    const ds_events V = DS_KERNEL_EVENTS(prog_arg);
    const uint32_t rid = (uint32_t)(real0 + (unsigned long long)r);
    for (int s = 0; s < S; ++s) x[s] = x0[s];
    for (int d = 0; d < M; ++d) W.theta[d] = theta[d];
    for (int pc = 0; pc < law_start[M]; ++pc) W.larg[pc] = law_arg[pc];
    double t = 0.0;
    unsigned long long e = 0ull;
    double bad = 0.0;
    int err = ds_ev_reset(x, t, V, W, bad);
    if (err == ERR_NONE)
        err = ds_events_loop(x, a, aux, st, M, n_aux, N, V, W, chg_start, chg_species, chg_delta, dep_start, dep_list,
                             grid, K, seed, rid, 0ull, max_events, logtab, ds_grid_rec{rec, firings, S, RR, r},
                             t, e, bad);
    events[r] = e;
    errors[r] = err;
}

// Advance particles (counts and event work rows) from absolute time t0 to t1 = end[0] (> t0), one per
// thread (distsim/ssa/advance_events.py advance_events_one): row r is particle p = r - g per of chain
// g = r / per, Philox key (keys[g], p), draw d at counter (d, e_hi, 0, 0), at most 2**32 - 1 draws. Rows
// as the CPU's: counts xs[r S + s]; work rows thetas[r M + d], largs[r L + i], p[r P + i], prev[r E + i]
// (int32), pend[r E + i], vals[r V + i], est[r ES + i], q_time[r QN + i], q_len[r], q_event[r QN + i],
// q_vals[(r QN + i) QV + c] (L, P, E, V, ES at least 1, as event_ops.new_work's); the tables of the
// reactions and events are shared, but the program constants: prog_arg[g PA + i] (the events compiled at
// chain g's parameters); the reactions' constants are the work rows'. Other arguments as ssa_events'.
extern "C" __global__ void ssa_advance_events(
    const int R, const int per, const uint32_t* __restrict__ keys, const unsigned int e_hi, const double t0,
    const double* __restrict__ end, const int S, const int M, const int n_aux, const int L,
    DS_EVENT_KERNEL_TABLES,
    const int E, const int NR, const int T, const int P, const int PA, const long long max_events,
    long long* __restrict__ xs, double* __restrict__ a_, double* __restrict__ aux_, double* __restrict__ stack_,
    double* __restrict__ thetas_, double* __restrict__ largs_, double* __restrict__ p_, int* __restrict__ prev_,
    long long* __restrict__ pend_, double* __restrict__ vals_, double* __restrict__ est_,
    const int EW, const int VW, const int SW, const int QN, const int QV, double* __restrict__ q_time_,
    long long* __restrict__ q_len_, long long* __restrict__ q_event_, double* __restrict__ q_vals_,
    unsigned long long* __restrict__ events, int* __restrict__ errors, double* __restrict__ times)
{
    __shared__ double2 logtab[DS_NEGLOG_ENTRIES];
    ds_neglog_load(logtab);
    __syncthreads();
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= R) return;
    const int g = r / per;
    const unsigned long long RR = (unsigned long long)R, rr = (unsigned long long)r;
    const ds_col<long long> x{xs + rr * S, 1ull};
    const ds_col<double> a{a_ + r, RR}, aux{aux_ + r, RR}, st{stack_ + r, RR};
    const ds_ev_work W = DS_KERNEL_WORK_ROWS(rr);
    const ds_reactions N{kind, W.theta, rct_start, rct_species, rct_stoich, law_start, law_op, W.larg};
    const ds_events V = DS_KERNEL_EVENTS(prog_arg + (long long)g * PA);
    double t = t0;
    unsigned long long e = 0ull;
    double bad = 0.0;
    const int err = ds_events_loop(x, a, aux, st, M, n_aux, N, V, W, chg_start, chg_species, chg_delta, dep_start,
                                   dep_list, end, 1, keys[g], (uint32_t)(r - g * per), (unsigned long long)e_hi,
                                   max_events, logtab, ds_no_rec{((unsigned long long)e_hi << 32) + 4294967295ull},
                                   t, e, bad);
    events[r] = e;
    errors[r] = err;
    times[r] = t;
}
