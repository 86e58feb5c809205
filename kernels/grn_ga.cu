// GRN inference GA (seed 002): population evaluation, Philox draws, initial links, breeding (crossover,
// connectivity revert, mutation), the (mu + lambda) survivors' gather and the best-so-far update.
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

// Parents of child ch (island k = ch / N, index i): paired (panmictic) children 2b, 2b+1 cross par[2b] with
// par[2b+1], each taking its own as head; an unpaired (cellular) child i crosses cell i (head) with par[i].
__device__ __forceinline__ void grn_parents(const long long* __restrict__ par, int paired, int N, long long ch,
                                            long long* h, long long* t) {
    const long long k = ch / N;
    const long long i = ch - k * N;
    if (paired) {
        *h = k * N + par[ch];
        *t = k * N + par[k * N + (i ^ 1)];
    } else {
        *h = ch;
        *t = k * N + par[ch];
    }
}

// Link cut c = floor(u n^2) of child i: word 0 of Philox((i >> paired, gen, purpose, 0), (seed, island)).
__device__ __forceinline__ long long grn_cut(unsigned int seed, unsigned int isl, unsigned int gen, long long i,
                                             int paired, unsigned long long n2, unsigned int purpose) {
    ds_u32x4 c{(unsigned int)(i >> paired), gen, purpose, 0u};
    const ds_u32x4 r = ds_philox4x32_10(c, seed, isl);
    return (long long)(((unsigned long long)r.x * n2) >> 32);
}

// Crossover, one thread per child word (ch, w, j) and per child rule (ch, j): links at positions j*n + i
// below lc (= cut + extra) come from the head, the rest from the tail; rules [0, cut / n + 1) from the head.
// nnz[ch] (zeroed) receives the child's link count. total = P * (W * G + G).
extern "C" __global__ void grn_cross(long long total, const unsigned int* __restrict__ A,
                                     const unsigned int* __restrict__ R, const unsigned char* __restrict__ Ru,
                                     const long long* __restrict__ par, int paired, int N, int W, int G,
                                     unsigned int seed, const long long* __restrict__ islands, unsigned int gen,
                                     unsigned int purpose, long long extra, unsigned int* __restrict__ ca,
                                     unsigned int* __restrict__ cr, unsigned char* __restrict__ cru,
                                     unsigned long long* __restrict__ nnz) {
    const long long q = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= total) return;
    const long long WG = (long long)W * G;
    const long long ch = q / (WG + G);
    const long long e = q - ch * (WG + G);
    const long long k = ch / N;
    long long h, t;
    grn_parents(par, paired, N, ch, &h, &t);
    const long long cut = grn_cut(seed, (unsigned int)islands[k], gen, ch - k * N, paired,
                                  (unsigned long long)G * G, purpose);
    if (e < WG) {
        const long long w = e / G, j = e - w * G;
        long long nb = cut + extra - (j * G + 32 * w);
        nb = nb < 0 ? 0 : (nb > 32 ? 32 : nb);
        const unsigned int mask = (unsigned int)((1ull << nb) - 1ull);
        const unsigned int a = (A[h * WG + e] & mask) | (A[t * WG + e] & ~mask);
        const unsigned int r = (R[h * WG + e] & mask) | (R[t * WG + e] & ~mask);
        ca[ch * WG + e] = a;
        cr[ch * WG + e] = r;
        const unsigned int pc = (unsigned int)__popc(a | r);
        if (pc) atomicAdd(&nnz[ch], (unsigned long long)pc);
    } else {
        const long long j = e - WG;
        cru[ch * G + j] = j < cut / G + 1 ? Ru[h * G + j] : Ru[t * G + j];
    }
}

// Connectivity and mutation of child ch (island index i), one thread per child: a child whose link count
// differs from the reference's by conn_p / conn_q * n^2 or more becomes its head parent; then the words
// of Philox((i, gen, purpose, b), (seed, island)), b = 0, 1: w0 < link_thr mutates link position
// floor(w1 n^2 / 2^32) to one of its two other values (w2's top bit picks), w3 < rule_thr gene
// floor(w4 n / 2^32)'s rule to the allowed rule 1 + floor(w5 (na - 1) / 2^32) places further.
extern "C" __global__ void grn_revert_mutate(long long P, const unsigned int* __restrict__ A,
                                             const unsigned int* __restrict__ R,
                                             const unsigned char* __restrict__ Ru, const long long* __restrict__ par,
                                             int paired, int N, int W, int G, unsigned int seed,
                                             const long long* __restrict__ islands, unsigned int gen,
                                             unsigned int purpose, const unsigned long long* __restrict__ nnz,
                                             long long nnz_ref, long long conn_p, long long conn_q,
                                             unsigned long long link_thr, unsigned long long rule_thr,
                                             const unsigned char* __restrict__ allowed, int na,
                                             unsigned int* __restrict__ ca, unsigned int* __restrict__ cr,
                                             unsigned char* __restrict__ cru) {
    const long long ch = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (ch >= P) return;
    const long long WG = (long long)W * G;
    const unsigned long long n2 = (unsigned long long)G * G;
    const long long k = ch / N;
    const long long i = ch - k * N;
    const unsigned int isl = (unsigned int)islands[k];
    long long h, t;
    grn_parents(par, paired, N, ch, &h, &t);
    long long d = (long long)nnz[ch] - nnz_ref;
    if (d < 0) d = -d;
    if (d * conn_q >= conn_p * (long long)n2) {
        for (long long e = 0; e < WG; ++e) {
            ca[ch * WG + e] = A[h * WG + e];
            cr[ch * WG + e] = R[h * WG + e];
        }
        for (long long j = 0; j < G; ++j) cru[ch * G + j] = Ru[h * G + j];
    }
    ds_u32x4 c0{(unsigned int)i, gen, purpose, 0u};
    ds_u32x4 c1{(unsigned int)i, gen, purpose, 1u};
    const ds_u32x4 r0 = ds_philox4x32_10(c0, seed, isl);
    const ds_u32x4 r1 = ds_philox4x32_10(c1, seed, isl);
    if ((unsigned long long)r0.x < link_thr) {
        const unsigned long long pos = ((unsigned long long)r0.y * n2) >> 32;
        const long long j = (long long)(pos / (unsigned long long)G), s = (long long)(pos % (unsigned long long)G);
        const long long q = ch * WG + (s >> 5) * G + j;
        const unsigned int bit = 1u << (s & 31);
        const unsigned int aw = ca[q], rw = cr[q];
        const int v = (int)((aw & bit) != 0u) - (int)((rw & bit) != 0u);
        const int hi = (int)(r0.z >> 31);
        const int nv = v == -1 ? (hi ? 1 : 0) : (v == 0 ? (hi ? -1 : 1) : (hi ? -1 : 0));  // other values of v
        ca[q] = nv == 1 ? (aw | bit) : (aw & ~bit);
        cr[q] = nv == -1 ? (rw | bit) : (rw & ~bit);
    }
    if ((unsigned long long)r0.w < rule_thr) {
        const long long node = (long long)(((unsigned long long)r1.x * (unsigned long long)G) >> 32);
        const long long inc = 1 + (long long)(((unsigned long long)r1.y * (unsigned long long)(na - 1)) >> 32);
        const unsigned char old = cru[ch * G + node];
        long long p = 0;
        for (int a = 0; a < na; ++a)
            if (allowed[a] == old) p = a;
        cru[ch * G + node] = allowed[(p + inc) % na];
    }
}

// The (mu + lambda) survivors: out[k][i] = individual order[k][i] of island k (< N: parent, else child
// order - N), for i < N; order is [K][2N]. One thread per (k, i, e), e < W * G: link word e, rule e (e < G),
// score (e = 0). total = K * N * W * G.
extern "C" __global__ void grn_select(long long total, const long long* __restrict__ order, int N, int W, int G,
                                      const unsigned int* __restrict__ act, const unsigned int* __restrict__ rep,
                                      const unsigned char* __restrict__ rules, const long long* __restrict__ score,
                                      const unsigned int* __restrict__ ca, const unsigned int* __restrict__ cr,
                                      const unsigned char* __restrict__ cru, const long long* __restrict__ cs,
                                      unsigned int* __restrict__ out_act, unsigned int* __restrict__ out_rep,
                                      unsigned char* __restrict__ out_rules, long long* __restrict__ out_score) {
    const long long q = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= total) return;
    const long long WG = (long long)W * G;
    const long long ki = q / WG;
    const long long e = q - ki * WG;
    const long long k = ki / N;
    const long long i = ki - k * N;
    const long long s = order[k * 2 * N + i];
    const bool parent = s < N;
    const long long src = k * N + (parent ? s : s - N);
    out_act[ki * WG + e] = (parent ? act : ca)[src * WG + e];
    out_rep[ki * WG + e] = (parent ? rep : cr)[src * WG + e];
    if (e < G) out_rules[ki * G + e] = (parent ? rules : cru)[src * G + e];
    if (e == 0) out_score[ki] = (parent ? score : cs)[src];
}

// Best so far of island k, one thread per island: the island's best (lowest score, then lowest index)
// replaces the kept best when strictly better (at generation gen); every output is written.
extern "C" __global__ void grn_update_best(long long K, int N, int W, int G, long long gen,
                                           const long long* __restrict__ score, const unsigned int* __restrict__ act,
                                           const unsigned int* __restrict__ rep,
                                           const unsigned char* __restrict__ rules,
                                           const long long* __restrict__ best_score,
                                           const unsigned int* __restrict__ best_act,
                                           const unsigned int* __restrict__ best_rep,
                                           const unsigned char* __restrict__ best_rules,
                                           const long long* __restrict__ best_gen, long long* __restrict__ o_score,
                                           unsigned int* __restrict__ o_act, unsigned int* __restrict__ o_rep,
                                           unsigned char* __restrict__ o_rules, long long* __restrict__ o_gen) {
    const long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= K) return;
    const long long WG = (long long)W * G;
    long long b = 0;
    for (long long i = 1; i < N; ++i)
        if (score[k * N + i] < score[k * N + b]) b = i;
    const bool better = score[k * N + b] < best_score[k];
    const long long src = k * N + b;
    for (long long e = 0; e < WG; ++e) {
        o_act[k * WG + e] = better ? act[src * WG + e] : best_act[k * WG + e];
        o_rep[k * WG + e] = better ? rep[src * WG + e] : best_rep[k * WG + e];
    }
    for (long long j = 0; j < G; ++j) o_rules[k * G + j] = better ? rules[src * G + j] : best_rules[k * G + j];
    o_score[k] = better ? score[src] : best_score[k];
    o_gen[k] = better ? gen : best_gen[k];
}
