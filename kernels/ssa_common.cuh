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
