"""The payload of a batched SSA shard (many parameter points of one network) and the per-point
reductions that the CPU and GPU paths share (NumPy or CuPy as ``xp``); see :mod:`distsim.ssa.batch`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..models.compile_reactions import CompiledNetwork, PointTables
from .errors import ERR_MASK, FATAL
from .simulate import PILOT, bin_layout


@dataclass(frozen=True)
class PointsBlock:
    """Shard payload: realizations 0 .. R-1 of every point whose rows ``tables`` and ``seeds`` hold."""

    compiled: CompiledNetwork  # the network at its own values (the tables give each point's)
    tables: PointTables
    seeds: np.ndarray  # uint32 [P]
    realizations: int
    grid: np.ndarray
    method: str
    quantiles: tuple[float, ...] | None  # None: no histograms
    max_bins: int
    max_events: int

    @property
    def n_points(self) -> int:
        return len(self.seeds)

    @property
    def pilot(self) -> int:
        """Realizations of each point's histogram pilot (0: no histograms)."""
        return 0 if self.quantiles is None else min(self.realizations, PILOT)

    def rows(self, a: int, b: int) -> PointsBlock:
        t = self.tables
        return PointsBlock(self.compiled, PointTables(t.x0[a:b], t.theta[a:b], t.law_arg[a:b]), self.seeds[a:b],
                           self.realizations, self.grid, self.method, self.quantiles, self.max_bins, self.max_events)



def event_reductions(events: Any, errors: Any, pilot: int, xp: Any = np) -> dict:
    """Per point (rows of ``events``/``errors``, [P, R]): events in total, the count of each error
    code, fatal errors among the first ``pilot`` realizations, and the first fatal error of the run
    and of its pilot ({(point, "run" | "pilot"): (realization, word)})."""
    codes = errors & ERR_MASK
    fatal = (codes == FATAL[0]) | (codes == FATAL[1]) | (codes == FATAL[2])
    counts = xp.stack([(codes == k).sum(axis=1) for k in range(8)], axis=1)  # codes 0 .. 4 in use
    out = {"events_sum": events.sum(axis=1, dtype=xp.uint64), "error_counts": counts,
           "pilot_fatal": fatal[:, :pilot].sum(axis=1), "first": {}}
    has = xp.flatnonzero(fatal.any(axis=1))
    if has.size:
        for p in (int(i) for i in has):
            r = int(xp.argmax(fatal[p]))
            out["first"][(p, "run")] = (r, int(errors[p, r]))
            if r < pilot:
                out["first"][(p, "pilot")] = (r, int(errors[p, r]))
    return out


def pilot_bins(vals: Any, pilot: int, max_bins: int, xp: Any) -> tuple[Any, Any, Any]:
    """Histogram bins per point from the first ``pilot`` realizations of grid states ``vals``
    (K, S, P, R), as :func:`distsim.ssa.simulate._histogram_bins` does from its CPU pilot."""
    head = vals[:, :, :, :pilot]
    lo_obs = head.min(axis=(0, 3)).T.astype(xp.int64)  # (P, S)
    hi_obs = head.max(axis=(0, 3)).T.astype(xp.int64)
    return bin_layout(lo_obs, hi_obs, max_bins)


def quantile_thresholds(R: int, quantiles: Sequence[float]) -> np.ndarray:
    """Per quantile q the least count c with c / R >= q - 1e-12 (float64), so that the first bin whose
    cumulative count reaches c is the one :func:`distsim.ssa.simulate._histograms` picks."""
    cdf = np.arange(R + 1, dtype=np.int64) / R
    return np.asarray([int(np.argmax(cdf >= q - 1e-12)) for q in quantiles], dtype=np.int64)


def quantile_values(hist: Any, lo: Any, width: Any, R: int, quantiles: Sequence[float], xp: Any) -> Any:
    """Quantile values (P, Q, K, S) from histograms (P, K, S, B): bin index = bins whose cumulative
    count is below the threshold; value = lowest count of that bin."""
    cum = xp.cumsum(hist, axis=3)
    out = []
    for thr in quantile_thresholds(R, quantiles):
        idx = (cum < int(thr)).sum(axis=3)  # (P, K, S)
        out.append(lo[:, None, :] + width[:, None, :] * idx)
    P, K, S, _ = hist.shape
    return xp.stack(out, axis=1).astype(xp.int64) if out else xp.zeros((P, 0, K, S), dtype=xp.int64)


def concat_parts(parts: list[dict]) -> dict:
    out = {k: np.concatenate([p[k] for p in parts]) for k in parts[0] if k != "first"}
    out["first"] = {}
    base = 0
    for p in parts:
        out["first"].update({(base + q, kind): v for (q, kind), v in p["first"].items()})
        base += len(p["events_sum"])
    return out
