"""The SSA shard task: simulate a block of realizations and return exact integer reductions.

Realizations are independent, so a shard is a single round; it is a pure function of its payload
(network, seed, first realization, count, grid, method, outputs), so Dask may rerun it anywhere.
"""

from __future__ import annotations

from ..engine import ShardContext
from . import cpu, gpu_events
from .block import SSABlock, event_summary
from .methods import METHODS


def simulate_block(ctx: ShardContext, b: SSABlock) -> dict:
    """Shard task (runs on a worker): the method's CPU kernel, or its GPU path on a GPU worker (for
    every method, kernels/ssa_events.cu when the network has SBML events or rules)."""
    method = METHODS[b.method]
    if ctx.backend == "gpu":
        return (method.gpu if b.compiled.events is None else gpu_events.simulate)(b, method)
    out = cpu.simulate_block(b.compiled, method=method.cpu, real0=b.real0, realizations=b.realizations, seed=b.seed,
                             grid=b.grid, keep_trajectories=b.keep_trajectories, keep_final=b.keep_final,
                             hist_lo=b.hist_lo, hist_width=b.hist_width, bins=b.bins, max_events=b.max_events)
    if not b.keep_events:
        out.update(event_summary(out.pop("events"), out.pop("errors"), b.real0))
    return out
