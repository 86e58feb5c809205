// The SSA's hybrid loop (time-dependent propensities, rate rules), one realization per thread: the twin of
// distsim/ssa/cpu.py run_realization_hybrid with the same floating-point operation order (compile with
// --fmad=false), so CPU and GPU give the same realizations. The next firing is where the cumulative hazard,
// integrated with the rate rules (ssa_hybrid.cuh), reaches E = -log u1 of the draw that the plain loop
// uses for event e (e counting firings); the reaction is the first whose cumulative propensity exceeds
// u2 a0(t*) (the direct method, whatever method was asked for). Stops at time comparisons execute their
// events and keep E and the hazard integrated so far.
// The loop is one device function (ds_hybrid_loop, the twin of cpu.hybrid_loop) run by the SSA kernel
// (ssa_hybrid: from t = 0, recording the grid) and by ssa_advance_hybrid (particles with their event and
// integrator work rows from t0 to t1: distsim/ssa/gpu_advance_events.py, the twin of advance_events.py).
#include "ssa_common.cuh"
#include "ssa_hybrid.cuh"

// the hybrid loop (cpu.hybrid_loop) from the state (x, W, HW) at time t, before grid[0] (HW.hs[0]: the
// integrator's next step size, 0: none yet), until the last of the K grid points: draw d (one at the start,
// one after each firing) at counter (ctr_hi << 32) | d; a firing whose next draw rec calls exhausted is not
// made (ERR_MAX_EVENTS, as at max_events firings); e: the firings; returns the error word (t: its time,
// bad: a refused value)
template <class X, class REC>
__device__ __forceinline__ int ds_hybrid_loop(
    const X& x, const ds_col<double>& a, const ds_col<double>& st, const int M, const ds_reactions& N,
    const ds_events& V, const ds_ev_work& W, const ds_hybrid& H, const ds_hybrid_work& HW,
    const int* __restrict__ chg_start, const int* __restrict__ chg_species, const int* __restrict__ chg_delta,
    const double* __restrict__ grid, const int K, const uint32_t seed, const uint32_t rid,
    const unsigned long long ctr_hi, const long long max_events, const double2* __restrict__ logtab,
    const REC& rec, double& t, unsigned long long& e, double& bad)
{
    const int n_tc = ds_time_stops(V);  // (next_change skipped when 0)
    int k = 0;
    e = 0ull;
    unsigned long long ctr = ctr_hi << 32;  // the current draw's counter: firings so far in the low word
    const double INF = __longlong_as_double(0x7ff0000000000000LL);
    const double t_end = grid[K - 1];
    int n = 0, d = -1;
    double u1, u2, target, lam = 0.0, a_static = 0.0;
    bool fresh = true;
    int err = ERR_NONE;
    ds_event_uniforms(ctr, seed, rid, u1, u2);
    target = ds_neglog_u01(u1, logtab);
    while (true) {
        if (fresh) {  // the propensities that do not move between firings, and their sum
            a_static = 0.0;
            for (int q = 0; q < M; ++q) {
                if (H.hz_of[q] >= 0) continue;
                const double v = ds_propensity(N, q, x, st);
                if (ds_bad_propensity(v)) { bad = v; return DS_ERROR_WORD(ERR_PROPENSITY, q); }
                a[q] = v;
                a_static += v;
            }
            fresh = false;
        }
        const double t_stop = n_tc > 0 ? ds_next_change(x, t, V, W) : INF;
        const int status = ds_advance(t, t_stop < t_end ? t_stop : t_end, lam, target, a_static, x, V, W, H, HW,
                                      d, bad);
        if (status == ADV_BAD_PROPENSITY) return DS_ERROR_WORD(ERR_PROPENSITY, d);
        if (status == ADV_STEP) return ERR_INTEGRATOR;
        while (k < K && grid[k] < t) {
            rec.put(k, x, err);
            ++k;
        }
        if (status == ADV_HORIZON) {
            if (t_stop > t_end) {  // the end of the grid
                for (; k < K; ++k) rec.put(k, x, err);
                if (HW.rec) ds_record_rest(W, H, HW);
                return err;
            }
            n = 0;
            if (V.E > 0) err = ds_fire_events(x, t, V, W, bad, n);
            if (err != ERR_NONE) return err;
            fresh = fresh || n > 0;
            continue;
        }
        if ((max_events > 0 && e >= (unsigned long long)max_events) || rec.exhausted(ctr + 1ull)) {
            rec.fill(k, K, x);
            if (HW.rec) ds_record_rest(W, H, HW);
            return ERR_MAX_EVENTS;
        }
        ds_moving_propensities(x, t, a, V, W, H, d, bad);
        if (d >= 0) return DS_ERROR_WORD(ERR_PROPENSITY, d);
        {
            double a0 = 0.0;
            for (int q = 0; q < M; ++q) a0 += a[q];
            const double u = u2 * a0;  // the first reaction whose cumulative propensity exceeds u
            int j = -1;
            double cum = 0.0;
            for (int q = 0; q < M; ++q) {
                if (a[q] > 0.0) j = q;
                cum = cum + a[q];
                if (cum > u) { j = q; break; }
            }
            if (j < 0) return ERR_INTEGRATOR;
            for (int q = chg_start[j]; q < chg_start[j + 1]; ++q) {
                const long long v = x[chg_species[q]] + chg_delta[q];
                x[chg_species[q]] = v;
                if (v < 0) return DS_ERROR_WORD(ERR_NEGATIVE, j);
            }
            rec.fired(j);
        }
        ++e;
        ++ctr;
        n = 0;
        if (V.NR > 0) err = ds_apply_rules(x, t, V, W, bad);
        if (err == ERR_NONE && V.E > 0) err = ds_fire_events(x, t, V, W, bad, n);
        if (err != ERR_NONE) return err;
        ds_event_uniforms(ctr, seed, rid, u1, u2);
        target = ds_neglog_u01(u1, logtab);
        lam = 0.0;
        fresh = true;
    }
}

extern "C" __global__ void ssa_hybrid(
    const int R, const unsigned long long real0, const uint32_t seed, const int S, const int M, const int K,
    const int L, DS_EVENT_KERNEL_TABLES,
    const int* __restrict__ hz_of, const int* __restrict__ rr_param, const int* __restrict__ rr_prog,
    const int E, const int NR, const int T, const int P, const int C, const double* __restrict__ grid,
    const long long max_events,
    long long* __restrict__ xs_, double* __restrict__ a_, double* __restrict__ stack_,
    double* __restrict__ thetas_, double* __restrict__ largs_, double* __restrict__ p_, int* __restrict__ prev_,
    long long* __restrict__ pend_, double* __restrict__ vals_, double* __restrict__ est_,
    const int QN, const int QV, double* __restrict__ q_time_, long long* __restrict__ q_len_,
    long long* __restrict__ q_event_, double* __restrict__ q_vals_,
    double* __restrict__ y0_, double* __restrict__ y1_, double* __restrict__ yt_, double* __restrict__ ys_,
    double* __restrict__ k_, double* __restrict__ hs_, double* __restrict__ gy_, int* __restrict__ kc_,
    const int record, double* __restrict__ crec,
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
    const ds_col<double> a{a_ + r, RR}, st{stack_ + r, RR};
    const ds_ev_work W = DS_KERNEL_WORK_COLUMNS(r, RR);
    const ds_events V = DS_KERNEL_EVENTS(prog_arg);
    const ds_reactions N{kind, W.theta, rct_start, rct_species, rct_stoich, law_start, law_op, W.larg};
    const ds_hybrid H{hz_of, rr_param, rr_prog, M, C};
    // crec (when record): rate-rule values, grid point j and rule c at row j C + c, column r
    const ds_hybrid_work HW{{y0_ + r, RR}, {y1_ + r, RR}, {yt_ + r, RR}, {ys_ + r, RR}, {k_ + r, RR}, {hs_ + r, RR},
                            {gy_ + r, RR}, {crec + (record ? r : 0), record ? RR : 0ull}, {kc_ + r, RR}, grid, K,
                            record != 0};
    const uint32_t rid = (uint32_t)(real0 + (unsigned long long)r);
    for (int s = 0; s < S; ++s) x[s] = x0[s];
    for (int d = 0; d < M; ++d) W.theta[d] = theta[d];
    for (int pc = 0; pc < law_start[M]; ++pc) W.larg[pc] = law_arg[pc];
    HW.hs[0] = 0.0;
    HW.kc[0] = 0;
    double t = 0.0;
    unsigned long long e = 0ull;
    double bad = 0.0;
    int err = ds_ev_reset(x, t, V, W, bad);
    if (err == ERR_NONE)
        err = ds_hybrid_loop(x, a, st, M, N, V, W, H, HW, chg_start, chg_species, chg_delta, grid, K, seed, rid, 0ull,
                             max_events, logtab, ds_grid_rec{rec, firings, S, RR, r}, t, e, bad);
    events[r] = e;
    errors[r] = err;
}

// Advance particles of a hybrid network (counts, event and integrator work rows) from absolute time t0 to
// t1 = end[0] (> t0), one per thread (distsim/ssa/advance_events.py advance_hybrid_one): row r is particle
// p = r - g per of chain g = r / per, Philox key (keys[g], p), draw d at counter (d, e_hi, 0, 0), a fresh
// waiting time at t0, at most 2**32 - 1 draws. Rows as ssa_advance_events' (kernels/ssa_events.cu), and
// the integrator's as the CPU's (hybrid_ops.new_work): y0, y1, yt, ys, gy [r n + i], the stages k[(r 7 + i) n
// + c], the next step size hs[r] (n = C + 1); nothing is recorded. Program constants per chain:
// prog_arg[g PA + i]. Other arguments as ssa_hybrid's.
extern "C" __global__ void ssa_advance_hybrid(
    const int R, const int per, const uint32_t* __restrict__ keys, const unsigned int e_hi, const double t0,
    const double* __restrict__ end, const int S, const int M, const int L, DS_EVENT_KERNEL_TABLES,
    const int* __restrict__ hz_of, const int* __restrict__ rr_param, const int* __restrict__ rr_prog,
    const int E, const int NR, const int T, const int P, const int PA, const int C, const long long max_events,
    long long* __restrict__ xs, double* __restrict__ a_, double* __restrict__ stack_,
    double* __restrict__ thetas_, double* __restrict__ largs_, double* __restrict__ p_, int* __restrict__ prev_,
    long long* __restrict__ pend_, double* __restrict__ vals_, double* __restrict__ est_,
    const int EW, const int VW, const int SW, const int QN, const int QV, double* __restrict__ q_time_,
    long long* __restrict__ q_len_, long long* __restrict__ q_event_, double* __restrict__ q_vals_,
    double* __restrict__ y0_, double* __restrict__ y1_, double* __restrict__ yt_, double* __restrict__ ys_,
    double* __restrict__ k_, double* __restrict__ hs_, double* __restrict__ gy_,
    unsigned long long* __restrict__ events, int* __restrict__ errors, double* __restrict__ times)
{
    __shared__ double2 logtab[DS_NEGLOG_ENTRIES];
    ds_neglog_load(logtab);
    __syncthreads();
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= R) return;
    const int g = r / per;
    const unsigned long long RR = (unsigned long long)R, rr = (unsigned long long)r;
    const unsigned long long n = (unsigned long long)(C + 1);
    const ds_col<long long> x{xs + rr * S, 1ull};
    const ds_col<double> a{a_ + r, RR}, st{stack_ + r, RR};
    const ds_ev_work W = DS_KERNEL_WORK_ROWS(rr);
    const ds_reactions N{kind, W.theta, rct_start, rct_species, rct_stoich, law_start, law_op, W.larg};
    const ds_events V = DS_KERNEL_EVENTS(prog_arg + (long long)g * PA);
    const ds_hybrid H{hz_of, rr_param, rr_prog, M, C};
    const ds_hybrid_work HW{{y0_ + rr * n, 1ull}, {y1_ + rr * n, 1ull}, {yt_ + rr * n, 1ull}, {ys_ + rr * n, 1ull},
                            {k_ + rr * 7ull * n, 1ull}, {hs_ + rr, 1ull}, {gy_ + rr * n, 1ull}, {nullptr, 0ull},
                            {nullptr, 0ull}, end, 1, false};
    double t = t0;
    unsigned long long e = 0ull;
    double bad = 0.0;
    const int err = ds_hybrid_loop(x, a, st, M, N, V, W, H, HW, chg_start, chg_species, chg_delta, end, 1, keys[g],
                                   (uint32_t)(r - g * per), (unsigned long long)e_hi, max_events, logtab,
                                   ds_no_rec{((unsigned long long)e_hi << 32) + 4294967295ull}, t, e, bad);
    events[r] = e;
    errors[r] = err;
    times[r] = t;
}
