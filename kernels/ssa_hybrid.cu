// The SSA's hybrid loop (time-dependent propensities, rate rules), one realization per thread: the twin of
// distsim/ssa/cpu.py run_realization_hybrid with the same floating-point operation order (compile with
// --fmad=false), so CPU and GPU give the same realizations. The next firing is where the cumulative hazard,
// integrated with the rate rules (ssa_hybrid.cuh), reaches E = -log u1 of the draw that the plain loop
// uses for event e (e counting firings); the reaction is the first whose cumulative propensity exceeds
// u2 a0(t*) (the direct method, whatever method was asked for). Stops at time comparisons execute their
// events and keep E and the hazard integrated so far.
#include "ssa_common.cuh"
#include "ssa_hybrid.cuh"

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
    const ds_ev_work W{thetas_ + (unsigned long long)r * M, largs_ + (unsigned long long)r * L, {p_ + r, RR},
                       {prev_ + r, RR}, {pend_ + r, RR}, {vals_ + r, RR}, {est_ + r, RR},
                       {q_time_ + r, RR}, {q_len_ + r, RR}, {q_event_ + r, RR}, {q_vals_ + r, RR}, QN, QV};
    const ds_events V{p0, prog_start, prog_op, prog_arg, ev_trigger, ev_priority, ev_flags, ev_delay, asg_start,
                      asg_target, asg_prog, rule_target, rule_prog, tc_op, tc_prog, par_theta_start, par_theta,
                      par_law_start, par_law, E, NR, T, P};
    const int n_tc = ds_time_stops(V);  // (next_change skipped when 0)
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
    int k = 0;
    unsigned long long e = 0ull;
    const double INF = __longlong_as_double(0x7ff0000000000000LL);
    const double t_end = grid[K - 1];
    int n = 0, d = -1;
    double bad = 0.0, u1, u2, target, lam = 0.0, a_static = 0.0;
    bool fresh = true;
    int err = ds_ev_reset(x, t, V, W, bad);
    if (err != ERR_NONE) goto done;
    ds_event_uniforms(e, seed, rid, u1, u2);
    target = ds_neglog_u01(u1, logtab);
    while (true) {
        if (fresh) {  // the propensities that do not move between firings, and their sum
            a_static = 0.0;
            for (int q = 0; q < M; ++q) {
                if (hz_of[q] >= 0) continue;
                const double v = ds_propensity(N, q, x, st);
                if (ds_bad_propensity(v)) { err = DS_ERROR_WORD(ERR_PROPENSITY, q); goto done; }
                a[q] = v;
                a_static += v;
            }
            fresh = false;
        }
        const double t_stop = n_tc > 0 ? ds_next_change(x, t, V, W) : INF;
        const int status = ds_advance(t, t_stop < t_end ? t_stop : t_end, lam, target, a_static, x, V, W, H, HW,
                                      d, bad);
        if (status == ADV_BAD_PROPENSITY) { err = DS_ERROR_WORD(ERR_PROPENSITY, d); goto done; }
        if (status == ADV_STEP) { err = ERR_INTEGRATOR; goto done; }
        while (k < K && grid[k] < t) {
            for (int s = 0; s < S; ++s) {
                const long long v = x[s];
                if (v > 2147483647LL) err = ERR_OVERFLOW;
                rec[((unsigned long long)k * S + s) * RR + r] = (int)v;
            }
            ++k;
        }
        if (status == ADV_HORIZON) {
            if (t_stop > t_end) {  // the end of the grid
                for (; k < K; ++k)
                    for (int s = 0; s < S; ++s) {
                        const long long v = x[s];
                        if (v > 2147483647LL) err = ERR_OVERFLOW;
                        rec[((unsigned long long)k * S + s) * RR + r] = (int)v;
                    }
                if (HW.rec) ds_record_rest(W, H, HW);
                goto done;
            }
            n = 0;
            if (V.E > 0) err = ds_fire_events(x, t, V, W, bad, n);
            if (err != ERR_NONE) goto done;
            fresh = fresh || n > 0;
            continue;
        }
        if (max_events > 0 && e >= (unsigned long long)max_events) {
            for (int kk = k; kk < K; ++kk)
                for (int s = 0; s < S; ++s) rec[((unsigned long long)kk * S + s) * RR + r] = (int)x[s];
            if (HW.rec) ds_record_rest(W, H, HW);
            err = ERR_MAX_EVENTS;
            goto done;
        }
        ds_moving_propensities(x, t, a, V, W, H, d, bad);
        if (d >= 0) { err = DS_ERROR_WORD(ERR_PROPENSITY, d); goto done; }
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
            if (j < 0) { err = ERR_INTEGRATOR; goto done; }
            for (int q = chg_start[j]; q < chg_start[j + 1]; ++q) {
                const long long v = x[chg_species[q]] + chg_delta[q];
                x[chg_species[q]] = v;
                if (v < 0) { err = DS_ERROR_WORD(ERR_NEGATIVE, j); goto done; }
            }
            atomicAdd(&firings[j], 1ull);
        }
        ++e;
        n = 0;
        if (V.NR > 0) err = ds_apply_rules(x, t, V, W, bad);
        if (err == ERR_NONE && V.E > 0) err = ds_fire_events(x, t, V, W, bad, n);
        if (err != ERR_NONE) goto done;
        ds_event_uniforms(e, seed, rid, u1, u2);
        target = ds_neglog_u01(u1, logtab);
        lam = 0.0;
        fresh = true;
    }
done:
    events[r] = e;
    errors[r] = err;
}
