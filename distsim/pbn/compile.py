"""Compile a :class:`~distsim.models.pbn.PBN` into flat arrays shared by the CPU and GPU kernels.

Random-number layout (identical on every backend). Trajectory ``c`` of a run with seed ``s`` uses
the Philox key ``(s, c)``. Word ``k`` of step ``t`` (the transition from state t to t+1) is word
``k % 4`` of ``philox(counter=(k // 4, t mod 2**32, t >> 32, 0))``; the initial state uses
counter word 3 = 1. Within a step:

* word 0 decides perturbations (one uniform instead of n Bernoulli draws): with
  ``G[i] = 2**32 * (1 - (1-p)**(i+1))``, the step is a perturbation iff ``w0 < G[m-1]`` (m
  perturbable nodes), and then the first flipped node is the smallest ``i`` with ``w0 < G[i]``.
  Each further flip among the r nodes after the last one uses the next word ``w`` the same way
  (another flip iff ``w < G[r-1]``). This samples exactly seed 000 eq. (3)/(4) (independent flips
  with probability p, conditioned on "any flip") up to the 2**-32 resolution of the thresholds.
* otherwise (no perturbation):
  synchronous, independent PBN: words 1..M choose the function of each of the M nodes that have
  more than one (in node order): function f is the first with ``w < T[f]`` (cumulative
  probabilities times 2**32);
  synchronous, dependent PBN: word 1 chooses the context;
  asynchronous: word 1 chooses the node (``floor(w * n / 2**32)``), word 2 its function
  (independent) or the context (dependent) when there is a choice.

A network reduced to the ancestors ``keep`` of some nodes (SCC reduction, seed 000 section 4) is
compiled against the full network's layout: the initial bits, the word of each multi-function node,
the contexts, the perturbable entries (removed ones are phantoms, -1) and the asynchronous node draw
(over all n nodes; a removed node's turn leaves the kept nodes as they are) are those of the full
network, so the kept nodes follow exactly the trajectories they have in the unreduced simulation.

Boolean functions become one straight-line *bit program* over machine words (each bit a
trajectory): the CPU kernel interprets it over 64-bit words, the GPU kernel is generated from it
over 32-bit words. Truth tables (lowest-index parent = most significant bit, as in ASSA-PBN) are
packed 32 entries per word for functions with at most ``TT_MAX_PARENTS`` parents; larger
functions are evaluated through the program only.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..models.boolean import And, AtLeast, Const, Expr, Not, Or, Var, Xor, truth_table, variables
from ..models.pbn import PBN
from ..models.recent import Recent

TT_MAX_PARENTS = 16
U32 = 2**32

# bit-program opcodes: dst = a OP b
OP_AND, OP_OR, OP_XOR, OP_ANDN, OP_NOT = 0, 1, 2, 3, 4
OP_NAMES = {OP_AND: "&", OP_OR: "|", OP_XOR: "^", OP_ANDN: "&~", OP_NOT: "~"}


def threshold(prob: float) -> int:
    """A probability as a uint32 threshold: ``w < threshold(p)`` has probability p (to 2**-32)."""
    return int(min(U32 - 1, max(0, round(prob * U32))))


def perturbation_table(p: float, m: int) -> np.ndarray:
    """``G[i] = 2**32 * P(at least one flip among i+1 nodes)``, i < m, as uint32."""
    if p <= 0 or m == 0:
        return np.zeros(max(m, 1), dtype=np.uint32)
    lp = math.log1p(-p)
    return np.array([threshold(-math.expm1((i + 1) * lp)) for i in range(m)], dtype=np.uint32)


def cumulative_thresholds(probs: list[float]) -> list[int]:
    """Thresholds for choosing among options with these probabilities (all but the last matter)."""
    out, acc = [], 0.0
    for p in probs:
        acc += p
        out.append(threshold(acc))
    out[-1] = U32 - 1
    return out


# ----------------------------------------------------------------------------------------------
# bit program


class _ProgramBuilder:
    """Hash-consed straight-line program with constant folding. Registers 0..n-1 hold the node
    states, ``n`` is all-zeros and ``n+1`` all-ones; temporaries follow."""

    def __init__(self, n: int):
        self.n = n
        self.zero = n
        self.ones = n + 1
        self.n_regs = n + 2
        self.code: list[tuple[int, int, int, int]] = []
        self.cache: dict[tuple[int, int, int], int] = {}
        self.negation: dict[int, int] = {}  # reg -> reg holding its complement

    def _emit(self, op: int, a: int, b: int) -> int:
        key = (op, a, b)
        if key in self.cache:
            return self.cache[key]
        d = self.n_regs
        self.n_regs += 1
        self.code.append((op, d, a, b))
        self.cache[key] = d
        return d

    def not_(self, a: int) -> int:
        if a == self.zero:
            return self.ones
        if a == self.ones:
            return self.zero
        if a in self.negation:
            return self.negation[a]
        d = self._emit(OP_NOT, a, a)
        self.negation[d] = a
        self.negation[a] = d
        return d

    def and_(self, a: int, b: int) -> int:
        if a > b:
            a, b = b, a
        if a == self.zero or b == self.zero or self.negation.get(a) == b:
            return self.zero
        if a == self.ones or a == b:
            return b
        if b == self.ones:
            return a
        # a & ~x == ANDN(a, x): avoids materialising the complement
        if b in self.negation and self.code and self._is_not(b):
            return self._emit(OP_ANDN, a, self.negation[b])
        if a in self.negation and self._is_not(a):
            return self._emit(OP_ANDN, b, self.negation[a])
        return self._emit(OP_AND, a, b)

    def _is_not(self, r: int) -> bool:
        return r >= self.n + 2 and self.code[r - self.n - 2][0] == OP_NOT

    def or_(self, a: int, b: int) -> int:
        if a > b:
            a, b = b, a
        if a == self.ones or b == self.ones or self.negation.get(a) == b:
            return self.ones
        if a == self.zero or a == b:
            return b
        if b == self.zero:
            return a
        return self._emit(OP_OR, a, b)

    def xor(self, a: int, b: int) -> int:
        if a > b:
            a, b = b, a
        if a == b:
            return self.zero
        if a == self.zero:
            return b
        if b == self.zero:
            return a
        if a == self.ones:
            return self.not_(b)
        if b == self.ones:
            return self.not_(a)
        return self._emit(OP_XOR, a, b)

    def expr(self, root: Expr) -> int:
        """The register of ``root``'s value, emitted in the order of a recursive walk (an explicit stack:
        formulas of real models nest hundreds deep)."""
        ret = 0
        stack: list[list] = [[root, 0, None]]  # node, operands done, state (their registers; AtLeast: its table)
        while stack:
            fr = stack[-1]
            e, i, st = fr
            if isinstance(e, Var):
                ret = e.index
                stack.pop()
                continue
            if isinstance(e, Const):
                ret = self.ones if e.value else self.zero
                stack.pop()
                continue
            if not isinstance(e, (Not, And, Or, Xor, AtLeast)):
                raise TypeError(f"not an expression: {e!r}")
            kids = (e.arg,) if isinstance(e, Not) else e.args
            if i == 0:
                st = fr[2] = [self.ones] + [self.zero] * e.k if isinstance(e, AtLeast) else []
            elif isinstance(e, AtLeast):  # t[j] = "at least j of the arguments seen so far"
                for j in range(e.k, 0, -1):
                    st[j] = self.or_(st[j], self.and_(st[j - 1], ret))
            else:
                st.append(ret)
            if i < len(kids):
                fr[1] = i + 1
                stack.append([kids[i], 0, None])
                continue
            stack.pop()
            if isinstance(e, Not):
                ret = self.not_(st[0])
            elif isinstance(e, AtLeast):
                ret = st[e.k]
            else:
                op = {And: self.and_, Or: self.or_, Xor: self.xor}[type(e)]
                ret = st[0]
                for r in st[1:]:
                    ret = op(ret, r)
        return ret


@dataclass(frozen=True)
class Program:
    """Straight-line bit program: ``code[k] = (op, dst, a, b)``; function j's value ends in ``outputs[j]``."""

    n_nodes: int
    n_regs: int
    code: np.ndarray  # int32 [P, 4]
    outputs: np.ndarray  # int32 [n_functions]

    @property
    def size(self) -> int:
        return int(self.code.shape[0])


def compile_program(exprs: list[Expr], n: int) -> Program:
    b = _ProgramBuilder(n)
    outs = [b.expr(e) for e in exprs]
    # dead-code elimination, then renumber temporaries densely
    live = set(outs)
    keep = []
    for op, d, a, c in reversed(b.code):
        if d in live:
            keep.append((op, d, a, c))
            live.update((a, c))
    keep.reverse()
    rename = {r: r for r in range(n + 2)}
    code = []
    for op, d, a, c in keep:
        rename[d] = n + 2 + len(code)
        code.append((op, rename[d], rename[a], rename[c]))
    arr = np.array(code, dtype=np.int32).reshape(-1, 4)
    return Program(n, n + 2 + len(code), arr, np.array([rename[o] for o in outs], dtype=np.int32))


# ----------------------------------------------------------------------------------------------
# compiled network


@dataclass(frozen=True)
class CompiledPBN:
    """Flat arrays of a PBN for the kernels (see the module docstring for their meaning)."""

    n: int
    perturbation: float
    dependent: bool
    func_start: np.ndarray  # int32 [n+1]: node i owns functions func_start[i]:func_start[i+1]
    func_thresh: np.ndarray  # uint32 [F]: cumulative selection thresholds (per node)
    multi_nodes: np.ndarray  # int32 [M]: nodes with > 1 function, in node order (independent PBNs)
    ctx_thresh: np.ndarray  # uint32 [K]: cumulative context thresholds (dependent PBNs; else [1])
    ctx_func: np.ndarray  # int32 [K, n]: function (local index) of each node in each context
    n_pert: int  # m: perturbable entries (0 when p == 0)
    pert_nodes: np.ndarray  # int32 [max(m,1)]: perturbable nodes; -1 = a removed node (SCC reduction)
    multi_word: np.ndarray  # int32 [M]: the step word choosing each multi-function node's function (sync)
    draw_node: np.ndarray  # int32 [n_full]: async draw -> node updated (-1: a removed node, no update)
    init_index: np.ndarray  # int32 [n]: the full network's index of each node (initial-state bits)
    pert_G: np.ndarray  # uint32 [max(m,1)]
    program: Program
    # packed truth tables (functions with <= TT_MAX_PARENTS parents; others have tt_words == 0)
    par_start: np.ndarray  # int32 [F+1]
    par_index: np.ndarray  # int32 [sum of in-degrees]: parents sorted by index
    tt_start: np.ndarray  # int32 [F+1]: word offsets into tt
    tt: np.ndarray  # uint32
    digest: str

    @property
    def n_functions(self) -> int:
        return int(self.func_start[-1])

    @property
    def words_per_step(self) -> int:
        """Random words a non-perturbed step consumes (sync) / at most (async)."""
        return 1 + (1 if self.dependent else len(self.multi_nodes))


_RECENT: Recent[CompiledPBN] = Recent(8)


def compile_pbn(full: PBN, keep: Sequence[int] | None = None) -> CompiledPBN:
    """Compile ``full``, or its subnetwork on ``keep`` (closed under parents) with the random-number
    layout of ``full`` (see the module docstring). The last few compiled are remembered (PBNs are
    immutable; the arrays are read-only), so repeated runs of one model compile it once."""
    keep = list(range(full.n)) if keep is None else sorted(set(keep))
    hit = _RECENT.get(full, tuple(keep))
    return hit if hit is not None else _RECENT.put(full, tuple(keep), _compile_pbn(full, keep))


def _compile_pbn(full: PBN, keep: list[int]) -> CompiledPBN:
    net = full if len(keep) == full.n else full.subnetwork(keep)
    sim = {old: new for new, old in enumerate(keep)}
    n = net.n
    exprs, func_start, func_thresh = _functions(net)
    multi, multi_word = _multi_layout(full, sim)
    ctx_thresh, ctx_func = _contexts(full, keep)
    pert, pert_G = perturbation_layout(full, keep)
    par_start, par_index, tt_start, tt_words = _truth_tables(exprs)
    h = hashlib.sha256((full.digest() + f"|keep={keep}").encode()).hexdigest()
    return CompiledPBN(
        n=n,
        perturbation=net.perturbation,
        dependent=net.dependent,
        func_start=np.array(func_start, dtype=np.int32),
        func_thresh=np.array(func_thresh, dtype=np.uint32),
        multi_nodes=np.array(multi, dtype=np.int32),
        ctx_thresh=np.array(ctx_thresh, dtype=np.uint32),
        ctx_func=np.ascontiguousarray(ctx_func),
        n_pert=len(pert),
        pert_nodes=pert if len(pert) else np.array([-1], dtype=np.int32),
        pert_G=pert_G,
        multi_word=np.array(multi_word, dtype=np.int32),
        draw_node=np.array([sim.get(i, -1) for i in range(full.n)], dtype=np.int32),
        init_index=np.array(keep, dtype=np.int32),
        program=compile_program(exprs, n),
        par_start=np.array(par_start, dtype=np.int32),
        par_index=np.array(par_index, dtype=np.int32),
        tt_start=np.array(tt_start, dtype=np.int32),
        tt=np.array(tt_words if tt_words else [0], dtype=np.uint32),
        digest=h,
    )


def perturbation_layout(full: PBN, keep: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """The perturbable entries of ``full`` as simulated nodes of ``keep`` (-1: a removed node, a
    phantom) and their thresholds ``G`` (see the module docstring); none when p = 0."""
    sim = {old: new for new, old in enumerate(sorted(keep))}
    pert = [sim.get(i, -1) for i in full.perturbable()] if full.perturbation > 0 else []
    return np.array(pert, dtype=np.int32), perturbation_table(full.perturbation, len(pert))


def _functions(net: PBN) -> tuple[list[Expr], list[int], list[int]]:
    """Every node's predictor functions in node order, each node's first function, the selection thresholds."""
    exprs: list[Expr] = []
    func_start = [0]
    func_thresh: list[int] = []
    for plist in net.predictors:
        exprs.extend(p.expr for p in plist)
        func_thresh.extend(cumulative_thresholds([p.probability for p in plist]))
        func_start.append(len(exprs))
    return exprs, func_start, func_thresh


def _multi_layout(full: PBN, sim: dict[int, int]) -> tuple[list[int], list[int]]:
    """Kept multi-function nodes (independent PBNs) and the step word of each in the full network's layout."""
    if full.dependent:
        return [], []
    full_multi = [i for i in range(full.n) if len(full.predictors[i]) > 1]
    return [sim[i] for i in full_multi if i in sim], [1 + k for k, i in enumerate(full_multi) if i in sim]


def _contexts(full: PBN, keep: list[int]) -> tuple[list[int], np.ndarray]:
    """Context thresholds and each kept node's function in each context (dependent PBNs; else one context)."""
    if not full.dependent:
        return [U32 - 1], np.zeros((1, len(keep)), dtype=np.int32)
    ctx_thresh = cumulative_thresholds([p for _, p in full.contexts])
    ctx_func = np.array([[choice[o] for o in keep] for choice, _ in full.contexts], dtype=np.int32)
    return ctx_thresh, ctx_func.reshape(-1, len(keep))


def _truth_tables(exprs: list[Expr]) -> tuple[list[int], list[int], list[int], list[int]]:
    """Parents of each function and its packed truth table (functions with <= TT_MAX_PARENTS parents)."""
    par_start, par_index, tt_start, tt_words = [0], [], [0], []
    for e in exprs:
        parents = variables(e)
        par_index.extend(parents)
        par_start.append(len(par_index))
        if len(parents) <= TT_MAX_PARENTS:
            bits = truth_table(e, parents).astype(np.uint8)
            pad = (-len(bits)) % 32
            words = np.packbits(np.concatenate([bits, np.zeros(pad, np.uint8)]).reshape(-1, 32)[:, ::-1],
                                bitorder="big").view(">u4").astype(np.uint32)
            tt_words.extend(int(w) for w in words)
        tt_start.append(len(tt_words))
    return par_start, par_index, tt_start, tt_words
