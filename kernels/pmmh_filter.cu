// The particle filter's reweighting, one thread per chain: the twin of distsim/pmmh/filter.py
// (reweigh_cpu) with the same operation order, so CPU and GPU give the same bits (compile with
// --fmad=false). Chain g's log weights lw[g N .. g N + N - 1] -> m[g] (their maximum; -inf when the
// chain's estimate is lost: a NaN or an infinite maximum), s[g] = sum_p ds_exp(lw - m) summed in
// particle order, and, with resample, the ancestors of systematic resampling with the uniform u[g]:
// anc[g N + i] = g N + the first j with cum[j] > (u + i) (s / N) (at most N - 1), cum the running sums.
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
