// GRN GA (seed 002), included by grn_ga.cu: breeding (crossover, connectivity revert, mutation), the
// (mu + lambda) survivors' gather and the best-so-far update. Mirrors distsim/grn/cpu.py's breed, select
// and update_best line by line; plain threads only (tests/unit/cuda_on_host.py runs them on the host).
#pragma once
#include "philox.cuh"

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
        for (int q = 0; q < na; ++q)
            if (allowed[q] == old) p = q;
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
// replaces the kept best when strictly better (at generation gen); every output is written, with the
// island's lowest and summed score (its statistics).
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
                                           unsigned char* __restrict__ o_rules, long long* __restrict__ o_gen,
                                           long long* __restrict__ o_min, long long* __restrict__ o_sum) {
    const long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= K) return;
    const long long WG = (long long)W * G;
    long long b = 0, bs = score[k * N], sum = bs;
#pragma unroll 8
    for (long long i = 1; i < N; ++i) {  // one thread scans the island: unrolled, its loads overlap
        const long long s = score[k * N + i];
        sum += s;
        if (s < bs) {
            bs = s;
            b = i;
        }
    }
    const bool better = bs < best_score[k];
    const long long src = k * N + b;
    for (long long e = 0; e < WG; ++e) {
        o_act[k * WG + e] = better ? act[src * WG + e] : best_act[k * WG + e];
        o_rep[k * WG + e] = better ? rep[src * WG + e] : best_rep[k * WG + e];
    }
    for (long long j = 0; j < G; ++j) o_rules[k * G + j] = better ? rules[src * G + j] : best_rules[k * G + j];
    o_score[k] = better ? score[src] : best_score[k];
    o_gen[k] = better ? gen : best_gen[k];
    o_min[k] = bs;
    o_sum[k] = sum;
}
