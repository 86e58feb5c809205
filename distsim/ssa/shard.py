"""The SSA shard task: simulate a block of realizations and return exact integer reductions.

Realizations are independent, so a shard is a single round; it is a pure function of its payload
(network, seed, first realization, count, grid, method, outputs), so Dask may rerun it anywhere.
"""

from __future__ import annotations

from ..engine import ShardContext
from . import cpu
from .block import METHODS, SSABlock, event_summary

def simulate_block(ctx: ShardContext, b: SSABlock) -> dict:
    """Shard task (runs on a worker): CPU kernels, or the GPU ones on a GPU worker."""
    if ctx.backend == "gpu":
        from .gpu import simulate_block_gpu

        return simulate_block_gpu(b)
    out = cpu.simulate_block(b.compiled, real0=b.real0, realizations=b.realizations, seed=b.seed, grid=b.grid,
                              method=METHODS[b.method], keep_trajectories=b.keep_trajectories,
                              keep_final=b.keep_final, hist_lo=b.hist_lo, hist_width=b.hist_width, bins=b.bins,
                              max_events=b.max_events)
    if not b.keep_events:
        out.update(event_summary(out.pop("events"), out.pop("errors")))
    return out
