"""What each thread block of a PBN GPU launch does (pure NumPy; the GPU kernel reads it).

The device state of one or more *runs* (a run: one steady state or simulation, or one point of a
batched sweep) is a stack of tiles of 32 x BLOCK chains (:class:`Runs`). A launch gives every
thread block a *task* (``TASK_DTYPE``, the twin of ``struct ds_task`` in ``kernels/pbn_sliced.cu``):
which tile, from which step, for how many steps, and whose chains (seed, first chain id,
perturbation table, knockouts, counters slot).

Long advances are balanced over the device (:func:`plan_passes`): a launch of more tiles than the
device holds at once runs in waves, and a last, partial wave leaves most of each SM idle (a 2-GPU
steady state of 2^22 chains gave each H200 512 tiles for 396 resident: 1.3 waves). The tiles are
then cut into g groups that take turns, a at a time (a of every g passes), each pass filling the
device in one wave; each tile still takes its steps in order, so the bits do not change.
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
                       ("n_fix", "<i4"), ("flags", "<i4")])
MIN_PASS_STEPS = 256  # shorter passes are not worth a launch each
MAX_GROUPS = 16


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


def rotation(n_tiles: int, capacity: int, max_groups: int = MAX_GROUPS) -> tuple[int, int] | None:
    """(g, a): g groups of tiles taking turns, a at a time, that fit the device in one wave per pass
    (a * ceil(n_tiles / g) <= capacity) in the fewest wave-times g / a; None when one launch (its
    ceil(n_tiles / capacity) waves) is not at least a quarter of a wave slower."""
    if n_tiles <= capacity or capacity < 1:
        return None
    best = None
    for g in range(2, max_groups + 1):
        a = min(g - 1, capacity // -(-n_tiles // g))
        if a >= 1 and (best is None or g / a < best[0] / best[1] - 1e-12):
            best = (g, a)
    waves = -(-n_tiles // capacity)
    return best if best is not None and best[0] / best[1] <= waves - 0.25 else None


def plan_passes(tasks: np.ndarray, capacity: int, min_steps: int | None = None) -> list[np.ndarray]:
    """Launches (arrays of tasks, in order) that advance every task's tile by its ``nsteps``.

    One launch when the tiles fit the device (``capacity`` resident blocks), when their lengths
    differ, or when passes would be short; else the rotation of :func:`rotation`: group j runs in
    passes j .. j+a-1 (mod g), its first piece carrying the remainder of nsteps / a. Only each
    tile's last piece keeps the LAST flag."""
    min_steps = MIN_PASS_STEPS if min_steps is None else min_steps
    n = len(tasks)
    lengths = tasks["nsteps"]
    rot = rotation(n, capacity) if n and (lengths == lengths[0]).all() else None
    if rot is None or int(lengths[0]) // rot[1] < min_steps:
        return [tasks]
    g, a = rot
    total = int(lengths[0])
    s, r = divmod(total, a)
    flags = tasks["flags"]
    passes: list[list[np.ndarray]] = [[] for _ in range(g)]
    for j, group in enumerate(np.array_split(np.arange(n), g)):
        offset = 0
        for k, p in enumerate(sorted((j + i) % g for i in range(a))):
            piece = tasks[group].copy()
            length = s + r if k == 0 else s
            piece["step0"] += np.uint64(offset)
            piece["nsteps"] = length
            piece["flags"] = flags[group] if k == a - 1 else flags[group] & ~LAST
            passes[p].append(piece)
            offset += length
    return [np.concatenate(p) for p in passes]


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
