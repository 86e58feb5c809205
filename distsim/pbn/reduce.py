"""SCC-based network reduction (seed 000, section 4).

Nodes that are not ancestors of any node of interest cannot influence it; seed 000 finds them as
the SCCs of the dependency graph that neither contain a node of interest nor are ancestors of one.
That set is exactly the complement of the ancestor closure of the nodes of interest, computed
here by a reverse breadth-first search. Their perturbations still matter (a flip anywhere makes
the step a perturbation step), so the removed perturbable nodes stay in the perturbation table as
phantom entries -- the lambda = (1-p)**l test of Algorithm 5, folded into the one perturbation
uniform of each step.
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


def reduce_network(net: PBN, nodes_of_interest: Iterable[int]) -> tuple[PBN, list[int], int]:
    """(reduced network, kept original indices, number of removed perturbable nodes)."""
    keep = ancestors(net, nodes_of_interest)
    removed = [i for i in range(net.n) if i not in set(keep)]
    removed_perturbable = sum(1 for i in removed if i not in net.fixed)
    if not removed:
        return net, keep, 0
    return net.subnetwork(keep), keep, removed_perturbable
