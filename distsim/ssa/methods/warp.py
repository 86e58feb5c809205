"""Method 'warp' (seed 004, Komarov & D'Souza 2012): one GPU warp (or 16, 8 or 4 of its lanes, for large
ensembles of sparse networks: :func:`distsim.ssa.gpu.warp_lanes`) per realization, propensities summed
32 at a time level by level (``kernels/ssa_warp.cu``). Same random numbers as the other methods but
sums in another order, so equal to the CPU in distribution, not bit for bit. CPU workers run the
sum tree (its CPU functions are those of 'tree'); so do GPUs for networks with SBML events or rules
(``kernels/ssa_events.cu`` with the tree's header, :mod:`distsim.ssa.gpu_events`), bit for bit."""

from __future__ import annotations

from .. import gpu
from .base import SSAMethod
from .tree import METHOD as TREE

METHOD = SSAMethod(
    name="warp",
    summary="GPU: a warp (or part of one) per realization, 32-way block sums (seed 004; CPU runs the tree)",
    cpu=TREE.cpu, gpu=gpu.simulate_warp, cuda_header=None, bit_identical=False,
    auto=lambda m, backend: backend == "gpu",
)
