// Exact SSA (direct method) for small models: one realization per thread, species counts and
// propensities in registers. A template: distsim/ssa/gpu.py fills the regions between "//@@ NAME"
// and "//@@ end" with code generated from the network, keeping the floating-point operation order
// of distsim/ssa/cpu.py (compile with --fmad=false) so CPU and GPU give the same realizations.
// As written it holds a birth-death model (0 -> X at 10, X -> 0 at 0.1 X) for `nvcc --ptx` checks.
// With DS_FUSED defined, grid states are not stored: each block accumulates sum x and sum x^2 per
// (time, species) in shared memory and adds them to `sums`/`sumsq` once; only the final states are
// written. The shared sums are exact: every value is split into 24-bit limbs summed by 32-bit shared
// atomics whose result is not read (native reductions; 64-bit shared atomics are not native, and
// reading the result of an atomic stalls). Each thread records each grid point once, so a limb sum
// stays below blockDim.x * 2^24 <= 2^31 (blocks of at most 128 threads).
// Species counts are int32 in registers (int -> double conversions are cheaper); a count that
// would pass 2^31 - 1 sets ERR_OVERFLOW.
#include "philox.cuh"
#include "dsmath.cuh"
#include "ssa_common.cuh"

//@@ defs
#define DS_S 1
//@@ end

// x + d for counts, wrapping instead of undefined behaviour (the caller checks the sign)
__device__ __forceinline__ int ds_add(int x, int d) { return (int)((unsigned int)x + (unsigned int)d); }

#ifdef DS_FUSED
#define DS_LIMB 0xFFFFFFull
// sum x in limbs [0, KS), [KS, 2KS); sum x^2 in limbs [2KS, 3KS), [3KS, 4KS), [4KS, 5KS)
#define DS_RECORD(k, s, v) { const int i_ = (k) * DS_S + (s); const unsigned long long v_ = (unsigned long long)(v); \
    const unsigned long long q_ = v_ * v_; \
    atomicAdd(&sh[i_], (unsigned int)(v_ & DS_LIMB)); if (v_ >> 24) atomicAdd(&sh[KS + i_], (unsigned int)(v_ >> 24)); \
    atomicAdd(&sh[2 * KS + i_], (unsigned int)(q_ & DS_LIMB)); \
    if (q_ >> 24) { atomicAdd(&sh[3 * KS + i_], (unsigned int)((q_ >> 24) & DS_LIMB)); \
                    if (q_ >> 48) atomicAdd(&sh[4 * KS + i_], (unsigned int)(q_ >> 48)); } }
#else
#define DS_RECORD(k, s, v) rec[((unsigned long long)(k) * DS_S + (s)) * RR + r] = (int)(v)
#endif

extern "C" __global__ void ssa_direct(
    const int R, const unsigned long long real0, const uint32_t seed, const int K,
    const double* __restrict__ grid, const long long max_events, int* __restrict__ rec,
    unsigned long long* __restrict__ firings, unsigned long long* __restrict__ events,
    signed char* __restrict__ errors, unsigned long long* __restrict__ sums, unsigned long long* __restrict__ sumsq)
{
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
#ifdef DS_FUSED
    extern __shared__ unsigned int sh[];  // [5][K * DS_S] limb sums, see DS_RECORD
    const int KS = K * DS_S;
    for (int i = threadIdx.x; i < 5 * KS; i += blockDim.x) sh[i] = 0u;
    __syncthreads();
    if (r < R) {
#else
    if (r >= R) return;
    {
#endif
    const unsigned long long RR = (unsigned long long)R;
    const uint32_t rid = (uint32_t)(real0 + (unsigned long long)r);
    const double INF = __longlong_as_double(0x7ff0000000000000LL);
    signed char err = 0;
    //@@ state
    int x0 = 0;
    unsigned int f0 = 0, f1 = 0;
    double p0 = 10.0;
    double p1;
    { double v = 0.1; { const double xs = (double)x0; double h = xs; v = v * h; } p1 = v; }
    //@@ end
    double t = 0.0;
    int k = 0;
    double gk = grid[0];  // the next grid time, kept in a register
    unsigned long long e = 0ull;
    while (err == 0) {
        double a0 = 0.0;
        //@@ sum
        a0 = a0 + p0; a0 = a0 + p1;
        //@@ end
        double u2 = 0.0, t_new = INF;
        if (a0 > 0.0) {
            const ds_u32x4 w = ds_philox4x32_10(ds_u32x4{(uint32_t)e, (uint32_t)(e >> 32), 0u, 0u}, seed, rid);
            const double u1 = ds_u01_f64(w.x, w.y);
            u2 = ds_u01_f64(w.z, w.w);
            t_new = t - ds_log(u1) / a0;
        }
        while (k < K && gk < t_new) {
            //@@ record
            DS_RECORD(k, 0, x0);
            //@@ end
            ++k;
            gk = grid[k < K ? k : K - 1];
        }
        if (k >= K) break;
        if (max_events > 0 && e >= (unsigned long long)max_events) {
            for (; k < K; ++k) {
                //@@ fill
                DS_RECORD(k, 0, x0);
                //@@ end
            }
            err = 2;
            break;
        }
        const double target = u2 * a0;
        int j = -1, last = 0;
        double c = 0.0;
        //@@ select
        if (j < 0) { if (p0 > 0.0) last = 0; c = c + p0; if (c > target) j = 0; }
        if (j < 0) { if (p1 > 0.0) last = 1; c = c + p1; if (c > target) j = 1; }
        //@@ end
        if (j < 0) j = last;
        switch (j) {
            //@@ fire
            case 0: x0 = ds_add(x0, 1); if (x0 < 0) err = 4; f0 += 1;
                { double v = 0.1; { const double xs = (double)x0; double h = xs; v = v * h; } p1 = v; }
                break;
            case 1: x0 = ds_add(x0, -1); if (x0 < 0) err = 3; f1 += 1;
                { double v = 0.1; { const double xs = (double)x0; double h = xs; v = v * h; } p1 = v; }
                break;
            //@@ end
            default: break;
        }
        t = t_new;
        ++e;
    }
    events[r] = e;
    errors[r] = err;
#ifdef DS_FUSED
    //@@ final
    rec[0 * RR + r] = (int)x0;
    //@@ end
#endif
    //@@ flush
    atomicAdd(&firings[0], (unsigned long long)f0); atomicAdd(&firings[1], (unsigned long long)f1);
    //@@ end
    }
#ifdef DS_FUSED
    __syncthreads();
    for (int i = threadIdx.x; i < KS; i += blockDim.x) {
        const unsigned long long s1 = (unsigned long long)sh[i] + ((unsigned long long)sh[KS + i] << 24);
        const unsigned long long s2 = (unsigned long long)sh[2 * KS + i] + ((unsigned long long)sh[3 * KS + i] << 24)
                                    + ((unsigned long long)sh[4 * KS + i] << 48);
        if (s1) atomicAdd(&sums[i], s1);
        if (s2) atomicAdd(&sumsq[i], s2);
    }
#endif
}
