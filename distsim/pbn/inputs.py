"""Normalising user inputs of the PBN workload: networks, target sets, initial states."""

from __future__ import annotations

import os
import warnings
from typing import Any, Mapping, Sequence

import numpy as np

from ..models.formats import load as load_network
from ..models.pbn import PBN

Target = tuple[tuple[int, int], ...]
TargetSpec = str | Mapping[str, int] | Sequence[tuple[str, int]]


def as_network(net: PBN | str | os.PathLike, *, perturbation: float | None = None, inputs: str = "keep",
               fixed: Mapping[str, int] | None = None) -> PBN:
    """A PBN object or a model file path (format from extension or content), with an optional
    perturbation override and knockouts/mutations ``fixed={"TP53": 0}`` (:meth:`PBN.with_fixed`)."""
    if not isinstance(net, PBN):
        net = load_network(net, inputs=inputs)
    if perturbation is not None:
        net = net.with_perturbation(float(perturbation))
    if fixed:
        net = net.with_fixed(fixed)
    return net


def parse_target(spec: TargetSpec, net: PBN) -> Target:
    """A set of states given by values of some nodes: ``"A=1,B=0"``, ``{"A": 1, "B": 0}`` or pairs."""
    if isinstance(spec, str):
        pairs = []
        for part in spec.split(","):
            part = part.strip()
            if not part:
                continue
            if "=" not in part:
                raise ValueError(f"target {spec!r}: expected NODE=0 or NODE=1, got {part!r}")
            name, val = (x.strip() for x in part.split("=", 1))
            pairs.append((name, val))
    elif isinstance(spec, Mapping):
        pairs = list(spec.items())
    else:
        pairs = list(spec)
    if not pairs:
        raise ValueError("a target needs at least one NODE=value")
    out: dict[int, int] = {}
    for name, val in pairs:
        try:
            i = net.index(name)
        except KeyError as e:
            raise ValueError(f"target: {e.args[0]}") from None
        v = str(val).strip()
        if v not in ("0", "1", "True", "False", "true", "false"):
            raise ValueError(f"target: value of {name!r} must be 0 or 1, got {val!r}")
        b = 1 if v in ("1", "True", "true") else 0
        if out.get(i, b) != b:
            raise ValueError(f"target: node {name!r} given both values")
        out[i] = b
    return tuple(sorted(out.items()))


def parse_targets(targets: TargetSpec | Sequence[TargetSpec] | None, net: PBN) -> list[Target]:
    """One target or a list of targets (a list of strings/dicts); None gives an empty list."""
    if targets is None:
        return []
    if isinstance(targets, (str, Mapping)):
        return [parse_target(targets, net)]
    items = list(targets)
    if items and isinstance(items[0], tuple) and len(items[0]) == 2 and isinstance(items[0][0], str) \
            and not isinstance(items[0][1], (tuple, list)):
        return [parse_target(items, net)]  # a single target given as (name, value) pairs
    return [parse_target(t, net) for t in items]


def target_label(t: Target, net: PBN) -> str:
    return ",".join(f"{net.nodes[i]}={v}" for i, v in t)


def initial_state(initial: str | Mapping[str, int] | None, net: PBN) -> tuple[np.ndarray, np.ndarray]:
    """(fix_mask, fix_val): 'random' (default), 'zeros', 'ones', or {node: value} (others random)."""
    mask = np.zeros(net.n, dtype=bool)
    val = np.zeros(net.n, dtype=np.uint8)
    if initial is None or initial == "random":
        return mask, val
    if initial in ("zeros", "ones"):
        mask[:] = True
        val[:] = 1 if initial == "ones" else 0
        return mask, val
    if isinstance(initial, Mapping):
        for name, v in initial.items():
            i = net.index(name)
            mask[i] = True
            val[i] = 1 if int(v) else 0
        return mask, val
    raise ValueError(f"initial must be 'random', 'zeros', 'ones' or a mapping of node values, got {initial!r}")


def resolve_mode(mode: str | None, net: PBN) -> str:
    """The update mode of a run: ``mode`` when given (with a warning when the model file states
    another), else the file's stated one (e.g. an ASSA ``type=asynchronous`` header), else 'sync'."""
    stated = net.update
    if mode is None:
        if stated in (None, "sync", "async"):
            return stated or "sync"
        raise ValueError(f"{net.source or net.name or 'the model'} states the update scheme {stated!r}, which distsim "
                         "does not implement; choose mode='sync' or mode='async' (--mode)")
    if stated is not None and mode != stated:
        warnings.warn(f"{net.source or net.name or 'the model'} states the update scheme {stated!r}; running "
                      f"mode={mode!r} as asked", stacklevel=3)
    return mode


def check_mode(mode: str) -> int:
    from .shard import MODES

    if mode not in MODES:
        raise ValueError(f"mode must be 'sync' or 'async', got {mode!r}")
    return MODES[mode]


def check_count(name: str, value: Any, minimum: int = 1, maximum: int = 2**32) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if not minimum <= int(value) <= maximum:
        raise ValueError(f"{name} must be between {minimum} and {maximum}, got {value}")
    return int(value)
