// The integrator of the SSA's hybrid loop (kernels/ssa_hybrid.cu): the twin of distsim/ssa/hybrid_ops.py,
// with the same operations in the same order (build with --fmad=false), so CPU and GPU give the same
// realizations. Between firings the rate-rule parameters y (in the realization's mutable parameters p)
// and the cumulative hazard Lambda (Lambda' = a0(t, y)) are integrated by Dormand-Prince 5(4) steps with
// error control until Lambda reaches the drawn target; the tolerances are stated in hybrid_ops.py.
#pragma once
#include "ssa_events.cuh"

#define ERR_INTEGRATOR 8  // distsim/ssa/errors.py
#define ADV_HORIZON 0
#define ADV_CROSSED 1
#define ADV_BAD_PROPENSITY 2
#define ADV_STEP 3
#define DS_RTOL 1e-9
#define DS_ATOL 1e-12
#define DS_CROSS_TOL 1e-12
#define DS_NEWTON_MAX 8
#define DS_MIN_STEP_REL 1e-13

// the hybrid tables of distsim/models/compile_events.py (hz_of, rr_param, rr_prog) and their sizes
struct ds_hybrid {
    const int* hz_of; const int* rr_param; const int* rr_prog;
    int M, C;
};

// one realization's integrator work (hybrid_ops.new_work): y0, y1, yt, ys (C + 1 entries each), the
// seven stages (7 (C + 1): stage i, component c at i (C + 1) + c), the next step size, the state at a
// grid point gy (C + 1) and the next grid point to record kc; with rec, the rate-rule values on the grid
// go to cr (grid point j, rule c at j C + c)
struct ds_hybrid_work {
    ds_col<double> y0, y1, yt, ys, k, hs, gy, cr;
    ds_col<int> kc;
    const double* grid;
    int K;
    bool rec;
};

__device__ __forceinline__ ds_col<double> ds_stage(const ds_col<double>& k, const int i, const int n) {
    return ds_col<double>{k.p + (unsigned long long)(i * n) * k.n, k.n};
}

// out = (y', a0) at time t with rate-rule values y (written into p first); d >= 0: a bad propensity  (rhs)
template <class X>
__device__ __noinline__ void ds_rhs(const double t, const ds_col<double>& y, const ds_col<double>& out,
                                    const double a_static, const X& x, const ds_events& V, const ds_ev_work& W,
                                    const ds_hybrid& H, int& d, double& v) {
    for (int c = 0; c < H.C; ++c) W.p[H.rr_param[c]] = y[c];
    for (int c = 0; c < H.C; ++c) out[c] = ds_run_program(H.rr_prog[c], x, W.p, t, V, W.st);
    double s = a_static;
    for (int q = 0; q < H.M; ++q) {
        if (H.hz_of[q] >= 0) {
            const double u = ds_run_program(H.hz_of[q], x, W.p, t, V, W.st);
            if (ds_bad_propensity(u)) { d = q; v = u; return; }
            s += u;
        }
    }
    out[H.C] = s;
    d = -1;
    v = 0.0;
}

// one Dormand-Prince step of size h from (t, y0) into y1 (yt: scratch; k stage 0 holds f(t, y0));
// returns the error norm  (dp_step)
template <class X>
__device__ __noinline__ double ds_dp_step(const double t, const double h, const ds_col<double>& y0,
                                          const ds_col<double>& y1, const ds_col<double>& yt,
                                          const ds_col<double>& k, const double a_static, const X& x,
                                          const ds_events& V, const ds_ev_work& W, const ds_hybrid& H, int& d,
                                          double& v) {
    const int n = H.C + 1;
    const ds_col<double> k0 = ds_stage(k, 0, n), k1 = ds_stage(k, 1, n), k2 = ds_stage(k, 2, n),
                         k3 = ds_stage(k, 3, n), k4 = ds_stage(k, 4, n), k5 = ds_stage(k, 5, n),
                         k6 = ds_stage(k, 6, n);
    for (int i = 0; i < n; ++i) yt[i] = y0[i] + h * ((1.0 / 5.0) * k0[i]);
    ds_rhs(t + (1.0 / 5.0) * h, yt, k1, a_static, x, V, W, H, d, v);
    if (d >= 0) return 0.0;
    for (int i = 0; i < n; ++i) yt[i] = y0[i] + h * ((3.0 / 40.0) * k0[i] + (9.0 / 40.0) * k1[i]);
    ds_rhs(t + (3.0 / 10.0) * h, yt, k2, a_static, x, V, W, H, d, v);
    if (d >= 0) return 0.0;
    for (int i = 0; i < n; ++i)
        yt[i] = y0[i] + h * ((44.0 / 45.0) * k0[i] + (-56.0 / 15.0) * k1[i] + (32.0 / 9.0) * k2[i]);
    ds_rhs(t + (4.0 / 5.0) * h, yt, k3, a_static, x, V, W, H, d, v);
    if (d >= 0) return 0.0;
    for (int i = 0; i < n; ++i)
        yt[i] = y0[i] + h * ((19372.0 / 6561.0) * k0[i] + (-25360.0 / 2187.0) * k1[i] + (64448.0 / 6561.0) * k2[i]
                             + (-212.0 / 729.0) * k3[i]);
    ds_rhs(t + (8.0 / 9.0) * h, yt, k4, a_static, x, V, W, H, d, v);
    if (d >= 0) return 0.0;
    for (int i = 0; i < n; ++i)
        yt[i] = y0[i] + h * ((9017.0 / 3168.0) * k0[i] + (-355.0 / 33.0) * k1[i] + (46732.0 / 5247.0) * k2[i]
                             + (49.0 / 176.0) * k3[i] + (-5103.0 / 18656.0) * k4[i]);
    ds_rhs(t + h, yt, k5, a_static, x, V, W, H, d, v);
    if (d >= 0) return 0.0;
    for (int i = 0; i < n; ++i)
        y1[i] = y0[i] + h * ((35.0 / 384.0) * k0[i] + (500.0 / 1113.0) * k2[i] + (125.0 / 192.0) * k3[i]
                             + (-2187.0 / 6784.0) * k4[i] + (11.0 / 84.0) * k5[i]);
    ds_rhs(t + h, y1, k6, a_static, x, V, W, H, d, v);
    if (d >= 0) return 0.0;
    double err = 0.0;
    for (int i = 0; i < n; ++i) {
        const double e = h * ((71.0 / 57600.0) * k0[i] + (-71.0 / 16695.0) * k2[i] + (71.0 / 1920.0) * k3[i]
                              + (-17253.0 / 339200.0) * k4[i] + (22.0 / 525.0) * k5[i] + (-1.0 / 40.0) * k6[i]);
        const double m0 = fabs(y0[i]), m1 = fabs(y1[i]);
        const double r = fabs(e) / (DS_ATOL + DS_RTOL * (m0 >= m1 ? m0 : m1));
        if (!(r <= err)) err = r;
    }
    return err;
}

// the rate-rule values at the grid points in [t, te) not recorded yet, inside an accepted step from t (y0 its
// start, k stage 0 f(t, y0)): y0 at a point equal to t, else a fresh step from t to it  (record_grid)
template <class X>
__device__ __noinline__ void ds_record_grid(const double t, const double te, const double a_static, const X& x,
                                            const ds_events& V, const ds_ev_work& W, const ds_hybrid& H,
                                            const ds_hybrid_work& HW) {
    const int C = H.C;
    int j = HW.kc[0];
    while (j < HW.K && HW.grid[j] < te) {
        if (HW.grid[j] <= t) {
            for (int c = 0; c < C; ++c) HW.cr[j * C + c] = HW.y0[c];
        } else {
            int d = -1;
            double v = 0.0;
            ds_dp_step(t, HW.grid[j] - t, HW.y0, HW.gy, HW.ys, HW.k, a_static, x, V, W, H, d, v);
            for (int c = 0; c < C; ++c)
                HW.cr[j * C + c] = d < 0 ? HW.gy[c] : __longlong_as_double(0x7ff8000000000000LL);
        }
        ++j;
    }
    HW.kc[0] = j;
}

// the grid points not recorded yet get the rate-rule values held in p  (record_rest)
__device__ __forceinline__ void ds_record_rest(const ds_ev_work& W, const ds_hybrid& H, const ds_hybrid_work& HW) {
    for (int j = HW.kc[0]; j < HW.K; ++j)
        for (int c = 0; c < H.C; ++c) HW.cr[j * H.C + c] = W.p[H.rr_param[c]];
    HW.kc[0] = HW.K;
}

// theta in [0, 1] where the step's cubic Hermite interpolant of Lambda equals target  (_hermite_crossing)
__device__ __forceinline__ double ds_hermite_crossing(const double lam0, const double lam1, const double f0,
                                                      const double f1, const double h, const double target) {
    double lo = 0.0, hi = 1.0;
    for (int it = 0; it < 60; ++it) {
        const double s = 0.5 * (lo + hi);
        const double s2 = s * s, s3 = s * s * s;
        const double v = (2.0 * s3 - 3.0 * s2 + 1.0) * lam0 + (s3 - 2.0 * s2 + s) * h * f0
                         + (3.0 * s2 - 2.0 * s3) * lam1 + (s3 - s2) * h * f1;
        if (v < target) lo = s;
        else hi = s;
    }
    return hi;
}

// the crossing inside the accepted step (t, t + h): t_out = t*, p holds y(t*)  (_cross)
template <class X>
__device__ __noinline__ int ds_cross(const double t, const double h, const double target, const double a_static,
                                     const X& x, const ds_events& V, const ds_ev_work& W, const ds_hybrid& H,
                                     const ds_hybrid_work& HW, double& t_out, double& lam, int& d, double& v) {
    const int C = H.C, n = C + 1;
    const ds_col<double> k0 = ds_stage(HW.k, 0, n), k6 = ds_stage(HW.k, 6, n);
    double s = h * ds_hermite_crossing(HW.y0[C], HW.y1[C], k0[C], k6[C], h, target);
    for (int it = 0; it < DS_NEWTON_MAX; ++it) {
        ds_rhs(t, HW.y0, k0, a_static, x, V, W, H, d, v);
        if (d < 0) ds_dp_step(t, s, HW.y0, HW.yt, HW.ys, HW.k, a_static, x, V, W, H, d, v);
        if (d >= 0) { t_out = t; lam = HW.y0[C]; return ADV_BAD_PROPENSITY; }
        const double miss = target - HW.yt[C];
        double s_new = s;
        if (k6[C] > 0.0) {
            s_new = s + miss / k6[C];
            s_new = s_new < 0.0 ? 0.0 : (s_new > h ? h : s_new);
        }
        if (fabs(miss) <= DS_CROSS_TOL * (1.0 + target) || s_new == s || it == DS_NEWTON_MAX - 1) break;
        s = s_new;
    }
    if (HW.rec) ds_record_grid(t, t + s, a_static, x, V, W, H, HW);  // (k stage 0 is f(t, y0) again)
    for (int c = 0; c < C; ++c) W.p[H.rr_param[c]] = HW.yt[c];
    t_out = t + s;
    lam = HW.yt[C];
    return ADV_CROSSED;
}

// integrate from t until Lambda reaches target or time t_hor; returns the ADV_ status (advance)
template <class X>
__device__ __noinline__ int ds_advance(double& t, const double t_hor, double& lam, const double target,
                                       const double a_static, const X& x, const ds_events& V, const ds_ev_work& W,
                                       const ds_hybrid& H, const ds_hybrid_work& HW, int& d, double& v) {
    const int C = H.C, n = C + 1;
    const ds_col<double> k0 = ds_stage(HW.k, 0, n);
    for (int c = 0; c < C; ++c) HW.y0[c] = W.p[H.rr_param[c]];
    HW.y0[C] = lam;
    double h = HW.hs[0];
    if (!(h > 0.0)) h = (t_hor > t && !isinf(t_hor)) ? 0.01 * (t_hor - t) : 1.0;
    d = -1;
    v = 0.0;
    while (t < t_hor) {
        const bool last = t + h >= t_hor;
        const double hh = last ? t_hor - t : h;
        ds_rhs(t, HW.y0, k0, a_static, x, V, W, H, d, v);
        if (d >= 0) { lam = HW.y0[C]; return ADV_BAD_PROPENSITY; }
        double err = ds_dp_step(t, hh, HW.y0, HW.y1, HW.ys, HW.k, a_static, x, V, W, H, d, v);
        if (d >= 0) err = __longlong_as_double(0x7ff8000000000000LL);
        double fac;
        if (err == 0.0) fac = 5.0;
        else if (isnan(err)) fac = 0.2;
        else {
            fac = 0.9 * ds_pow(err, -0.2);
            fac = fac < 0.2 ? 0.2 : (fac > 5.0 ? 5.0 : fac);
        }
        if (!(err <= 1.0)) {
            h = hh * fac;
            if (h < DS_MIN_STEP_REL * (1.0 + fabs(t))) {
                lam = HW.y0[C];
                if (d >= 0) return ADV_BAD_PROPENSITY;
                return ADV_STEP;
            }
            continue;
        }
        if (!last || fac < 1.0) h = hh * fac;
        HW.hs[0] = h;
        if (HW.y1[C] >= target) return ds_cross(t, hh, target, a_static, x, V, W, H, HW, t, lam, d, v);
        if (HW.rec) ds_record_grid(t, last ? t_hor : t + hh, a_static, x, V, W, H, HW);
        t = last ? t_hor : t + hh;
        for (int i = 0; i < n; ++i) HW.y0[i] = HW.y1[i];
    }
    for (int c = 0; c < C; ++c) W.p[H.rr_param[c]] = HW.y0[c];
    lam = HW.y0[C];
    return ADV_HORIZON;
}

// a[d] of the moving reactions at time t; d >= 0: a bad one  (moving_propensities)
template <class X>
__device__ void ds_moving_propensities(const X& x, const double t, const ds_col<double>& a, const ds_events& V,
                                       const ds_ev_work& W, const ds_hybrid& H, int& d, double& v) {
    d = -1;
    v = 0.0;
    for (int q = 0; q < H.M; ++q) {
        if (H.hz_of[q] >= 0) {
            const double u = ds_run_program(H.hz_of[q], x, W.p, t, V, W.st);
            if (ds_bad_propensity(u)) { d = q; v = u; return; }
            a[q] = u;
        }
    }
}
