// Shared by the SSA kernels: kinetic-law opcodes (distsim/models/arith.py), error codes, and the
// law functions with the same operation order as distsim/ssa/cpu.py.
#pragma once
#include "dsmath.cuh"

// kinetic-law opcodes (distsim/models/arith.py)
#define OP_PUSH_CONST 0
#define OP_PUSH_SPECIES 1
#define OP_ADD 2
#define OP_SUB 3
#define OP_MUL 4
#define OP_DIV 5
#define OP_POW 6
#define OP_NEG 7
#define OP_FUNC_BASE 16

#define ERR_NONE 0
#define ERR_PROPENSITY 1
#define ERR_MAX_EVENTS 2
#define ERR_NEGATIVE 3
#define ERR_OVERFLOW 4

__device__ __forceinline__ double ds_unary(int f, double v) {
    switch (f) {
        case 0: return ds_exp(v);
        case 1: return v > 0.0 ? ds_log(v) : (v == 0.0 ? -__longlong_as_double(0x7ff0000000000000LL) : __longlong_as_double(0x7ff8000000000000LL));
        case 2: return v > 0.0 ? ds_log(v) * 0.43429448190325176 : (v == 0.0 ? -__longlong_as_double(0x7ff0000000000000LL) : __longlong_as_double(0x7ff8000000000000LL));
        case 3: return v >= 0.0 ? sqrt(v) : __longlong_as_double(0x7ff8000000000000LL);
        case 4: return fabs(v);
        case 5: return floor(v);
        default: return ceil(v);
    }
}

__device__ __forceinline__ double ds_binary(int op, double a, double b) {
    if (op == OP_ADD) return a + b;
    if (op == OP_SUB) return a - b;
    if (op == OP_MUL) return a * b;
    if (op == OP_DIV) return a / b;
    if (op == OP_POW || op == OP_FUNC_BASE + 7) return ds_pow(a, b);
    if (op == OP_FUNC_BASE + 8) return a < b ? a : b;
    return a > b ? a : b;
}
