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
