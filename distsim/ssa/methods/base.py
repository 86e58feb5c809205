"""What an SSA selection method declares (one file per method in this package; the table is ``__init__``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..cpu import CPUMethod


@dataclass(frozen=True, eq=False)
class SSAMethod:
    """An exact selection method of the SSA and its traits, after JumpProcesses.jl's aggregators."""

    name: str
    summary: str  # one line for the CLI's help and the docs
    cpu: CPUMethod  # its Numba functions, run by the loop of distsim/ssa/cpu.py
    gpu: Callable[[Any, "SSAMethod"], dict]  # its GPU path (distsim/ssa/gpu.py), called with (SSABlock, method)
    cuda_header: str | None  # its selection code for kernels/ssa_generic.cu (compiled in, not a runtime switch)
    bit_identical: bool  # the GPU gives the CPU's realizations bit for bit (else equal in distribution)
    auto: Callable[[int, str], bool] | None = None  # may 'auto' pick it for M reactions on 'cpu' / 'gpu'?

    @property
    def needs_depgraph(self) -> bool:
        """Whether only the fired reaction's dependents are recomputed (else every propensity)."""
        return self.cpu.needs_depgraph
