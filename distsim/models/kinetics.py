"""Reaction kinetics for every CPU kernel (Numba): propensities and the SSA's event draw.

The CUDA twins are in ``kernels/kinetics.cuh``, with the same operations in the same order (the GPU
builds use ``--fmad=false``), so both backends compute the same bits; the generated CUDA kernel of
:mod:`distsim.ssa.gpu` emits calls to those same device functions. A reaction's propensity is
theta_j h_j(x) for mass action (h_j = prod_i C(x_i, r_ij), multiplied into theta factor by factor)
or its kinetic law, a postfix program (:func:`distsim.models.arith.compile_stack`).

Numba kernels receive a compiled network as one :class:`ReactionArrays` (a namedtuple of arrays) and
unpack it once, on entry. The propensity of reaction d is ``mass_action(theta[d], ...)`` or ``law(...)``
by its kind (``ds_propensity`` on the GPU); CPU loops make that choice themselves: a helper taking the
tables, or reading a tuple's arrays inside a loop, costs reference counts (1.8x and 2.4x slower on
Michaelis-Menten, measured).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np

from ..backends.dsmath import ds_exp, ds_log, ds_pow, neglog_u01
from ..rng.philox import philox4x32_10, u01_f64
from . import arith
from .compile_reactions import CompiledNetwork

INV_LN10 = 0.43429448190325176
M32 = np.uint64(0xFFFFFFFF)


class ReactionArrays(NamedTuple):
    """The arrays of a :class:`~distsim.models.compile_reactions.CompiledNetwork`, one Numba argument."""

    x0: np.ndarray
    kind: np.ndarray
    theta: np.ndarray
    rct_start: np.ndarray
    rct_species: np.ndarray
    rct_stoich: np.ndarray
    chg_start: np.ndarray
    chg_species: np.ndarray
    chg_delta: np.ndarray
    law_start: np.ndarray
    law_op: np.ndarray
    law_arg: np.ndarray
    dep_start: np.ndarray
    dep_list: np.ndarray


def reaction_arrays(c: CompiledNetwork) -> ReactionArrays:
    return ReactionArrays(*(getattr(c, name) for name in ReactionArrays._fields))


@numba.njit(inline="always", cache=True)
def choose(xs, r):
    """C(xs, r) = xs (xs - 1) ... (xs - r + 1) / r! as the kernels compute it (ds_choose)."""
    h = xs
    for m in range(1, r):
        h = h * (xs - m) / (m + 1)
    return h


@numba.njit(inline="always", cache=True)
def mass_action(v, d, x, rct_start, rct_species, rct_stoich):
    """v h_d(x), multiplied in one reactant at a time (v = theta_d: the propensity; v = 1: h_d)."""
    for q in range(rct_start[d], rct_start[d + 1]):
        v = v * choose(float(x[rct_species[q]]), rct_stoich[q])
    return v


@numba.njit(inline="always", cache=True)
def unary(f, v):
    """Kinetic-law function f (order of arith.FUNC_CODES) of one argument."""
    if f == 0:
        return ds_exp(v)
    if f == 1:
        return ds_log(v) if v > 0.0 else (-math.inf if v == 0.0 else math.nan)
    if f == 2:
        return ds_log(v) * INV_LN10 if v > 0.0 else (-math.inf if v == 0.0 else math.nan)
    if f == 3:
        return math.sqrt(v) if v >= 0.0 else math.nan
    if f == 4:
        return abs(v)
    if f == 5:
        return math.floor(v)
    return math.ceil(v)


@numba.njit(inline="always", cache=True)
def binary(op, a, b):
    """Binary arithmetic op or two-argument function (pow/min/max) of a kinetic law. Division by
    zero gives +-inf or NaN (IEEE), never an exception: callers compile with error_model='numpy'."""
    if op == arith.OP_ADD:
        return a + b
    if op == arith.OP_SUB:
        return a - b
    if op == arith.OP_MUL:
        return a * b
    if op == arith.OP_DIV:
        return a / b
    if op == arith.OP_POW or op == arith.OP_FUNC_BASE + 7:
        return ds_pow(a, b)
    if op == arith.OP_FUNC_BASE + 8:
        return a if a < b else b
    return a if a > b else b


@numba.njit(inline="always", cache=True)
def law(d, x, law_start, law_op, law_arg, stack):
    """Reaction d's kinetic law: its postfix program run on ``stack``."""
    sp = 0
    for pc in range(law_start[d], law_start[d + 1]):
        op = law_op[pc]
        if op == arith.OP_PUSH_CONST:
            stack[sp] = law_arg[pc]
            sp += 1
        elif op == arith.OP_PUSH_SPECIES:
            stack[sp] = float(x[int(law_arg[pc])])
            sp += 1
        elif op == arith.OP_NEG:
            stack[sp - 1] = -stack[sp - 1]
        elif op >= arith.OP_FUNC_BASE and op - arith.OP_FUNC_BASE <= 6:
            stack[sp - 1] = unary(op - arith.OP_FUNC_BASE, stack[sp - 1])
        else:
            stack[sp - 2] = binary(op, stack[sp - 2], stack[sp - 1])
            sp -= 1
    return stack[0]


@numba.njit(inline="always", cache=True)
def bad_propensity(v):
    """A propensity the SSA cannot use: negative, NaN or infinite."""
    return not (v >= 0.0) or math.isinf(v)


@numba.njit(inline="always", cache=True)
def event_uniforms(e, seed, rid):
    """Event e's uniforms (u1, u2) of realization rid: Philox counter (e lo, e hi, 0, 0), key (seed, rid)."""
    w0, w1, w2, w3 = philox4x32_10(e & M32, e >> np.uint64(32), 0, 0, seed, rid)
    return u01_f64(w0, w1), u01_f64(w2, w3)


@numba.njit(inline="always", cache=True)
def waiting_time(u1, a0):
    """tau = -log(u1) / a0, exponential with rate a0 (a0 > 0)."""
    return neglog_u01(u1) / a0
