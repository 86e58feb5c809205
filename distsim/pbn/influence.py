"""Long-run influence of parent genes on a gene (Shmulevich, Dougherty, Kim, Zhang 2002; seed 000 §5.3).

The influence of x_j on a Boolean function f is the probability, under the steady-state
distribution, that toggling x_j toggles f: I_j(f) = P_pi[ f(x with x_j=0) != f(x with x_j=1) ].
For a node x_i with predictors f_k chosen with probabilities c_k, I_j(x_i) = sum_k c_k I_j(f_k).
All these need only the steady-state joint distribution of the parents of x_i, which is estimated
in one batched run with one target per joint assignment of the parents.
"""

from __future__ import annotations

import itertools
from typing import Any, Mapping, Sequence

import numpy as np
import xarray as xr

from ..models.boolean import evaluate
from ..models.pbn import PBN
from .inputs import as_network
from .steady import steady_state

MAX_PARENTS = 12


def influence(
    net: PBN | str,
    target_node: str | int,
    parents: Sequence[str | int] | None = None,
    *,
    perturbation: float | None = None,
    fixed: Mapping[str, int] | None = None,
    precision: float = 1e-3,
    **steady_kwargs: Any,
) -> xr.Dataset:
    """Long-run influence of each parent of ``target_node`` on it.

    ``parents`` defaults to all parents of the node's predictor functions (they must include them).
    Other keyword arguments go to :func:`~distsim.pbn.steady.steady_state` (precision, confidence,
    seed, chains, client ...); ``precision`` (default 1e-3: the work grows as 1/precision^2) bounds
    each joint probability. Returns ``influence[parent]`` with a conservative half-width
    (``influence_halfwidth``: each joint probability within +-precision), the per-function
    influences and the joint distribution of the parents.
    """
    net = as_network(net, perturbation=perturbation, fixed=fixed)
    i = net.index(target_node)
    P = _parents(net, i, parents)
    assignments = list(itertools.product((0, 1), repeat=len(P)))
    targets = [dict((net.nodes[p], v) for p, v in zip(P, a)) for a in assignments]
    ss = steady_state(net, targets, precision=precision, **steady_kwargs)
    ds = _influence_dataset(net, i, P, assignments, ss)
    ds.attrs = dict(ss.attrs)
    ds.attrs.update(workload="pbn.influence", target_node=net.nodes[i], parents=",".join(net.nodes[p] for p in P),
                    assignment_order=",".join(net.nodes[p] for p in P))
    return ds


def _parents(net: PBN, i: int, parents: Sequence[str | int] | None) -> list[int]:
    """The parents to study (default: every parent of the node's functions), checked."""
    needed = net.parents(i)
    P = list(needed) if parents is None else sorted({net.index(p) for p in parents})
    missing = [net.nodes[p] for p in needed if p not in P]
    if missing:
        raise ValueError(f"parents of {net.nodes[i]!r} missing from `parents`: {', '.join(missing)}")
    if not P:
        raise ValueError(f"node {net.nodes[i]!r} has no parents")
    if len(P) > MAX_PARENTS:
        raise ValueError(f"{len(P)} parents: the joint distribution would need 2**{len(P)} targets (max {MAX_PARENTS})")
    return P


def _influence_dataset(net: PBN, i: int, P: list[int], assignments: list[tuple[int, ...]],
                       ss: xr.Dataset) -> xr.Dataset:
    """Influences from the steady-state joint distribution of the parents (one target per assignment)."""
    joint = ss.probability.values  # pi(assignment), all 2^k assignments (they partition the state space)
    precision = float(ss.attrs["precision"])
    preds = net.predictors[i]
    sensitive = _sensitivity(net, i, P, assignments)
    func_infl = sensitive.astype(float) @ joint
    c = np.array([p.probability for p in preds])
    infl = c @ func_infl
    # each joint probability is within +-precision (with the stated confidence)
    sens_count = c @ sensitive.sum(axis=2)
    return xr.Dataset(
        {
            "influence": ("parent", infl, {"long_name": f"long-run influence on {net.nodes[i]}", "units": "1"}),
            "influence_halfwidth": ("parent", np.minimum(sens_count * precision, 1.0),
                                    {"long_name": "conservative half-width (sum of the joint probabilities' precision)"}),
            "function_influence": (("function", "parent"), func_infl,
                                   {"long_name": "influence on each predictor function"}),
            "selection_probability": ("function", c),
            "joint_probability": ("assignment", joint,
                                  {"long_name": "steady-state probability of each joint assignment of the parents"}),
            "joint_rhat": ("assignment", ss.rhat.values),
            "joint_sample_size": ("assignment", ss.sample_size.values),
        },
        coords={
            "parent": [net.nodes[p] for p in P],
            "function": np.arange(len(preds)),
            "assignment": ["".join(map(str, a)) for a in assignments],
        },
    )


def _sensitivity(net: PBN, i: int, P: list[int], assignments: list[tuple[int, ...]]) -> np.ndarray:
    """[function, parent, assignment]: True where toggling the parent toggles the predictor function
    (every predictor of node ``i`` evaluated with x_j forced to 0 and to 1)."""
    states = np.zeros((len(assignments), net.n), dtype=bool)
    for r, a in enumerate(assignments):
        states[r, P] = a
    preds = net.predictors[i]
    sensitive = np.zeros((len(preds), len(P), len(assignments)), dtype=bool)
    for f, pred in enumerate(preds):
        for jj, j in enumerate(P):
            lo, hi = states.copy(), states.copy()
            lo[:, j] = False
            hi[:, j] = True
            sensitive[f, jj] = evaluate(pred.expr, lo) != evaluate(pred.expr, hi)
    return sensitive
