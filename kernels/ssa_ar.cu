// Parallel acceptance-rejection selection of the next reaction (seed 001, GPU-AR): one block per
// parallel instance k, its threads elect reactions j = tid, tid + blockDim, ... and a block
// reduction selects the lowest rating (ties: lowest index). mode 0: seed 001's uniform rating
// u T / D_j for u T < D_j (biased; see distsim/ssa/ar.py); mode 1: exponential rating
// -log(u) / D_j (exact). Same random numbers as distsim/ssa/ar.py; build with --fmad=false.
#include "philox.cuh"
#include "dsmath.cuh"

extern "C" __global__ void ar_select(const double* __restrict__ D, const int M, const double T, const int mode,
                                     const uint32_t seed, const int rounds, unsigned long long* __restrict__ counts)
{
    extern __shared__ unsigned char smem[];
    double* s_rating = (double*)smem;
    int* s_index = (int*)(s_rating + blockDim.x);
    const uint32_t k = blockIdx.x;
    const double INF = __longlong_as_double(0x7ff0000000000000LL);
    for (int i = 0; i < rounds; ++i) {
        double best = INF;
        int best_j = M;
        for (int j = threadIdx.x; j < M; j += blockDim.x) {
            const ds_u32x4 w = ds_philox4x32_10(ds_u32x4{(uint32_t)i, (uint32_t)(j >> 1), 0u, 2u}, seed, k);
            const double u = (j & 1) == 0 ? ds_u01_f64(w.x, w.y) : ds_u01_f64(w.z, w.w);
            const double d = D[j];
            if (d <= 0.0) continue;
            double rating;
            if (mode == 0) {
                const double uT = u * T;
                if (uT >= d) continue;
                rating = uT / d;
            } else {
                rating = -ds_log(u) / d;
            }
            if (rating < best) { best = rating; best_j = j; }  // j increases: ties keep the lowest index
        }
        s_rating[threadIdx.x] = best;
        s_index[threadIdx.x] = best_j;
        __syncthreads();
        for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
            if (threadIdx.x < stride) {
                const double a = s_rating[threadIdx.x], b = s_rating[threadIdx.x + stride];
                const int ia = s_index[threadIdx.x], ib = s_index[threadIdx.x + stride];
                if (b < a || (b == a && ib < ia)) { s_rating[threadIdx.x] = b; s_index[threadIdx.x] = ib; }
            }
            __syncthreads();
        }
        if (threadIdx.x == 0) atomicAdd(&counts[s_index[0]], 1ull);
        __syncthreads();
    }
}
