"""SCC-based network reduction (seed 000, section 4).

Nodes that are not ancestors of any node of interest cannot influence it; seed 000 finds them as
the SCCs of the dependency graph that neither contain a node of interest nor are ancestors of one.
That set is exactly the complement of the ancestor closure of the nodes of interest, computed
here by a reverse breadth-first search. The removed nodes still shape the kept nodes' dynamics:
their perturbations make a step a perturbation step, and in asynchronous mode their turns leave
the kept nodes unchanged. :func:`distsim.pbn.compile.compile_pbn` keeps both (it compiles the kept
nodes with the full network's random-number layout), so a reduced run gives the kept nodes the
same trajectories as the unreduced run.
"""

from __future__ import annotations

from collections import deque
from typing import Iterable

import numpy as np

from ..models.boolean import Var, truth_table, variables
from ..models.pbn import PBN


def ancestors(net: PBN, nodes: Iterable[int]) -> list[int]:
    """The given nodes and every node with a directed path to one of them, sorted."""
    seen = set(nodes)
    queue = deque(seen)
    while queue:
        i = queue.popleft()
        for p in net.parents(i):
            if p not in seen:
                seen.add(p)
                queue.append(p)
    return sorted(seen)


IDENTITY_MAX_PARENTS = 16  # larger functions are not tested for x = x (never frozen in practice)


def frozen_nodes(net: PBN) -> list[int]:
    """Nodes that can never change: never perturbed, and every function is the node itself (x = x).
    Their initial values split the state space into closed classes (the chain is not ergodic)."""
    out = []
    for i in range(net.n):
        if net.perturbation > 0 and i not in net.fixed:
            continue
        if all(_is_identity(p.expr, i) for p in net.predictors[i]):
            out.append(i)
    return out


def _is_identity(expr, i: int) -> bool:
    """Whether ``expr`` equals the variable ``i`` on every state (by its truth table)."""
    if isinstance(expr, Var):
        return expr.index == i
    parents = variables(expr)
    if i not in parents or len(parents) > IDENTITY_MAX_PARENTS:
        return False
    table = truth_table(expr, parents).astype(bool)  # entry k: parents[0] is the most significant bit
    bit = len(parents) - 1 - parents.index(i)
    return bool(np.array_equal(table, ((np.arange(len(table)) >> bit) & 1).astype(bool)))
