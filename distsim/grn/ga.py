"""The GA on one device: a block of islands advanced together, written once for NumPy and CuPy.

Every array op here runs unchanged on ``numpy`` (CPU backend) or ``cupy`` (GPU backend); the kernels
(evaluation, Philox draws, initial links, breeding = steps 2-4 below, the (mu + lambda) survivors'
gather, the best-so-far update) come from :mod:`.cpu` or :mod:`.gpu`, behind ``ops``. All decisions
are integer or Philox-addressed, and sorting uses unique integer keys (``score * 2N + index``), so
both backends produce identical populations generation by generation.

Generation g of an island (``model`` 'master-slave'/'island' = panmictic, 'cellular'/'hybrid' =
torus grid):

1. parents: *elitist* sorts the island and pairs ranks (0,1), (2,3), ...; *roulette* draws N
   parents with probability proportional to ``score_worst - score + 1`` (the fitness margin over
   the island's worst individual, in units of the exact score, so the best is favoured in linear
   proportion to its fitness advantage); *cellular* pairs every cell with the best of its
   neighbours (Moore in standard mode, von Neumann in faithful mode);
2. crossover of each pair at link cut c = floor(u n^2) (links [0, c) from the first parent, in
   faithful mode [0, c] as the reference's write-back does) with the linked rule cut c // n + 1;
   child 2b takes its head from the first parent, child 2b+1 from the second;
3. connectivity: a child whose link count differs from the reference's by
   ``max_connectivity_distance * n^2`` or more is replaced by its head parent;
4. mutation: with probability ``link_mutation`` one link position changes to one of its two other
   values, with probability ``rule_mutation`` one gene's rule changes to another allowed rule;
5. replacement: *standard* keeps the best N of parents and children (panmictic) or lets a child
   replace its cell when it is not worse (cellular); *faithful* lets children overwrite their
   parents (the reference's in-place write, a later pair winning a slot drawn twice).

Migration (every ``migration_interval`` generations, starting at generation 0) copies the k best
of island i over the k worst of island i+1 (a ring). Islands of one block migrate on the device;
the driver carries the migrants between blocks.

Faithful mode does not copy the reference's defects (write races, the half-grid cellular launch,
its fitness-independent roulette, random-slot migration in cellular mode) nor its initial
population (a shuffle of the reference links: here every position is drawn with the reference's
activator/repressor frequencies); immigrants are ranked with the island rather than paired with
each other in their first generation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from . import cpu
from .problem import Problem, _fraction, n_words, pack_links, pack_state

MODELS = ("master-slave", "island", "cellular", "hybrid")
SELECTIONS = ("elitist", "roulette")
MODES = ("standard", "faithful")
PARALLEL_WORK = 1 << 21  # word operations of an evaluation above which the CPU kernel uses threads


@dataclass(frozen=True)
class GAParams:
    model: str
    selection: str
    mode: str
    population: int  # per island
    islands: int  # in the whole run
    migration_rate: int  # migrants per island and event
    migration_interval: int  # generations between migrations
    link_mutation: float
    rule_mutation: float
    seed: int
    generations: int
    stop_score: int  # stop once an island's best score is <= this

    @property
    def cellular(self) -> bool:
        return self.model in ("cellular", "hybrid")

    @property
    def migrates(self) -> bool:
        return self.islands > 1 and self.migration_rate > 0


@dataclass(frozen=True)
class Breeding:
    """What breeding (steps 2-4) takes besides the population; fixed for a run."""

    seed: int
    N: int  # population per island
    paired: int  # 1: panmictic pairs (parents = ranks), 0: cellular (parents = each cell's mate)
    extra: int  # 1 in faithful mode: the link cut c keeps [0, c] from the head
    link_threshold: int  # mutation thresholds on a 32-bit word (see _threshold); 0: none
    rule_threshold: int


@dataclass(frozen=True, eq=False)
class Consts:
    """A problem in the packed form the kernels use (host NumPy arrays)."""

    n: int
    W: int
    steps: int
    x0: np.ndarray  # [W] uint32
    target: np.ndarray  # [W] uint32
    ref_act: np.ndarray  # [W, n] uint32
    ref_rep: np.ndarray
    wn: int  # score weight of a node mismatch (p n)
    wl: int  # score weight of a link mismatch (q - p)
    nnz_ref: int
    t_act: int  # initial-link thresholds on a 32-bit word
    t_rep: int
    conn_p: int  # max connectivity distance = conn_p / conn_q
    conn_q: int
    allowed: np.ndarray  # allowed rule codes, uint8
    max_score: int

    @classmethod
    def of(cls, problem: Problem) -> "Consts":
        n = problem.n
        p, q = problem.weights()
        act, rep = pack_links(problem.links)
        n_act = int((problem.links == 1).sum())
        n_rep = int((problem.links == -1).sum())
        cf = _fraction(problem.max_connectivity_distance, "max_connectivity_distance")
        return cls(n=n, W=n_words(n), steps=problem.iterations, x0=pack_state(problem.initial),
                   target=pack_state(problem.target), ref_act=act, ref_rep=rep, wn=p * n, wl=q - p,
                   nnz_ref=n_act + n_rep, t_act=(n_act << 32) // (n * n), t_rep=(n_rep << 32) // (n * n),
                   conn_p=cf.numerator, conn_q=cf.denominator, allowed=np.array(problem.rules, np.uint8),
                   max_score=p * n * n + (q - p) * n * n)


class CPUOps:
    """The kernels of the CPU backend (Numba) behind the interface :class:`IslandBlock` uses."""

    xp = np

    def __init__(self, c: Consts):
        self.c = c

    def asnumpy(self, a: Any) -> np.ndarray:
        return np.asarray(a)

    def _parallel(self, P: int) -> bool:
        """Whether the kernels of P individuals use threads (breeding with evaluation: the same rule)."""
        c = self.c
        return P * c.W * c.n * (c.steps + 1) >= PARALLEL_WORK

    def evaluate(self, act: np.ndarray, rep: np.ndarray, rules: np.ndarray) -> np.ndarray:
        c = self.c
        P = act.shape[0]
        out = np.empty(P, np.int64)
        if P:
            kernel = cpu.evaluate if self._parallel(P) else cpu.evaluate_serial
            kernel(np.ascontiguousarray(act), np.ascontiguousarray(rep), np.ascontiguousarray(rules), c.x0, c.target,
                   c.ref_act, c.ref_rep, c.steps, c.wn, c.wl, out)
        return out

    def rng(self, seed: int, islands: np.ndarray, purpose: int, gen: int, n: int, blocks: int) -> np.ndarray:
        out = np.empty((len(islands), n, 4 * blocks), np.uint32)
        cpu.philox_fill(seed, islands.astype(np.int64), purpose, gen, n, blocks, out)
        return out

    def init_links(self, seed: int, islands: np.ndarray, N: int) -> tuple[np.ndarray, np.ndarray]:
        c = self.c
        act = np.empty((len(islands), N, c.W, c.n), np.uint32)
        rep = np.empty_like(act)
        cpu.init_links(seed, islands.astype(np.int64), np.uint64(c.t_act), np.uint64(c.t_rep), act, rep)
        return act, rep

    def scatter_max(self, target: np.ndarray, index: np.ndarray, values: np.ndarray) -> None:
        np.maximum.at(target, index, values)

    def breed(self, act: np.ndarray, rep: np.ndarray, rules: np.ndarray, parents: np.ndarray, islands: np.ndarray,
              gen: int, b: Breeding) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Children (act [P, W, n], rep, rules [P, n]) of the population act/rep/rules [P = K N, ...] at
        generation ``gen``: steps 2-4 of the module docstring; ``parents`` [K, N] as :class:`Breeding` says."""
        c = self.c
        ca, cr, cru = np.empty_like(act), np.empty_like(rep), np.empty_like(rules)
        kernel = cpu.breed if self._parallel(act.shape[0]) else cpu.breed_serial
        kernel(np.ascontiguousarray(act), np.ascontiguousarray(rep), np.ascontiguousarray(rules),
               np.ascontiguousarray(parents, np.int64).reshape(-1), b.paired, b.N, b.seed, islands.astype(np.int64),
               gen, cpu.P_CROSS, cpu.P_MUTATE, b.extra, c.nnz_ref, c.conn_p, c.conn_q, np.uint64(b.link_threshold),
               np.uint64(b.rule_threshold), c.allowed, ca, cr, cru)
        return ca, cr, cru

    def select(self, order: np.ndarray, parents: tuple, children: tuple) -> tuple[np.ndarray, ...]:
        """(act, rep, rules, score) [K, N, ...]: individual order[k, i] (< N: of ``parents``, else child
        order - N of ``children``, each (act, rep, rules, score)) for i < N."""
        K, N = parents[3].shape
        out = tuple(np.empty((K, N) + a.shape[2:], a.dtype) for a in parents)
        cpu.select(order, *(np.ascontiguousarray(a) for a in parents + children), *out)
        return out

    def update_best(self, gen: int, current: tuple, best: tuple) -> tuple[np.ndarray, ...]:
        """New (score, act, rep, rules, generation) of the best so far per island from ``best`` (the same
        five) and the ``current`` (score, act, rep, rules) population: each island's best (lowest key)
        replaces it when strictly better; then the current islands' lowest and summed scores [K]."""
        K = current[0].shape[0]
        out = tuple(np.empty_like(a) for a in best) + (np.empty(K, np.int64), np.empty(K, np.int64))
        cpu.update_best(gen, *(np.ascontiguousarray(a) for a in current + best), *out)
        return out


def grid_shape(N: int) -> tuple[int, int]:
    """(rows, cols) of a cellular island: cols = the largest divisor of N not above sqrt(N)."""
    cols = max(d for d in range(1, int(np.sqrt(N)) + 1) if N % d == 0)
    return N // cols, cols


def neighbours(N: int, moore: bool) -> np.ndarray:
    """[N, 8] (Moore) or [N, 4] (von Neumann: up, down, right, left) neighbour cells on the torus."""
    rows, cols = grid_shape(N)
    r, c = np.divmod(np.arange(N), cols)
    offs = [(-1, 0), (1, 0), (0, 1), (0, -1)]
    if moore:
        offs += [(-1, -1), (-1, 1), (1, -1), (1, 1)]
    return np.stack([((r + dr) % rows) * cols + (c + dc) % cols for dr, dc in offs], axis=1).astype(np.int64)


class IslandBlock:
    """Islands ``islands`` (global ids) of one run, held on one device and advanced together."""

    def __init__(self, ops: Any, c: Consts, prm: GAParams, islands: np.ndarray):
        xp = ops.xp
        self.ops, self.c, self.prm, self.xp = ops, c, prm, xp
        self.islands = np.asarray(islands, np.int64)
        K, N, n = len(self.islands), prm.population, c.n
        self.K, self.N = K, N
        rules_mutate = prm.rule_mutation > 0 and len(c.allowed) > 1
        self.breeding = Breeding(prm.seed, N, int(not prm.cellular), int(prm.mode == "faithful"),
                                 _threshold(prm.link_mutation) if prm.link_mutation > 0 else 0,
                                 _threshold(prm.rule_mutation) if rules_mutate else 0)
        self.base = (xp.arange(K, dtype=xp.int64) * N)[:, None]
        self.index = xp.arange(2 * N, dtype=xp.int64)
        self.ranks = xp.repeat(self.index[None, :N], K, axis=0)  # [K, N]
        self.ranked = False  # every island in key order (its argsort is self.ranks): set by (mu + lambda)
        self._stats: tuple[Any, Any] | None = None  # stats() of the current scores, when known
        self.neigh = xp.asarray(neighbours(N, moore=prm.mode == "standard")) if prm.cellular else None
        self.act, self.rep = ops.init_links(prm.seed, self.islands, N)
        words = ops.rng(prm.seed, self.islands, cpu.P_INIT_RULE, 0, N, (n + 3) // 4)[..., :n]
        pick = (words.astype(xp.uint64) * xp.uint64(len(c.allowed))) >> xp.uint64(32)
        self.rules = xp.asarray(c.allowed)[pick.astype(xp.int64)]
        self.score = ops.evaluate(self._flat(self.act), self._flat(self.rep), self._flat(self.rules)).reshape(K, N)
        self.generation = 0
        i = xp.argmin(self._keys(self.score), axis=1)  # each island's best: lowest score, then index
        rows = xp.arange(K)
        self.best_score = self.score[rows, i]
        self.best_act, self.best_rep, self.best_rules = self.act[rows, i], self.rep[rows, i], self.rules[rows, i]
        self.best_generation = xp.zeros(K, xp.int64)

    # -- helpers ----------------------------------------------------------------------------------------------
    def _flat(self, a: Any) -> Any:
        return a.reshape((self.K * self.N,) + a.shape[2:])

    def _keys(self, score: Any) -> Any:
        return score * (2 * self.N) + self.index[: score.shape[1]]

    def stats(self) -> tuple[Any, Any]:
        """(best score, sum of scores) per island, device arrays [K]."""
        if self._stats is None:
            self._stats = self.score.min(axis=1), self.score.sum(axis=1)
        return self._stats

    # -- migration --------------------------------------------------------------------------------------------
    def emigrants(self) -> tuple[Any, Any, Any, Any]:
        """Copies of the k best of every island: (act [K,k,W,n], rep, rules [K,k,n], score [K,k])."""
        xp, k = self.xp, self.prm.migration_rate
        order = xp.argsort(self._keys(self.score), axis=1)[:, :k]
        rows = xp.arange(self.K)[:, None]
        return self.act[rows, order], self.rep[rows, order], self.rules[rows, order], self.score[rows, order]

    def immigrate(self, incoming: tuple[Any, Any, Any, Any]) -> None:
        """Island l receives incoming[.][l]: emigrant t overwrites the island's t-th of its k worst."""
        xp, k = self.xp, self.prm.migration_rate
        worst = xp.argsort(self._keys(self.score), axis=1)[:, self.N - k:]
        rows = xp.arange(self.K)[:, None]
        for arr, new in zip((self.act, self.rep, self.rules, self.score), incoming):
            arr[rows, worst] = new
        self.ranked = False
        self._stats = None

    def migrate(self, external: tuple | None) -> None:
        """Ring migration inside the block; ``external`` (host arrays) feeds the first island when the ring
        crosses blocks (else the block's last island does); :meth:`outgoing` is what the next block gets."""
        xp = self.xp
        em = self.emigrants()
        if external is not None:
            first = tuple(xp.asarray(a)[None] for a in external)
        else:
            first = tuple(a[-1:] for a in em)
        self.immigrate(tuple(xp.concatenate([f, a[:-1]], axis=0) for f, a in zip(first, em)))

    def outgoing(self) -> tuple[np.ndarray, ...]:
        """The last island's emigrants as host arrays (they go to the next block's first island)."""
        return tuple(self.ops.asnumpy(a[-1]) for a in self.emigrants())

    # -- one generation ---------------------------------------------------------------------------------------
    def step(self) -> None:
        xp, ops, c, prm = self.xp, self.ops, self.c, self.prm
        K, N = self.K, self.N
        g = self.generation + 1
        u64 = xp.uint64
        if prm.cellular:  # each cell's mate: its best neighbour
            m = xp.argmin(self._keys(self.score)[:, self.neigh], axis=2)  # [K, N]
            parents = self.neigh[self.index[:N][None, :], m]
        elif prm.selection == "elitist":  # ranks, paired (0,1), (2,3), ...
            parents = self.ranks if self.ranked else xp.argsort(self._keys(self.score), axis=1)
        else:
            wgt = self.score.max(axis=1, keepdims=True) - self.score + 1  # int64 >= 1
            cum = xp.cumsum(wgt.reshape(-1))
            start = cum.reshape(K, N)[:, :1] - wgt[:, :1]
            total = wgt.sum(axis=1, keepdims=True).astype(u64)
            w = ops.rng(prm.seed, self.islands, cpu.P_SELECT, g, N, 1).astype(u64)
            u = (((w[..., 0] << u64(32)) | w[..., 1]) % total).astype(xp.int64) + start
            parents = xp.searchsorted(cum, u.reshape(-1), side="right").reshape(K, N) - self.base
        ca, cr, cru = ops.breed(self._flat(self.act), self._flat(self.rep), self._flat(self.rules), parents,
                                self.islands, g, self.breeding)  # steps 2-4
        cs = ops.evaluate(ca, cr, cru).reshape(K, N)
        self._replace(ca.reshape(K, N, c.W, c.n), cr.reshape(K, N, c.W, c.n), cru.reshape(K, N, c.n), cs, parents)
        self.generation = g
        self._update_best()

    def _replace(self, ca: Any, cr: Any, cru: Any, cs: Any, parents: Any) -> None:
        xp, prm = self.xp, self.prm
        K, N = self.K, self.N
        if prm.cellular:
            take = cs <= self.score if prm.mode == "standard" else xp.ones((K, N), bool)
            self.act = xp.where(take[..., None, None], ca, self.act)
            self.rep = xp.where(take[..., None, None], cr, self.rep)
            self.rules = xp.where(take[..., None], cru, self.rules)
            self.score = xp.where(take, cs, self.score)
        elif prm.mode == "standard":  # (mu + lambda): the best N of parents and children
            order = xp.argsort(self._keys(xp.concatenate([self.score, cs], axis=1)), axis=1)
            self.act, self.rep, self.rules, self.score = self.ops.select(
                order, (self.act, self.rep, self.rules, self.score), (ca, cr, cru, cs))
            self.ranked = True  # scores now rise with the index, so keys do strictly
        elif prm.selection == "elitist":  # faithful: every slot is crossed, children overwrite the pair
            self.act, self.rep, self.rules, self.score = ca, cr, cru, cs
        else:  # faithful roulette: child k overwrites its head parent's (parents[k]) slot; the last child wins
            winner = xp.full(K * N, -1, xp.int32)
            self.ops.scatter_max(winner, (parents + self.base).reshape(-1), xp.arange(K * N, dtype=xp.int32))
            take = (winner >= 0).reshape(K, N)
            src = xp.maximum(winner, 0)
            flat = lambda a: a.reshape((K * N,) + a.shape[2:])  # noqa: E731
            self.act = xp.where(take[..., None, None], flat(ca)[src].reshape(ca.shape), self.act)
            self.rep = xp.where(take[..., None, None], flat(cr)[src].reshape(cr.shape), self.rep)
            self.rules = xp.where(take[..., None], flat(cru)[src].reshape(cru.shape), self.rules)
            self.score = xp.where(take, cs.reshape(-1)[src].reshape(K, N), self.score)

    def _update_best(self) -> None:
        *best, s_min, s_sum = self.ops.update_best(
            self.generation, (self.score, self.act, self.rep, self.rules),
            (self.best_score, self.best_act, self.best_rep, self.best_rules, self.best_generation))
        self.best_score, self.best_act, self.best_rep, self.best_rules, self.best_generation = best
        self._stats = s_min, s_sum


def _threshold(prob: float) -> int:
    """Integer acceptance threshold on a 32-bit word: accept when word < threshold."""
    return min(1 << 32, int(round(prob * 2.0**32)))
