"""The SSA's selection methods: one file per method (its traits, CPU and GPU code), one table.

To add a method, write ``NAME.py`` here (an :class:`~distsim.ssa.methods.base.SSAMethod`; see
``direct.py``) with its CUDA selection code in ``kernels/ssa_method_NAME.cuh``, and add it to
``METHODS``. The order of the table is the order in which :func:`choose_method` asks the methods'
``auto`` rules.
"""

from __future__ import annotations

from ...models.reactions import ReactionNetwork
from . import ar, cr, direct, tree, warp
from .base import SSAMethod

METHODS: dict[str, SSAMethod] = {m.name: m for m in (direct.METHOD, warp.METHOD, tree.METHOD, cr.METHOD, ar.METHOD)}


def choose_method(net_or_m: ReactionNetwork | int, backend: str = "cpu") -> str:
    """'auto': the first method of the table whose rule accepts the model on this backend ('cpu' or
    'gpu'): today the direct method for up to 32 reactions; beyond, one warp per realization on
    GPUs (seed 004) and the O(log M) sum tree on CPUs."""
    m = net_or_m if isinstance(net_or_m, int) else net_or_m.n_reactions
    for method in METHODS.values():
        if method.auto is not None and method.auto(m, backend):
            return method.name
    raise ValueError(f"no SSA method is chosen automatically for {m} reactions on backend {backend!r}")


__all__ = ["METHODS", "SSAMethod", "choose_method"]
