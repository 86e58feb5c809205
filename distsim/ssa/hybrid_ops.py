"""The integrator of the SSA's hybrid loop (:func:`distsim.ssa.cpu.run_realization_hybrid`), Numba.

Between two firings the counts x are frozen; what moves is time, the rate-rule parameters y (held in
the realization's mutable parameters ``p``, :mod:`distsim.ssa.event_ops`) and the propensities that
read them or ``time`` (``hz_of``). The next firing is where the cumulative hazard
Lambda(t) = int a0 dt, integrated with y as one more ODE component (Lambda' = a0(t, y)), reaches
E = -log u: a piecewise-deterministic Markov process simulated exactly up to the integrator's
tolerances, stated here:

* Dormand-Prince 5(4) steps with error control on every component (y and Lambda): a step is accepted
  when max_i |err_i| / (ATOL + RTOL max(|y_i(t)|, |y_i(t + h)|)) <= 1; the next step is h times
  0.9 err^(-1/5), kept within [0.2, 5]; a step below MIN_STEP_REL (1 + |t|) stops the realization
  (``ERR_INTEGRATOR``). A propensity that is bad (negative, NaN, infinite) inside a trial step
  rejects it; at an accepted point, or below the smallest step, it stops the realization.
* The crossing inside an accepted step: bisection of the step's cubic Hermite interpolant of Lambda,
  then Newton iterations, each a fresh Dormand-Prince step from the step's start to the candidate
  time, until |Lambda(t*) - E| <= CROSS_TOL (1 + E) (at most NEWTON_MAX). y(t*) is that step's.

* Rate-rule values on the time grid (:func:`record_grid`, for the result's ``continuous_*``): a fresh step
  from the start of the accepted step that holds the grid point to it; the loop's steps never change.
* A trigger that reads a rate-rule variable (or a moving assignment rule's target) is *located*
  (:func:`locate_triggers`): where its value at an accepted step's end differs from its start, bisection on
  the step's length (fresh steps from the start) to the last bit finds the first point where it differs;
  the loop stops there (``ADV_TRIGGER``) and runs the events as at a time comparison. A trigger that changes
  twice inside one step is not seen (steps follow the tolerances above, not the trigger).

The steps depend only on the realization's own values, in a fixed order: the same seed gives the same
bits on any number of workers. The CUDA twin is ``kernels/ssa_hybrid.cuh`` (``ds_record_grid`` records the same values).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ..backends.dsmath import ds_pow
from ..models.kinetics import bad_propensity
from .event_ops import run_program

RTOL, ATOL = 1e-9, 1e-12
CROSS_TOL = 1e-12
NEWTON_MAX = 8
MIN_STEP_REL = 1e-13
ADV_HORIZON, ADV_CROSSED, ADV_BAD_PROPENSITY, ADV_STEP, ADV_TRIGGER = 0, 1, 2, 3, 4  # what advance() reports

# Dormand-Prince 5(4) (Dormand & Prince 1980): nodes, the 5th-order weights (row 7) and the error
# weights (5th minus 4th order)
C2, C3, C4, C5 = 1 / 5, 3 / 10, 4 / 5, 8 / 9
A21 = 1 / 5
A31, A32 = 3 / 40, 9 / 40
A41, A42, A43 = 44 / 45, -56 / 15, 32 / 9
A51, A52, A53, A54 = 19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729
A61, A62, A63, A64, A65 = 9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656
B1, B3, B4, B5, B6 = 35 / 384, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84
E1, E3, E4, E5, E6, E7 = 71 / 57600, -71 / 16695, 71 / 1920, -17253 / 339200, 22 / 525, -1 / 40


@numba.njit(cache=True)
def new_work(n_rate_rules, n_located):
    """One realization's integrator work: states y0, y1, yt and a stage's input ys (rate-rule values,
    then Lambda), the seven stages, [next step size] (0: none yet), the state at a grid point gy,
    [next grid point to record] (:func:`record_grid`) and the located triggers' values at a step's start."""
    n = n_rate_rules + 1
    return (np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty((7, n)), np.zeros(1), np.empty(n),
            np.zeros(1, dtype=np.int64), np.zeros(max(n_located, 1)))


@numba.njit(cache=True, error_model="numpy")
def _triggers(t, y, x, ev, w, base, compare):
    """The located triggers (``ev.loc_ev``) at time t with rate-rule values y (written into p): into base,
    or, with ``compare``, whether any differs from base."""
    p, st = w[2], w[6]
    for c in range(ev.rr_param.shape[0]):
        p[ev.rr_param[c]] = y[c]
    for q in range(ev.loc_ev.shape[0]):
        v = run_program(ev.ev_trigger[ev.loc_ev[q]], x, p, t, ev.prog_start, ev.prog_op, ev.prog_arg, st)
        on = 1.0 if v != 0.0 else 0.0
        if compare:
            if on != base[q]:
                return True
        else:
            base[q] = on
    return False


@numba.njit(cache=True, error_model="numpy")
def locate_triggers(t, h, a_static, x, ev, w, hw):
    """The first time in the accepted step (t, t + h] (y0 its start, k[0] = f(t, y0)) where a located trigger
    has another value than at t, by bisection on the step's length with a fresh Dormand-Prince step from t
    to each candidate, to the last bit of the length: returns s, with yt = y(t + s) (a trigger differs there)
    and False; or (h, True) when a step meets a bad propensity (the caller stops at t + h as it would)."""
    _, _, yt, ys, k, _, _, _, base = hw
    lo, hi = 0.0, h
    while True:
        mid = 0.5 * (lo + hi)
        if not (lo < mid < hi):
            break
        _, d, _ = dp_step(t, mid, hw[0], yt, ys, k, a_static, x, ev, w)
        if d >= 0 or _triggers(t + mid, yt, x, ev, w, base, True):
            hi = mid
        else:
            lo = mid
    _, d, _ = dp_step(t, hi, hw[0], yt, ys, k, a_static, x, ev, w)
    return hi, d >= 0


@numba.njit(cache=True, error_model="numpy")
def record_grid(t, te, a_static, x, ev, w, hw, grid, crec):
    """crec[g] = the rate-rule values at the grid points g in [t, te) not recorded yet, inside an accepted
    step from t (y0 its start, k[0] = f(t, y0)) that ends at te: y0 at g == t, else a fresh Dormand-Prince
    step from t to g (the accuracy of the loop's steps; those steps stay as they are, so recording never
    changes a realization). NaN where that step meets a bad propensity. Overwrites the stages k[1:], ys."""
    y0, _, _, ys, k, _, gy, kc, _ = hw
    C = ev.rr_param.shape[0]
    j = kc[0]
    while j < grid.shape[0] and grid[j] < te:
        if grid[j] <= t:
            for c in range(C):
                crec[j, c] = y0[c]
        else:
            _, d, _ = dp_step(t, grid[j] - t, y0, gy, ys, k, a_static, x, ev, w)
            for c in range(C):
                crec[j, c] = gy[c] if d < 0 else math.nan
        j += 1
    kc[0] = j


@numba.njit(cache=True)
def record_rest(ev, w, hw, crec):
    """The grid points not recorded yet get the rate-rule values held in p (the end of a realization)."""
    p = w[2]
    kc = hw[7]
    for j in range(kc[0], crec.shape[0]):
        for c in range(ev.rr_param.shape[0]):
            crec[j, c] = p[ev.rr_param[c]]
    kc[0] = crec.shape[0]


@numba.njit(cache=True, error_model="numpy")
def rhs(t, y, out, a_static, x, ev, w):
    """out = (y', a0) at time t with rate-rule values y (written into p first); a0 = a_static plus
    the moving propensities. Returns (-1, 0) or (reaction, value) of a bad propensity."""
    p, st = w[2], w[6]
    ps, po, pa = ev.prog_start, ev.prog_op, ev.prog_arg
    rr_param, rr_prog, hz_of = ev.rr_param, ev.rr_prog, ev.hz_of
    C = rr_param.shape[0]
    for c in range(C):
        p[rr_param[c]] = y[c]
    for c in range(C):
        out[c] = run_program(rr_prog[c], x, p, t, ps, po, pa, st)
    s = a_static
    for d in range(hz_of.shape[0]):
        if hz_of[d] >= 0:
            v = run_program(hz_of[d], x, p, t, ps, po, pa, st)
            if bad_propensity(v):
                return d, v
            s += v
    out[C] = s
    return -1, 0.0


@numba.njit(cache=True, error_model="numpy")
def dp_step(t, h, y0, y1, yt, k, a_static, x, ev, w):
    """One Dormand-Prince step of size h from (t, y0) into y1 (yt: scratch); k[0] must hold f(t, y0)
    and gets the other stages (k[6] = f(t + h, y1)). Returns (error norm, bad reaction or -1, its value)."""
    n = y0.shape[0]
    for i in range(n):
        yt[i] = y0[i] + h * (A21 * k[0, i])
    d, v = rhs(t + C2 * h, yt, k[1], a_static, x, ev, w)
    if d >= 0:
        return 0.0, d, v
    for i in range(n):
        yt[i] = y0[i] + h * (A31 * k[0, i] + A32 * k[1, i])
    d, v = rhs(t + C3 * h, yt, k[2], a_static, x, ev, w)
    if d >= 0:
        return 0.0, d, v
    for i in range(n):
        yt[i] = y0[i] + h * (A41 * k[0, i] + A42 * k[1, i] + A43 * k[2, i])
    d, v = rhs(t + C4 * h, yt, k[3], a_static, x, ev, w)
    if d >= 0:
        return 0.0, d, v
    for i in range(n):
        yt[i] = y0[i] + h * (A51 * k[0, i] + A52 * k[1, i] + A53 * k[2, i] + A54 * k[3, i])
    d, v = rhs(t + C5 * h, yt, k[4], a_static, x, ev, w)
    if d >= 0:
        return 0.0, d, v
    for i in range(n):
        yt[i] = y0[i] + h * (A61 * k[0, i] + A62 * k[1, i] + A63 * k[2, i] + A64 * k[3, i] + A65 * k[4, i])
    d, v = rhs(t + h, yt, k[5], a_static, x, ev, w)
    if d >= 0:
        return 0.0, d, v
    for i in range(n):
        y1[i] = y0[i] + h * (B1 * k[0, i] + B3 * k[2, i] + B4 * k[3, i] + B5 * k[4, i] + B6 * k[5, i])
    d, v = rhs(t + h, y1, k[6], a_static, x, ev, w)
    if d >= 0:
        return 0.0, d, v
    err = 0.0
    for i in range(n):
        e = h * (E1 * k[0, i] + E3 * k[2, i] + E4 * k[3, i] + E5 * k[4, i] + E6 * k[5, i] + E7 * k[6, i])
        m0, m1 = abs(y0[i]), abs(y1[i])
        r = abs(e) / (ATOL + RTOL * (m0 if m0 >= m1 else m1))
        if not (r <= err):  # (NaN wins)
            err = r
    return err, -1, 0.0


@numba.njit(cache=True, error_model="numpy")
def _hermite_crossing(lam0, lam1, f0, f1, h, target):
    """theta in [0, 1] where the cubic Hermite interpolant of Lambda on the step equals target
    (bisection: it starts below and ends at or above)."""
    lo, hi = 0.0, 1.0
    for _ in range(60):
        s = 0.5 * (lo + hi)
        s2, s3 = s * s, s * s * s
        v = (2 * s3 - 3 * s2 + 1) * lam0 + (s3 - 2 * s2 + s) * h * f0 + (3 * s2 - 2 * s3) * lam1 + (s3 - s2) * h * f1
        if v < target:
            lo = s
        else:
            hi = s
    return hi


@numba.njit(cache=True, error_model="numpy")
def advance(t, t_hor, lam, target, a_static, x, ev, w, hw, grid, crec, recording):
    """Integrate from t (rate-rule values in p, Lambda = lam) until Lambda reaches target or time t_hor.
    Returns (status, t, lam, reaction, value): ADV_CROSSED at t = t* (p holds y(t*)), ADV_HORIZON at
    t_hor, ADV_TRIGGER where a located trigger changes (:func:`locate_triggers`; p holds y there),
    ADV_BAD_PROPENSITY (reaction, value) or ADV_STEP (the step size underflowed at t). With
    ``recording``, the rate-rule values at the grid points passed go to crec (:func:`record_grid`)."""
    y0, y1, yt, ys, k, hs, _, _, base = hw
    p = w[2]
    rr_param = ev.rr_param
    C = rr_param.shape[0]
    for c in range(C):
        y0[c] = p[rr_param[c]]
    y0[C] = lam
    h = hs[0]
    if not (h > 0.0):
        h = 0.01 * (t_hor - t) if t_hor > t and not math.isinf(t_hor) else 1.0
    while t < t_hor:
        last = t + h >= t_hor
        hh = t_hor - t if last else h
        d, v = rhs(t, y0, k[0], a_static, x, ev, w)
        if d >= 0:
            return ADV_BAD_PROPENSITY, t, y0[C], d, v
        err, d, v = dp_step(t, hh, y0, y1, ys, k, a_static, x, ev, w)
        if d >= 0:  # a bad propensity inside the step: rejected, unless the step cannot shrink
            err = math.nan
        if err == 0.0:
            fac = 5.0
        elif math.isnan(err):
            fac = 0.2
        else:
            fac = 0.9 * ds_pow(err, -0.2)
            fac = 0.2 if fac < 0.2 else (5.0 if fac > 5.0 else fac)
        if not (err <= 1.0):  # rejected (NaN too): a smaller step
            h = hh * fac
            if h < MIN_STEP_REL * (1.0 + abs(t)):
                if d >= 0:
                    return ADV_BAD_PROPENSITY, t, y0[C], d, v
                return ADV_STEP, t, y0[C], -1, math.nan
            continue
        if not last or fac < 1.0:
            h = hh * fac
        hs[0] = h
        if ev.loc_ev.shape[0] > 0:  # a located trigger changing inside the step: stop where it changes
            _triggers(t, y0, x, ev, w, base, False)
            if _triggers(t + hh, y1, x, ev, w, base, True):
                f1 = k[6, C]
                s, bad = locate_triggers(t, hh, a_static, x, ev, w, hw)
                if yt[C] >= target or bad:  # the hazard reaches its target first (or a bad propensity there)
                    k[6, C] = f1  # (the step's end, for the crossing's interpolant)
                    return _cross(t, hh, target, a_static, x, ev, w, hw, grid, crec, recording)
                for c in range(C):
                    y1[c] = yt[c]
                y1[C] = yt[C]
                if recording:
                    record_grid(t, t + s, a_static, x, ev, w, hw, grid, crec)
                for c in range(C):
                    p[rr_param[c]] = y1[c]
                return ADV_TRIGGER, t + s, y1[C], -1, math.nan
        if y1[C] >= target:
            return _cross(t, hh, target, a_static, x, ev, w, hw, grid, crec, recording)
        if recording:
            record_grid(t, t_hor if last else t + hh, a_static, x, ev, w, hw, grid, crec)
        t = t_hor if last else t + hh
        for i in range(C + 1):
            y0[i] = y1[i]
    for c in range(C):
        p[rr_param[c]] = y0[c]
    return ADV_HORIZON, t, y0[C], -1, math.nan


@numba.njit(cache=True, error_model="numpy")
def _cross(t, h, target, a_static, x, ev, w, hw, grid, crec, recording):
    """The crossing inside the accepted step (t, t + h) (y0 its start, y1 its end, k its stages)."""
    y0, y1, yt, ys, k, _, _, _, _ = hw
    C = ev.rr_param.shape[0]
    s = h * _hermite_crossing(y0[C], y1[C], k[0, C], k[6, C], h, target)
    for it in range(NEWTON_MAX):
        d, v = rhs(t, y0, k[0], a_static, x, ev, w)
        if d < 0:
            _, d, v = dp_step(t, s, y0, yt, ys, k, a_static, x, ev, w)
        if d >= 0:
            return ADV_BAD_PROPENSITY, t, y0[C], d, v
        miss = target - yt[C]
        s_new = s
        if k[6, C] > 0.0:
            s_new = s + miss / k[6, C]
            s_new = 0.0 if s_new < 0.0 else (h if s_new > h else s_new)
        if abs(miss) <= CROSS_TOL * (1.0 + target) or s_new == s or it == NEWTON_MAX - 1:
            break
        s = s_new
    if recording:  # (k[0] is f(t, y0) again)
        record_grid(t, t + s, a_static, x, ev, w, hw, grid, crec)
    for c in range(C):
        w[2][ev.rr_param[c]] = yt[c]
    return ADV_CROSSED, t + s, yt[C], -1, math.nan


@numba.njit(cache=True, error_model="numpy")
def moving_propensities(x, t, a, ev, w):
    """a[d] of the moving reactions at time t (p holds the rate-rule values); returns (-1, 0) or the
    (reaction, value) of a bad one."""
    p, st = w[2], w[6]
    hz_of = ev.hz_of
    for d in range(hz_of.shape[0]):
        if hz_of[d] >= 0:
            v = run_program(hz_of[d], x, p, t, ev.prog_start, ev.prog_op, ev.prog_arg, st)
            if bad_propensity(v):
                return d, v
            a[d] = v
    return -1, 0.0
