"""Many PBN runs on one network at once: the points of a sweep (perturbation probability, knockouts).

Each point is its own run -- its network, seed and stopping rule (:meth:`steady.Problem.search`)
-- but the runs go in lockstep: every round, the chains of every point still running advance in
one launch per segment (GPU), so a sweep of small runs fills the device. The answers are those of
one :func:`~distsim.pbn.steady.steady_state` (or :func:`~distsim.pbn.simulate.simulate`) call per
point, bit for bit:

* every point simulates the same nodes, the ancestors of the targets in the unmodified network
  (a superset of each point's own, closed under each point's parents): the same trajectories of
  the nodes the answer depends on (see :mod:`.reduce`);
* a point's perturbation table is its own (:func:`.compile.perturbation_layout`);
* a knockout (``fix.NODE``: :meth:`PBN.with_fixed`) changes only that node's function, to a
  constant: the GPU kernel sets the node on the lanes it updates (the ``fixset`` code). Points that
  change anything else (selection probabilities, or knockouts that change the random-number layout:
  a knocked-out node with several functions in a synchronous PBN, any knockout in a dependent PBN)
  are not batched (:func:`knockouts` says None) and the sweep runs them one by one.

On the CPU backend each point runs its own compiled network through the same kernels.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any, Callable, Sequence

import numpy as np
import xarray as xr

from .. import engine, results
from ..backends import device_description
from ..models.boolean import Const
from ..models.pbn import PBN
from .compile import compile_pbn, perturbation_layout
from .inputs import as_network, check_count, check_mode, initial_state, parse_targets, resolve_mode
from .launch import Runs
from .reduce import ancestors
from .shard import CHAINS, Block, SegmentCounts
from .simulate import simulation_dataset
from .steady import Problem, Request, _Ensemble, prepare

MAX_BATCH_CHAINS = 1 << 24  # chains of one device batch (more gain nothing: the device is full)


def knockouts(base: PBN, net: PBN, mode: str) -> dict[int, int] | None:
    """The knockouts that turn ``base`` into ``net`` besides its perturbation probability, or None
    when ``net`` differs otherwise (or in a way a shared kernel cannot reproduce)."""
    if net.n != base.n or net.nodes != base.nodes or net.update != base.update:
        return None
    out = {}
    for i, (a, b) in enumerate(zip(base.predictors, net.predictors)):
        if a == b:
            continue
        if len(b) != 1 or not isinstance(b[0].expr, Const) or i not in net.fixed:
            return None  # another change than a knockout (e.g. selection probabilities)
        if base.dependent or (mode == "sync" and len(a) > 1):
            return None  # the knockout changes the random-number layout
        out[i] = int(b[0].expr.value)
    return out if base.contexts == net.contexts else None


def _groups(sizes: Sequence[int], limit: int) -> list[list[int]]:
    """Consecutive indices in groups of at most ``limit`` summed size (at least one each)."""
    out: list[list[int]] = [[]]
    total = 0
    for i, s in enumerate(sizes):
        if out[-1] and total + s > limit:
            out.append([])
            total = 0
        out[-1].append(i)
        total += s
    return out


# ---- the devices ------------------------------------------------------------------------------

class _CPUBatch:
    """Each run's own state and kernels (the CPU backend: nothing to share)."""

    def __init__(self, blocks: Sequence[Block]):
        self.ctx = engine.ShardContext("pbn-batch", 0, 0, "cpu")
        self.states = [CHAINS.build(self.ctx, b) for b in blocks]

    def advance(self, requests: dict[int, Block]) -> dict[int, dict]:
        return {q: CHAINS.advance(self.ctx, self.states[q], b) for q, b in requests.items()}


class _GPUBatch:
    """All runs in one device state; a round of any runs is one launch per segment."""

    def __init__(self, compiled: Any, mode_id: int, targets: tuple, runs: Runs, fix_mask: np.ndarray,
                 fix_val: np.ndarray):
        from .gpu import get_kernel

        self.kernel = get_kernel(compiled, mode_id, targets)
        self.runs = runs
        self.S = self.kernel.init_runs(runs, fix_mask, fix_val)
        self.step = np.zeros(runs.n_runs, dtype=np.int64)

    def advance(self, requests: dict[int, Block]) -> dict[int, dict]:
        """Each run to its block's ``step_from`` (uncounted), then through its segments."""
        if any(self.step[q] > b.step_from for q, b in requests.items()):
            raise RuntimeError("a batched run cannot go back to an earlier step")
        pieces = {q: ([b.step_from] if self.step[q] < b.step_from else []) + list(b.segments)
                  for q, b in requests.items()}
        counted = {q: len(pieces[q]) - len(b.segments) for q, b in requests.items()}  # first counted piece
        counts = {q: SegmentCounts(b) for q, b in requests.items()}
        for k in range(max(len(p) for p in pieces.values())):
            active = [q for q in requests if k < len(pieces[q])]
            ends = np.array([pieces[q][k] for q in active], dtype=np.int64)
            step0, nsteps = self.step.copy(), np.zeros(self.runs.n_runs, dtype=np.int64)
            nsteps[active] = ends - self.step[active]
            want_chain = any(requests[q].want_chain and k >= counted[q] for q in active)
            want_nodes = any(requests[q].want_nodes and k >= counted[q] for q in active)
            outs = self.kernel.advance_runs(self.S, self.runs, step0, nsteps, want_chain, want_nodes, active=active)
            self.step[active] = ends
            for q, out in zip(active, outs):
                if k >= counted[q]:
                    counts[q].add(k - counted[q], out)
        return {q: counts[q].result(int(self.step[q]), self._states(q) if b.want_states else None,
                                    self._final_ones(q) if b.want_final else None) for q, b in requests.items()}

    def _states(self, q: int) -> np.ndarray:
        return self.kernel.states_of(self.S, int(self.runs.n_chains[q]), int(self.runs.tile0[q]))

    def _final_ones(self, q: int) -> np.ndarray:
        return self.kernel.node_ones(self.S, int(self.runs.n_chains[q]), int(self.runs.tile0[q]))


def _device(backend: str, blocks: Sequence[Block], base: PBN, nets: Sequence[PBN], knocks: Sequence[dict],
            simulated: list[int], mode_id: int, targets: tuple, seeds: Sequence[int]) -> Any:
    """The batch's device: one shared GPU state, or per-run CPU states."""
    if backend != "gpu":
        return _CPUBatch(blocks)
    remap = {old: new for new, old in enumerate(simulated)}
    perts = [perturbation_layout(net, simulated) for net in nets]
    fixes = [tuple((remap[i], v) for i, v in sorted(k.items()) if i in remap) for k in knocks]
    runs = Runs.stack([b.n_chains for b in blocks], [b.chain0 for b in blocks], seeds, perts, fixes)
    return _GPUBatch(blocks[0].compiled, mode_id, targets, runs, blocks[0].fix_mask, blocks[0].fix_val)


def _lockstep(steps: dict[int, Any], advance: Callable[[dict[int, Block]], dict[int, dict]]) -> dict[int, Any]:
    """Drive every run's generator of rounds together: each round, one call for all runs still going."""
    pending: dict[int, Request] = {}
    done: dict[int, Any] = {}

    def step(q: int, value: Any) -> None:
        try:
            pending[q] = steps[q].send(value)
        except StopIteration as stop:
            done[q] = stop.value
            pending.pop(q, None)

    for q in steps:
        step(q, None)
    while pending:
        out = advance({q: req[0] for q, req in pending.items()})  # one block per run
        for q in list(pending):
            step(q, [out[q]])
    return done


def _provenance(backend: str, rounds: int, wall: float) -> Callable[..., dict]:
    def provenance(**fields: Any) -> dict:
        return results.provenance(backend=backend, devices=[device_description(backend)] * rounds,
                                  executor="in-process (batched sweep)", wall_time_s=wall, **fields)
    return provenance


# ---- steady states ----------------------------------------------------------------------------

def steady_states(base: PBN, nets: Sequence[PBN], seeds: Sequence[int], backend: str, target: Any,
                  **options: Any) -> list[xr.Dataset] | None:
    """:func:`~distsim.pbn.steady.steady_state` of every network (``nets[q]`` with seed ``seeds[q]``;
    ``options``: its other arguments), batched; None when the networks cannot share a batch."""
    if options.get("by_class") or options.get("plot") is not None:
        return None
    opts = {k: v for k, v in options.items() if k not in ("by_class", "plot", "progress", "fixed")}
    base = as_network(base, fixed=options.get("fixed"))
    nets = [as_network(net, fixed=options.get("fixed")) for net in nets]
    mode = resolve_mode(opts.get("mode"), base)
    knocks = [knockouts(base, net, mode) for net in nets]
    if any(k is None for k in knocks):
        return None
    tgts = parse_targets(target, base)
    simulated = ancestors(base, {i for t in tgts for i, _ in t}) if opts.get("reduce", True) else list(range(base.n))
    gpu = backend == "gpu"
    probs = [prepare(net, target, seed=int(s), simulate=simulated, build=not gpu, warn_stacklevel=4, **opts)
             for net, s in zip(nets, seeds)]
    if any(p.frozen for p in probs):
        return None  # steady_state refuses these or answers per class: the sweep runs them one by one
    if gpu:  # one kernel for all: the unmodified network (each point brings its tables)
        shared = compile_pbn(base, simulated)
        probs = [replace(p, compiled=shared) for p in probs]
    out: list[xr.Dataset] = []
    for group in _groups([p.omega for p in probs], MAX_BATCH_CHAINS):
        out += _steady_group(base, [probs[q] for q in group], [nets[q] for q in group], [knocks[q] for q in group],
                             backend, simulated)
    return out


def _steady_group(base: PBN, probs: list[Problem], nets: list[PBN], knocks: list[dict], backend: str,
                  simulated: list[int]) -> list[xr.Dataset]:
    t0 = time.perf_counter()
    ens = [_Ensemble(p.blocks([range(p.omega)]), len(p.tgts)) for p in probs]
    p0 = probs[0]
    dev = _device(backend, [e.setups[0] for e in ens], base, nets, knocks, simulated, check_mode(p0.mode),
                  p0.sim_targets, [p.seed for p in probs])
    quiet = engine.Progress(False, "pbn batch")
    rounds = dict.fromkeys(range(len(probs)), 0)

    def advance(requests: dict[int, Block]) -> dict[int, dict]:
        for q in requests:
            rounds[q] += 1
        return dev.advance(requests)

    found = _lockstep({q: p.search(e, quiet, t0) for q, (p, e) in enumerate(zip(probs, ens))}, advance)
    wall = (time.perf_counter() - t0) / len(probs)  # the batch's time, shared
    return [p.dataset(e, found[q], _provenance(backend, rounds[q], wall), rounds=rounds[q], device_seconds=wall)
            for q, (p, e) in enumerate(zip(probs, ens))]


# ---- simulations ------------------------------------------------------------------------------

def simulations(base: PBN, nets: Sequence[PBN], seeds: Sequence[int], backend: str, *, steps: int,
                trajectories: int, mode: str | None = None, initial: Any = "random", targets: Any = None,
                keep_states: bool = False, fixed: Any = None, **unbatched: Any) -> list[xr.Dataset] | None:
    """:func:`~distsim.pbn.simulate.simulate` of every network (``nets[q]``, seed ``seeds[q]``),
    batched; None when the networks cannot share a batch."""
    if unbatched.keys() - {"progress"} or fixed:
        return None
    mode = resolve_mode(mode, base)
    knocks = [knockouts(base, net, mode) for net in nets]
    if any(k is None for k in knocks):
        return None
    steps = check_count("steps", steps, 1, 2**62)
    trajectories = check_count("trajectories", trajectories, 1, 2**32)
    tgts = parse_targets(targets, base)
    fix_mask, fix_val = initial_state(initial, base)
    shared = compile_pbn(base) if backend == "gpu" else None  # one kernel for all (each point brings its tables)
    out: list[xr.Dataset] = []
    for group in _groups([trajectories] * len(nets), MAX_BATCH_CHAINS):
        t0 = time.perf_counter()
        blocks = [Block(shared or compile_pbn(nets[q]), check_mode(mode), tuple(tgts),
                        int(seeds[q]), 0, trajectories, fix_mask, fix_val, 0, (steps,), want_nodes=True,
                        want_states=keep_states, want_final=True) for q in group]
        dev = _device(backend, blocks, base, [nets[q] for q in group], [knocks[q] for q in group],
                      list(range(base.n)), check_mode(mode), tuple(tgts), [int(seeds[q]) for q in group])
        res = dev.advance(dict(enumerate(blocks)))
        wall = (time.perf_counter() - t0) / len(group)
        for k, q in enumerate(group):
            r = res[k]
            summed = {"node_ones": r["node_ones"], "pooled": r["pooled"][0], "final_ones": r["final_ones"],
                      "states": [r.get("states")]}
            out.append(simulation_dataset(nets[q], tgts, summed, _provenance(backend, 1, wall), rounds=1,
                                          round_seconds=wall, mode=mode, seed=int(seeds[q]), steps=steps,
                                          trajectories=trajectories, keep_states=keep_states))
    return out
