// Philox4x32-10 (Salmon et al., SC'11 "Parallel random numbers: as easy as 1, 2, 3").
// Self-contained (no curand), bit-identical to distsim/rng/philox.py.
//
// distsim convention: key = (seed, stream), counter = 4 words chosen by the workload
// (e.g. PBN: (block within step, step lo, step hi, purpose)).
#pragma once
#ifdef __CUDACC_RTC__  // NVRTC has no C headers
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
#else
#include <stdint.h>
#endif

#define DS_PHILOX_M0 0xD2511F53u
#define DS_PHILOX_M1 0xCD9E8D57u
#define DS_PHILOX_W0 0x9E3779B9u
#define DS_PHILOX_W1 0xBB67AE85u

struct ds_u32x4 { uint32_t x, y, z, w; };

__device__ __forceinline__ ds_u32x4 ds_philox_round(ds_u32x4 c, uint32_t k0, uint32_t k1) {
    const uint32_t hi0 = __umulhi(DS_PHILOX_M0, c.x), lo0 = DS_PHILOX_M0 * c.x;
    const uint32_t hi1 = __umulhi(DS_PHILOX_M1, c.z), lo1 = DS_PHILOX_M1 * c.z;
    ds_u32x4 r;
    r.x = hi1 ^ c.y ^ k0;
    r.y = lo1;
    r.z = hi0 ^ c.w ^ k1;
    r.w = lo0;
    return r;
}

// Ten rounds; the key is bumped before rounds 2..10 (Random123's order).
__device__ __forceinline__ ds_u32x4 ds_philox4x32_10(ds_u32x4 c, uint32_t k0, uint32_t k1) {
#pragma unroll
    for (int i = 0; i < 10; ++i) {
        if (i) { k0 += DS_PHILOX_W0; k1 += DS_PHILOX_W1; }
        c = ds_philox_round(c, k0, k1);
    }
    return c;
}

// Uniform float in (0,1): ((u >> 9) + 0.5) * 2^-23, exact in float32.
__device__ __forceinline__ float ds_u01_f32(uint32_t u) {
    return ((float)(u >> 9) + 0.5f) * 1.1920928955078125e-07f;
}

// Uniform double in (0,1) from two words: ((hi << 20 | lo >> 12) + 0.5) * 2^-52, exact. Built from
// bits (1 + k 2^-52, minus 1, plus 2^-53: every step exact) to avoid a slow 64-bit int -> double.
__device__ __forceinline__ double ds_u01_f64(uint32_t hi, uint32_t lo) {
    const double d = __hiloint2double((int)(0x3FF00000u | (hi >> 12)), (int)((hi << 20) | (lo >> 12)));
    return (d - 1.0) + 1.1102230246251565e-16;
}

// Integer uniform on [0, n): floor(u * n / 2^32), exact integer arithmetic.
__device__ __forceinline__ uint32_t ds_below(uint32_t u, uint32_t n) { return __umulhi(u, n); }
