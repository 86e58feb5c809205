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
// would pass 2^31 - 1 sets ERR_OVERFLOW. Per event: one Philox call, the waiting time from the
// shared-memory -log table (ds_waiting_time), selection from the propensities' prefix sums, firing
// without branches for small models; see benchmarks/ssa_kernel_variants.py for what each part costs.
#include "ssa_common.cuh"

//@@ defs
#define DS_S 1
#define DS_M 2
//@@ end

#ifdef DS_BATCHED  // the point's initial counts, rate constants and law constants (read by the generated code)
#define DS_DIRECT_TABLES , const long long* __restrict__ batch_x0, const double* __restrict__ batch_theta, \
    const double* __restrict__ batch_law
#else
#define DS_DIRECT_TABLES
#endif

// x + d for counts, wrapping instead of undefined behaviour (the caller checks the sign)
__device__ __forceinline__ int ds_add(int x, int d) { return (int)((unsigned int)x + (unsigned int)d); }

#ifdef DS_FUSED
#define DS_LIMB 0xFFFFFFu
// sum x in limbs [0, KS), [KS, 2KS); sum x^2 in limbs [2KS, 3KS), [3KS, 4KS), [4KS, 5KS). A count below
// 2^12 (the common case) has one limb and a one-limb square: two atomics.
__device__ __forceinline__ void ds_record_wide(unsigned int* sh, const int KS, const int i, const unsigned int v) {
    const unsigned long long q = (unsigned long long)v * v;
    if (v >> 24) atomicAdd(&sh[KS + i], v >> 24);
    atomicAdd(&sh[2 * KS + i], (unsigned int)q & DS_LIMB);
    atomicAdd(&sh[3 * KS + i], (unsigned int)(q >> 24) & DS_LIMB);
    if (q >> 48) atomicAdd(&sh[4 * KS + i], (unsigned int)(q >> 48));
}
#define DS_RECORD(k, s, v) { const int i_ = (k) * DS_S + (s); const unsigned int v_ = (unsigned int)(v); \
    atomicAdd(&sh[i_], v_ & DS_LIMB); \
    if (v_ < 4096u) atomicAdd(&sh[2 * KS + i_], v_ * v_); else ds_record_wide(sh, KS, i_, v_); }
#else
#define DS_RECORD(k, s, v) rec[((unsigned long long)(k) * DS_S + (s)) * RR + r] = (int)(v)
#endif

extern "C" __global__ void ssa_direct(
    const int R, const unsigned long long real0, const uint32_t seed, const int K,
    const double* __restrict__ grid, const long long max_events, int* __restrict__ rec,
    unsigned long long* __restrict__ firings, unsigned long long* __restrict__ events,
    int* __restrict__ errors, unsigned long long* __restrict__ sums, unsigned long long* __restrict__ sumsq
    DS_BATCH_ARGS DS_DIRECT_TABLES)
{
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    DS_BATCH_POINT(r, R)
    __shared__ double2 logtab[DS_NEGLOG_ENTRIES];
    ds_neglog_load(logtab);
#ifdef DS_FUSED
    extern __shared__ unsigned int sh[];  // [5][K * DS_S] limb sums, see DS_RECORD
    const int KS = K * DS_S;
    for (int i = threadIdx.x; i < 5 * KS; i += blockDim.x) sh[i] = 0u;
#endif
    __syncthreads();
    if (DS_LIVE(r, R)) {
    const unsigned long long RR = (unsigned long long)R;
    const uint32_t rid = DS_RID(real0, r);
    const double INF = __longlong_as_double(0x7ff0000000000000LL);
    const unsigned long long e_stop = max_events > 0 ? (unsigned long long)max_events : ~0ull;
    int err = ERR_NONE;  // the error word (distsim/ssa/errors.py)
#ifdef DS_BATCHED  // the point's rows (pointers moved where they are used: fewer live registers)
    batch_x0 += (long long)batch_p * DS_S; batch_theta += (long long)batch_p * DS_M;
    batch_law += (long long)batch_p * batch_nlaw;
#endif
    int bad = 0;  // OR of the counts changed by firings: negative once one wrapped or went below zero
    //@@ state
    int x0 = 0;
    unsigned int f0 = 0, f1 = 0;
    double p0 = 10.0;
    double p1;
    p1 = 0.1 * ds_choose((double)x0, 1);
    //@@ end
    double t = 0.0;
    int k = 0;
    double gk = grid[0], gn = K > 1 ? grid[1] : INF;  // grid times k and k + 1, prefetched into registers
    unsigned long long e = 0ull;
    while (err == ERR_NONE) {
        // prefix sums of the propensities: c_i = p_0 + ... + p_i, a0 = c_{M-1} (the CPU's order)
        //@@ sum
        const double c0 = 0.0 + p0; const double a0 = c0 + p1;
        //@@ end
        double u2 = 0.0, t_new = INF;
        if (a0 > 0.0) {
            double u1;
            ds_event_uniforms(e, DS_SEED, rid, u1, u2);
            t_new = t + ds_waiting_time(u1, a0, logtab);
        }
        if (gk < t_new) {  // record the grid points passed before the event
            do {
                //@@ record
                DS_RECORD(k, 0, x0);
                //@@ end
                ++k;
                gk = gn;
                gn = k + 1 < K ? grid[k + 1] : INF;
            } while (gk < t_new);
            if (k >= K) break;
        }
        if (e == e_stop) {
            for (; k < K; ++k) {
                //@@ fill
                DS_RECORD(k, 0, x0);
                //@@ end
            }
            err = ERR_MAX_EVENTS;
            break;
        }
        // the fired reaction j is the first with c_j > target: b_i = (c_i <= target) = (j > i)
        const double target = u2 * a0;
        //@@ select
        int b0 = c0 <= target;
        if (a0 <= target) { int L = 0; if (p1 > 0.0) L = 1; b0 = 0 < L; }
        const int j = b0;
        //@@ end
        //@@ fire
        switch (j) {
            case 0: x0 = ds_add(x0, 1); bad |= x0; f0 += 1; p1 = 0.1 * ds_choose((double)x0, 1); break;
            default: x0 = ds_add(x0, -1); bad |= x0; f1 += 1; p1 = 0.1 * ds_choose((double)x0, 1); break;
        }
        //@@ end
        t = t_new;
        ++e;
        if (bad < 0) {  // a count went below zero or past 2^31 - 1: the word of the reaction that fired
            //@@ classify
            if (x0 < 0) err = DS_ERROR_WORD((j == 0 ? 1 : 0) > 0 ? ERR_OVERFLOW : ERR_NEGATIVE, j);
            //@@ end
        }
    }
    events[r] = e;
    errors[r] = err;
#ifdef DS_FUSED
    //@@ final
    rec[0 * RR + r] = (int)x0;
    //@@ end
#endif
#ifdef DS_BATCHED
    firings += (long long)batch_p * DS_M;
#endif
    //@@ flush
    atomicAdd(&firings[0], (unsigned long long)f0); atomicAdd(&firings[1], (unsigned long long)f1);
    //@@ end
    }
#ifdef DS_FUSED
    __syncthreads();
#ifdef DS_BATCHED  // batch_rs is a multiple of blockDim.x: the block's sums belong to one point
    sums += (long long)batch_p * KS; sumsq += (long long)batch_p * KS;
#endif
    for (int i = threadIdx.x; i < KS; i += blockDim.x) {
        const unsigned long long s1 = (unsigned long long)sh[i] + ((unsigned long long)sh[KS + i] << 24);
        const unsigned long long s2 = (unsigned long long)sh[2 * KS + i] + ((unsigned long long)sh[3 * KS + i] << 24)
                                    + ((unsigned long long)sh[4 * KS + i] << 48);
        if (s1) atomicAdd(&sums[i], s1);
        if (s2) atomicAdd(&sumsq[i], s2);
    }
#endif
}
