// Reaction kinetics shared by every SSA and MCMC kernel: the propensity of a reaction (mass action,
// kinetic-law interpreter) and the SSA's event draw. The CPU twins are distsim/models/kinetics.py,
// with the same operations in the same order (build with --fmad=false), so both give the same bits;
// the generated kernel (distsim/ssa/gpu.py) calls these same functions.
//
// Count and stack arrays are read through `x[i]` / `st[i]`: a pointer, or an accessor such as ds_col
// (one realization's entries of an array laid out [item * n + realization]).
#pragma once
#include "philox.cuh"
#include "dsmath.cuh"

// kinetic-law opcodes (distsim/models/arith.py) and reaction kinds (distsim/models/compile_reactions.py)
#define OP_PUSH_CONST 0
#define OP_PUSH_SPECIES 1
#define OP_ADD 2
#define OP_SUB 3
#define OP_MUL 4
#define OP_DIV 5
#define OP_POW 6
#define OP_NEG 7
#define OP_FUNC_BASE 16
#define KIND_MASS_ACTION 0

// entry i of one realization of an array laid out [i * n + realization] (coalesced across a warp)
template <class T> struct ds_col {
    T* p;
    unsigned long long n;
    __device__ __forceinline__ T& operator[](long long i) const { return p[(unsigned long long)i * n]; }
};

// C(xs, r) = xs (xs - 1) ... (xs - r + 1) / r!  (models/kinetics.py choose)
__device__ __forceinline__ double ds_choose(const double xs, const int r) {
    double h = xs;
    for (int m = 1; m < r; ++m) h = h * (xs - m) / (m + 1);
    return h;
}

// v h_d(x), one reactant at a time (v = theta_d: the propensity; v = 1: h_d)  (mass_action)
template <class X>
__device__ __forceinline__ double ds_mass_action(double v, const int d, const X& x, const int* __restrict__ rct_start,
                                                 const int* __restrict__ rct_species, const int* __restrict__ rct_stoich) {
    for (int q = rct_start[d]; q < rct_start[d + 1]; ++q) v = v * ds_choose((double)x[rct_species[q]], rct_stoich[q]);
    return v;
}

// kinetic-law function f of one argument (order of arith.FUNC_CODES)  (unary)
__device__ __forceinline__ double ds_unary(const int f, const double v) {
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

// binary operator or two-argument function (pow/min/max); a division by zero gives +-inf or NaN  (binary)
__device__ __forceinline__ double ds_binary(const int op, const double a, const double b) {
    if (op == OP_ADD) return a + b;
    if (op == OP_SUB) return a - b;
    if (op == OP_MUL) return a * b;
    if (op == OP_DIV) return a / b;
    if (op == OP_POW || op == OP_FUNC_BASE + 7) return ds_pow(a, b);
    if (op == OP_FUNC_BASE + 8) return a < b ? a : b;
    return a > b ? a : b;
}

// reaction d's kinetic law: its postfix program run on the stack st  (law)
template <class X, class Stack>
__device__ __forceinline__ double ds_law(const int d, const X& x, const int* __restrict__ law_start,
                                         const int* __restrict__ law_op, const double* __restrict__ law_arg, Stack& st) {
    int sp = 0;
    for (int pc = law_start[d]; pc < law_start[d + 1]; ++pc) {
        const int op = law_op[pc];
        if (op == OP_PUSH_CONST) { st[sp] = law_arg[pc]; ++sp; }
        else if (op == OP_PUSH_SPECIES) { st[sp] = (double)x[(int)law_arg[pc]]; ++sp; }
        else if (op == OP_NEG) { st[sp - 1] = -st[sp - 1]; }
        else if (op >= OP_FUNC_BASE && op - OP_FUNC_BASE <= 6) { st[sp - 1] = ds_unary(op - OP_FUNC_BASE, st[sp - 1]); }
        else { st[sp - 2] = ds_binary(op, st[sp - 2], st[sp - 1]); --sp; }
    }
    return st[0];
}

// the tables of a compiled network (distsim/models/kinetics.py ReactionArrays) that propensities read
struct ds_reactions {
    const signed char* kind; const double* theta;
    const int* rct_start; const int* rct_species; const int* rct_stoich;
    const int* law_start; const int* law_op; const double* law_arg;
};

// a_d(x)  (propensity)
template <class X, class Stack>
__device__ __forceinline__ double ds_propensity(const ds_reactions& N, const int d, const X& x, Stack& st) {
    if (N.kind[d] == KIND_MASS_ACTION) return ds_mass_action(N.theta[d], d, x, N.rct_start, N.rct_species, N.rct_stoich);
    return ds_law(d, x, N.law_start, N.law_op, N.law_arg, st);
}

// a propensity the SSA cannot use: negative, NaN or infinite  (bad_propensity)
__device__ __forceinline__ bool ds_bad_propensity(const double v) { return !(v >= 0.0) || isinf(v); }

// event e's uniforms of a realization: Philox counter (e lo, e hi, 0, 0), key (seed, rid)  (event_uniforms)
__device__ __forceinline__ void ds_event_uniforms(const unsigned long long e, const uint32_t seed, const uint32_t rid,
                                                  double& u1, double& u2) {
    const ds_u32x4 w = ds_philox4x32_10(ds_u32x4{(uint32_t)e, (uint32_t)(e >> 32), 0u, 0u}, seed, rid);
    u1 = ds_u01_f64(w.x, w.y);
    u2 = ds_u01_f64(w.z, w.w);
}

// tau = -log(u1) / a0, exponential with rate a0 > 0; logtab from ds_neglog_load  (waiting_time)
__device__ __forceinline__ double ds_waiting_time(const double u1, const double a0, const double2* __restrict__ logtab) {
    return ds_neglog_u01(u1, logtab) / a0;
}
