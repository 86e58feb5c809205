// MaBoSS trajectories on the GPU: one thread per trajectory, the line-by-line twin of
// distsim/maboss/cpu.py simulate_chunk (same Philox words, same arithmetic; build with --fmad=false).
// Per-thread scratch is interleaved: element k of trajectory c is at k * n_traj + c. A node's rate is kept as
// its index into the node's values (one byte: vals[val_start[i] + ridx[i]], a small cached table), not as a
// double: the per-event sums over all nodes read 1/8 of the scratch bytes (the same doubles, same bits).
// The records are reduced on the device (distsim/maboss/gpu.py): each thread keeps the distinct visible
// states of its current window (quanta each; word w of entry r at (r * vw + w) * n_traj + c) and adds
// them at the window's end to integer sums (atomics: order-free, so exact and equal to the CPU's sums):
//  * dense (few visible nodes): tables [copy][window][state] of quanta and squares; a stretch of whole
//    windows in one state adds +1 / -1 at its first window / the window after it (a difference table that
//    the host sums over windows), and the transition entropy of those windows likewise;
//  * hash: an open-addressing table keyed by (tag, words) with tag = window (records), n_win (the state
//    at max_time); fixed points (tag n_win + 1, every node) always go to the table. The key's first word
//    is tag | copy << 32 with copy = thread index & (ht_copies - 1): the few hot states of a window get
//    ht_copies slots (the lanes of a warp distinct ones) instead of one slot that every thread's atomics
//    hit (the keys of max_time and fixed points, one per trajectory, get at most CTBN_END_COPIES); the host
//    masks the copy off and sums the copies (integers: the same bits).
// Each sum table has `copies` copies (the thread's index picks one) to spread atomic contention.
// The record of the current visible state and its quanta since it was last written stay in registers until
// the visible state changes or the window ends, so an event that flips an internal node touches no record.
// A template: as written (its regions' default code) it reads each node's flip rate from its truth table over
// the parents, with the state and the rate indices in the interleaved scratch ("table" kernel).
// distsim/maboss/codegen.py fills the regions "//@@ NAME" .. "//@@ end" with code generated from one model
// ("generated" kernel): the state as 32-bit words in registers (node i: bit i & 31 of word i >> 5), every
// node's rate index recomputed after each event by straight-line logic of those bits (a decision diagram of
// its truth table; the same for every thread of a warp, no loads), the rates as literals, the sums over the
// nodes unrolled in node order: the same doubles added in the same order, so the same bits. Where every rate
// is 0 or one power of two v (codegen.unit_rate) the sums are counts (popc) times v and the flip the
// floor(rr / v)-th enabled node (exact arithmetic there: the same bits); the entropy is recomputed only when
// the visible rate indices or tni change.
#include "philox.cuh"
#include "dsmath.cuh"
// x's value unknown to the optimizer from here on (generated kernels: no expression of the packed rate indices
// is shared between the sums and the choice of the flip, which would keep one register per node alive)
#define CTBN_OPAQUE(x) asm volatile("" : "+r"(x))
//@@ defs
// 64-bit words of a visible state and of a state: compile-time constants in a generated kernel (vis[] then
// stays in registers: every index of it is a constant once the loops are unrolled)
#define CTBN_VW_OF(a) (a)
#define CTBN_NW_OF(a) (a)
//@@ end

#define CTBN_QUANTA 1073741824LL  // 2**30 quanta per time_tick
#define CTBN_TH_SCALE 0.015625    // 2**24 / 2**30
#define CTBN_TH_SQ_SHIFT 12
#define CTBN_SQ_SHIFT 14          // distsim.maboss.block.SQ_SHIFT
#define CTBN_END_COPIES 4  // copies of the keys of states at max_time and fixed points (at most ht_copies)
#define CTBN_VW_MAX 16  // 64-bit words of a visible state (distsim.maboss.model.MAX_VISIBLE = 1024 nodes)

// The position of the r-th (from 0) set bit of w (r < popc(w)): generated kernels of unit-rate models
__device__ __forceinline__ int ctbn_select32(unsigned int w, unsigned int r) {
    int pos = 0;
    unsigned int k = __popc(w & 0xFFFFu);
    if (r >= k) { r -= k; pos += 16; w >>= 16; }
    k = __popc(w & 0xFFu);
    if (r >= k) { r -= k; pos += 8; w >>= 8; }
    k = __popc(w & 0xFu);
    if (r >= k) { r -= k; pos += 4; w >>= 4; }
    k = __popc(w & 0x3u);
    if (r >= k) { r -= k; pos += 2; w >>= 2; }
    if (r >= (w & 1u)) pos += 1;
    return pos;
}

// Add (v1, v2) to the key kbuf[j * N + c] (j < kw) of the hash table (slots of kw key words; ctl 0: empty,
// 1: being written, 2: ready). flags[1] = 1 when the table is more than half full (the launch is redone
// with a larger one); flags[2] counts used slots.
__device__ void ctbn_ht_add(const unsigned long long* __restrict__ kbuf, const long long c, const long long N,
                            const int kw, unsigned int* ctl, unsigned long long* keys, unsigned long long* s1,
                            unsigned long long* s2, const unsigned long long mask, int* flags,
                            const unsigned long long v1, const unsigned long long v2) {
    unsigned long long h = 0xC2B2AE3D27D4EB4FULL;
    for (int j = 0; j < kw; ++j) h = (h ^ kbuf[(long long)j * N + c]) * 0x9E3779B97F4A7C15ULL;
    h = (h >> 20) & mask;
    for (unsigned long long probe = 0; probe <= mask; ++probe, h = (h + 1ULL) & mask) {
        unsigned int st = *(volatile unsigned int*)&ctl[h];
        if (st == 0u) {
            st = atomicCAS(&ctl[h], 0u, 1u);
            if (st == 0u) {
                for (int j = 0; j < kw; ++j) keys[(long long)h * kw + j] = kbuf[(long long)j * N + c];
                __threadfence();
                atomicExch(&ctl[h], 2u);
                const unsigned int used = atomicAdd((unsigned int*)&flags[2], 1u);
                if (2ULL * ((unsigned long long)used + 1ULL) > mask + 1ULL) flags[1] = 1;
                atomicAdd(&s1[h], v1);
                if (v2) atomicAdd(&s2[h], v2);
                return;
            }
        }
        while (st == 1u) st = *(volatile unsigned int*)&ctl[h];
        __threadfence();
        bool same = true;
        for (int j = 0; j < kw; ++j)
            if (*(volatile unsigned long long*)&keys[(long long)h * kw + j] != kbuf[(long long)j * N + c]) {
                same = false;
                break;
            }
        if (same) {
            atomicAdd(&s1[h], v1);
            if (v2) atomicAdd(&s2[h], v2);
            return;
        }
    }
    flags[1] = 1;  // full
}

extern "C" __global__ void ctbn_simulate(
    const long long n_traj, const int* __restrict__ par_start, const int* __restrict__ par_index,
    const long long* __restrict__ tt_start, const unsigned char* __restrict__ tt, const int* __restrict__ val_start,
    const double* __restrict__ vals, const unsigned char* __restrict__ internal, const int* __restrict__ vpos,
    const int n, const int* __restrict__ grp_start,
    const double* __restrict__ grp_cum, const int* __restrict__ grp_node_start, const int* __restrict__ grp_nodes,
    const unsigned long long* __restrict__ opt_bits, const int n_groups, const unsigned char* __restrict__ fix_mask,
    const unsigned char* __restrict__ fix_val, const int* __restrict__ child_start,
    const int* __restrict__ child_index, const int* __restrict__ vis_nodes, const int n_vis,
    const unsigned int seed, const long long traj0, const int n_win,
    const double max_time, const double tick, const int discrete, const int rec_cap,
    unsigned char* __restrict__ xs, unsigned char* __restrict__ ridx_all,
    unsigned long long* __restrict__ rec_state, long long* __restrict__ rec_q, const int vw_arg, const int n_words_arg,
    const int dense, const long long n_states, const int copies, unsigned long long* acc, const long long acc_len,
    const long long o_q, const long long o_q2, const long long o_full, const long long o_final,
    const long long o_th, const long long o_th2, const long long o_dth, const long long o_dth2, const long long o_ev,
    unsigned long long* __restrict__ kbuf, const int kw, unsigned int* ht_ctl, unsigned long long* ht_keys,
    unsigned long long* ht_s1, unsigned long long* ht_s2, const unsigned long long ht_mask, const int ht_copies,
    int* flags) {
    __shared__ double2 tab[DS_NEGLOG_ENTRIES];
    ds_neglog_load(tab);
    //@@ setup
    // (a generated kernel's per-block tables)
    //@@ end
    __syncthreads();
    const long long c = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= n_traj) return;
    const long long N = n_traj;
    const int vw = CTBN_VW_OF(vw_arg), n_words = CTBN_NW_OF(n_words_arg);
    unsigned char* x = xs;  // x[i] at i * N + c
    unsigned char* const ridx = ridx_all;  // ridx[i] at i * N + c
#define CTBN_RATE(i) vals[val_start[i] + ridx[(long long)(i) * N + c]]
    const long long traj = traj0 + c;
    const uint32_t k0 = seed, k1 = (uint32_t)traj;  // trajectories < 2**32
    for (int g = 0; g < n_groups; ++g) {
        ds_u32x4 ctr = {(uint32_t)g, 0u, 1u, 0u};
        const ds_u32x4 w = ds_philox4x32_10(ctr, k0, k1);
        const double u = ds_u01_f64(w.x, w.y);
        int k = grp_start[g];
        while (k < grp_start[g + 1] - 1 && !(u < grp_cum[k])) ++k;
        const unsigned long long bits = opt_bits[k];
        for (int j = 0; j < grp_node_start[g + 1] - grp_node_start[g]; ++j)
            x[(long long)grp_nodes[grp_node_start[g] + j] * N + c] = (unsigned char)((bits >> j) & 1ULL);
    }
    for (int i = 0; i < n; ++i)
        if (fix_mask[i]) x[(long long)i * N + c] = fix_val[i];
    unsigned long long vis[CTBN_VW_MAX];
    for (int w = 0; w < vw; ++w) vis[w] = 0ULL;
    for (int i = 0; i < n; ++i) {
        const int vp = vpos[i];
        if (vp >= 0 && x[(long long)i * N + c])
            for (int w = 0; w < vw; ++w)
                if (w == vp >> 6) vis[w] |= 1ULL << (vp & 63);
    }
    //@@ state_load
    //@@ end
    const double scale = (double)CTBN_QUANTA / tick;
    const long long m_end = (long long)n_win * CTBN_QUANTA;
    // this thread's copy of the sum tables
    unsigned long long* const my = acc + (long long)(c & (long long)(copies - 1)) * acc_len;
    // the tables at my + o_*: the offsets are kernel parameters (read where used), not 7 more pointers kept
    // in registers across the loop (ptxas spilled them)
#define CTBN_AT(o, k) (&my[(o) + (long long)(k)])
    const unsigned long long ht_copy = (unsigned long long)(c & (long long)(ht_copies - 1)) << 32;
    // the state at max_time and the fixed point: one key each per trajectory, added once at its end; few
    // copies (a fixed point reached by most trajectories stays spread a little, but a model with thousands
    // of fixed points gives the host thousands of keys, not ht_copies times as many)
    const unsigned long long end_copy =
        (unsigned long long)(c & (long long)((ht_copies < CTBN_END_COPIES ? ht_copies : CTBN_END_COPIES) - 1)) << 32;
    double t = 0.0, thacc = 0.0;
    long long pos = 0, ev = 0;
    int win = 0, nrec = 0, fp = 0, last = -1;
    // the record of the current visible state in this window (-1: not looked up since it changed) and its
    // quanta not yet added to rec_q: an event that flips an internal node touches no record in memory
    int cur = -1;
    long long pend = 0;
    bool over = false;
    // generated kernels: the transition entropy of the last event and what it is a function of (the visible
    // nodes' rate indices, packed in th_key, and tni): an event that changes neither (most flips of internal
    // nodes) reuses it, the same bits without its divisions and logs
    unsigned long long th_key = 0ULL;
    double th_tni = __longlong_as_double(0x7FF8000000000000LL), th_val = 0.0;  // NaN: no entropy yet
    while (true) {
        double total = 0.0, rate_internal = 0.0;
        //@@ rates
        // flip rates (all at first, then those that read the node that flipped): each node's table over its
        // parents (the first parent is the most significant bit); the sums in node order (cpu._update_rates)
        const int k_end = last < 0 ? n : child_start[last + 1];
        for (int k = last < 0 ? 0 : child_start[last]; k < k_end; ++k) {
            const int i = last < 0 ? k : child_index[k];
            long long row = 0;
            for (int j = par_start[i]; j < par_start[i + 1]; ++j) row = (row << 1) | x[(long long)par_index[j] * N + c];
            ridx[(long long)i * N + c] = tt[tt_start[i] + row];
        }
        for (int i = 0; i < n; ++i) {
            const double ri = CTBN_RATE(i);
            total += ri;
            if (ri != 0.0 && internal[i]) rate_internal += ri;
        }
        //@@ end
        double u2 = 0.0, t_new, th;
        if (total == 0.0) {
            t_new = max_time;
            th = 0.0;
            fp = 1;
        } else {
            ds_u32x4 ctr = {(uint32_t)(ev & 0xFFFFFFFFLL), (uint32_t)(ev >> 32), 0u, 0u};
            const ds_u32x4 w = ds_philox4x32_10(ctr, k0, k1);
            u2 = ds_u01_f64(w.z, w.w);
            t_new = discrete ? t + tick : t + ds_neglog_u01(ds_u01_f64(w.x, w.y), tab) / total;
            // MaBoSS's TH: entropy of which visible node flips next
            th = 0.0;
            if (n != 1) {
                const double tni = total - rate_internal;
                //@@ entropy
                for (int j = 0; j < n_vis; ++j) {  // the visible nodes in node order
                    const double ri = CTBN_RATE(vis_nodes[j]);
                    if (ri != 0.0) {
                        const double p = ri / tni;
                        th -= (ds_log(p) * DS_INV_LN2) * p;
                    }
                }
                //@@ end
            }
        }
        long long pos_new = m_end;
        if (!(t_new >= max_time)) {
            const long long f = (long long)floor(t_new * scale);
            pos_new = f < m_end ? f : m_end;
        }
        while (pos < pos_new) {
            const long long wend = (long long)(win + 1) * CTBN_QUANTA;
            if (dense && nrec == 0 && pos == wend - CTBN_QUANTA && pos_new >= wend) {
                // windows win .. k-1 whole in one state: the CPU's records (q = QUANTA each) and entropy integrals
                const int k = (int)(pos_new / CTBN_QUANTA);
                double a = 0.0;
                a += (double)CTBN_QUANTA * th;
                const long long ti = (long long)floor(a * CTBN_TH_SCALE + 0.5);
                const long long ts = ti >> CTBN_TH_SQ_SHIFT;
                const long long s0 = (long long)vis[0];
                atomicAdd(CTBN_AT(o_full, (long long)win * n_states + s0), 1ULL);
                atomicAdd(CTBN_AT(o_full, (long long)k * n_states + s0), ~0ULL);  // -1
                atomicAdd(CTBN_AT(o_dth, win), (unsigned long long)ti);
                atomicAdd(CTBN_AT(o_dth, k), (unsigned long long)(-ti));
                atomicAdd(CTBN_AT(o_dth2, win), (unsigned long long)(ts * ts));
                atomicAdd(CTBN_AT(o_dth2, k), (unsigned long long)(-(ts * ts)));
                pos = (long long)k * CTBN_QUANTA;
                win = k;
                continue;
            }
            const long long seg = pos_new < wend ? pos_new : wend;
            const long long q = seg - pos;
            if (cur < 0) {  // the visible state changed, or a new window: find (or add) its record
                int r = 0;
                for (; r < nrec; ++r) {
                    bool same = true;
                    for (int w = 0; w < vw; ++w)
                        if (rec_state[((long long)r * vw + w) * N + c] != vis[w]) { same = false; break; }
                    if (same) break;
                }
                if (r == nrec) {
                    if (nrec == rec_cap) { over = true; break; }
                    for (int w = 0; w < vw; ++w) rec_state[((long long)r * vw + w) * N + c] = vis[w];
                    rec_q[(long long)r * N + c] = 0;
                    ++nrec;
                }
                cur = r;
            }
            pend += q;
            thacc += (double)q * th;
            pos = seg;
            if (pos == wend) {
                const long long ti = (long long)floor(thacc * CTBN_TH_SCALE + 0.5);
                const long long ts = ti >> CTBN_TH_SQ_SHIFT;
                atomicAdd(CTBN_AT(o_th, win), (unsigned long long)ti);
                atomicAdd(CTBN_AT(o_th2, win), (unsigned long long)(ts * ts));
                for (int e = 0; e < nrec; ++e) {  // the window's records
                    const unsigned long long qe =
                        (unsigned long long)(rec_q[(long long)e * N + c] + (e == cur ? pend : 0LL));
                    const unsigned long long qq = qe >> CTBN_SQ_SHIFT;
                    if (dense) {
                        const long long at =
                            (long long)win * n_states + (long long)rec_state[(long long)e * vw * N + c];
                        atomicAdd(CTBN_AT(o_q, at), qe);
                        atomicAdd(CTBN_AT(o_q2, at), qq * qq);
                    } else {
                        kbuf[c] = (unsigned long long)win | ht_copy;
                        for (int w = 0; w < n_words; ++w)
                            kbuf[(long long)(1 + w) * N + c] =
                                w < vw ? rec_state[((long long)e * vw + w) * N + c] : 0ULL;
                        ctbn_ht_add(kbuf, c, N, kw, ht_ctl, ht_keys, ht_s1, ht_s2, ht_mask, flags, qe, qq * qq);
                    }
                }
                thacc = 0.0;
                ++win;
                nrec = 0;
                cur = -1;
                pend = 0;
            }
        }
        if (over || t_new >= max_time) break;
        double rr = u2 * total;
        int node = -1;
        //@@ select
        for (int i = 0; i < n; ++i) {
            const double ri = CTBN_RATE(i);
            if (ri > 0.0) {
                node = i;
                rr -= ri;
                if (rr < 0.0) break;
            }
        }
        x[(long long)node * N + c] ^= 1;
        //@@ end
        const int vp = vpos[node];
        if (vp >= 0) {
            for (int w = 0; w < vw; ++w)  // a constant index once unrolled (vis stays in registers)
                if (w == vp >> 6) vis[w] ^= 1ULL << (vp & 63);
            if (cur >= 0) rec_q[(long long)cur * N + c] += pend;
            cur = -1;
            pend = 0;
        }
        last = node;
        t = t_new;
        ++ev;
    }
    if (over) {  // a window with more than rec_cap visible states: the launch is redone with larger lists
        flags[0] = 1;
        return;
    }
    //@@ state_store
    //@@ end
    atomicAdd(&my[o_ev], (unsigned long long)ev);
    if (dense) {
        atomicAdd(&my[o_final + (long long)vis[0]], 1ULL);
    } else {
        kbuf[c] = (unsigned long long)n_win | end_copy;
        for (int w = 0; w < n_words; ++w) kbuf[(long long)(1 + w) * N + c] = w < vw ? vis[w] : 0ULL;
        ctbn_ht_add(kbuf, c, N, kw, ht_ctl, ht_keys, ht_s1, ht_s2, ht_mask, flags, 1ULL, 0ULL);
    }
    if (fp) {
        kbuf[c] = ((unsigned long long)n_win + 1ULL) | end_copy;
        for (int w = 0; w < n_words; ++w) {
            unsigned long long word = 0ULL;
            for (int i = 64 * w; i < n && i < 64 * w + 64; ++i)
                if (x[(long long)i * N + c]) word |= 1ULL << (i & 63);
            kbuf[(long long)(1 + w) * N + c] = word;
        }
        ctbn_ht_add(kbuf, c, N, kw, ht_ctl, ht_keys, ht_s1, ht_s2, ht_mask, flags, 1ULL, 0ULL);
    }
}
#undef CTBN_RATE
#undef CTBN_AT

// out[i] = sum over k < copies of in[k * len + i] (integer sums of the tables' copies)
extern "C" __global__ void ctbn_sum_copies(const long long len, const unsigned long long* __restrict__ in,
                                           const int copies, unsigned long long* __restrict__ out) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= len) return;
    unsigned long long s = 0ULL;
    for (int k = 0; k < copies; ++k) s += in[(long long)k * len + i];
    out[i] = s;
}

// The used slots of the hash table, in any order (the host sorts them): key words, then the two sums.
extern "C" __global__ void ctbn_ht_compact(const unsigned long long cap, const unsigned int* __restrict__ ctl,
                                           const unsigned long long* __restrict__ keys,
                                           const unsigned long long* __restrict__ s1,
                                           const unsigned long long* __restrict__ s2, const int kw,
                                           unsigned int* counter, unsigned long long* __restrict__ out) {
    const unsigned long long h = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (h >= cap || ctl[h] != 2u) return;
    const unsigned long long k = atomicAdd(counter, 1u);
    for (int j = 0; j < kw; ++j) out[k * (kw + 2) + j] = keys[h * kw + j];
    out[k * (kw + 2) + kw] = s1[h];
    out[k * (kw + 2) + kw + 1] = s2[h];
}
