// Compile a distsim CUDA kernel as host C++ (g++), for tests without a GPU: the CUDA keywords and
// the intrinsics the kernels use, defined with the same IEEE results (x86-64 SSE2 doubles; build
// with -ffp-contract=off so that no multiply-add is contracted, as --fmad=false on the device).
// One "thread" runs per call: ds_host_set_thread(r) picks block r of one thread.
#pragma once
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmath>

#define __device__
#define __global__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __restrict__ __restrict
#define __shared__ static
#define __constant__ static const
#define __syncthreads() ((void)0)
#define __launch_bounds__(...)
#define __trap() abort()

struct ds_host_dim3 { unsigned x, y, z; };
static ds_host_dim3 threadIdx{0u, 0u, 0u}, blockIdx{0u, 0u, 0u}, blockDim{1u, 1u, 1u};
extern "C" void ds_host_set_thread(int r) { blockIdx.x = (unsigned)r; }

struct double2 { double x, y; };
inline double2 make_double2(double a, double b) { return double2{a, b}; }
inline int __popc(unsigned int x) { return __builtin_popcount(x); }
inline uint32_t __umulhi(uint32_t a, uint32_t b) { return (uint32_t)(((uint64_t)a * b) >> 32); }
inline double __longlong_as_double(long long b) { double d; memcpy(&d, &b, 8); return d; }
inline long long __double_as_longlong(double d) { long long b; memcpy(&b, &d, 8); return b; }
inline double __hiloint2double(int hi, int lo) {
    const uint64_t b = ((uint64_t)(uint32_t)hi << 32) | (uint32_t)lo;
    double d;
    memcpy(&d, &b, 8);
    return d;
}
inline int __double2hiint(double d) { return (int)((uint64_t)__double_as_longlong(d) >> 32); }
inline int __double2loint(double d) { return (int)(uint32_t)__double_as_longlong(d); }
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
    const unsigned long long old = *p;
    *p = old + v;
    return old;
}
inline unsigned int atomicAdd(unsigned int* p, unsigned int v) {
    const unsigned int old = *p;
    *p = old + v;
    return old;
}
inline unsigned int atomicCAS(unsigned int* p, unsigned int cmp, unsigned int v) {
    const unsigned int old = *p;
    if (old == cmp) *p = v;
    return old;
}
inline unsigned int atomicExch(unsigned int* p, unsigned int v) {
    const unsigned int old = *p;
    *p = v;
    return old;
}
#define __threadfence() ((void)0)
using std::isinf;
