"""What each thread block of a PBN GPU launch does (pure NumPy; the GPU kernel reads it).

The device state of one or more *runs* (a run: one steady state or simulation, or one point of a
batched sweep) is a stack of tiles of 32 x BLOCK chains (:class:`Runs`). A launch gives every
thread block a *task* (``TASK_DTYPE``, the twin of ``struct ds_task`` in ``kernels/pbn_sliced.cu``):
which tile, from which step, for how many steps, and whose chains (seed, first chain id,
perturbation table, knockouts, counters slot).

Long advances are balanced over the device (:func:`plan_launch`): a launch of more tiles than the
device holds at once would run in waves, and a last, partial wave leaves most of each SM idle (a 2-GPU
steady state of 2^22 chains gives each H200 512 tiles for 396 resident: 1.3 waves). Each tile's
advance is then cut into P consecutive pieces, ordered piece by piece over the tiles; the blocks take
them from a queue in that order (a ticket each), and a piece waits until its tile's previous piece is
done. So the device stays full to the end of the launch, and each tile still takes its steps in order:
the bits do not change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

BLOCK = 128  # threads per block (kernels/pbn_sliced.cu DS_BLOCK)
TILE_CHAINS = 32 * BLOCK
LAST = 1  # task flag: the tile's last task of the advance (the kernel counts the occupancy)
TASK_DTYPE = np.dtype([("chain0", "<u8"), ("step0", "<u8"), ("tile", "<u4"), ("seed", "<u4"), ("nsteps", "<i4"),
                       ("n_chains", "<i4"), ("slot", "<i4"), ("pert", "<i4"), ("n_pert", "<i4"), ("fix", "<i4"),
                       ("n_fix", "<i4"), ("flags", "<i4"), ("piece", "<i4"), ("unused", "<i4")])
MIN_PIECE_STEPS = 256  # shorter pieces are not worth reloading a tile for
MAX_PIECES = 32


def tiles_for(n_chains: int) -> int:
    """Tiles holding ``n_chains`` chains (at least one)."""
    return max(1, -(-n_chains // TILE_CHAINS))


@dataclass(frozen=True)
class Runs:
    """The runs stacked in one device state, with their tables (``pert_list``/``pert_thresh``: the
    perturbation tables one after another; ``fix_list``: (node, value) pairs of the knockouts)."""

    tile0: np.ndarray  # int64 [R]: first tile of each run
    n_chains: np.ndarray  # int64 [R]
    chain0: np.ndarray  # int64 [R]: id of each run's first chain
    seed: np.ndarray  # uint32 [R]
    pert: np.ndarray  # int32 [R, 2]: offset and length in pert_list/pert_thresh
    fix: np.ndarray  # int32 [R, 2]: offset and length (pairs) in fix_list
    pert_list: np.ndarray  # int32
    pert_thresh: np.ndarray  # uint32
    fix_list: np.ndarray  # int32 [2 * pairs] (at least one entry)

    @classmethod
    def stack(cls, n_chains: Sequence[int], chain0: Sequence[int], seeds: Sequence[int],
              perts: Sequence[tuple[np.ndarray, np.ndarray]],
              fixes: Sequence[Sequence[tuple[int, int]]] | None = None) -> "Runs":
        """Runs in order: chains, first chain ids, seeds, (perturbable nodes, thresholds) and knockouts."""
        R = len(n_chains)
        fixes = fixes if fixes is not None else [()] * R
        tiles = np.array([tiles_for(int(n)) for n in n_chains], dtype=np.int64)
        plen = np.array([len(p[0]) for p in perts], dtype=np.int32)
        flen = np.array([len(f) for f in fixes], dtype=np.int32)
        pairs = [v for f in fixes for pair in f for v in pair]
        return cls(
            tile0=np.concatenate([[0], np.cumsum(tiles)[:-1]]).astype(np.int64),
            n_chains=np.asarray(n_chains, dtype=np.int64), chain0=np.asarray(chain0, dtype=np.int64),
            seed=np.asarray(seeds, dtype=np.uint32),
            pert=np.stack([np.concatenate([[0], np.cumsum(plen)[:-1]]), plen], axis=1).astype(np.int32),
            fix=np.stack([np.concatenate([[0], np.cumsum(flen)[:-1]]), flen], axis=1).astype(np.int32),
            pert_list=np.concatenate([np.asarray(p[0], np.int32) for p in perts] + [np.array([-1], np.int32)]),
            pert_thresh=np.concatenate([np.asarray(p[1], np.uint32) for p in perts] + [np.array([0], np.uint32)]),
            fix_list=np.array(pairs if pairs else [0, 0], dtype=np.int32))

    @property
    def n_runs(self) -> int:
        return len(self.tile0)

    @property
    def n_tiles(self) -> int:
        return int(self.tile0[-1] + tiles_for(int(self.n_chains[-1])))

    def tasks(self, step0: Sequence[int], nsteps: Sequence[int], runs: Sequence[int] | None = None) -> np.ndarray:
        """One task per tile of the given runs (default all): run r from ``step0[r]`` for ``nsteps[r]``."""
        runs = list(range(self.n_runs)) if runs is None else list(runs)
        per = [tiles_for(int(self.n_chains[r])) for r in runs]
        out = np.zeros(sum(per), dtype=TASK_DTYPE)
        r_of = np.repeat(np.asarray(runs, dtype=np.int64), per)
        k = np.concatenate([np.arange(p) for p in per]) if per else np.zeros(0, np.int64)
        out["tile"] = self.tile0[r_of] + k
        out["chain0"] = self.chain0[r_of] + k * TILE_CHAINS
        out["n_chains"] = np.minimum(TILE_CHAINS, self.n_chains[r_of] - k * TILE_CHAINS)
        out["seed"] = self.seed[r_of]
        out["step0"] = np.asarray(step0, dtype=np.uint64)[r_of]
        out["nsteps"] = np.asarray(nsteps, dtype=np.int64)[r_of]
        out["slot"] = r_of
        out["pert"], out["n_pert"] = self.pert[r_of, 0], self.pert[r_of, 1]
        out["fix"], out["n_fix"] = self.fix[r_of, 0], self.fix[r_of, 1]
        out["flags"] = LAST
        return out


def pieces(n_tiles: int, capacity: int, max_pieces: int = MAX_PIECES) -> int:
    """Pieces per tile: the n_tiles * P pieces, taken in order by ``capacity`` resident blocks, take
    ceil(n_tiles P / capacity) / P wave-times (equal pieces); the smallest P within 0.1% of the best."""
    if n_tiles <= capacity or capacity < 1:
        return 1
    cost = {p: -(-n_tiles * p // capacity) / p for p in range(1, max(1, max_pieces) + 1)}
    best = min(cost.values())
    return min(p for p, c in cost.items() if c <= best * 1.001)


def plan_launch(tasks: np.ndarray, capacity: int, min_steps: int | None = None) -> np.ndarray:
    """The tasks of one launch that advances every task's tile by its ``nsteps``: P pieces per tile
    (:func:`pieces`, no piece shorter than ``min_steps``), piece k of every tile before piece k + 1;
    a tile's first piece carries the remainder of nsteps / P and only its last keeps the LAST flag."""
    min_steps = MIN_PIECE_STEPS if min_steps is None else min_steps
    n = len(tasks)
    longest = int(tasks["nsteps"].max(initial=0))
    P = pieces(n, capacity, min(MAX_PIECES, longest // max(1, min_steps)))
    out = np.repeat(tasks[np.newaxis], P, axis=0)  # [P, n]
    size, rest = np.divmod(tasks["nsteps"], P)
    lengths = np.where(np.arange(P)[:, None] == 0, size + rest, size)
    out["step0"] += np.concatenate([np.zeros((1, n), np.int64), np.cumsum(lengths, axis=0)[:-1]]).astype(np.uint64)
    out["nsteps"] = lengths
    out["flags"][:-1] &= ~LAST
    out["piece"] = np.arange(P)[:, None]
    return out.ravel()


def split_steps(tasks: np.ndarray, max_steps: int) -> list[np.ndarray]:
    """The tasks cut into consecutive advances of at most ``max_steps`` steps (LAST on the final one)."""
    total = int(tasks["nsteps"].max(initial=0))
    if total <= max_steps:
        return [tasks]
    out = []
    for start in range(0, total, max_steps):
        part = tasks.copy()
        part["step0"] += np.uint64(start)
        part["nsteps"] = np.clip(tasks["nsteps"] - start, 0, max_steps)
        if start + max_steps < total:
            part["flags"] &= ~LAST
        out.append(part)
    return out
