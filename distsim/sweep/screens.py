"""Knockout (and overexpression) screens of PBNs: one sweep over ``fix.NODE`` points.

>>> import distsim, distsim.pbn as pbn
>>> ds = distsim.sweep.knockouts(pbn.steady_state, "examples/pbn/bbm209_sizek2019_cell_cycle_apoptosis_87n.bnet",
...                              target="v_Apoptosis=1", model_options={"perturbation": 0.01}, precision=0.01, seed=1)
>>> ds.set_index(point="knockout")["estimate"]          # the wild type, then one point per node
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import xarray as xr

from .adapters import Adapter, adapter_for
from .core import sweep

WILD_TYPE = "wild type"


def knockouts(
    analysis: str | Callable[..., Any] | Adapter,
    model: Any,
    /,
    nodes: Sequence[str] | None = None,
    value: int = 0,
    *,
    wild_type: bool = True,
    model_options: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> xr.Dataset:
    """Run ``analysis`` (``pbn.steady_state`` or ``pbn.simulate``) with each of ``nodes`` (default:
    every node) fixed to ``value`` (0: knockout, 1: overexpression) in turn, as one :func:`sweep`.

    Point 0 is the unmutated network when ``wild_type`` (point i+1 then fixes ``nodes[i]``). The
    points are the table ``{"fix.A": value, "fix.B": None, ...}`` (one column per node, the others
    unset), so point i gets the seed ``derive_seeds(seed, i)`` like any sweep; the result has a
    ``knockout`` coordinate naming the fixed node (``"wild type"`` for none). ``kwargs`` go to
    :func:`sweep` (``seed``, ``store``, ``client``, ...) and on to the analysis (``target``,
    ``precision``, ``perturbation``, ...)."""
    adapter = adapter_for(analysis)
    if not hasattr(model, "digest"):
        model = adapter.load(model, **dict(model_options or {}))
    elif model_options:
        raise ValueError("model_options apply only when the model is given as a file path")
    if not hasattr(model, "with_fixed"):
        raise TypeError(f"{adapter.name}: knockout screens need a PBN model")
    if isinstance(value, bool) or value not in (0, 1):
        raise ValueError(f"value must be 0 (knockout) or 1 (overexpression), got {value!r}")
    names = list(model.nodes) if nodes is None else [str(n) for n in nodes]
    if not names:
        raise ValueError("knockouts needs at least one node")
    unknown = [n for n in names if n not in model.nodes]
    if unknown:
        raise ValueError(f"not nodes of {model.name or 'the network'}: {', '.join(unknown)}")
    if len(set(names)) != len(names):
        raise ValueError("knockouts: a node is listed twice")
    rows = [{f"fix.{n}": (value if n == m else None) for n in names} for m in names]
    labels = names
    if wild_type:
        rows = [{f"fix.{n}": None for n in names}] + rows
        labels = [WILD_TYPE] + names
    ds = sweep(adapter, model, rows, **kwargs)
    return ds.assign_coords(knockout=("point", labels))


__all__ = ["WILD_TYPE", "knockouts"]
