"""Steady-state probabilities of PBNs: seed 000's Algorithm 3, distributed over shards of chains.

1. Gelman & Rubin (Algorithm 2): omega chains run to length 2*psi; R-hat of the 0/1 process "in
   the target set" over the last psi steps of each chain; psi doubles until R-hat is below the
   threshold for every target.
2. Two-state Markov chain (Algorithm 3): the sample is steps m+1..m+n of every chain (m = n = psi
   at first); alpha and beta are estimated from the pooled sample, the required sample size N
   (Algorithm 1, line 8) decides how far every chain is extended; then the burn-in M is checked
   (Algorithm 3, lines 14-17) and, if M > m, the sample start moves to M and step 2 repeats.

One safeguard beyond the seed: with thinning k = 1 the two-state formula assumes the 0/1 process is
a first-order Markov chain. When it is not (slow network variables behind the target), its variance
-- and so N -- can be several times too small and the interval undercovers (measured: 3.5x-11x on
the 3-gene Shmulevich PBN). Gelman-Rubin's between-chain variance B at convergence estimates the
true asymptotic variance without that assumption, so N is the larger of the two-state N and
B z^2 / r^2, and the reported half-width uses the larger variance.

Only integer counts travel back from the shards (per-chain sums for R-hat, pooled segment counts
for the two-state chain), so the answer for a given seed does not depend on how many workers or
GPUs ran it. Several targets share one simulation.
"""

from __future__ import annotations

import itertools
import math
import time
import warnings
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Generator, Mapping, Sequence

import numpy as np
import xarray as xr

from .. import engine
from ..models.pbn import PBN
from ..rng import check_seed, derive_seeds
from .compile import CompiledPBN, compile_pbn
from .inputs import (Target, TargetSpec, as_network, check_count, check_mode, initial_state, parse_targets, resolve_mode,
                     target_label)
from .reduce import ancestors, frozen_nodes
from .shard import CHAINS, Block
from .simulate import LANE_ALIGN
from .stats import ChainSums, TwoState, between_variance, burn_in, half_width, required_size, rhat, sample_size, two_state_variance

MAX_LENGTH = 2**20  # default cap on steps per chain: a run that needs more ends as "did not converge"


def default_chains(precision: float) -> int:
    """Chains used when ``chains`` is not given: the power of two nearest 1/(100 r^2), in [2^8, 2^22].

    It depends only on the precision, never on the hardware, so a seed gives the same answer on any
    cluster. Fewer chains make the Gelman-Rubin phase (every chain runs to twice its burn-in)
    cheaper; more keep a GPU busy: 2^20 chains at r = 1e-4, 2^22 at r <= 3e-5 (4 GPUs).
    """
    want = 1.0 / (100.0 * precision * precision)
    return int(2 ** min(22, max(8, round(math.log2(want)))))


@dataclass
class _Segment:
    start: int
    end: int
    counts: np.ndarray  # [T, 3]: ones, n01, n10 over states start+1..end


class _TimeUp(Exception):
    """A round cut short by the time limit (its chains stopped between slices)."""


Request = list[Block]  # one round: the step of every shard
Steps = Generator[Request, list[dict], Any]  # yields rounds, receives their results (one dict per shard)


@dataclass
class _Ensemble:
    """The chains of one run, split in shards; tracks their length and the counted segments."""

    setups: list[Block]
    T: int
    length: int = 0
    steps: int = 0
    segments: list[_Segment] = field(default_factory=list)
    occupancy: dict[int, np.ndarray] = field(default_factory=dict)  # step -> chains in each target
    deadline: float | None = None  # perf_counter() time past which a round stops between slices (not the first)

    @property
    def chains(self) -> int:
        return sum(b.n_chains for b in self.setups)

    def advance(self, to_step: int, *, count_from: int | None = None, pieces: int = 1,
                boundaries: Sequence[int] = (), want_chain: bool = False) -> Steps:
        """Advance every chain to ``to_step``; count from ``count_from`` (default: current length)
        in ``pieces`` equal segments plus the given extra boundaries. One round (a generator step)."""
        start = self.length if count_from is None else count_from
        grid = {start + (to_step - start) * k // pieces for k in range(1, pieces + 1)}
        grid |= {b for b in boundaries if start < b < to_step}
        segs = (start,) + tuple(sorted(grid))
        left = None if self.deadline is None or not self.length else max(0.0, self.deadline - time.perf_counter())
        out = yield [replace(b, step_from=start, segments=segs, want_chain=want_chain, time_left=left)
                     for b in self.setups]
        if any(r.get("cut") for r in out):  # the chains' counts stay those of the rounds before
            raise _TimeUp()
        self.steps += self.chains * (to_step - self.length)
        pooled = np.sum([r["pooled"] for r in out], axis=0).astype(np.int64)  # [S, T, 4]
        self.occupancy[start] = pooled[0, :, 3]
        for k in range(1, len(segs)):
            self.segments.append(_Segment(segs[k - 1], segs[k], pooled[k, :, :3]))
            self.occupancy[segs[k]] = pooled[k, :, 3]
        self.length = to_step
        if not want_chain:
            return None
        psi = to_step - start
        return [sum((ChainSums(b.n_chains, psi, *r["chain_sums"][t]) for b, r in zip(self.setups, out)),
                    ChainSums(0, psi, 0, 0)) for t in range(self.T)]

    def boundaries(self) -> list[int]:
        return sorted({s.start for s in self.segments} | {s.end for s in self.segments})

    def window(self, m: int) -> list[TwoState]:
        """Two-state counts of the sample of states m+1..length, per target."""
        counts = sum((s.counts for s in self.segments if s.start >= m and s.end <= self.length),
                     np.zeros((self.T, 3), np.int64))
        size = self.chains * (self.length - m)
        out = []
        for t in range(self.T):
            ones, n01, n10 = (int(x) for x in counts[t])
            from1 = ones + int(self.occupancy[m][t]) - int(self.occupancy[self.length][t])
            out.append(TwoState(size, ones, n01, n10, from1))
        return out


@dataclass
class _Search:
    """Where the algorithm stands: what the Dataset reports."""

    psi: int
    sums: list[ChainSums] = field(default_factory=list)  # of the last Gelman-Rubin round
    rhat: list[float] = field(default_factory=list)
    converged_gr: bool = False
    m: int = 0  # burn-in: the sample is states m+1..length of every chain
    note: str = ""  # why the run stopped early ('' when it converged)
    history: list[tuple[int, list[float], list[float]]] = field(default_factory=list)

    def record(self, length: int, rhat: list[float], estimate: list[float]) -> None:
        """History entry of a round; a later look at the same chain length updates its entry."""
        if self.history and self.history[-1][0] == length:
            rhat = [r if not math.isnan(r) else old for r, old in zip(rhat, self.history[-1][1])]
            self.history[-1] = (length, rhat, estimate)
        else:
            self.history.append((length, rhat, estimate))

    @property
    def gr_variance(self) -> list[float]:
        """Asymptotic variance estimates from Gelman-Rubin's B (no Markov assumption)."""
        return [between_variance(s) for s in self.sums]

    @property
    def converged(self) -> bool:
        return self.converged_gr and not self.note


@dataclass(frozen=True)
class Settings:
    """The algorithm's settings (checked)."""

    precision: float
    confidence: float
    epsilon: float
    rhat_threshold: float
    psi0: int
    segments: int
    max_length: int
    max_steps: float | None
    time_limit: float | None


@dataclass(frozen=True)
class Problem:
    """One steady-state question, checked and compiled: what a run (or a batch of runs) needs."""

    net: PBN
    tgts: list[Target]
    seed: int
    mode: str
    omega: int
    settings: Settings
    reduce: bool
    keep: list[int]  # the targets' ancestors (all nodes without reduction): what the answer depends on
    simulated: list[int]  # the nodes simulated: ``keep`` or a superset closed under parents
    frozen: list[int]  # unfixed frozen nodes among ``keep`` (then nothing is compiled)
    compiled: CompiledPBN | None
    sim_targets: tuple
    fix_mask: np.ndarray
    fix_val: np.ndarray

    def blocks(self, ranges: Sequence[range]) -> list[Block]:
        """The shards' payloads: one block of chains per range."""
        k = self.simulated
        return [Block(self.compiled, check_mode(self.mode), self.sim_targets, self.seed, r.start, len(r),
                      self.fix_mask[k], self.fix_val[k], 0, (0,)) for r in ranges]

    def search(self, ens: _Ensemble, prog: engine.Progress, t_start: float) -> Steps:
        """Algorithms 2 and 3 as rounds (see the module docstring); returns the final :class:`_Search`."""
        s = self.settings
        budget = _Budget(s.max_length, s.max_steps, s.time_limit, t_start)
        if s.time_limit is not None:
            ens.deadline = t_start + s.time_limit
        search = yield from _gelman_rubin(ens, prog, budget, s.psi0, s.segments, s.rhat_threshold)
        yield from _two_state(ens, prog, budget, search, s.segments, s.precision, s.confidence, s.epsilon)
        return search

    def dataset(self, ens: _Ensemble, search: _Search, provenance: Callable[..., dict], **run_fields: Any
                ) -> xr.Dataset:
        """The answer, with the run's attrs (``provenance``: the run's, e.g. :meth:`engine.Run.provenance`)."""
        s, net = self.settings, self.net
        ds = _dataset(net, self.tgts, ens.window(search.m), search, s.precision, s.confidence, s.epsilon,
                      search.converged)
        seconds = run_fields.pop("device_seconds", 0.0)
        ds.attrs = provenance(
            workload="pbn.steady_state", seed=self.seed, model_name=net.name, model_sha256=net.digest(),
            mode=self.mode, precision=s.precision, confidence=s.confidence, epsilon=s.epsilon,
            rhat_threshold=s.rhat_threshold, chains=self.omega, initial_length=s.psi0, chain_length=ens.length,
            steps_simulated=ens.steps, rounds=run_fields.pop("rounds"), perturbation=net.perturbation,
            reduced=self.reduce, nodes=net.n, nodes_removed=net.n - len(self.keep), nodes_simulated=len(self.keep),
            device_seconds=seconds, steps_per_second=ens.steps / max(seconds, 1e-12),
            converged=int(search.converged), note=search.note or "ok", **run_fields)
        return ds


def prepare(net: PBN | str, target: TargetSpec | Sequence[TargetSpec], *, mode: str | None = None,
            precision: float = 1e-3, confidence: float = 0.95, epsilon: float = 1e-10, chains: int | None = None,
            initial_length: int = 64, rhat_threshold: float = 1.05, reduce: bool = True, seed: int = 0,
            perturbation: float | None = None, fixed: Mapping[str, int] | None = None,
            initial: str | Mapping[str, int] | None = "random", segments: int = 8, max_length: int = MAX_LENGTH,
            max_steps: float | None = None, time_limit: float | None = None, simulate: Sequence[int] | None = None,
            build: bool = True, warn_stacklevel: int = 3) -> Problem:
    """Check the arguments of :func:`steady_state` (same meaning) and compile the simulated network.
    ``simulate``: these nodes (a superset of the targets' ancestors closed under parents) instead of
    the ancestors -- the same trajectories for them (:mod:`.reduce`); ``build=False``: leave
    ``compiled`` empty (a batch compiles one network for many problems)."""
    _check_options(precision, confidence, epsilon, rhat_threshold)
    net = as_network(net, perturbation=perturbation, fixed=fixed)
    tgts = parse_targets(target, net)
    if not tgts:
        raise ValueError("steady_state needs at least one target")
    seed = check_seed(seed)
    mode = resolve_mode(mode, net)
    check_mode(mode)
    omega = check_count("chains", chains if chains is not None else default_chains(precision), 2, 2**32)
    settings = Settings(precision, confidence, epsilon, rhat_threshold,
                        check_count("initial_length", initial_length, 2, max_length),
                        check_count("segments", segments, 1, 1024), max_length, max_steps, time_limit)
    fix_mask, fix_val = initial_state(initial, net)
    # SCC reduction: simulate only the ancestors of the target nodes
    keep = ancestors(net, {i for t in tgts for i, _ in t}) if reduce else list(range(net.n))
    frozen = [i for i in frozen_nodes(net) if i in keep and not fix_mask[i]]
    simulated = keep if simulate is None else sorted(simulate)
    remap = {old: new for new, old in enumerate(simulated)}
    sim_targets = tuple(tuple((remap[i], v) for i, v in t) for t in tgts)
    compiled = compile_pbn(net, simulated) if build and not frozen else None
    if net.perturbation == 0 and not frozen:
        warnings.warn("perturbation p = 0: the chain need not be ergodic, so a steady state may not exist or may "
                      "depend on the initial states", stacklevel=warn_stacklevel)
    return Problem(net, tgts, seed, mode, omega, settings, reduce, keep, simulated, frozen, compiled, sim_targets,
                   fix_mask, fix_val)


def drive(steps: Steps, execute: Callable[[Request], list[dict]]) -> Any:
    """Run a generator of rounds: each request goes to ``execute``, its results back in; returns its value."""
    try:
        request = next(steps)
        while True:
            request = steps.send(execute(request))
    except StopIteration as stop:
        return stop.value


def steady_state(net: PBN | str, target: TargetSpec | Sequence[TargetSpec], *, mode: str | None = None,
                 precision: float = 1e-3, confidence: float = 0.95, epsilon: float = 1e-10, chains: int | None = None,
                 initial_length: int = 64, rhat_threshold: float = 1.05, reduce: bool = True, seed: int = 0,
                 perturbation: float | None = None, fixed: Mapping[str, int] | None = None,
                 initial: str | Mapping[str, int] | None = "random", by_class: bool = False, segments: int = 8,
                 max_length: int = MAX_LENGTH, max_steps: float | None = None, time_limit: float | None = None,
                 client: Any = None, backend: str | None = None, progress: bool | None = None,
                 plot: str | None = None) -> xr.Dataset:
    """Estimate the steady-state probability of one or more target sets of states.

    ``target``: ``"A=1,B=0"``, ``{"A": 1, "B": 0}``, or a list of such (sharing one simulation).
    ``precision`` r and ``confidence`` s: the estimate is within +-r of the true value with
    probability s (two-state Markov chain approach); ``epsilon``: its burn-in tolerance.
    ``chains``: omega (default :func:`default_chains`); ``initial_length``: psi_0.
    ``reduce``: drop nodes that are not ancestors of the target nodes (SCC reduction).
    ``mode``: 'sync' or 'async' (default: the update the model file states, else 'sync');
    ``fixed``: knockouts/mutations ``{"X": 0}`` (:meth:`~distsim.models.pbn.PBN.with_fixed`).
    ``max_length`` (steps per chain, default 2**20), ``max_steps`` (steps in all) and ``time_limit``
    (seconds) stop a run early; the Dataset then says so in ``attrs["note"]``, has ``converged = 0``
    and no interval (NaN ``ci_low``/``ci_high``/``half_width``).
    Frozen nodes (never perturbed, ``x = x``) left random by ``initial`` split the chains into
    closed classes and are refused, naming them; ``by_class=True`` answers for each class instead
    (a ``frozen_class`` dimension, class k with seed ``derive_seeds(seed, k)``).
    Returns a Dataset over ``target`` with ``probability``, ``ci_low``, ``ci_high`` (the achieved
    interval, estimate +- ``half_width``), ``rhat``, ``burn_in``, ``sample_size``, ``alpha``, ``beta``
    and run figures (per-task timings: :meth:`engine.Run.timings`); ``plot`` writes a PNG of the
    convergence.
    """
    t_start = time.perf_counter()
    _check_plot(plot)
    opts = dict(mode=mode, precision=precision, confidence=confidence, epsilon=epsilon, chains=chains,
                initial_length=initial_length, rhat_threshold=rhat_threshold, reduce=reduce, segments=segments,
                max_length=max_length, max_steps=max_steps, time_limit=time_limit)
    prob = prepare(net, target, seed=seed, perturbation=perturbation, fixed=fixed, initial=initial, **opts)
    if prob.frozen:
        return _by_frozen_class(prob.net, target, prob.frozen, initial, seed, by_class,
                                dict(opts, client=client, backend=backend, progress=progress, plot=plot))
    with engine.Run("pbn-ss", client, backend, progress=progress, label="pbn steady-state") as run:
        ens = _Ensemble(prob.blocks(run.split(prob.omega, align=LANE_ALIGN)), len(prob.tgts))
        shards = run.stateful(CHAINS, ens.setups)
        run.progress.start(f"{len(prob.tgts)} target(s), {prob.omega} chains, precision {precision:g}, on "
                           f"{run.describe()}", unit="step")
        search = drive(prob.search(ens, run.progress, t_start), shards.advance)
    ds = prob.dataset(ens, search, run.provenance, rounds=run.rounds, device_seconds=run.device_seconds,
                      **run.timings())
    if plot is not None:
        from .plots import plot_convergence

        plot_convergence(ds, plot)
    return ds


def _check_options(precision: float, confidence: float, epsilon: float, rhat_threshold: float) -> None:
    if not 0 < precision < 0.5:
        raise ValueError(f"precision must be in (0, 0.5), got {precision}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if not 0 < epsilon < 1:
        raise ValueError(f"epsilon must be in (0, 1), got {epsilon}")
    if rhat_threshold <= 1:
        raise ValueError(f"rhat_threshold must be > 1, got {rhat_threshold}")


def _check_plot(plot: str | None) -> None:
    if plot is not None and not str(plot).lower().endswith(".png"):
        raise ValueError(f"plot must be a .png path, got {plot!r}")


def _gelman_rubin(ens: _Ensemble, prog: engine.Progress, budget: _Budget, psi: int, segments: int,
                  threshold: float) -> Steps:
    """Phase 1 (Algorithm 2): chains run to 2 psi; psi doubles until R-hat < threshold for every target."""
    first = budget.check(ens, 2 * psi)
    if first:
        raise ValueError(f"the first round ({ens.chains} chains x {2 * psi} steps) already exceeds the limits: {first}")
    search = _Search(psi)
    while True:  # the progress total stays unknown until the two-state phase knows the sample size
        try:
            search.sums = yield from ens.advance(2 * search.psi, count_from=search.psi, pieces=segments,
                                                 want_chain=True)
        except _TimeUp:  # (never the first round) the result of the last round that ended
            search.note, search.psi = budget.time_note(), search.psi // 2
            return search
        search.rhat = [rhat(s) for s in search.sums]
        est = [s.s1 / (s.chains * s.psi) for s in search.sums]
        search.record(ens.length, search.rhat, est)
        _report(prog, ens, f"Gelman-Rubin: length {ens.length}, R-hat {max(search.rhat):.4f}, estimate {_fmt(est)}")
        if max(search.rhat) < threshold:
            search.converged_gr = True
            return search
        search.note = budget.check(ens, 4 * search.psi)
        if search.note:
            return search
        search.psi *= 2


def _two_state(ens: _Ensemble, prog: engine.Progress, budget: _Budget, search: _Search, segments: int,
               precision: float, confidence: float, epsilon: float) -> Steps:
    """Phase 2 (Algorithm 3): extend every chain until the sample of states m+1..length is large
    enough, then check the burn-in M; if M > m, the sample start moves to M and this repeats."""
    m = psi = search.psi
    gr_var = search.gr_variance
    if not search.converged_gr:
        search.note = f"Gelman-Rubin did not converge ({search.note or 'limits reached'})"
    try:
        while not search.note:
            if m >= ens.length:  # the sample starts beyond the chains' end: extend past it first
                yield from ens.advance(m + psi, pieces=segments, boundaries=(m,))
            win = ens.window(m)
            need = [_required(w, v, precision, confidence) for w, v in zip(win, gr_var)]
            E = max(-(-(N - w.size) // ens.chains) for N, w in zip(need, win))
            search.record(ens.length, [math.nan] * ens.T, [w.estimate for w in win])
            _report(prog, ens, f"two-state: length {ens.length}, sample {win[0].size:.3g} (need {max(need):.3g}), "
                               f"estimate {_fmt([w.estimate for w in win])}", total=ens.length + max(E, 0))
            if E > 0:
                search.note = budget.check(ens, ens.length + E)
                if not search.note:
                    yield from ens.advance(ens.length + E, pieces=segments)
                continue
            M = max([burn_in(w.alpha, w.beta, epsilon) for w in win if w.identifiable] + [0])
            if M <= m:
                break
            later = [b for b in ens.boundaries() if b >= M]
            m = later[0] if later and later[0] <= ens.length else M  # round up to a counted boundary
    except _TimeUp:  # the sample of the rounds that ended
        search.note = budget.time_note()
        if m >= ens.length:
            m = psi
    search.m = m


def _report(prog: engine.Progress, ens: _Ensemble, line: str, total: int | None = None) -> None:
    """One line per round (never skipped) and the bar: chain length against the best-known target."""
    prog.log(line)
    prog.update(ens.length, total=total)


@dataclass
class _Budget:
    """Limits on a run: steps per chain, steps in all, seconds."""

    max_length: int
    max_steps: float | None
    time_limit: float | None
    t_start: float

    def check(self, ens: _Ensemble, to_length: int) -> str:
        """'' if the chains may be extended to ``to_length``, else why not."""
        if to_length > self.max_length:
            return f"stopped: chains would exceed max_length={self.max_length}"
        if self.max_steps is not None and ens.steps + ens.chains * (to_length - ens.length) > self.max_steps:
            return f"stopped: max_steps={self.max_steps:g} would be exceeded"
        if self.time_limit is not None and time.perf_counter() - self.t_start > self.time_limit:
            return self.time_note()
        return ""

    def time_note(self) -> str:
        return f"stopped: time_limit={self.time_limit:g} s reached"


def _required(w: TwoState, gr_variance: float, precision: float, confidence: float) -> int:
    """Sample size for one target: the larger of the two-state N (when alpha and beta are seen) and
    the one from the Gelman-Rubin variance. A target never entered or never left in the sample with
    no between-chain variance needs nothing more (its estimate is 0 or 1; flagged as degenerate)."""
    n_two_state = sample_size(w.alpha, w.beta, precision, confidence) if w.identifiable else 0
    n_gr = required_size(gr_variance, precision, confidence) if gr_variance > 0 else 0
    return max(n_two_state, n_gr)


def _fmt(values: Sequence[float]) -> str:
    return ", ".join(f"{v:.6f}" for v in values[:4]) + (" ..." if len(values) > 4 else "")


def _dataset(net: PBN, tgts: list[Target], win: list[TwoState], search: _Search, precision: float,
             confidence: float, epsilon: float, converged: bool) -> xr.Dataset:
    T, m, rh, history, gr_var = len(tgts), search.m, search.rhat, search.history, search.gr_variance
    prob = np.array([w.estimate for w in win])
    ts_var = [two_state_variance(w.alpha, w.beta) if w.identifiable else math.nan for w in win]
    var = [max(a, b) if not math.isnan(a) else b for a, b in zip(ts_var, gr_var)]
    # the achieved interval; none when the run did not converge (its sample means nothing)
    hw = np.array([half_width(w, confidence, v) if converged else math.nan for w, v in zip(win, var)])
    needed = [required_size(v, precision, confidence) if not math.isnan(v) else -1 for v in var]
    M = [burn_in(w.alpha, w.beta, epsilon) if w.identifiable else -1 for w in win]
    labels = [target_label(t, net) for t in tgts]
    hist_len = np.array([h[0] for h in history], dtype=np.int64)
    hist_r = np.array([h[1] for h in history], dtype=np.float64).reshape(len(history), T)
    hist_e = np.array([h[2] for h in history], dtype=np.float64).reshape(len(history), T)
    data = {
        "probability": ("target", prob, {"long_name": "steady-state probability of the target set", "units": "1"}),
        "ci_low": ("target", np.clip(prob - hw, 0, 1),
                   {"long_name": f"lower end of the achieved {confidence:.0%} interval (estimate - half_width; "
                                 "NaN when the run did not converge)", "units": "1"}),
        "ci_high": ("target", np.clip(prob + hw, 0, 1),
                    {"long_name": f"upper end of the achieved {confidence:.0%} interval (estimate + half_width; "
                                  "NaN when the run did not converge)", "units": "1"}),
        "half_width": ("target", hw, {"long_name": "achieved half-width of the interval (larger of the two-state and "
                                                   "the Gelman-Rubin variance; at most the precision)", "units": "1"}),
        "rhat": ("target", np.array(rh), {"long_name": "Gelman-Rubin potential scale reduction at convergence"}),
        "burn_in": ("target", np.full(T, m, dtype=np.int64), {"long_name": "steps discarded from each chain"}),
        "burn_in_required": ("target", np.array(M, dtype=np.int64),
                             {"long_name": "two-state burn-in M from alpha, beta, epsilon"}),
        "sample_size": ("target", np.array([w.size for w in win], dtype=np.int64),
                        {"long_name": "states in the pooled sample (all chains)"}),
        "sample_size_required": ("target", np.array(needed, dtype=np.int64),
                                 {"long_name": "sample size N for the precision and confidence (max of the two-state "
                                               "and the Gelman-Rubin variance)"}),
        "variance_two_state": ("target", np.array(ts_var), {"long_name": "asymptotic variance, two-state model"}),
        "variance_between_chains": ("target", np.array(gr_var),
                                    {"long_name": "asymptotic variance, Gelman-Rubin B at convergence"}),
        "degenerate": ("target", np.array([not w.identifiable for w in win], dtype=np.int8),
                       {"long_name": "1 if the sample never entered or never left the set (alpha or beta = 0)"}),
        "alpha": ("target", np.array([w.alpha for w in win]), {"long_name": "P(enter the target set)"}),
        "beta": ("target", np.array([w.beta for w in win]), {"long_name": "P(leave the target set)"}),
        "history_length": ("round", hist_len, {"long_name": "chain length after the round"}),
        "history_rhat": (("round", "target"), hist_r, {"long_name": "R-hat (Gelman-Rubin rounds)"}),
        "history_estimate": (("round", "target"), hist_e, {"long_name": "estimate after the round"}),
    }
    return xr.Dataset(data, coords={"target": labels, "round": np.arange(len(history))})


MAX_FROZEN_CLASSES = 64


def _by_frozen_class(net: PBN, target: Any, frozen: list[int], initial: Any, seed: int, by_class: bool,
                     kw: dict) -> xr.Dataset:
    """Frozen nodes left random split the chains into closed classes: refuse, or (``by_class``)
    answer for each class, with its frozen values in ``initial`` and seed ``derive_seeds(seed, k)``."""
    names = [net.nodes[i] for i in frozen]
    if not by_class:
        raise ValueError(f"node(s) {', '.join(names)} never change (never perturbed, f = x): their random initial "
                         "values split the chains into classes that never mix, so no single steady state exists. "
                         f"Fix them with initial={{{', '.join(repr(n) + ': 0' for n in names[:3])}}} (--initial "
                         f"{','.join(n + '=0' for n in names[:3])}), or ask for one answer per class with by_class=True (--by-class)")
    if 2 ** len(frozen) > MAX_FROZEN_CLASSES:
        raise ValueError(f"{len(frozen)} frozen nodes make {2 ** len(frozen)} classes (at most {MAX_FROZEN_CLASSES}); "
                         f"fix some of them with initial= ({', '.join(names)})")
    base = dict(initial) if isinstance(initial, Mapping) else {}
    if isinstance(initial, str) and initial != "random":
        raise AssertionError("zeros/ones fix every node")  # unreachable: frozen nodes here are unfixed
    seeds = derive_seeds(seed, np.arange(2 ** len(frozen)))
    parts, labels = [], []
    for k, values in enumerate(itertools.product((0, 1), repeat=len(frozen))):
        assignment = dict(zip(names, values))
        labels.append(",".join(f"{n}={v}" for n, v in assignment.items()))
        parts.append(steady_state(net, target, seed=int(seeds[k]), initial={**base, **assignment}, **kw))
    ds = xr.concat(parts, dim="frozen_class", coords="minimal", compat="override", combine_attrs="override",
                   join="outer")
    ds = ds.assign_coords(frozen_class=labels)
    ds.attrs.update(seed=seed, frozen_nodes=",".join(names), classes=len(labels),
                    converged=int(all(p.attrs["converged"] for p in parts)))
    return ds
