"""Why a realization stopped, as every SSA kernel reports it (CPU and GPU alike), and the error the user sees.

A kernel leaves one int32 *error word* per realization: the code in the low ``ERR_BITS`` bits and,
for a fatal error, the reaction concerned above them (``kernels/ssa_common.cuh`` mirrors this):

* ``ERR_PROPENSITY``: reaction j's propensity is negative, NaN or infinite (a division by zero
  gives +-inf or NaN: it lands here too);
* ``ERR_NEGATIVE``: firing reaction j made a species count negative;
* ``ERR_OVERFLOW`` (GPU only): firing reaction j took a count past 2**31 - 1;
* ``ERR_MAX_EVENTS``: the realization reached ``max_events`` (a warning, not an error);
* SBML events and rules (:mod:`distsim.ssa.event_ops`; the index above the code is not a reaction):
  ``ERR_EVENT_VALUE``: event assignment q (numbered over all events) gave a species a count that is
  not a whole number in [0, 2**53]; ``ERR_RULE_VALUE``: assignment rule i did; ``ERR_EVENT_LOOP``:
  more than ``models.events.MAX_CASCADE`` events executed at one instant (the last one: event i).
* ``ERR_INTEGRATOR`` (hybrid networks, :mod:`distsim.ssa.hybrid_ops`): the ODE step size fell below
  its floor (a stiff or singular rate rule or hazard), or the hazard reached its target with every
  propensity 0. ``ERR_EVENT_DELAY``: event i's delay was negative or not finite;
  ``ERR_EVENT_QUEUE``: event i would exceed ``models.events.MAX_DELAYED`` scheduled executions.

The driver raises one :class:`SimulationError` for the lowest-numbered failed realization; its time
and state come from replaying that realization on the CPU (:func:`distsim.ssa.cpu.replay`).
"""

from __future__ import annotations

import math
from typing import Callable

import numba
import numpy as np

from ..errors import DistsimError
from ..models.arith import species_of, to_text
from ..models.events import MAX_CASCADE, MAX_DELAYED
from ..models.mass_action import vanishes_without
from ..models.reactions import ReactionNetwork

ERR_NONE, ERR_PROPENSITY, ERR_MAX_EVENTS, ERR_NEGATIVE, ERR_OVERFLOW = 0, 1, 2, 3, 4
ERR_EVENT_VALUE, ERR_RULE_VALUE, ERR_EVENT_LOOP = 5, 6, 7
ERR_INTEGRATOR = 8
ERR_EVENT_DELAY, ERR_EVENT_QUEUE = 9, 10
ERR_BITS = 8
ERR_MASK = (1 << ERR_BITS) - 1
FATAL = (ERR_PROPENSITY, ERR_NEGATIVE, ERR_OVERFLOW, ERR_EVENT_VALUE, ERR_RULE_VALUE, ERR_EVENT_LOOP, ERR_INTEGRATOR,
         ERR_EVENT_DELAY, ERR_EVENT_QUEUE)


class SimulationError(DistsimError, RuntimeError):
    """A realization stopped on an error (a bad propensity or a negative count); the message names
    the reaction, the time and the state. A :class:`~distsim.errors.DistsimError` (without a file:
    ``str()`` is the message) and, as before, a ``RuntimeError``."""


@numba.njit(inline="always", cache=True)
def error_word(code, reaction):
    return code | (reaction << ERR_BITS)


def summary(errors, real0: int, xp=np) -> dict:
    """Per-code counts of a block's error words and (realization, word) of its first fatal error."""
    codes = errors.astype(xp.int64) & ERR_MASK
    counts = xp.bincount(codes, minlength=8).tolist()
    fatal = (codes != ERR_NONE) & (codes != ERR_MAX_EVENTS)  # every code in FATAL
    first = None
    if bool(fatal.any()):
        r = int(xp.flatnonzero(fatal)[0])
        first = (real0 + r, int(errors[r]))
    return {"error_counts": {i: int(n) for i, n in enumerate(counts) if n}, "first_error": first}


def merge(summaries: list[dict]) -> tuple[dict[int, int], tuple[int, int] | None]:
    """Counts per code over blocks and the first fatal error of the lowest-numbered realization."""
    counts: dict[int, int] = {}
    firsts = []
    for s in summaries:
        for code, n in s["error_counts"].items():
            counts[code] = counts.get(code, 0) + n
        if s["first_error"] is not None:
            firsts.append(s["first_error"])
    return counts, min(firsts) if firsts else None


def raise_if_failed(net: ReactionNetwork, counts: dict[int, int], first: tuple[int, int] | None,
                    realizations: int, seed: int, replay: Callable[[int], tuple], pilot: bool = False) -> None:
    """Raise the :class:`SimulationError` of the lowest-numbered failed realization ``first`` =
    (realization, word), if any, among ``realizations`` (the first ones of a run when ``pilot``);
    ``replay(realization)`` gives (word, t, x, propensity) as :func:`distsim.ssa.cpu.replay` (the
    kernel's time and state when the replay stops the same way)."""
    if first is None:
        return
    realization, word = first
    n_failed = sum(counts.get(code, 0) for code in FATAL)
    t = x = value = None
    if word & ERR_MASK != ERR_OVERFLOW:  # the CPU counts are int64: an int32 overflow does not replay
        w2, t2, x2, v2 = replay(realization)
        if w2 == word:
            t, x, value = t2, x2, v2
    lead = f"{n_failed} of {'the first ' if pilot else ''}{realizations} realizations stopped"
    raise SimulationError(describe(net, word, realization, lead, seed, t, x, value))


def describe(net: ReactionNetwork, word: int, realization: int, lead: str, seed: int, t: float | None,
             x: np.ndarray | None, value: float | None) -> str:
    """The message of ``realization``'s error after ``lead`` (``t``, ``x``, ``value``: time, state and, for
    a propensity error, the propensity when known)."""
    code, j = word & ERR_MASK, word >> ERR_BITS
    if code == ERR_INTEGRATOR:
        when = f"at t = {t:.6g} " if t is not None else ""
        return (f"{lead}: the integrator of the rate rules and time-dependent propensities could not go on {when}"
                f"in realization {realization} (seed {seed}): its step size fell below its floor "
                "(distsim.ssa.hybrid_ops.MIN_STEP_REL (1 + |t|)), or the hazard reached its target with every "
                "propensity 0; check the "
                "rate rules and kinetic laws for singularities or stiffness")
    if code in (ERR_EVENT_DELAY, ERR_EVENT_QUEUE):
        when = f"at t = {t:.6g} " if t is not None else ""
        ev = net.events[j]
        if code == ERR_EVENT_QUEUE:
            return (f"{lead}: event {ev.id!r} was triggered {when}in realization {realization} (seed {seed}) with "
                    f"{MAX_DELAYED} delayed executions already scheduled, the limit")
        got = f" ({value!r})" if value is not None else ""
        return (f"{lead}: the delay of event {ev.id!r}, {to_text(ev.delay, net.species)}, is negative or not finite"
                f"{got} {when}in realization {realization} (seed {seed})")
    if code in (ERR_EVENT_VALUE, ERR_RULE_VALUE, ERR_EVENT_LOOP):
        return _describe_event(net, code, j, lead, seed, realization, t, x, value)
    r = net.reactions[j]
    what = f"reaction {j} {r.name!r}" if r.name else f"reaction {j}"
    rule = f"law: {to_text(r.law, net.species)}" if r.law is not None else f"mass action, rate {r.rate}"
    when = f"at t = {t:.6g} " if t is not None else ""
    where = f"{when}in realization {realization} (seed {seed})"
    if code == ERR_OVERFLOW:
        return (f"{lead}: firing {what} took a species count past 2**31 - 1, the GPU kernels' limit, {where}; "
                "use backend='cpu'")
    if code == ERR_NEGATIVE:
        neg = [i for i, _ in net.net_changes()[j] if x is not None and x[i] < 0]
        state = f", giving {_state(net, x, neg)}" if neg else ""
        return (f"{lead}: firing {what} ({rule}) made a species count negative {where}{state}; "
                f"a propensity must be 0 when its reaction cannot fire{_why_negative(net, j, neg)}{_guard_hint(net)}")
    if value is None or math.isnan(value):
        kind = "negative, infinite or NaN" if value is None else "NaN (0/0, or a function outside its domain)"
    elif math.isinf(value):
        kind = f"{value} (a division by zero or an overflow)"
    else:
        kind = f"{value:.6g} (negative)"
    state = f", with {_state(net, x, r.reads())}" if x is not None and r.reads() else ""
    hint = _guard_hint(net) if value is None or (math.isfinite(value) and value < 0) else ""
    return (f"{lead}: the propensity of {what} ({rule}) is {kind} {where}{state}; check the rate laws and "
            f"parameters{hint}")


def _describe_event(net: ReactionNetwork, code: int, i: int, lead: str, seed: int, realization: int,
                    t: float | None, x: np.ndarray | None, value: float | None) -> str:
    when = f"at t = {t:.6g} " if t is not None else ""
    where = f"{when}in realization {realization} (seed {seed})"
    if code == ERR_EVENT_LOOP:
        return (f"{lead}: more than {MAX_CASCADE} events executed at one instant {where} (the last: event "
                f"{net.events[i].id!r}); events that trigger each other forever")
    if code == ERR_RULE_VALUE:
        r = net.rules[i]
        what, expr = f"assignment rule {r.id!r}", r.expr
    else:
        e, a = [(e, a) for e in net.events for a in e.assignments][i]
        what, expr = f"event {e.id!r}", a.expr
        r = a
    got = f" ({value!r})" if value is not None else ""
    state = f", with {_state(net, x, species_of(expr))}" if x is not None and species_of(expr) else ""
    return (f"{lead}: {what} set species {r.target!r} to {to_text(expr, net.species)}{got}, which is not a "
            f"whole number of molecules in [0, 2**53], {where}{state}{_why_not_whole(value)}")


def _why_negative(net: ReactionNetwork, j: int, neg: list[int]) -> str:
    """Why reaction j's law let it fire without the molecules it consumes, read from its form."""
    r = net.reactions[j]
    if r.law is None or not neg:
        return ""
    i = neg[0]
    name = net.species[i]
    n = dict(r.reactants).get(i, 0)
    if not vanishes_without(r.law, i):
        return (f"; this law is not 0 when {name!r} is absent (a constant flux, or a rate that does not read "
                f"{name!r}): as written it has no stochastic meaning once {name!r} runs out (an ODE would take "
                f"{name!r} below 0 too); if {name!r} is a source or sink, mark it boundaryCondition=\"true\"")
    if n > 1:
        return (f"; it consumes {n} molecules of {name!r} but its law is 0 only when none are left (as k x or "
                f"k x^2, where mass action has x (x - 1) ...): the law is written for concentrations, with no "
                f"stochastic meaning below {n} molecules")
    return ""


def _guard_hint(net: ReactionNetwork) -> str:
    """The guarded reading's suggestion, for a network the SBML reader read without it."""
    meta = dict(net.metadata)
    if "system_size" not in meta or "guard" in meta:
        return ""
    return ("\nto run such laws anyway, read the SBML model with guard=True (--guard): a negative net rate then "
            "runs the reaction backwards and no reaction fires without what it consumes (the model as written "
            "until it would first stop here)")


def _why_not_whole(value: float | None) -> str:
    """What a value that is not a count means: negative (a total minus parts that outgrew it), or a
    fraction of a molecule (the amounts per molecule, Omega, of the model's reading)."""
    if value is None or not math.isfinite(value):
        return ""
    near = round(value)
    if value < 0 and abs(value - near) <= 1e-9 * max(1.0, abs(value)):
        return (f"; it is {near} up to round-off, negative: the expression (a total minus parts, as a "
                "conservation law) counts fewer than no molecules, a balance that the reactions do not keep")
    if value < 0:
        return "; it is negative"
    return ("; a fraction of a molecule: choose system_size (molecules per substance unit) so that the "
            "amounts the model assigns are whole")


def _state(net: ReactionNetwork, x: np.ndarray, species) -> str:
    shown = list(species)[:12]
    more = ", ..." if len(species) > 12 else ""
    return ", ".join(f"{net.species[i]} = {int(x[i])}" for i in shown) + more
