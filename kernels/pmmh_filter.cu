// The particle filter's reweighting, one block of RW_THREADS threads per chain: the twin of
// distsim/pmmh/filter.py (reweigh_cpu) with the same values, so CPU and GPU give the same bits (compile
// with --fmad=false). Chain g's log weights lw[g N .. g N + N - 1] -> m[g] (their maximum; -inf when the
// chain's estimate is lost: a NaN or an infinite maximum), s[g] = sum_p ds_exp(lw - m) summed in
// particle order, and, with resample, the ancestors of systematic resampling with the uniform u[g]:
// anc[g N + i] = g N + the first j with cum[j] > (u + i) (s / N) (at most N - 1), cum the running sums.
// What is exact in any order runs in parallel: the maximum (ties go to the first particle, as in the
// sequential twin, which tells -0.0 from 0.0), each ds_exp, each ancestor (a binary search of the
// non-decreasing running sums finds the same j as the twin's merge). The running sum alone is
// sequential (thread 0, from shared memory, a chunk at a time): floating-point addition in another order
// would give other bits. (One thread per chain was latency-bound: 22 ms for 128 chains x 8192 particles.)
#include "dsmath.cuh"

#define RW_THREADS 256

extern "C" __global__ void __launch_bounds__(RW_THREADS)
pmmh_reweigh(const int G, const int N, const double* __restrict__ lw, const double* __restrict__ u,
             const int resample, double* __restrict__ m_out, double* __restrict__ s_out,
             double* __restrict__ cum, long long* __restrict__ anc)
{
    __shared__ double sv[RW_THREADS];
    __shared__ int si[RW_THREADS];
    __shared__ int sbad;
    __shared__ double stotal;
    const int g = blockIdx.x, t = threadIdx.x;
    if (g >= G) return;  // the whole block
    const double ninf = -1.0 / 0.0;
    const double* w = lw + (long long)g * N;
    double* c = cum + (long long)g * N;

    double m = ninf;
    int at = N, bad = 0;
    const int B = blockDim.x;  // RW_THREADS, a power of 2 (one on the host test harness)
    for (int p = t; p < N; p += B) {  // p rising: a thread keeps its first of equal values
        const double v = w[p];
        if (v != v) bad = 1;
        else if (v > m) { m = v; at = p; }
    }
    if (t == 0) sbad = 0;
    sv[t] = m;
    si[t] = at;
    __syncthreads();
    if (bad) sbad = 1;
    for (int k = B / 2; k > 0; k >>= 1) {
        if (t < k) {
            const double o = sv[t + k];
            const int oi = si[t + k];
            if (o > sv[t] || (o == sv[t] && oi < si[t])) { sv[t] = o; si[t] = oi; }
        }
        __syncthreads();
    }
    m = sv[0];
    const int lost = sbad || m == ninf || m == 1.0 / 0.0;
    __syncthreads();  // every thread has read sv[0] before the sums reuse sv
    if (lost) {
        if (t == 0) { m_out[g] = ninf; s_out[g] = 0.0; }
        return;
    }

    double s = 0.0;  // thread 0's running sum
    for (int base = 0; base < N; base += B) {
        const int p = base + t;
        if (p < N) sv[t] = ds_exp(w[p] - m);
        __syncthreads();
        if (t == 0) {
            const int n = N - base < B ? N - base : B;
            for (int k = 0; k < n; ++k) { s += sv[k]; sv[k] = s; }
        }
        __syncthreads();
        if (p < N) c[p] = sv[t];
        __syncthreads();  // read before the next chunk overwrites sv
    }
    if (t == 0) { m_out[g] = m; s_out[g] = s; stotal = s; }
    __syncthreads();  // stotal, and every c[p], seen by the whole block
    if (!resample) return;
    const double step = stotal / N;
    const double ug = u[g];
    const long long b = (long long)g * N;
    for (int i = t; i < N; i += B) {
        const double pos = (ug + i) * step;
        int lo = 0, hi = N;  // the first j with c[j] > pos (N: none)
        while (lo < hi) {
            const int mid = (lo + hi) >> 1;
            if (c[mid] <= pos) lo = mid + 1;
            else hi = mid;
        }
        anc[b + i] = b + (lo < N - 1 ? lo : N - 1);
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
