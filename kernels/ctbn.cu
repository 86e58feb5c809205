// MaBoSS trajectories on the GPU: one thread per trajectory, the line-by-line twin of
// distsim/maboss/cpu.py simulate_chunk (same Philox words, same arithmetic; build with --fmad=false).
// Per-thread scratch and record slabs are interleaved: element k of trajectory c is at k * n_traj + c
// (word w of record r's state: element r * vw + w).
// The windows' entropy integrals are summed with integer atomics (order-free, so exact).
#include "philox.cuh"
#include "dsmath.cuh"

#define CTBN_QUANTA 1073741824LL  // 2**30 quanta per time_tick
#define CTBN_TH_SCALE 0.015625    // 2**24 / 2**30
#define CTBN_TH_SQ_SHIFT 12
#define CTBN_VW_MAX 16  // 64-bit words of a visible state (distsim.maboss.model.MAX_VISIBLE = 1024 nodes)

extern "C" __global__ void ctbn_simulate(
    const long long n_traj, const int* __restrict__ par_start, const int* __restrict__ par_index,
    const long long* __restrict__ tt_start, const unsigned char* __restrict__ tt, const int* __restrict__ val_start,
    const double* __restrict__ vals, const unsigned char* __restrict__ internal, const int* __restrict__ vpos,
    const int n, const int* __restrict__ grp_start,
    const double* __restrict__ grp_cum, const int* __restrict__ grp_node_start, const int* __restrict__ grp_nodes,
    const unsigned long long* __restrict__ opt_bits, const int n_groups, const unsigned char* __restrict__ fix_mask,
    const unsigned char* __restrict__ fix_val, const unsigned int seed, const long long traj0, const int n_win,
    const double max_time, const double tick, const int discrete, const int rec_cap,
    unsigned char* __restrict__ xs, double* __restrict__ rates_all,
    int* __restrict__ rec_win, unsigned long long* __restrict__ rec_state, long long* __restrict__ rec_q,
    int* __restrict__ rec_n, unsigned long long* __restrict__ th_sum, unsigned long long* __restrict__ th_sq,
    unsigned long long* __restrict__ final_vis, const int vw, unsigned long long* __restrict__ final_full,
    const int n_words,
    unsigned char* __restrict__ fixed, long long* __restrict__ events) {
    __shared__ double2 tab[DS_NEGLOG_ENTRIES];
    ds_neglog_load(tab);
    __syncthreads();
    const long long c = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= n_traj) return;
    const long long N = n_traj;
    unsigned char* x = xs;  // x[i] at i * N + c
    double* rates = rates_all;
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
    for (int i = 0; i < n; ++i)
        if (vpos[i] >= 0 && x[(long long)i * N + c]) vis[vpos[i] >> 6] |= 1ULL << (vpos[i] & 63);
    const double scale = (double)CTBN_QUANTA / tick;
    const long long m_end = (long long)n_win * CTBN_QUANTA;
    double t = 0.0, thacc = 0.0;
    long long pos = 0, ev = 0;
    int win = 0, wstart = 0, nrec = 0, fp = 0;
    bool over = false;
    while (true) {
        // flip rates: each node's table over its parents (the first parent is the most significant bit)
        double total = 0.0;
        for (int i = 0; i < n; ++i) {
            long long row = 0;
            for (int k = par_start[i]; k < par_start[i + 1]; ++k) row = (row << 1) | x[(long long)par_index[k] * N + c];
            const double ri = vals[val_start[i] + tt[tt_start[i] + row]];
            rates[(long long)i * N + c] = ri;
            total += ri;
        }
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
                double rate_internal = 0.0;
                for (int i = 0; i < n; ++i) {
                    const double ri = rates[(long long)i * N + c];
                    if (ri != 0.0 && internal[i]) rate_internal += ri;
                }
                const double tni = total - rate_internal;
                for (int i = 0; i < n; ++i) {
                    const double ri = rates[(long long)i * N + c];
                    if (ri != 0.0 && !internal[i]) {
                        const double p = ri / tni;
                        th -= (ds_log(p) * DS_INV_LN2) * p;
                    }
                }
            }
        }
        long long pos_new = m_end;
        if (!(t_new >= max_time)) {
            const long long f = (long long)floor(t_new * scale);
            pos_new = f < m_end ? f : m_end;
        }
        while (pos < pos_new) {
            const long long wend = (long long)(win + 1) * CTBN_QUANTA;
            const long long seg = pos_new < wend ? pos_new : wend;
            const long long q = seg - pos;
            int r = wstart;
            for (; r < nrec; ++r) {
                bool same = true;
                for (int w = 0; w < vw; ++w)
                    if (rec_state[((long long)r * vw + w) * N + c] != vis[w]) { same = false; break; }
                if (same) break;
            }
            if (r == nrec) {
                if (nrec == rec_cap) { over = true; break; }
                rec_win[(long long)r * N + c] = win;
                for (int w = 0; w < vw; ++w) rec_state[((long long)r * vw + w) * N + c] = vis[w];
                rec_q[(long long)r * N + c] = 0;
                ++nrec;
            }
            rec_q[(long long)r * N + c] += q;
            thacc += (double)q * th;
            pos = seg;
            if (pos == wend) {
                const long long ti = (long long)floor(thacc * CTBN_TH_SCALE + 0.5);
                const long long ts = ti >> CTBN_TH_SQ_SHIFT;
                atomicAdd(&th_sum[win], (unsigned long long)ti);
                atomicAdd(&th_sq[win], (unsigned long long)(ts * ts));
                thacc = 0.0;
                ++win;
                wstart = nrec;
            }
        }
        if (over || t_new >= max_time) break;
        double rr = u2 * total;
        int node = -1;
        for (int i = 0; i < n; ++i) {
            const double ri = rates[(long long)i * N + c];
            if (ri > 0.0) {
                node = i;
                rr -= ri;
                if (rr < 0.0) break;
            }
        }
        x[(long long)node * N + c] ^= 1;
        if (vpos[node] >= 0) vis[vpos[node] >> 6] ^= 1ULL << (vpos[node] & 63);
        t = t_new;
        ++ev;
    }
    rec_n[c] = over ? rec_cap + 1 : nrec;
    for (int w = 0; w < vw; ++w) final_vis[(long long)w * N + c] = vis[w];
    for (int w = 0; w < n_words; ++w) final_full[(long long)w * N + c] = 0ULL;
    for (int i = 0; i < n; ++i)
        if (x[(long long)i * N + c]) final_full[(long long)(i >> 6) * N + c] |= 1ULL << (i & 63);
    fixed[c] = (unsigned char)fp;
    events[c] = ev;
}
