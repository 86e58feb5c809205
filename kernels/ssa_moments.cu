// Exact per-row sums and sums of squares of int32 grid states over their last axis (distsim/ssa/gpu.py
// row_moments): block b adds segment b % segs of row b / segs (DS_MOM_THREADS x DS_MOM_ITEMS values,
// read coalesced) into s1/s2[row] with one 64-bit atomicAdd each. Integer sums: exact in any order.
#define DS_MOM_THREADS 256
#define DS_MOM_ITEMS 16

extern "C" __global__ void __launch_bounds__(DS_MOM_THREADS)
ds_row_moments(const int* __restrict__ x, const long long n, const long long segs,
               unsigned long long* __restrict__ s1, unsigned long long* __restrict__ s2)
{
    __shared__ long long part[2][DS_MOM_THREADS / 32];
    const long long row = (long long)blockIdx.x / segs;
    const long long i0 = ((long long)blockIdx.x - row * segs) * (DS_MOM_THREADS * DS_MOM_ITEMS) + threadIdx.x;
    const int* __restrict__ r = x + row * n;
    long long a = 0, b = 0;
#pragma unroll
    for (int k = 0; k < DS_MOM_ITEMS; ++k) {
        const long long i = i0 + (long long)k * DS_MOM_THREADS;
        if (i < n) {
            const long long v = r[i];
            a += v;
            b += v * v;
        }
    }
    for (int o = 16; o > 0; o >>= 1) {
        a += __shfl_down_sync(0xffffffffu, a, o);
        b += __shfl_down_sync(0xffffffffu, b, o);
    }
    if ((threadIdx.x & 31) == 0) {
        part[0][threadIdx.x >> 5] = a;
        part[1][threadIdx.x >> 5] = b;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < DS_MOM_THREADS / 32; ++w) {
            a += part[0][w];
            b += part[1][w];
        }
        atomicAdd(s1 + row, (unsigned long long)a);
        atomicAdd(s2 + row, (unsigned long long)b);
    }
}
