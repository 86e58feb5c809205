"""Probabilistic Boolean networks (Shmulevich et al. 2002; seed 000, section 2.1).

A :class:`PBN` is immutable. Each node has one or more predictor functions with selection
probabilities (an *independent* PBN), or the network has a list of *contexts* -- one function per
node, chosen jointly with a context probability (a *dependent* PBN). ``perturbation`` is the
per-node flip probability p of seed 000 eq. (3)/(4); nodes in ``fixed`` are never perturbed
(ASSA-PBN's ``npNode``).
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Iterable, Mapping, Sequence

from ..errors import ModelError, did_you_mean
from .boolean import Const, Expr, Var, to_text, variables

PROB_TOL = 1e-6


@dataclass(frozen=True)
class Predictor:
    """One predictor function of a node and its selection probability."""

    expr: Expr
    probability: float = 1.0

    @property
    def parents(self) -> tuple[int, ...]:
        return variables(self.expr)


@dataclass(frozen=True)
class PBN:
    """An immutable PBN. Build one with :meth:`create` (which normalises probabilities) or a parser."""

    nodes: tuple[str, ...]
    predictors: tuple[tuple[Predictor, ...], ...]
    perturbation: float = 0.0
    fixed: frozenset[int] = frozenset()
    contexts: tuple[tuple[tuple[int, ...], float], ...] | None = None
    name: str = ""
    source: str = ""
    update: str | None = None  # the update scheme the file states ('sync', 'async', or its own word); None: unstated
    _index: dict = field(default=None, init=False, repr=False, compare=False, hash=False)  # type: ignore[assignment]
    _digest: str | None = field(default=None, init=False, repr=False, compare=False, hash=False)

    # ---- construction -----------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        nodes: Sequence[str],
        predictors: Sequence[Sequence[Predictor | tuple[Expr, float] | Expr]],
        *,
        perturbation: float = 0.0,
        fixed: Iterable[int | str] = (),
        contexts: Sequence[tuple[Sequence[int], float]] | None = None,
        name: str = "",
        source: str = "",
        normalise: bool = True,
        update: str | None = None,
    ) -> "PBN":
        """Validate and build; selection (or context) probabilities are normalised per node."""
        nodes = tuple(nodes)
        preds: list[tuple[Predictor, ...]] = []
        for i, plist in enumerate(predictors):
            row = []
            for p in plist:
                if isinstance(p, Predictor):
                    row.append(p)
                elif isinstance(p, Expr):
                    row.append(Predictor(p, 1.0))
                else:
                    row.append(Predictor(p[0], float(p[1])))
            if normalise and row:
                total = sum(p.probability for p in row)
                if total > 0:
                    row = [Predictor(p.expr, p.probability / total) for p in row]
            preds.append(tuple(row))
        index = {n: i for i, n in enumerate(nodes)}
        fixed_idx = set()
        for f in fixed:
            if isinstance(f, str):
                if f not in index:
                    raise ModelError(f"non-perturbable node {f!r} is not a node of the network", file=source or None)
                fixed_idx.add(index[f])
            else:
                fixed_idx.add(int(f))
        ctx = None
        if contexts is not None:
            ctx = [(tuple(int(c) for c in choice), float(prob)) for choice, prob in contexts]
            total = sum(p for _, p in ctx)
            if normalise and total > 0:
                ctx = [(c, p / total) for c, p in ctx]
            ctx = tuple(ctx)
        return cls(nodes, tuple(preds), float(perturbation), frozenset(fixed_idx), ctx, name, source, update)

    def __post_init__(self) -> None:
        src = self.source or None
        n = len(self.nodes)
        if n == 0:
            raise ModelError("a network needs at least one node", file=src)
        dup = sorted(x for x, c in Counter(self.nodes).items() if c > 1)
        if dup:
            raise ModelError(f"duplicate node names: {', '.join(dup)}", file=src)
        if len(self.predictors) != n:
            raise ModelError(f"{n} nodes but {len(self.predictors)} predictor lists", file=src)
        if not (0.0 <= self.perturbation < 1.0) or math.isnan(self.perturbation):
            raise ModelError(f"perturbation probability must be in [0, 1), got {self.perturbation}", file=src)
        for i, plist in enumerate(self.predictors):
            self._check_predictors(self.nodes[i], plist, src)
        for f in self.fixed:
            if not 0 <= f < n:
                raise ModelError(f"non-perturbable node index {f} out of range", file=src)
        if self.contexts is not None:
            self._check_contexts(src)
        object.__setattr__(self, "_index", {name: i for i, name in enumerate(self.nodes)})

    def _check_predictors(self, node: str, plist: tuple[Predictor, ...], src: str | None) -> None:
        if not plist:
            raise ModelError(f"node {node!r} has no predictor function", file=src)
        for p in plist:
            if not (p.probability > 0) or math.isinf(p.probability):
                raise ModelError(f"node {node!r}: selection probabilities must be positive, got {p.probability}",
                                 file=src)
            bad = [v for v in p.parents if not 0 <= v < len(self.nodes)]
            if bad:
                raise ModelError(f"node {node!r}: function reads unknown node index {bad[0]}", file=src)
        total = sum(p.probability for p in plist)
        if self.contexts is None and abs(total - 1.0) > PROB_TOL:
            raise ModelError(f"node {node!r}: selection probabilities sum to {total}, not 1", file=src)

    def _check_contexts(self, src: str | None) -> None:
        n = len(self.nodes)
        if not self.contexts:
            raise ModelError("a dependent PBN needs at least one context", file=src)
        for choice, prob in self.contexts:
            if len(choice) != n:
                raise ModelError(f"a context must choose one function for each of the {n} nodes", file=src)
            for i, c in enumerate(choice):
                if not 0 <= c < len(self.predictors[i]):
                    raise ModelError(f"context chooses function {c} of node {self.nodes[i]!r}, which has "
                                     f"{len(self.predictors[i])}", file=src)
            if not prob > 0:
                raise ModelError(f"context probabilities must be positive, got {prob}", file=src)
        total = sum(p for _, p in self.contexts)
        if abs(total - 1.0) > PROB_TOL:
            raise ModelError(f"context probabilities sum to {total}, not 1", file=src)

    # ---- queries ----------------------------------------------------------------------------

    @property
    def n(self) -> int:
        return len(self.nodes)

    @property
    def dependent(self) -> bool:
        return self.contexts is not None

    @property
    def n_functions(self) -> int:
        return sum(len(p) for p in self.predictors)

    def index(self, node: str | int) -> int:
        """Index of a node given by name (or index)."""
        if isinstance(node, (int,)) and not isinstance(node, bool):
            if not 0 <= node < self.n:
                raise KeyError(f"node index {node} out of range")
            return node
        try:
            return self._index[node]
        except KeyError:
            raise KeyError(f"unknown node {node!r}{did_you_mean(node, self.nodes)}; nodes are: {', '.join(self.nodes[:20])}"
                           f"{' ...' if self.n > 20 else ''}") from None

    def parents(self, node: int | str) -> tuple[int, ...]:
        """Union of the parents of all predictor functions of ``node``."""
        i = self.index(node)
        return tuple(sorted({v for p in self.predictors[i] for v in p.parents}))

    def perturbable(self) -> tuple[int, ...]:
        return tuple(i for i in range(self.n) if i not in self.fixed)

    def density(self) -> float:
        """Seed 000's density: total number of parents over all functions, divided by n."""
        return sum(len(p.parents) for plist in self.predictors for p in plist) / self.n

    def with_perturbation(self, p: float) -> "PBN":
        return replace(self, perturbation=float(p))

    def with_selection(self, node: str | int, k: int, probability: float) -> "PBN":
        """Selection probability of predictor ``k`` of ``node`` set to ``probability``; the node's other
        predictors share the rest in their current proportions (independent PBNs only)."""
        if self.contexts is not None:
            raise ValueError("a dependent PBN chooses functions by context; its selection probabilities are the "
                             "context probabilities")
        i = self.index(node)
        row = self.predictors[i]
        if not 0 <= k < len(row):
            raise ValueError(f"node {self.nodes[i]!r} has {len(row)} predictor(s); predictor {k} does not exist")
        p = float(probability)
        if len(row) == 1:
            if p != 1.0:
                raise ValueError(f"node {self.nodes[i]!r} has one predictor; its selection probability is 1, not {p}")
            return self
        if not 0.0 < p < 1.0:
            raise ValueError(f"selection probability of a node with several predictors must be in (0, 1), got {p}")
        rest = sum(q.probability for j, q in enumerate(row) if j != k)
        new_row = tuple(Predictor(q.expr, p if j == k else q.probability * (1.0 - p) / rest) for j, q in enumerate(row))
        preds = self.predictors[:i] + (new_row,) + self.predictors[i + 1:]
        return replace(self, predictors=preds)

    def with_fixed(self, values: Mapping[str | int, int | bool]) -> "PBN":
        """Mutations and knockouts: each node in ``values`` gets the constant function 0 or 1 and is
        never perturbed (joins ``fixed``). ``{"TP53": 0, "MYC": 1}`` knocks TP53 out and MYC in."""
        if not isinstance(values, Mapping):
            raise TypeError(f"with_fixed takes a mapping {{node: 0 or 1}}, got {type(values).__name__}")
        unknown = [str(k) for k in values if not (isinstance(k, str) and k in self._index)
                   and not (isinstance(k, int) and not isinstance(k, bool) and 0 <= k < self.n)]
        if unknown:
            raise ValueError(f"cannot fix {', '.join(map(repr, unknown))}: not a node of {self.name or 'the network'}"
                             f"{did_you_mean(unknown[0], self.nodes)} (nodes: {', '.join(self.nodes[:20])}{' ...' if self.n > 20 else ''})")
        const: dict[int, bool] = {}
        for k, v in values.items():
            if isinstance(v, bool) or v in (0, 1):
                const[self.index(k)] = bool(v)
            else:
                raise ValueError(f"node {k!r} can be fixed to 0 or 1, not {v!r}")
        preds = tuple((Predictor(Const(const[i]), 1.0),) if i in const else row
                      for i, row in enumerate(self.predictors))
        ctx = self.contexts
        if ctx is not None:
            merged: dict[tuple[int, ...], float] = {}
            for choice, prob in ctx:
                c = tuple(0 if i in const else k for i, k in enumerate(choice))
                merged[c] = merged.get(c, 0.0) + prob
            ctx = tuple(merged.items())
        return replace(self, predictors=preds, fixed=self.fixed | frozenset(const), contexts=ctx)

    def digest(self) -> str:
        """SHA-256 of a canonical text form (names, functions, probabilities, p, fixed, contexts;
        computed once per PBN)."""
        if self._digest is None:
            object.__setattr__(self, "_digest", self._compute_digest())
        return self._digest

    def _compute_digest(self) -> str:
        h = hashlib.sha256()
        h.update(repr((self.nodes, self.perturbation, sorted(self.fixed))).encode())
        for plist in self.predictors:
            for p in plist:
                h.update(to_text(p.expr, self.nodes).encode())
                h.update(repr(float(p.probability)).encode())
            h.update(b";")
        if self.contexts is not None:
            h.update(repr(self.contexts).encode())
        return h.hexdigest()

    def summary(self) -> str:
        kind = "dependent PBN" if self.dependent else ("PBN" if self.n_functions > self.n else "Boolean network")
        maxdeg = max(len(p.parents) for plist in self.predictors for p in plist)
        return (f"{self.name or 'network'}: {kind}, {self.n} nodes, {self.n_functions} functions, "
                f"max in-degree {maxdeg}, p={self.perturbation:g}, {len(self.fixed)} non-perturbable")

    def __repr__(self) -> str:
        return f"PBN({self.summary()})"

    # ---- transformations --------------------------------------------------------------------

    def subnetwork(self, keep: Sequence[int]) -> "PBN":
        """The network restricted to ``keep`` (which must be closed under parents), renumbered in order."""
        keep = sorted(set(keep))
        mapping = {old: new for new, old in enumerate(keep)}
        preds = []
        for old in keep:
            row = []
            for p in self.predictors[old]:
                missing = [v for v in p.parents if v not in mapping]
                if missing:
                    raise ValueError(f"node {self.nodes[old]!r} reads {self.nodes[missing[0]]!r}, which is not kept")
                from .boolean import remap

                row.append(Predictor(remap(p.expr, mapping), p.probability))
            preds.append(tuple(row))
        ctx = None
        if self.contexts is not None:
            merged: dict[tuple[int, ...], float] = {}
            for choice, prob in self.contexts:
                sub = tuple(choice[o] for o in keep)
                merged[sub] = merged.get(sub, 0.0) + prob
            ctx = tuple(merged.items())
        return PBN(tuple(self.nodes[o] for o in keep), tuple(preds), self.perturbation,
                   frozenset(mapping[f] for f in self.fixed if f in mapping), ctx, self.name, self.source)

    def state_from_mapping(self, values: Mapping[str | int, int | bool]) -> dict[int, bool]:
        return {self.index(k): bool(v) for k, v in values.items()}


def identity(i: int) -> Predictor:
    """The predictor ``x_i(t+1) = x_i(t)`` (used for free inputs under the 'keep' policy)."""
    return Predictor(Var(i), 1.0)


def random_pbn(
    n: int,
    *,
    seed: int = 0,
    max_parents: int = 3,
    multi_fraction: float = 0.3,
    max_functions: int = 3,
    perturbation: float = 0.01,
    fixed_fraction: float = 0.0,
    contexts: int = 0,
    name: str = "random",
) -> PBN:
    """A random PBN (for tests and benchmarks): random AND/OR/NOT expressions over random parents.

    ``multi_fraction`` of the nodes get 2..``max_functions`` predictors; ``contexts`` > 0 makes a
    dependent PBN with that many random contexts.
    """
    import numpy as np

    from .boolean import And, Not, Or

    rng = np.random.default_rng(seed)
    preds = []
    for _ in range(n):
        nf = int(rng.integers(2, max_functions + 1)) if rng.random() < multi_fraction else 1
        row = []
        for _ in range(nf):
            k = int(rng.integers(1, min(max_parents, n) + 1))
            lits: list[Expr] = []
            for j in rng.choice(n, k, replace=False):
                v: Expr = Var(int(j))
                lits.append(Not(v) if rng.random() < 0.4 else v)
            e = lits[0]
            for lit in lits[1:]:
                e = And((e, lit)) if rng.random() < 0.5 else Or((e, lit))
            row.append(Predictor(e, float(rng.random() + 0.1)))
        preds.append(row)
    fixed = [i for i in range(n) if rng.random() < fixed_fraction]
    ctx = None
    if contexts:
        ctx = [(tuple(int(rng.integers(len(preds[i]))) for i in range(n)), float(rng.random() + 0.1))
               for _ in range(contexts)]
    return PBN.create([f"x{i}" for i in range(n)], preds, perturbation=perturbation, fixed=fixed, contexts=ctx,
                      name=name)
