"""Reaction networks for exact stochastic simulation (Gillespie 1977; seed 003, section 2 notation).

Reaction j fires with propensity a_j(x) = theta_j h_j(x). For **mass action**, h_j is the number
of distinct reactant combinations, h_j(x) = prod_i C(x_i, r_ij) (so 2A -> ... has h = x(x-1)/2),
and theta_j is the *stochastic* rate constant, given by a parameter name or a number. A
**general kinetic law** gives a_j(x) directly as an arithmetic expression of species counts and
parameters (a parsed tree, never Python code). Species in ``fixed`` (SBML boundary or constant
species) keep their count: reactions read them but do not change them.

``metadata`` holds (name, text) pairs that describe how a file was read -- the SBML reader records
the molecules per substance unit (``system_size``), where it came from, and any rounding of
amounts to whole molecules -- and :func:`distsim.ssa.simulate` copies them into its result's attrs.

A network may also carry SBML **events** (``events``) and **assignment rules** (``rules``); see
:mod:`distsim.models.events` for their layout and semantics. The SSA simulates them exactly; rate
inference (MCMC) refuses such networks (:meth:`ReactionNetwork.require_plain`).

Networks come from files (:func:`distsim.ssa.load`), from memory (SBML and antimony strings,
GillesPy2 models: :mod:`distsim.models.sources`) or from code (:class:`distsim.models.builder.Builder`).
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Iterable, Mapping, Sequence

import numpy as np

from ..errors import ModelError, did_you_mean
from .arith import Node, evaluate, has_logic, params_of, species_of, to_text
from .events import AssignmentRule, Event, RateRule, condition_nodes, condition_text, has_time, has_trig, reads

MAX_COUNT = 2**53  # species counts: exact in float64 propensity arithmetic
MAX_STOICHIOMETRY = 1000  # reactant molecules of a mass-action reaction (its propensity's falling factorial)
# molecules of one species consumed or produced by one firing (a general law's reaction): net changes are
# int32 in every kernel (compile_reactions' chg_delta, the GPU's register and warp kernels, which add them to
# int32 counts with the overflow detected), so every whole stoichiometry up to 2**31 - 1 is exact
MAX_CHANGE = 2**31 - 1


@dataclass(frozen=True)
class Reaction:
    """One reaction: reactants and products as (species index, stoichiometry) pairs."""

    reactants: tuple[tuple[int, int], ...]
    products: tuple[tuple[int, int], ...]
    rate: str | float = 1.0  # mass action: stochastic rate constant (parameter name or number)
    law: Node | None = None  # general kinetic law: the propensity itself (then ``rate`` is unused)
    name: str = ""

    @property
    def mass_action(self) -> bool:
        return self.law is None

    def reads(self) -> tuple[int, ...]:
        """Species whose counts the propensity depends on."""
        if self.law is not None:
            return species_of(self.law)
        return tuple(sorted({i for i, _ in self.reactants}))


@dataclass(frozen=True)
class ReactionNetwork:
    """An immutable reaction network with initial counts and parameter values."""

    species: tuple[str, ...]
    initial: tuple[int, ...]
    reactions: tuple[Reaction, ...]
    parameters: tuple[tuple[str, float], ...] = ()
    fixed: frozenset[int] = frozenset()
    name: str = ""
    source: str = ""
    events: tuple[Event, ...] = ()
    rules: tuple[AssignmentRule, ...] = ()
    rate_rules: tuple[RateRule, ...] = ()  # continuous parameters (the SSA's hybrid loop)
    metadata: tuple[tuple[str, str], ...] = ()  # how the model was read (not part of the digest)
    _params: dict = field(default=None, init=False, repr=False, compare=False, hash=False)  # type: ignore[assignment]
    _digest: str | None = field(default=None, init=False, repr=False, compare=False, hash=False)

    @classmethod
    def create(cls, species: Sequence[str], initial: Sequence[int] | Mapping[str, int],
               reactions: Sequence[Reaction], parameters: Mapping[str, float] | None = None, *,
               fixed: Iterable[int | str] = (), name: str = "", source: str = "",
               events: Sequence[Event] = (), rules: Sequence[AssignmentRule] = (),
               rate_rules: Sequence[RateRule] = (), metadata: Mapping[str, str] | None = None
               ) -> "ReactionNetwork":
        species = tuple(species)
        if isinstance(initial, Mapping):
            unknown = [k for k in initial if k not in species]
            if unknown:
                raise ModelError(f"initial count given for unknown species {unknown[0]!r}", file=source or None)
            initial = [int(initial.get(s, 0)) for s in species]
        fx = {species.index(f) if isinstance(f, str) else int(f) for f in fixed}
        params = tuple((str(k), float(v)) for k, v in (parameters or {}).items())
        return cls(species, tuple(int(x) for x in initial), tuple(reactions), params, frozenset(fx), name, source,
                   tuple(events), tuple(rules), tuple(rate_rules),
                   tuple((str(k), str(v)) for k, v in (metadata or {}).items()))

    def __post_init__(self) -> None:
        src = self.source or None
        n = len(self.species)
        if n == 0 and not self.rate_rules:  # (rate rules alone: a deterministic ODE model, distsim.models.events)
            raise ModelError("a reaction network needs at least one species", file=src)
        dup = sorted(s for s, c in Counter(self.species).items() if c > 1)
        if dup:
            raise ModelError(f"duplicate species: {', '.join(dup)}", file=src)
        if len(self.initial) != n:
            raise ModelError(f"{n} species but {len(self.initial)} initial counts", file=src)
        for s, x in zip(self.species, self.initial):
            if not 0 <= x <= MAX_COUNT:
                raise ModelError(f"initial count of {s!r} must be in [0, 2**53], got {x}", file=src)
        params = dict(self.parameters)
        for k, v in params.items():
            if not math.isfinite(v):
                raise ModelError(f"parameter {k!r} is not finite ({v})", file=src)
        object.__setattr__(self, "_params", params)
        if not self.reactions and not self.rate_rules:
            raise ModelError("a reaction network needs at least one reaction", file=src)
        for j, r in enumerate(self.reactions):
            _check_reaction(r, r.name or f"reaction {j + 1}", n, params, src)
        for f in self.fixed:
            if not 0 <= f < n:
                raise ModelError(f"fixed species index {f} out of range", file=src)
        self._check_events_and_rules(params)

    def _check_events_and_rules(self, params: dict[str, float]) -> None:
        src = self.source or None
        n = len(self.species)
        targets = [(f"event {e.id!r}", a) for e in self.events for a in e.assignments]
        targets += [(f"rule {r.id!r}", r) for r in self.rules]
        targets += [(f"rate rule {r.id!r}", r) for r in self.rate_rules]
        ruled = [r.target for r in self.rate_rules]
        for r in self.rate_rules:
            if r.species >= 0:
                raise ModelError(f"rate rule {r.id!r}: {r.target!r} is a species; distsim integrates rate rules for "
                                 "parameters only (make it a parameter)", file=src)
            if ruled.count(r.target) > 1 or r.target in {a.target for a in self.rules}:
                raise ModelError(f"rate rule {r.id!r}: {r.target!r} has another rule", file=src)
        for label, a in targets:
            if a.species >= 0:
                if a.species >= n or self.species[a.species] != a.target:
                    raise ModelError(f"{label}: species index {a.species} does not match target {a.target!r}",
                                     file=src)
            elif a.target not in params:
                raise ModelError(f"{label}: assigns unknown parameter {a.target!r}", file=src)
        exprs = [a.expr for _, a in targets]  # (rate rules included)
        for e in self.events:
            exprs.extend(condition_nodes(e.trigger))
            if e.priority is not None:
                exprs.append(e.priority)
            if e.delay is not None:
                exprs.append(e.delay)
        sp, pa = reads(exprs)
        bad = sorted(i for i in sp if not 0 <= i < n)
        if bad:
            raise ModelError(f"an event or rule reads unknown species index {bad[0]}", file=src)
        missing = sorted(p for p in pa if p not in params)
        if missing:
            raise ModelError(f"an event or rule uses unknown parameter {missing[0]!r}", file=src)

    # ---- queries ---------------------------------------------------------------------------------

    @property
    def n_species(self) -> int:
        return len(self.species)

    @property
    def n_reactions(self) -> int:
        return len(self.reactions)

    @property
    def params(self) -> dict[str, float]:
        return dict(self._params)

    def index(self, species: str | int) -> int:
        if isinstance(species, (int, np.integer)):
            return int(species)
        try:
            return self.species.index(species)
        except ValueError:
            raise KeyError(f"unknown species {species!r}{did_you_mean(species, self.species)}; species are "
                           f"{', '.join(self.species[:20])}{' ...' if len(self.species) > 20 else ''}") from None

    def theta(self, j: int) -> float:
        """Stochastic rate constant of mass-action reaction j."""
        r = self.reactions[j]
        return float(self._params[r.rate]) if isinstance(r.rate, str) else float(r.rate)

    def net_changes(self) -> list[tuple[tuple[int, int], ...]]:
        """Sparse net changes: per reaction the sorted (species, delta != 0) pairs; fixed species
        excluded (the sparse form of :meth:`stoichiometry`, O(size) for large networks)."""
        fixed = set(self.fixed)
        out = []
        for r in self.reactions:
            d: dict[int, int] = {}
            for i, s in r.reactants:
                d[i] = d.get(i, 0) - s
            for i, s in r.products:
                d[i] = d.get(i, 0) + s
            out.append(tuple((i, v) for i, v in sorted(d.items()) if v != 0 and i not in fixed))
        return out

    def stoichiometry(self) -> np.ndarray:
        """Net change matrix [n_reactions, n_species]; fixed species have 0 change."""
        V = np.zeros((self.n_reactions, self.n_species), dtype=np.int64)
        for j, changes in enumerate(self.net_changes()):
            for i, d in changes:
                V[j, i] = d
        return V

    def propensities(self, x: np.ndarray) -> np.ndarray:
        """a_j(x) for counts ``x[..., n_species]`` (reference implementation; vectorised)."""
        x = np.asarray(x, dtype=np.float64)
        out = []
        for j, r in enumerate(self.reactions):
            if r.law is not None:
                a = evaluate(r.law, x, self._params)
            else:
                a = np.full(x.shape[:-1], self.theta(j))
                for i, s in r.reactants:
                    a = a * _binom(x[..., i], s)
            out.append(a)
        return np.stack(out, axis=-1)

    def with_parameters(self, **values: float) -> "ReactionNetwork":
        unknown = [k for k in values if k not in self._params]
        if unknown:
            raise KeyError(f"unknown parameter {unknown[0]!r}{did_you_mean(unknown[0], self._params)}; parameters are "
                           f"{', '.join(self._params)}")
        params = dict(self._params)
        params.update({k: float(v) for k, v in values.items()})
        return replace(self, parameters=tuple(params.items()))

    def check_parameters(self, **values: float) -> None:
        """Raise what :meth:`with_parameters` would raise for these values (unknown or non-finite
        parameters, negative mass-action rates), checking only the reactions that use them."""
        unknown = [k for k in values if k not in self._params]
        if unknown:
            raise KeyError(f"unknown parameter {unknown[0]!r}{did_you_mean(unknown[0], self._params)}; parameters are "
                           f"{', '.join(self._params)}")
        params = dict(self._params)
        params.update({k: float(v) for k, v in values.items()})
        src = self.source or None
        for k in values:
            if not math.isfinite(params[k]):
                raise ModelError(f"parameter {k!r} is not finite ({params[k]})", file=src)
        for j in sorted({j for k in values for j in self._users.get(k, ())}):
            r = self.reactions[j]
            _check_reaction(r, r.name or f"reaction {j + 1}", len(self.species), params, src)

    @cached_property
    def _users(self) -> dict[str, tuple[int, ...]]:
        """The reactions whose rate or kinetic law uses each parameter."""
        out: dict[str, list[int]] = {}
        for j, r in enumerate(self.reactions):
            for name in ((r.rate,) if isinstance(r.rate, str) and r.law is None else ()) + \
                    (tuple(params_of(r.law)) if r.law is not None else ()):
                out.setdefault(name, []).append(j)
        return {k: tuple(v) for k, v in out.items()}

    def with_initial(self, **counts: int) -> "ReactionNetwork":
        init = list(self.initial)
        for k, v in counts.items():
            init[self.index(k)] = int(v)
        return replace(self, initial=tuple(init))

    @property
    def hybrid(self) -> bool:
        """Whether propensities change between firings (``time``, sin/cos or piecewise in a law, rate rules, or an
        assignment rule reading ``time``): the SSA's hybrid loop (:func:`distsim.ssa.cpu.run_realization_hybrid`)
        simulates it."""
        return bool(self.rate_rules) or any(has_time(r.expr) for r in self.rules) or any(
            r.law is not None and (has_time(r.law) or has_trig(r.law) or has_logic(r.law)) for r in self.reactions)

    @property
    def has_hooks(self) -> bool:
        """Whether the SSA needs its loop with hooks: events, assignment rules, or :attr:`hybrid`."""
        return bool(self.events or self.rules) or self.hybrid

    def require_plain(self, what: str) -> None:
        """Raise :class:`ModelError` naming the events and rules if the network has any (``what``
        cannot use them: rate inference, the reaction text format)."""
        if self.hybrid:
            raise ModelError(f"{what} does not support time-dependent propensities or rate rules yet (the network "
                             "has kinetic laws reading time or sin/cos, or rate rules)", file=self.source or None)
        if not (self.events or self.rules):
            return
        parts = []
        if self.events:
            parts.append("events " + ", ".join(repr(e.id) for e in self.events))
        if self.rules:
            parts.append("assignment rules " + ", ".join(f"{r.id!r} (for {r.target!r})" for r in self.rules))
        raise ModelError(f"{what} does not support SBML events or assignment rules yet; the model has "
                         f"{' and '.join(parts)}", file=self.source or None)

    def digest(self) -> str:
        """SHA-256 of the network's content (computed once per network)."""
        if self._digest is None:
            object.__setattr__(self, "_digest", self._compute_digest())
        return self._digest

    def _compute_digest(self) -> str:
        h = hashlib.sha256()
        h.update(repr((self.species, self.initial, sorted(self.parameters), sorted(self.fixed))).encode())
        for r in self.reactions:
            law = to_text(r.law, self.species) if r.law is not None else ""
            h.update(repr((r.reactants, r.products, r.rate, law)).encode())
        sp = self.species
        for e in self.events:  # (nothing is added without events or rules: digests of plain networks stay)
            h.update(repr(("event", e.id, condition_text(e.trigger, sp), e.initial_value, e.persistent,
                           e.use_values_from_trigger_time, None if e.priority is None else to_text(e.priority, sp),
                           [(a.target, a.species, to_text(a.expr, sp)) for a in e.assignments])).encode())
            if e.delay is not None:
                h.update(repr(("delay", to_text(e.delay, sp))).encode())
        for r in self.rules:
            h.update(repr(("rule", r.id, r.target, r.species, to_text(r.expr, sp))).encode())
        for r in self.rate_rules:
            h.update(repr(("rate rule", r.id, r.target, r.species, to_text(r.expr, sp))).encode())
        return h.hexdigest()

    def summary(self) -> str:
        ma = sum(r.mass_action for r in self.reactions)
        extra = ""
        if self.events or self.rules:
            extra = f", {len(self.events)} events, {len(self.rules)} assignment rules"
        if self.rate_rules:
            extra += f", {len(self.rate_rules)} rate rules"
        return (f"{self.name or 'network'}: {self.n_species} species, {self.n_reactions} reactions "
                f"({ma} mass action, {self.n_reactions - ma} general laws), {len(self._params)} parameters{extra}")

    def __repr__(self) -> str:
        return f"ReactionNetwork({self.summary()})"


def _check_reaction(r: Reaction, label: str, n: int, params: dict[str, float], src: str | None) -> None:
    for k, (i, s) in enumerate(r.reactants + r.products):
        if not 0 <= i < n:
            raise ModelError(f"{label}: unknown species index {i}", file=src)
        top = MAX_STOICHIOMETRY if r.law is None and k < len(r.reactants) else MAX_CHANGE
        if not 0 < s <= top:
            what = "a mass-action reactant's stoichiometry" if top == MAX_STOICHIOMETRY else "stoichiometry"
            raise ModelError(f"{label}: {what} must be an integer in [1, {top}], got {s}", file=src)
    if r.law is None:
        if isinstance(r.rate, str) and r.rate not in params:
            raise ModelError(f"{label}: unknown rate parameter {r.rate!r}", file=src)
        theta = params[r.rate] if isinstance(r.rate, str) else float(r.rate)
        if not (theta >= 0 and math.isfinite(theta)):
            raise ModelError(f"{label}: rate constant must be finite and >= 0, got {theta}", file=src)
        return
    missing = [p for p in params_of(r.law) if p not in params]
    if missing:
        raise ModelError(f"{label}: kinetic law uses unknown parameter {missing[0]!r}", file=src)
    bad = [i for i in species_of(r.law) if not 0 <= i < n]
    if bad:
        raise ModelError(f"{label}: kinetic law reads unknown species index {bad[0]}", file=src)


def _binom(x: np.ndarray, s: int) -> np.ndarray:
    """C(x, s) for integer-valued x >= 0 (0 when x < s)."""
    out = np.ones_like(x)
    for k in range(s):
        out = out * np.maximum(x - k, 0) / (k + 1)
    return out
