// The particle filter's reweighting, one thread per chain: the twin of distsim/pmmh/filter.py
// (reweigh_cpu) with the same operation order, so CPU and GPU give the same bits (compile with
// --fmad=false). Chain g's log weights lw[g N .. g N + N - 1] -> m[g] (their maximum; -inf when the
// chain's estimate is lost: a NaN or an infinite maximum), s[g] = sum_p ds_exp(lw - m) summed in
// particle order, and, with resample, the ancestors of systematic resampling with the uniform u[g]:
// anc[g N + i] = g N + the first j with cum[j] > (u + i) (s / N) (at most N - 1), cum the running sums.
// pmmh_noise: the log weights of a measurement under each noise model (twin of pmmh/observation.py).
#include "dsmath.cuh"

extern "C" __global__ void pmmh_reweigh(const int G, const int N, const double* __restrict__ lw,
                                        const double* __restrict__ u, const int resample, double* __restrict__ m_out,
                                        double* __restrict__ s_out, double* __restrict__ cum,
                                        long long* __restrict__ anc)
{
    const int g = blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= G) return;
    const double* w = lw + (long long)g * N;
    double* c = cum + (long long)g * N;
    double m = -1.0 / 0.0;
    bool bad = false;
    for (int p = 0; p < N; ++p) {
        const double v = w[p];
        if (v != v) bad = true;
        else if (v > m) m = v;
    }
    if (bad || m == -1.0 / 0.0 || m == 1.0 / 0.0) {
        m_out[g] = -1.0 / 0.0;
        s_out[g] = 0.0;
        return;
    }
    double s = 0.0;
    for (int p = 0; p < N; ++p) {
        s += ds_exp(w[p] - m);
        c[p] = s;
    }
    m_out[g] = m;
    s_out[g] = s;
    if (!resample) return;
    const double step = s / N;
    const long long base = (long long)g * N;
    int j = 0;
    for (int i = 0; i < N; ++i) {
        const double pos = (u[g] + i) * step;
        while (j < N && c[j] <= pos) ++j;
        anc[base + i] = base + (j < N - 1 ? j : N - 1);
    }
}

// np.log's values at 0, +inf and NaN around ds_log (the twin of observation.py's _log0)
__device__ __forceinline__ double pmmh_log0(const double x) {
    if (x > 0.0) return x < 1.0 / 0.0 ? ds_log(x) : x;
    return x == 0.0 ? -1.0 / 0.0 : __longlong_as_double(0x7ff8000000000000LL);
}

// log p(y | h) of one measurement y for observable value h: the twin of observation.py's log_density_at
// (noise 0 normal, 1 lognormal, 2 Poisson, 3 negative binomial; s the noise parameter; c, ly, ls the
// host's constants of noise_constants: no lgamma here).
__device__ __forceinline__ double pmmh_log_density(const int noise, const double y, const double ly,
                                                   const double h, const double s, const double c,
                                                   const double ls) {
    const double ninf = -1.0 / 0.0;
    if (noise != 2 && !(s > 0.0)) return ninf;
    if (noise == 0) {
        const double z = (y - h) / s;
        return c - 0.5 * (z * z);
    }
    if (noise == 1) {
        if (!(h > 0.0)) return ninf;
        const double z = (ly - pmmh_log0(h)) / s;
        return c - 0.5 * (z * z);
    }
    if (!(h >= 0.0)) return ninf;
    const double t = y == 0.0 ? 0.0 : y * pmmh_log0(h);
    if (noise == 2) return (t - h) - c;
    const double q = s + h;
    const double lq = pmmh_log0(q);
    const double u = y == 0.0 ? 0.0 : y * lq;
    return ((c + s * (ls - lq)) + t) - u;
}

// lw[i] += log p(y | h[i]) for the n = G N particles of G chains, one thread each; chain g = i / N reads its
// noise parameter, c and ls from sc = [s (G), c (G), ls (G)] (one copy to the device): the twin of
// observation.py's add_log_density_cpu.
extern "C" __global__ void pmmh_noise(const long long n, const int N, const int G, const int noise, const double y,
                                      const double ly, const double* __restrict__ h,
                                      const double* __restrict__ sc, double* __restrict__ lw)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const long long g = i / N;
    lw[i] = lw[i] + pmmh_log_density(noise, y, ly, h[i], sc[g], sc[G + g], sc[2 * (long long)G + g]);
}
