// Bit-sliced PBN simulation: each thread advances 32 trajectories (one bit each) of one word group.
// State layout, tiled: S[tile][node][thread] (DS_BLOCK threads), so a warp reads a node's words
// coalesced and every node sits at a compile-time offset from the thread's base pointer.
// Each thread block advances one tile as its task (ds_task) says: from which step, for how many
// steps, whose chains (seed, first chain id, perturbation table, knockouts, counters). So one launch
// can advance the chains of many runs at once (a batched sweep), and a tile's advance can be cut
// into pieces that the blocks take from a queue (distsim/pbn/launch.py plan_launch): a block takes
// the next task by ticket and waits until the tile's previous piece is done, so tiles beyond the
// device's resident blocks fill it to the end instead of leaving a partial last wave.
// Data placement: "hot" nodes live in registers during a launch; "cold" nodes (large networks) stay
// in global memory, double-buffered between S and the scratch array T (reads of step st come from
// `in`, writes go to `out`, swapped every step), which keeps registers from spilling.
//
// This file is a template: distsim/pbn/gpu.py replaces every region between "//@@ NAME" and
// "//@@ end" with code generated from the network's compiled bit program (the same program the CPU
// kernel interprets), so CPU and GPU compute identical trajectories. As written here it holds a
// tiny default network (x0' = x1, x1' = !x0 | x2 with 2 functions for x2) so that `nvcc --ptx`
// can check it on a machine with no GPU. Random-number layout: distsim/pbn/compile.py.
#include "philox.cuh"

//@@ defs
#define DS_N 3
#define DS_ASYNC 0
#define DS_NBITS 2       // bits to encode a node index (async)
#define DS_MAXF 2        // max functions per node
#define DS_T 1           // number of target sets
//@@ end

#define DS_VC 8          // vertical-counter planes (per-chain counts flushed every 255 steps)
#define DS_BLOCK 128     // threads per block (the host launches exactly this many)
#ifndef DS_MINB
#define DS_MINB 1        // resident blocks per SM the register allocation must allow (set by the host)
#endif

// A load the compiler may not merge with other loads of the same word: a cold node is re-read from
// L1 at each use instead of occupying a register from its first use to its last.
#define DS_COLD(base, offset_bytes) ds_cold<offset_bytes>(base)
template <int OFFSET>
__device__ __forceinline__ uint32_t ds_cold(const uint32_t* base) {
    uint32_t v;
    asm volatile("ld.global.ca.u32 %0, [%1+%2];" : "=r"(v) : "l"(base), "n"(OFFSET));
    return v;
}

__device__ __forceinline__ uint32_t ds_word(const ds_u32x4& b, int k) {
    return (k & 3) == 0 ? b.x : ((k & 3) == 1 ? b.y : ((k & 3) == 2 ? b.z : b.w));
}

// First i < len with u < G[i] (G non-decreasing, u < G[len-1]).
__device__ __forceinline__ int ds_first_above(const uint32_t* __restrict__ G, int len, uint32_t u) {
    int lo = 0, hi = len - 1;
    while (lo < hi) {
        int mid = (lo + hi) >> 1;
        if (u < G[mid]) hi = mid; else lo = mid + 1;
    }
    return lo;
}

__device__ __forceinline__ int ds_choose(uint32_t u, const uint32_t* __restrict__ th, int count) {
    int f = 0;
    while (f < count - 1 && u >= th[f]) ++f;
    return f;
}

// One thread block's work (the host's numpy twin: distsim/pbn/launch.py TASK_DTYPE).
struct ds_task {
    unsigned long long chain0;  // id of the tile's first chain (thread t, lane l: chain0 + 32 t + l)
    unsigned long long step0;   // absolute step of the tile's state when the task starts
    uint32_t tile;              // tile of S (and T) it advances
    uint32_t seed;              // its run's seed (Philox key word 0)
    int nsteps;
    int n_chains;               // valid chains in the tile (<= 32 * DS_BLOCK)
    int slot;                   // its run: counters pooled[slot], node_ones[slot]
    int pert, n_pert;           // its perturbation table: pert_list/pert_thresh[pert .. pert + n_pert)
    int fix, n_fix;             // its knockouts: fix_list[2 (fix + k)] = node, [2 (fix + k) + 1] = value
    int flags;                  // DS_LAST: the tile's last task of the advance (count the occupancy)
    int piece;                  // pieces of the same tile before this one in the launch (it waits for them)
    int unused;
};
#define DS_LAST 1

extern "C" __global__ void __launch_bounds__(DS_BLOCK, DS_MINB)
pbn_sliced(uint32_t* __restrict__ S, uint32_t* __restrict__ T, const ds_task* __restrict__ tasks, const int n_tiles,
           const int* __restrict__ func_start, const uint32_t* __restrict__ func_thresh,
           const uint32_t* __restrict__ ctx_thresh, const int n_ctx, const int* __restrict__ ctx_func,
           const int* __restrict__ pert_list, const uint32_t* __restrict__ pert_thresh,
           const int* __restrict__ fix_list,
           const int want_chain, uint32_t* __restrict__ chain_ones,
           const int want_nodes, unsigned long long* __restrict__ node_ones,
           unsigned long long* __restrict__ pooled, unsigned int* __restrict__ queue)
{
    extern __shared__ unsigned long long ds_node_acc[];  // [DS_N] when want_nodes
    // queue[0]: the next ticket; queue[1 + tile]: the tile's pieces done in this launch. Tickets go to
    // resident blocks in order, so the block of the previous piece (an earlier ticket) is running or
    // done: waiting for it cannot deadlock. The acquire makes its stores visible (it invalidates L1).
    __shared__ unsigned int ds_ticket;
    if (threadIdx.x == 0) {
        const unsigned int b = atomicAdd(queue, 1u);
        const int piece = tasks[b].piece;
        if (piece > 0) {
            const unsigned int* flag = queue + 1 + tasks[b].tile;
            unsigned int done;
            while (true) {
                asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(done) : "l"(flag) : "memory");
                if (done >= (unsigned int)piece) break;
                __nanosleep(100);
            }
        }
        ds_ticket = b;
    }
    __syncthreads();
    const ds_task task = tasks[ds_ticket];
    if (want_nodes) {
        for (int i = threadIdx.x; i < DS_N; i += blockDim.x) ds_node_acc[i] = 0ull;
        __syncthreads();
    }
    const int nsteps = task.nsteps;
    const uint32_t seed = task.seed;
    const unsigned long long cbase = task.chain0 + 32ull * threadIdx.x;  // chain id of lane 0
    const int lanes = max(0, min(32, task.n_chains - 32 * (int)threadIdx.x));
    const uint32_t valid = lanes >= 32 ? 0xFFFFFFFFu : ((1u << lanes) - 1u);
    const int* __restrict__ pert_nodes = pert_list + task.pert;
    const uint32_t* __restrict__ pertG = pert_thresh + task.pert;
    const int n_pert = task.n_pert;
    const uint32_t G_last = n_pert > 0 ? pertG[n_pert - 1] : 0u;
    const unsigned long long tile = (unsigned long long)task.tile * DS_N * DS_BLOCK + threadIdx.x;
    uint32_t* __restrict__ Sb = S + tile;  // this thread's column: node i at Sb[i * DS_BLOCK]
    uint32_t* __restrict__ Tb = T + tile;

    //@@ load
    uint32_t s0 = Sb[0 * DS_BLOCK], s1 = Sb[1 * DS_BLOCK], s2 = Sb[2 * DS_BLOCK];
    //@@ end

    // targets: previous occupancy, pooled counters, vertical counters
    uint32_t prev[DS_T];
    uint32_t cnt_ones[DS_T], cnt_01[DS_T], cnt_10[DS_T];
    uint32_t vc[DS_T][DS_VC];
#pragma unroll
    for (int t = 0; t < DS_T; ++t) {
        cnt_ones[t] = cnt_01[t] = cnt_10[t] = 0u;
#pragma unroll
        for (int b = 0; b < DS_VC; ++b) vc[t][b] = 0u;
    }
    //@@ targets
#define DS_TARGETS(m, buf) { m[0] = s0 & ~s1 & valid; }
    //@@ end
    DS_TARGETS(prev, Sb);

    int since_flush = 0;
    for (int st = 0; st < nsteps; ++st) {
        const unsigned long long step = task.step0 + (unsigned long long)st;
        const uint32_t* __restrict__ in = (st & 1) ? Tb : Sb;  // cold nodes: this step's input ...
        uint32_t* __restrict__ out = (st & 1) ? Sb : Tb;        // ... and output buffer
        (void)in; (void)out;
        const uint32_t slo = (uint32_t)step, shi = (uint32_t)(step >> 32);
        uint32_t ev = 0u;
        //@@ select_decl
        uint32_t ge_2_1 = 0u;  // lanes where node 2 takes function >= 1
        //@@ end
        for (int lane = 0; lane < lanes; ++lane) {
            const uint32_t chain = (uint32_t)(cbase + lane);
            const uint32_t bit = 1u << lane;
            const ds_u32x4 b0 = ds_philox4x32_10(ds_u32x4{0u, slo, shi, 0u}, seed, chain);
            if (b0.x < G_last) { ev |= bit; continue; }
            //@@ select_lane
            if (b0.y >= 0x80000000u) ge_2_1 |= bit;
            //@@ end
        }

        //@@ logic
        const uint32_t f0 = s1;
        const uint32_t f1 = ~s0 | s2;
        const uint32_t f2 = s0;
        const uint32_t f3 = s1;
        //@@ end

        //@@ merge
        uint32_t n0 = f0, n1 = f1, n2 = f2;
        n2 ^= (n2 ^ f3) & ge_2_1;
        n0 = (n0 & ~ev) | (s0 & ev); n1 = (n1 & ~ev) | (s1 & ev); n2 = (n2 & ~ev) | (s2 & ev);
        //@@ end

        // knockouts of this run (a batched sweep): a fixed node takes its value where it is updated
        for (int k = 0; k < task.n_fix; ++k) {
            const int node = fix_list[2 * (task.fix + k)];
            const uint32_t fv = fix_list[2 * (task.fix + k) + 1] ? 0xFFFFFFFFu : 0u;
            switch (node) {
                //@@ fixset
                case 0: n0 = (n0 & ev) | (fv & ~ev); break;
                case 1: n1 = (n1 & ev) | (fv & ~ev); break;
                case 2: n2 = (n2 & ev) | (fv & ~ev); break;
                //@@ end
                default: break;
            }
        }

        // perturbation steps: flip the chosen nodes of each perturbed trajectory
        uint32_t e = ev;
        while (e) {
            const int lane = __ffs(e) - 1;
            const uint32_t lb = 1u << lane;
            e &= e - 1u;
            const uint32_t chain = (uint32_t)(cbase + lane);
            ds_u32x4 blk = ds_philox4x32_10(ds_u32x4{0u, slo, shi, 0u}, seed, chain);
            int cur = 0;
            uint32_t u = blk.x;
            int i = ds_first_above(pertG, n_pert, u);
            int base = 0, k = 1;
            while (true) {
                const int node = pert_nodes[base + i];
                switch (node) {
                    //@@ flip
                    case 0: n0 ^= lb; break;
                    case 1: n1 ^= lb; break;
                    case 2: n2 ^= lb; break;
                    //@@ end
                    default: break;
                }
                base += i + 1;
                if (base >= n_pert) break;
                if ((k >> 2) != cur) { cur = k >> 2; blk = ds_philox4x32_10(ds_u32x4{(uint32_t)cur, slo, shi, 0u}, seed, chain); }
                u = ds_word(blk, k);
                ++k;
                const int r = n_pert - base;
                if (u >= pertG[r - 1]) break;
                i = ds_first_above(pertG, r, u);
            }
        }

        //@@ store_step
        s0 = n0; s1 = n1; s2 = n2;
        //@@ end

        uint32_t now[DS_T];
        DS_TARGETS(now, out);
#pragma unroll
        for (int t = 0; t < DS_T; ++t) {
            cnt_ones[t] += __popc(now[t]);
            cnt_01[t] += __popc(~prev[t] & now[t]);
            cnt_10[t] += __popc(prev[t] & ~now[t]);
            prev[t] = now[t];
        }
        if (want_chain) {
#pragma unroll
            for (int t = 0; t < DS_T; ++t) {
                uint32_t carry = now[t];
#pragma unroll
                for (int b = 0; b < DS_VC; ++b) {
                    const uint32_t tmp = vc[t][b] & carry;
                    vc[t][b] ^= carry;
                    carry = tmp;
                }
            }
            if (++since_flush == (1 << DS_VC) - 1 || st == nsteps - 1) {
#pragma unroll
                for (int t = 0; t < DS_T; ++t) {
                    for (int lane = 0; lane < lanes; ++lane) {
                        uint32_t c = 0u;
#pragma unroll
                        for (int b = 0; b < DS_VC; ++b) c |= ((vc[t][b] >> lane) & 1u) << b;
                        chain_ones[((unsigned long long)t * n_tiles + task.tile) * (32 * DS_BLOCK)
                                   + 32 * threadIdx.x + lane] += c;
                    }
#pragma unroll
                    for (int b = 0; b < DS_VC; ++b) vc[t][b] = 0u;
                }
                since_flush = 0;
            }
        }
        if (want_nodes) {
            //@@ node_counts
            { uint32_t c = __reduce_add_sync(0xFFFFFFFFu, __popc(s0 & valid)); if ((threadIdx.x & 31) == 0) atomicAdd(&ds_node_acc[0], (unsigned long long)c); }
            { uint32_t c = __reduce_add_sync(0xFFFFFFFFu, __popc(s1 & valid)); if ((threadIdx.x & 31) == 0) atomicAdd(&ds_node_acc[1], (unsigned long long)c); }
            { uint32_t c = __reduce_add_sync(0xFFFFFFFFu, __popc(s2 & valid)); if ((threadIdx.x & 31) == 0) atomicAdd(&ds_node_acc[2], (unsigned long long)c); }
            //@@ end
        }
    }

    {
        //@@ store
        Sb[0 * DS_BLOCK] = s0; Sb[1 * DS_BLOCK] = s1; Sb[2 * DS_BLOCK] = s2;
        //@@ end
        if (nsteps & 1) {  // an odd number of steps leaves the cold nodes in T
            //@@ finish
            //@@ end
        }
        unsigned long long* __restrict__ pk = pooled + (unsigned long long)task.slot * 4 * DS_T;
#pragma unroll
        for (int t = 0; t < DS_T; ++t) {
            atomicAdd(&pk[4 * t + 0], (unsigned long long)cnt_ones[t]);
            atomicAdd(&pk[4 * t + 1], (unsigned long long)cnt_01[t]);
            atomicAdd(&pk[4 * t + 2], (unsigned long long)cnt_10[t]);
            if (task.flags & DS_LAST) atomicAdd(&pk[4 * t + 3], (unsigned long long)__popc(prev[t]));
        }
    }
    if (want_nodes) {
        __syncthreads();
        unsigned long long* __restrict__ nk = node_ones + (unsigned long long)task.slot * DS_N;
        for (int i = threadIdx.x; i < DS_N; i += blockDim.x) atomicAdd(&nk[i], ds_node_acc[i]);
    }
    __syncthreads();  // every thread's stores of the tile, then release it to its next piece
    if (threadIdx.x == 0) {
        __threadfence();
        atomicAdd(queue + 1 + task.tile, 1u);
    }
}

// Initial states: node i of trajectory c is bit index[i]%32 of word index[i]/32 of the stream (counter
// word 3 = 1); index[i] is the node's index in the full network (i itself unless it was reduced).
extern "C" __global__ void pbn_init(uint32_t* __restrict__ S, const int G, const int n_chains, const int n,
                                    const unsigned long long chain0, const uint32_t seed,
                                    const int* __restrict__ index)
{
    const int g = blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= G) return;
    const int lanes = min(32, n_chains - g * 32);
    uint32_t lw[32];
    int loaded = -1;
    for (int i = 0; i < n; ++i) {
        const int w = index[i] >> 5;
        if (w != loaded) {
#pragma unroll
            for (int lane = 0; lane < 32; ++lane) {
                const uint32_t chain = (uint32_t)(chain0 + (unsigned long long)(g * 32 + lane));
                lw[lane] = lane < lanes ? ds_word(ds_philox4x32_10(ds_u32x4{(uint32_t)(w >> 2), 0u, 0u, 1u}, seed, chain), w) : 0u;
            }
            loaded = w;
        }
        const int b = index[i] & 31;
        uint32_t word = 0u;
#pragma unroll
        for (int lane = 0; lane < 32; ++lane) word |= ((lw[lane] >> b) & 1u) << lane;
        S[(unsigned long long)(g / DS_BLOCK) * n * DS_BLOCK + (unsigned long long)i * DS_BLOCK + g % DS_BLOCK] = word;
    }
}

// Chains with each node at 1 in a run's tiled state (its first `tiles` tiles, `n_chains` valid chains):
// out[i] += the count for node i. One block per tile; a warp's counts meet in one atomic per node.
extern "C" __global__ void pbn_node_ones(const uint32_t* __restrict__ S, const int n, const int n_chains,
                                         unsigned long long* __restrict__ out)
{
    const int g = blockIdx.x * DS_BLOCK + threadIdx.x;  // word group: chains 32 g .. 32 g + 31
    const int lanes = max(0, min(32, n_chains - 32 * g));
    const uint32_t valid = lanes >= 32 ? 0xFFFFFFFFu : ((1u << lanes) - 1u);
    const uint32_t* __restrict__ Sb = S + (unsigned long long)blockIdx.x * n * DS_BLOCK + threadIdx.x;
    for (int i = 0; i < n; ++i) {
        const uint32_t c = __reduce_add_sync(0xFFFFFFFFu, __popc(Sb[(unsigned long long)i * DS_BLOCK] & valid));
        if ((threadIdx.x & 31) == 0 && c) atomicAdd(&out[i], (unsigned long long)c);
    }
}
