// GRN inference GA (seed 002): population evaluation, Philox draws and initial links; breeding, the
// survivors' gather and the best-so-far update are in grn_breed.cuh (no warp intrinsics: tests compile it
// for the host).
// Mirrors distsim/grn/cpu.py line by line; same Philox addresses, same integer scores.
//
// Individuals are bit-packed: act/rep [P][W][n] uint32; word (w, j) holds sources 32w..32w+31 of
// target j (consecutive targets are consecutive words, so a warp's loads coalesce). One individual
// is evaluated by T = 32*min(W, 32) threads (thread t updates genes t, t+T, ...); the new state of
// 32 genes is gathered with one warp ballot into a double-buffered state in shared memory, so every
// update is synchronous. Rules are applied through two byte tables (no per-rule branches).
#include "philox.cuh"

#define GRN_ON_TABLE 0x00020001u   // most: A>R; joint activators: A>=2
#define GRN_OFF_TABLE 0x10000804u  // most: R>A; absolute repressor: R>=1; joint repressors: R>=2

__device__ __forceinline__ unsigned int grn_next_bit(int a, int r, unsigned int old, unsigned int rule) {
    const unsigned int cond = (unsigned int)(a > r) | ((unsigned int)(a >= 2) << 1) | ((unsigned int)(r > a) << 2) |
                              ((unsigned int)(r >= 1) << 3) | ((unsigned int)(r >= 2) << 4);
    const unsigned int sh = 8u * rule;
    const unsigned int on = (cond & ((GRN_ON_TABLE >> sh) & 0xFFu)) != 0u;
    const unsigned int off = (cond & ((GRN_OFF_TABLE >> sh) & 0xFFu)) != 0u;
    return (old & (1u - off)) | on;
}

// out[p] = wn * node_mismatches + wl * link_mismatches. Block = ipb individuals x T threads;
// dynamic shared memory: ipb * 8 + ipb * 2 * W * 4 bytes.
extern "C" __global__ void grn_evaluate(const unsigned int* __restrict__ act, const unsigned int* __restrict__ rep,
                                        const unsigned char* __restrict__ rules, const unsigned int* __restrict__ x0,
                                        const unsigned int* __restrict__ target,
                                        const unsigned int* __restrict__ ref_act,
                                        const unsigned int* __restrict__ ref_rep, long long P, int W, int G,
                                        int steps, long long wn, long long wl, int T, int ipb,
                                        long long* __restrict__ out) {
    extern __shared__ unsigned long long grn_sh[];
    unsigned long long* lm = grn_sh;
    const int li = threadIdx.x / T;
    const int t = threadIdx.x - li * T;
    const long long p = (long long)blockIdx.x * ipb + li;
    const bool valid = p < P;
    unsigned int* xs = (unsigned int*)(grn_sh + ipb) + (size_t)li * 2 * W;
    for (int w = t; w < W; w += T) xs[w] = x0[w];
    if (t == 0) lm[li] = 0ull;
    __syncthreads();
    const size_t base = (size_t)(valid ? p : 0) * (size_t)W * (size_t)G;
    const unsigned char* rl = rules + (size_t)(valid ? p : 0) * (size_t)G;
    const int chunks = (32 * W + T - 1) / T;
    int cur = 0;
    for (int s = 0; s < steps; ++s) {
        const unsigned int* x = xs + cur * W;
        unsigned int* nx = xs + (1 - cur) * W;
        for (int k = 0; k < chunks; ++k) {
            const int j = t + k * T;
            if (j >= 32 * W) break;  // warp-uniform: T and 32W are multiples of 32
            unsigned int bit = 0u;
            if (valid && j < G) {
                int a = 0, r = 0;
                for (int w = 0; w < W; ++w) {
                    const unsigned int xw = x[w];
                    a += __popc(act[base + (size_t)w * G + j] & xw);
                    r += __popc(rep[base + (size_t)w * G + j] & xw);
                }
                const unsigned int old = (x[j >> 5] >> (j & 31)) & 1u;
                bit = grn_next_bit(a, r, old, rl[j]);
            }
            const unsigned int word = __ballot_sync(0xffffffffu, bit);
            if ((j & 31) == 0) nx[j >> 5] = word;
        }
        __syncthreads();
        cur = 1 - cur;
    }
    unsigned int mine = 0u;
    if (valid) {
        const size_t words = (size_t)W * (size_t)G;
        for (size_t q = t; q < words; q += T)
            mine += __popc((act[base + q] ^ ref_act[q]) | (rep[base + q] ^ ref_rep[q]));
    }
    for (int o = 16; o > 0; o >>= 1) mine += __shfl_xor_sync(0xffffffffu, mine, o);
    if ((t & 31) == 0 && mine) atomicAdd(&lm[li], (unsigned long long)mine);
    __syncthreads();
    if (t == 0 && valid) {
        const unsigned int* x = xs + cur * W;
        long long nm = 0;
        for (int w = 0; w < W; ++w) nm += __popc(x[w] ^ target[w]);
        out[p] = wn * nm + wl * (long long)lm[li];
    }
}

// out[k][i][4b + m] = word m of Philox((i, gen, purpose, b), (seed, islands[k])).
extern "C" __global__ void grn_philox_fill(unsigned int seed, const long long* __restrict__ islands, int K,
                                           unsigned int purpose, unsigned int gen, int n, int blocks,
                                           unsigned int* __restrict__ out) {
    const long long q = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long total = (long long)K * n * blocks;
    if (q >= total) return;
    const int b = (int)(q % blocks);
    const int i = (int)((q / blocks) % n);
    const int k = (int)(q / ((long long)blocks * n));
    ds_u32x4 c{(unsigned int)i, gen, purpose, (unsigned int)b};
    const ds_u32x4 r = ds_philox4x32_10(c, seed, (unsigned int)islands[k]);
    unsigned int* o = out + q * 4;
    o[0] = r.x; o[1] = r.y; o[2] = r.z; o[3] = r.w;
}

// Initial links: position pos = j*n + i draws word pos%4 of Philox((ind, 0, purpose, pos/4), (seed, island));
// u < t_act -> +1, u < t_act + t_rep -> -1, else 0. One thread per word (k, ind, w, j).
extern "C" __global__ void grn_init_links(unsigned int seed, const long long* __restrict__ islands, int K, int N,
                                          int W, int G, unsigned int purpose, unsigned long long t_act,
                                          unsigned long long t_rep, unsigned int* __restrict__ act,
                                          unsigned int* __restrict__ rep) {
    const long long q = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long total = (long long)K * N * W * G;
    if (q >= total) return;
    const int j = (int)(q % G);
    const int w = (int)((q / G) % W);
    const long long kn = q / ((long long)G * W);
    const int ind = (int)(kn % N);
    const int k = (int)(kn / N);
    const unsigned int isl = (unsigned int)islands[k];
    unsigned int a = 0u, r = 0u;
    long long blk = -1;
    ds_u32x4 rr{0u, 0u, 0u, 0u};
    for (int b = 0; b < 32; ++b) {
        const int i = 32 * w + b;
        if (i >= G) break;
        const long long pos = (long long)j * G + i;
        if ((pos >> 2) != blk) {
            blk = pos >> 2;
            ds_u32x4 c{(unsigned int)ind, 0u, purpose, (unsigned int)blk};
            rr = ds_philox4x32_10(c, seed, isl);
        }
        const int m = (int)(pos & 3);
        const unsigned long long u = m == 0 ? rr.x : (m == 1 ? rr.y : (m == 2 ? rr.z : rr.w));
        if (u < t_act) a |= 1u << b;
        else if (u < t_act + t_rep) r |= 1u << b;
    }
    act[q] = a;
    rep[q] = r;
}

#include "grn_breed.cuh"
