// Shared by the SSA kernels: the reaction kinetics and the error word a realization ends with
// (distsim/ssa/errors.py): the code in the low DS_ERR_BITS bits, the reaction concerned above them.
#pragma once
#include "kinetics.cuh"

#define ERR_NONE 0
#define ERR_PROPENSITY 1
#define ERR_MAX_EVENTS 2
#define ERR_NEGATIVE 3
#define ERR_OVERFLOW 4
#define DS_ERR_BITS 8
#define DS_ERROR_WORD(code, reaction) ((code) | ((reaction) << DS_ERR_BITS))

// Batched launches (distsim/ssa/gpu_batch.py): one launch runs the realizations of many parameter points.
// Thread (or warp) r runs realization r % batch_rs of point r / batch_rs (batch_rs >= batch_rp: the rest
// idle, so that a block can hold a single point), keyed (point's seed, realization) exactly as a launch
// of that point alone. Each kernel then moves its table pointers (initial counts, rate and law
// constants) and output rows (firings, sums) to the point's (DS_POINT_TABLES: the generic and warp kernels).
#ifdef DS_BATCHED
#define DS_BATCH_ARGS , const int batch_rp, const int batch_rs, const uint32_t* __restrict__ batch_seeds, \
    const int batch_nlaw
#define DS_BATCH_POINT(r, R) const int batch_p = ((r) < (R) ? (r) : (R) - 1) / batch_rs; \
    const int batch_r = (r) - batch_p * batch_rs; const uint32_t batch_seed = batch_seeds[batch_p];
#define DS_LIVE(r, R) ((r) < (R) && batch_r < batch_rp)
#define DS_POINT_TABLES(S, M) x0 += (long long)batch_p * (S); theta += (long long)batch_p * (M); \
    law_arg += (long long)batch_p * batch_nlaw; firings += (long long)batch_p * (M);
#define DS_SEED batch_seed
#define DS_RID(real0, r) ((uint32_t)batch_r)
#else
#define DS_BATCH_ARGS
#define DS_BATCH_POINT(r, R)
#define DS_LIVE(r, R) ((r) < (R))
#define DS_POINT_TABLES(S, M)
#define DS_SEED seed
#define DS_RID(real0, r) ((uint32_t)((real0) + (unsigned long long)(r)))
#endif
