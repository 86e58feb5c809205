"""Compile a :class:`~distsim.models.reactions.ReactionNetwork` into flat arrays for the SSA kernels.

Random-number layout (identical on every backend): realization ``r`` of a run with seed ``s``
uses the Philox key ``(s, r)``; event ``e`` (0, 1, 2, ...) uses the block at counter
``(e mod 2**32, e >> 32, 0, 0)``: words 0-1 give u1 for the waiting time tau = -log(u1) / a0
and words 2-3 give u2 for the choice of reaction (the first j whose cumulative propensity exceeds
u2 * a0). Both uniforms are doubles in (0, 1) built exactly from the words, and ``log`` is
distsim's own (identical on CPU and GPU), so the backends produce the same realizations. With SBML
events that compare ``time``, e counts draws, firings plus stops (:mod:`distsim.models.compile_events`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from typing import Mapping, Sequence

import numpy as np

from ..errors import did_you_mean
from .arith import compile_stack
from .compile_events import CompiledEvents, compile_events, parameter_slots, rule_dependents
from .reactions import ReactionNetwork
from .recent import Recent

KIND_MASS_ACTION, KIND_LAW = 0, 1


@dataclass(frozen=True)
class CompiledNetwork:
    n_species: int
    n_reactions: int
    x0: np.ndarray  # int64 [S]
    theta: np.ndarray  # float64 [M] (mass action)
    kind: np.ndarray  # int8 [M]
    rct_start: np.ndarray  # int32 [M+1]: reactant (species, stoichiometry) entries of reaction j
    rct_species: np.ndarray
    rct_stoich: np.ndarray
    chg_start: np.ndarray  # int32 [M+1]: net changes (species, delta) of reaction j (fixed species excluded)
    chg_species: np.ndarray
    chg_delta: np.ndarray
    law_start: np.ndarray  # int32 [M+1]: postfix program of reaction j's kinetic law
    law_op: np.ndarray  # int32
    law_arg: np.ndarray  # float64
    max_stack: int
    dep_start: np.ndarray  # int32 [M+1]: reactions whose propensity changes when j fires
    dep_list: np.ndarray
    digest: str
    events: CompiledEvents | None = None  # SBML events and assignment rules (None: the network has none)

    @property
    def mass_action_only(self) -> bool:
        return bool(np.all(self.kind == KIND_MASS_ACTION))


_RECENT: Recent[CompiledNetwork] = Recent(4)


def compile_network(net: ReactionNetwork, x0: np.ndarray | None = None) -> CompiledNetwork:
    """Flat arrays of ``net`` (``x0`` overrides the initial counts); a network with SBML events or
    assignment rules also gets its :class:`CompiledEvents` and the rules' dependencies. The last few
    networks compiled without ``x0`` are remembered (networks are immutable; the arrays are read-only),
    so repeated runs of one large network compile it once."""
    if x0 is None:
        hit = _RECENT.get(net)
        return hit if hit is not None else _RECENT.put(net, (), _compile(net, None))
    c = _compile(net, x0)
    for v in vars(c).values():
        if isinstance(v, np.ndarray):
            v.setflags(write=False)
    return c


def _compile(net: ReactionNetwork, x0: np.ndarray | None) -> CompiledNetwork:
    S, M = net.n_species, net.n_reactions
    params = net.params
    theta = np.zeros(M)
    kind = np.zeros(M, dtype=np.int8)
    rs, rsp, rst = [0], [], []
    cs, csp, cd = [0], [], []
    ls, lop, larg = [0], [], []
    max_stack = 1
    changes = net.net_changes()
    for j, r in enumerate(net.reactions):
        if r.law is None:
            theta[j] = net.theta(j)
            kind[j] = KIND_MASS_ACTION
        else:
            kind[j] = KIND_LAW
            prog, depth = compile_stack(r.law, params)
            max_stack = max(max_stack, depth)
            for op, arg in prog:
                lop.append(op)
                larg.append(arg)
        ls.append(len(lop))
        merged: dict[int, int] = {}
        for i, s in r.reactants:
            merged[i] = merged.get(i, 0) + s
        for i in sorted(merged):
            rsp.append(i)
            rst.append(merged[i])
        rs.append(len(rsp))
        for i, dlt in changes[j]:
            csp.append(i)
            cd.append(dlt)
        cs.append(len(csp))
    # dependency graph: j -> reactions reading a species that j changes
    readers: dict[int, list[int]] = {}
    for k, r in enumerate(net.reactions):
        for i in r.reads():
            readers.setdefault(i, []).append(k)
    ds, dl = [0], []
    for j in range(M):
        deps = sorted({k for i, _ in changes[j] for k in readers.get(i, [])})
        dl.extend(deps)
        ds.append(len(dl))
    x0 = np.asarray(net.initial if x0 is None else x0, dtype=np.int64)
    i32 = lambda a: np.asarray(a, dtype=np.int32)  # noqa: E731
    c = CompiledNetwork(
        n_species=S, n_reactions=M, x0=x0, theta=theta, kind=kind,
        rct_start=i32(rs), rct_species=i32(rsp), rct_stoich=i32(rst),
        chg_start=i32(cs), chg_species=i32(csp), chg_delta=i32(cd),
        law_start=i32(ls), law_op=i32(lop if lop else [0]), law_arg=np.asarray(larg if larg else [0.0]),
        max_stack=max_stack, dep_start=i32(ds), dep_list=i32(dl if dl else [0]),
        digest=hashlib.sha256((net.digest() + repr(x0.tolist())).encode()).hexdigest(),
    )
    return _with_events(net, c, changes) if net.has_hooks else c


def _with_events(net: ReactionNetwork, c: CompiledNetwork, changes: list) -> CompiledNetwork:
    """``c`` with its events and rules compiled and the rules' dependents added to the graph."""
    extra = rule_dependents(net, changes)
    ds, dl = [0], []
    for j in range(c.n_reactions):
        dl.extend(sorted(set(c.dep_list[c.dep_start[j]:c.dep_start[j + 1]].tolist()) | extra[j]))
        ds.append(len(dl))
    return replace(c, dep_start=np.asarray(ds, np.int32), dep_list=np.asarray(dl if dl else [0], np.int32),
                   events=compile_events(net, c.law_start))


VALUE_FIELDS = ("x0", "theta", "law_arg")  # the arrays a point's parameters and initial counts change


def structure_digest(c: CompiledNetwork) -> str:
    """SHA-256 of a compiled network without its values (initial counts, rate constants, law
    constants): networks that differ only in those share it (and a batched kernel)."""
    h = hashlib.sha256()
    for name in ("kind", "rct_start", "rct_species", "rct_stoich", "chg_start", "chg_species", "chg_delta",
                 "law_start", "law_op", "dep_start", "dep_list"):
        a = np.ascontiguousarray(getattr(c, name))
        h.update(f"{name}:{a.dtype.str}:{a.shape}".encode())
        h.update(a.tobytes())
    h.update(repr((c.n_species, c.n_reactions, c.max_stack)).encode())
    return h.hexdigest()


@dataclass(frozen=True)
class PointTables:
    """The value arrays of one network at P parameter points (row p: point p), the rest of the
    compiled network being shared."""

    x0: np.ndarray  # int64 [P, S]
    theta: np.ndarray  # float64 [P, M]
    law_arg: np.ndarray  # float64 [P, L]

    @property
    def n_points(self) -> int:
        return self.x0.shape[0]


def _columns(rows: Sequence[Mapping[str, float]], kind: type) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per name, the rows that set it and their values (``kind``: float or int), in one pass (column
    by column when every row sets the same names to Python numbers of that kind)."""
    if rows and all(r.keys() == rows[0].keys() for r in rows):
        fast = {k: [r[k] for r in rows] for k in rows[0]}
        if all(set(map(type, v)) <= ({float, int} if kind is float else {int}) for v in fast.values()):
            every = np.arange(len(rows), dtype=np.intp)
            dtype = np.float64 if kind is float else np.int64
            return {k: (every, np.asarray(v, dtype)) for k, v in sorted(fast.items())}
    cols: dict[str, tuple[list[int], list]] = {}
    for p, row in enumerate(rows):
        for name, v in row.items():
            col = cols.setdefault(name, ([], []))
            col[0].append(p)
            col[1].append(kind(v))
    dtype = np.float64 if kind is float else np.int64
    return {k: (np.asarray(r, np.intp), np.asarray(v, dtype)) for k, (r, v) in sorted(cols.items())}


def point_tables(net: ReactionNetwork, c: CompiledNetwork, params: Sequence[Mapping[str, float]],
                 initial: Sequence[Mapping[str, int]]) -> PointTables:
    """Per point p, the value arrays that ``compile_network(net.with_parameters(**params[p])
    .with_initial(**initial[p]))`` gives (``c``: ``compile_network(net)``), bit for bit, without
    compiling each point: a parameter's value is float(value) wherever compile_network folds it."""
    if len(params) != len(initial):
        raise ValueError(f"{len(params)} parameter sets but {len(initial)} initial-count sets")
    theta_at, law_at = parameter_slots(net, c.law_start)
    known = net.params
    P = len(params)
    x0 = np.repeat(np.asarray(c.x0, np.int64)[None, :], P, axis=0)
    theta = np.repeat(np.asarray(c.theta, np.float64)[None, :], P, axis=0)
    law_arg = np.repeat(np.asarray(c.law_arg, np.float64)[None, :], P, axis=0)
    for name, (rows, vals) in _columns(params, float).items():
        if name not in known:
            raise KeyError(f"unknown parameter {name!r}{did_you_mean(name, known)}; parameters are {', '.join(known)}")
        theta[np.ix_(rows, np.asarray(theta_at.get(name, []), np.intp))] = vals[:, None]
        law_arg[np.ix_(rows, np.asarray(law_at.get(name, []), np.intp))] = vals[:, None]
    for name, (rows, vals) in _columns(initial, int).items():
        x0[rows, net.index(name)] = vals
    return PointTables(x0, theta, law_arg)
