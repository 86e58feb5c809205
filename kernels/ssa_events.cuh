// SBML events and assignment rules in the SSA kernels (kernels/ssa_events.cu): the twins of
// distsim/ssa/event_ops.py, with the same operations in the same order (build with --fmad=false),
// so CPU and GPU give the same realizations. Tables: distsim/models/compile_events.py; semantics:
// distsim/models/events.py.
//
// One realization's event state (ds_ev_work): its own copies of the reaction tables that parameters
// are folded into (theta, law_arg: rows, so that ds_reactions can point at them), the mutable
// parameters p, each trigger's previous value, each event's pending count, the values of an
// executing event's assignments and the program stack (columns [item * R + r], ds_col), and the
// scheduled executions of delayed events in the order they were scheduled: times, their number
// (q_len[0]), events and the values of the trigger time (slot s, assignment c: item s * QV + c).
#pragma once
#include "kinetics.cuh"

// distsim/ssa/errors.py
#define ERR_EVENT_VALUE 5
#define ERR_RULE_VALUE 6
#define ERR_EVENT_LOOP 7
#define ERR_EVENT_DELAY 9
#define ERR_EVENT_QUEUE 10
// distsim/models/arith.py and events.py
#define OP_PUSH_TIME 8
#define OP_PUSH_PARAM 9
#define OP_SIN (OP_FUNC_BASE + 10)  // arith.TRIG_CODES
#define OP_COS (OP_FUNC_BASE + 11)
#define OP_CMP_BASE (OP_FUNC_BASE + 32)
#define CMP_LT (OP_CMP_BASE + 0)
#define CMP_LE (OP_CMP_BASE + 1)
#define CMP_GT (OP_CMP_BASE + 2)
#define CMP_GE (OP_CMP_BASE + 3)
#define CMP_EQ (OP_CMP_BASE + 4)
#define CMP_NE (OP_CMP_BASE + 5)
#define L_AND (OP_CMP_BASE + 6)
#define L_OR (OP_CMP_BASE + 7)
#define L_XOR (OP_CMP_BASE + 8)
#define L_NOT (OP_CMP_BASE + 9)
#define OP_PUSH_BOOL (OP_CMP_BASE + 10)
#define OP_SELECT (OP_CMP_BASE + 11)  // arith.OP_SELECT: value, condition, otherwise
// distsim/models/compile_events.py
#define FLAG_INITIAL 1
#define FLAG_PERSISTENT 2
#define FLAG_TRIGGER_VALUES 4
#ifndef DS_MAX_CASCADE
#define DS_MAX_CASCADE 10000  // distsim/models/events.py MAX_CASCADE (defined by distsim/ssa/gpu_events.py)
#endif
#define DS_MAX_COUNT_F 9007199254740992.0  // 2**53
#define DS_COUNT_TOL 1e-9  // event_ops.COUNT_TOL

// the tables of distsim/models/compile_events.py CompiledEvents (EventArrays) and their sizes
struct ds_events {
    const double* p0; const int* prog_start; const int* prog_op; const double* prog_arg;
    const int* ev_trigger; const int* ev_priority; const int* ev_flags; const int* ev_delay;
    const int* asg_start; const int* asg_target; const int* asg_prog;
    const int* rule_target; const int* rule_prog; const int* tc_op; const int* tc_prog;
    const int* par_theta_start; const int* par_theta; const int* par_law_start; const int* par_law;
    int E, NR, T, P;  // events, rules, time comparisons, mutable parameters
};

// the tables as kernel parameters: the reactions' (distsim/ssa/gpu.py REACTION_TABLES), then the events'
// (distsim/ssa/gpu_events.py _EVENT_TABLES), in the order of the launches' arguments
#define DS_EVENT_KERNEL_TABLES \
    const long long* __restrict__ x0, const signed char* __restrict__ kind, \
    const double* __restrict__ theta, const int* __restrict__ rct_start, const int* __restrict__ rct_species, \
    const int* __restrict__ rct_stoich, const int* __restrict__ chg_start, const int* __restrict__ chg_species, \
    const int* __restrict__ chg_delta, const int* __restrict__ law_start, const int* __restrict__ law_op, \
    const double* __restrict__ law_arg, const int* __restrict__ dep_start, const int* __restrict__ dep_list, \
    const double* __restrict__ p0, const int* __restrict__ prog_start, const int* __restrict__ prog_op, \
    const double* __restrict__ prog_arg, const int* __restrict__ ev_trigger, const int* __restrict__ ev_priority, \
    const int* __restrict__ ev_flags, const int* __restrict__ ev_delay, \
    const int* __restrict__ asg_start, const int* __restrict__ asg_target, \
    const int* __restrict__ asg_prog, const int* __restrict__ rule_target, const int* __restrict__ rule_prog, \
    const int* __restrict__ tc_op, const int* __restrict__ tc_prog, const int* __restrict__ par_theta_start, \
    const int* __restrict__ par_theta, const int* __restrict__ par_law_start, const int* __restrict__ par_law

struct ds_ev_work {
    double* theta; double* larg;  // this realization's rows
    ds_col<double> p; ds_col<int> prev; ds_col<long long> pend; ds_col<double> vals; ds_col<double> st;
    ds_col<double> q_time; ds_col<long long> q_len; ds_col<long long> q_event; ds_col<double> q_vals;
    int QN, QV;  // scheduled executions a realization can hold (event_ops.work_shape), values per execution
};

// In a kernel with DS_EVENT_KERNEL_TABLES, the sizes E, NR, T, P, M, L, QN, QV and the work arrays thetas_ ..
// q_vals_ in scope: the events with program constants prog (an advance kernel's: chain g's, prog_arg + g PA),
#define DS_KERNEL_EVENTS(prog) \
    ds_events{p0, prog_start, prog_op, (prog), ev_trigger, ev_priority, ev_flags, ev_delay, asg_start, asg_target, \
              asg_prog, rule_target, rule_prog, tc_op, tc_prog, par_theta_start, par_theta, par_law_start, par_law, \
              E, NR, T, P}
// realization r's work in the SSA kernels' layout (theta and larg rows, the rest columns of stride RR),
#define DS_KERNEL_WORK_COLUMNS(r, RR) \
    ds_ev_work{thetas_ + (unsigned long long)(r) * M, largs_ + (unsigned long long)(r) * L, {p_ + (r), RR}, \
               {prev_ + (r), RR}, {pend_ + (r), RR}, {vals_ + (r), RR}, {est_ + (r), RR}, {q_time_ + (r), RR}, \
               {q_len_ + (r), RR}, {q_event_ + (r), RR}, {q_vals_ + (r), RR}, QN, QV}
// and particle row rr's work in the advance kernels' layout (rows first, as the CPU's; widths EW, VW, SW)
#define DS_KERNEL_WORK_ROWS(rr) \
    ds_ev_work{thetas_ + (rr) * M, largs_ + (rr) * L, {p_ + (rr) * (P > 0 ? P : 1), 1ull}, {prev_ + (rr) * EW, 1ull}, \
               {pend_ + (rr) * EW, 1ull}, {vals_ + (rr) * VW, 1ull}, {est_ + (rr) * SW, 1ull}, \
               {q_time_ + (rr) * QN, 1ull}, {q_len_ + (rr), 1ull}, {q_event_ + (rr) * QN, 1ull}, \
               {q_vals_ + (rr) * QN * QV, 1ull}, QN, QV}

// a comparison (1.0 true, 0.0 false) or a two-argument logical operator  (compare_or_logic)
__device__ __forceinline__ double ds_compare_or_logic(const int op, const double a, const double b) {
    bool r;
    if (op == CMP_LT) r = a < b;
    else if (op == CMP_LE) r = a <= b;
    else if (op == CMP_GT) r = a > b;
    else if (op == CMP_GE) r = a >= b;
    else if (op == CMP_EQ) r = a == b;
    else if (op == CMP_NE) r = a != b;
    else if (op == L_AND) r = a != 0.0 && b != 0.0;
    else if (op == L_OR) r = a != 0.0 || b != 0.0;
    else r = (a != 0.0) != (b != 0.0);
    return r ? 1.0 : 0.0;
}

// program pid on counts x, mutable parameters p, at time t  (run_program)
template <class X>
__device__ __noinline__ double ds_run_program(const int pid, const X& x, const ds_col<double>& p, const double t,
                                 const ds_events& V, const ds_col<double>& st) {
    int sp = 0;
    for (int pc = V.prog_start[pid]; pc < V.prog_start[pid + 1]; ++pc) {
        const int op = V.prog_op[pc];
        if (op == OP_PUSH_SPECIES) { st[sp] = (double)x[(int)V.prog_arg[pc]]; ++sp; }
        else if (op == OP_PUSH_PARAM) { st[sp] = p[(int)V.prog_arg[pc]]; ++sp; }
        else if (op == OP_PUSH_TIME) { st[sp] = t; ++sp; }
        else if (op == OP_PUSH_CONST || op == OP_PUSH_BOOL) { st[sp] = V.prog_arg[pc]; ++sp; }
        else if (op == OP_NEG) { st[sp - 1] = -st[sp - 1]; }
        else if (op == L_NOT) { st[sp - 1] = st[sp - 1] == 0.0 ? 1.0 : 0.0; }
        else if (op == OP_SELECT) { st[sp - 3] = st[sp - 2] != 0.0 ? st[sp - 3] : st[sp - 1]; sp -= 2; }
        else if (op == OP_SIN) { st[sp - 1] = ds_sin(st[sp - 1]); }
        else if (op == OP_COS) { st[sp - 1] = ds_cos(st[sp - 1]); }
        else if (op >= OP_FUNC_BASE && op - OP_FUNC_BASE <= 6) { st[sp - 1] = ds_unary(op - OP_FUNC_BASE, st[sp - 1]); }
        else if (op >= OP_CMP_BASE) { st[sp - 2] = ds_compare_or_logic(op, st[sp - 2], st[sp - 1]); --sp; }
        else { st[sp - 2] = ds_binary(op, st[sp - 2], st[sp - 1]); --sp; }
    }
    return st[0];
}

// target := v: a species count (a whole number in [0, 2**53] to within DS_COUNT_TOL, relative) or
// mutable parameter -1 - target, written into the realization's reaction tables too; false if
// refused  (assign)
template <class X>
__device__ bool ds_ev_assign(const int target, const double v, const X& x, const ds_events& V, const ds_ev_work& W) {
    if (target >= 0) {
        const double r = floor(v + 0.5);
        if (!(v > -0.5 && v <= DS_MAX_COUNT_F && fabs(v - r) <= DS_COUNT_TOL * fmax(1.0, v))) return false;
        x[target] = (long long)r;
        return true;
    }
    const int q = -1 - target;
    W.p[q] = v;
    for (int i = V.par_theta_start[q]; i < V.par_theta_start[q + 1]; ++i) W.theta[V.par_theta[i]] = v;
    for (int i = V.par_law_start[q]; i < V.par_law_start[q + 1]; ++i) W.larg[V.par_law[i]] = v;
    return true;
}

// every assignment rule in order; returns the error word (bad: the refused value)  (apply_rules)
template <class X>
__device__ int ds_apply_rules(const X& x, const double t, const ds_events& V, const ds_ev_work& W, double& bad) {
    for (int i = 0; i < V.NR; ++i) {
        const double v = ds_run_program(V.rule_prog[i], x, W.p, t, V, W.st);
        if (!ds_ev_assign(V.rule_target[i], v, x, V, W)) { bad = v; return DS_ERROR_WORD(ERR_RULE_VALUE, i); }
    }
    return ERR_NONE;
}

// event i (with a delay) triggered at t: its execution at t + delay, with the assignment values of time
// t if it uses them; returns the error word (bad: the refused delay)  (schedule)
template <class X>
__device__ __noinline__ int ds_schedule(const int i, const X& x, const double t, const ds_events& V,
                                        const ds_ev_work& W, double& bad) {
    const double d = ds_run_program(V.ev_delay[i], x, W.p, t, V, W.st);
    if (!(d >= 0.0) || isinf(d)) { bad = d; return DS_ERROR_WORD(ERR_EVENT_DELAY, i); }
    const long long n = W.q_len[0];
    if (n >= W.QN) { bad = __longlong_as_double(0x7ff8000000000000LL); return DS_ERROR_WORD(ERR_EVENT_QUEUE, i); }
    W.q_time[n] = t + d;
    W.q_event[n] = i;
    if (V.ev_flags[i] & FLAG_TRIGGER_VALUES) {
        const int lo = V.asg_start[i], hi = V.asg_start[i + 1];
        for (int q = lo; q < hi; ++q) W.q_vals[n * W.QV + (q - lo)] = ds_run_program(V.asg_prog[q], x, W.p, t, V, W.st);
    }
    W.q_len[0] = n + 1;
    return ERR_NONE;
}

// remove scheduled execution s, keeping the others in their order  (unschedule)
__device__ __forceinline__ void ds_unschedule(const long long s, const ds_ev_work& W) {
    const long long n = W.q_len[0];
    for (long long r = s; r < n - 1; ++r) {
        W.q_time[r] = W.q_time[r + 1];
        W.q_event[r] = W.q_event[r + 1];
        for (int c = 0; c < W.QV; ++c) W.q_vals[r * W.QV + c] = W.q_vals[(r + 1) * W.QV + c];
    }
    W.q_len[0] = n - 1;
}

// cancel every scheduled execution of event i  (cancel)
__device__ __forceinline__ void ds_cancel(const int i, const ds_ev_work& W) {
    long long s = 0;
    while (s < W.q_len[0]) {
        if (W.q_event[s] == i) ds_unschedule(s, W);
        else ++s;
    }
}

// every trigger: a rise from false to true makes its event pending once more, or schedules it at
// t + delay; a fall cancels a non-persistent event's scheduled executions. rose: whether any event
// became pending or was scheduled; returns the error word (bad: the refused delay)  (check_triggers)
template <class X>
__device__ int ds_check_triggers(const X& x, const double t, const ds_events& V, const ds_ev_work& W, bool& rose,
                                 double& bad) {
    rose = false;
    for (int i = 0; i < V.E; ++i) {
        const bool on = ds_run_program(V.ev_trigger[i], x, W.p, t, V, W.st) != 0.0;
        if (on && W.prev[i] == 0) {
            rose = true;
            if (V.ev_delay[i] < 0) W.pend[i] += 1;
            else {
                const int word = ds_schedule(i, x, t, V, W, bad);
                if (word != ERR_NONE) return word;
            }
        } else if (!on && W.prev[i] != 0 && (V.ev_flags[i] & FLAG_PERSISTENT) == 0 && V.ev_delay[i] >= 0) {
            ds_cancel(i, W);
        }
        W.prev[i] = on ? 1 : 0;
    }
    return ERR_NONE;
}

// the pending event to execute now (highest priority, ties in document order; a pending non-persistent
// event whose trigger is false is dropped), or -1; a scheduled execution due at t (q_time <= t) counts
// as pending: then E + its slot (for equal priorities and events, the first scheduled; an event pending
// without delay first)  (next_pending)
template <class X>
__device__ int ds_next_pending(const X& x, const double t, const ds_events& V, const ds_ev_work& W) {
    const double NEG_INF = -__longlong_as_double(0x7ff0000000000000LL);
    int best = -1, best_i = -1;
    double best_p = NEG_INF;
    for (int i = 0; i < V.E; ++i) {
        if (W.pend[i] == 0) continue;
        if ((V.ev_flags[i] & FLAG_PERSISTENT) == 0 && W.prev[i] == 0) { W.pend[i] = 0; continue; }
        double pr = NEG_INF;
        if (V.ev_priority[i] >= 0) pr = ds_run_program(V.ev_priority[i], x, W.p, t, V, W.st);
        if (best < 0 || pr > best_p) { best = i; best_i = i; best_p = pr; }
    }
    const long long n = W.q_len[0];
    for (long long s = 0; s < n; ++s) {
        if (W.q_time[s] > t) continue;
        const int i = (int)W.q_event[s];
        double pr = NEG_INF;
        if (V.ev_priority[i] >= 0) pr = ds_run_program(V.ev_priority[i], x, W.p, t, V, W.st);
        if (best < 0 || pr > best_p || (pr == best_p && i < best_i)) { best = V.E + (int)s; best_i = i; best_p = pr; }
    }
    return best;
}

// the pending events one at a time (and those they trigger); n: events executed  (execute_pending)
template <class X>
__device__ __noinline__ int ds_execute_pending(const X& x, const double t, const ds_events& V, const ds_ev_work& W,
                                              double& bad, int& n) {
    n = 0;
    while (true) {
        int i = ds_next_pending(x, t, V, W);
        if (i < 0) return ERR_NONE;
        ++n;
        if (n > DS_MAX_CASCADE) return DS_ERROR_WORD(ERR_EVENT_LOOP, i < V.E ? i : (int)W.q_event[i - V.E]);
        bool stored = false;
        if (i >= V.E) {  // a scheduled execution of a delayed event
            const int s = i - V.E;
            i = (int)W.q_event[s];
            stored = (V.ev_flags[i] & FLAG_TRIGGER_VALUES) != 0;
            if (stored)
                for (int q = 0; q < V.asg_start[i + 1] - V.asg_start[i]; ++q) W.vals[q] = W.q_vals[s * W.QV + q];
            ds_unschedule(s, W);
        } else {
            W.pend[i] -= 1;
        }
        const int lo = V.asg_start[i], hi = V.asg_start[i + 1];
        if (!stored)  // every value first, then every assignment
            for (int q = lo; q < hi; ++q) W.vals[q - lo] = ds_run_program(V.asg_prog[q], x, W.p, t, V, W.st);
        for (int q = lo; q < hi; ++q)
            if (!ds_ev_assign(V.asg_target[q], W.vals[q - lo], x, V, W)) {
                bad = W.vals[q - lo];
                return DS_ERROR_WORD(ERR_EVENT_VALUE, q);
            }
        int word = ds_apply_rules(x, t, V, W, bad);
        if (word != ERR_NONE) return word;
        bool rose;
        word = ds_check_triggers(x, t, V, W, rose, bad);
        if (word != ERR_NONE) return word;
    }
}

// whether a scheduled execution is due at t  (due)
__device__ __forceinline__ bool ds_due(const double t, const ds_ev_work& W) {
    for (long long s = 0; s < W.q_len[0]; ++s)
        if (W.q_time[s] <= t) return true;
    return false;
}

// the triggers at time t, then the events that are pending; n: events executed  (fire_events)
template <class X>
__device__ int ds_fire_events(const X& x, const double t, const ds_events& V, const ds_ev_work& W, double& bad,
                              int& n) {
    n = 0;
    bool rose;
    const int word = ds_check_triggers(x, t, V, W, rose, bad);
    if (word != ERR_NONE) return word;
    if (!rose && !ds_due(t, W)) return ERR_NONE;
    return ds_execute_pending(x, t, V, W, bad, n);
}

// start of a realization (counts already initial): parameters, rules, initialValue, nothing pending or
// scheduled, then the events of t = 0  (reset)
template <class X>
__device__ int ds_ev_reset(const X& x, const double t, const ds_events& V, const ds_ev_work& W, double& bad) {
    for (int i = 0; i < V.P; ++i) W.p[i] = V.p0[i];
    for (int i = 0; i < V.E; ++i) { W.prev[i] = (V.ev_flags[i] & FLAG_INITIAL) ? 1 : 0; W.pend[i] = 0; }
    W.q_len[0] = 0;
    int word = ds_apply_rules(x, t, V, W, bad);
    int n;
    if (word == ERR_NONE) word = ds_fire_events(x, t, V, W, bad, n);
    return word;
}

// how many kinds of stops the loop has: time comparisons and delayed events (their scheduled times);
// none: next_change is not called  (cpu.run_realization_events' n_tc)
__device__ __forceinline__ int ds_time_stops(const ds_events& V) {
    int n = V.T;
    for (int i = 0; i < V.E; ++i)
        if (V.ev_delay[i] >= 0) ++n;
    return n;
}

// the earliest instant after t at which a comparison 'time OP c' changes with the state frozen, or a
// scheduled execution of a delayed event is due  (next_change)
template <class X>
__device__ double ds_next_change(const X& x, const double t, const ds_events& V, const ds_ev_work& W) {
    const double INF = __longlong_as_double(0x7ff0000000000000LL);
    double best = INF;
    for (int i = 0; i < V.T; ++i) {
        const double c = ds_run_program(V.tc_prog[i], x, W.p, t, V, W.st);
        const int op = V.tc_op[i];
        const double after = nextafter(c, INF);
        double at;
        if (op == CMP_GE || op == CMP_LT) at = t < c ? c : INF;
        else if (op == CMP_GT || op == CMP_LE) at = t < after ? after : INF;
        else at = t < c ? c : (t < after ? after : INF);
        if (at < best) best = at;
    }
    for (long long s = 0; s < W.q_len[0]; ++s)  // scheduled executions of delayed events
        if (t < W.q_time[s] && W.q_time[s] < best) best = W.q_time[s];
    return best;
}

// What a loop records (the REC template argument of ssa_events.cu's ds_events_loop and ssa_hybrid.cu's
// ds_hybrid_loop). The SSA's: grid states as int32 columns rec[(k S + s) R + r] (ERR_OVERFLOW past
// 2**31 - 1) and the firings per reaction
struct ds_grid_rec {
    int* rec; unsigned long long* firings; int S; unsigned long long RR; int r;
    template <class X> __device__ __forceinline__ void put(const int k, const X& x, int& err) const {
        for (int s = 0; s < S; ++s) {
            const long long v = x[s];
            if (v > 2147483647LL) err = ERR_OVERFLOW;
            rec[((unsigned long long)k * S + s) * RR + r] = (int)v;
        }
    }
    template <class X> __device__ __forceinline__ void fill(const int k0, const int K, const X& x) const {
        for (int kk = k0; kk < K; ++kk)
            for (int s = 0; s < S; ++s) rec[((unsigned long long)kk * S + s) * RR + r] = (int)x[s];
    }
    __device__ __forceinline__ void fired(const int j) const { atomicAdd(&firings[j], 1ull); }
    __device__ __forceinline__ bool exhausted(const unsigned long long ctr) const { return false; }  // no draw limit
};

// an advance records nothing: its state at t1 (its one grid point) is x after the loop; at most the draws
// below counter ctr_end (a compile-time "no limit" for the SSA, whose loop then has no compare for it)
struct ds_no_rec {
    unsigned long long ctr_end;
    __device__ __forceinline__ bool exhausted(const unsigned long long ctr) const { return ctr >= ctr_end; }
    template <class X> __device__ __forceinline__ void put(const int k, const X& x, int& err) const {}
    template <class X> __device__ __forceinline__ void fill(const int k0, const int K, const X& x) const {}
    __device__ __forceinline__ void fired(const int j) const {}
};
