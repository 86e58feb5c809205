"""``distsim sweep CONFIG.yaml``: the YAML schema, validated with errors naming file, line and key.

.. code-block:: yaml

    analysis: ssa.simulate            # required: ssa.simulate | pbn.steady_state | pbn.simulate
    model: ../ssa/michaelis_menten.rxn   # required; relative to this file (so is a table .csv)
    model_options: {}                 # optional loader options (pbn: perturbation, inputs; ssa: format)
    seed: 1                           # optional (default 0); point i uses derive_seeds(seed, i)
    fixed:                            # optional: keyword arguments of the analysis, same for every point
      t_end: 50
      points: 11
      realizations: 200
    grid:                             # exactly one of grid / table / one_at_a_time
      k1: [0.001, 0.002]              #   grid: Cartesian product, the last key varies fastest
      S: [100, 300]
    # table: [{k1: 0.001, S: 100}, {k1: 0.002, S: 300}]   or   table: points.csv (header = names)
    # one_at_a_time: {factors: [0.5, 2], parameters: [k1, k2]}   (parameters default: every rate)
    chunk_size: 4                     # optional: points per task
    store: mm_sweep.zarr              # optional: incremental, resumable zarr store (relative to the working folder)
    output: mm_sweep.nc               # optional: the final Dataset, .nc or .zarr (relative to the working folder)
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .adapters import Adapter, adapter_for, check_fixed
from .points import Points, as_points, one_at_a_time

KEYS = ("analysis", "model", "model_options", "seed", "fixed", "grid", "table", "one_at_a_time", "chunk_size",
        "store", "output")
POINT_KEYS = ("grid", "table", "one_at_a_time")


class ConfigError(ValueError):
    """A sweep configuration problem: ``FILE:LINE: key 'a.b': problem``."""


@dataclass
class SweepConfig:
    """A validated sweep configuration (model and table paths resolved against the YAML file's folder,
    store and output against the working folder)."""

    path: Path
    adapter: Adapter
    model: Any
    points: Points
    seed: int = 0
    fixed: dict[str, Any] = field(default_factory=dict)
    chunk_size: int | None = None
    store: Path | None = None
    output: Path | None = None


class _Lines:
    """Line numbers of the keys of a YAML document (paths like ``fixed.t_end``, ``table[2].k1``)."""

    def __init__(self, text: str):
        self.lines: dict[str, int] = {}
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        if node is not None:
            self._walk(node, "")

    def _walk(self, node: Any, path: str) -> None:
        self.lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                sub = f"{path}.{k.value}" if path else str(k.value)
                self.lines[sub] = k.start_mark.line + 1
                self._walk(v, sub)
        elif isinstance(node, yaml.SequenceNode):
            for i, v in enumerate(node.value):
                self._walk(v, f"{path}[{i}]")

    def line(self, key: str) -> int | None:
        while key:
            if key in self.lines:
                return self.lines[key]
            key = key.rpartition(".")[0] if "." in key else key.rpartition("[")[0]
        return None


def load_config(path: str | os.PathLike) -> SweepConfig:
    """Read and validate a sweep YAML file (nothing is computed); raises :class:`ConfigError`."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise ConfigError(f"{p}: cannot read the sweep configuration ({e.strerror or e})") from None
    try:
        raw = yaml.safe_load(text)
        lines = _Lines(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{p}:{mark.line + 1}" if mark is not None else str(p)
        raise ConfigError(f"{where}: not valid YAML: {getattr(e, 'problem', None) or e}") from None

    def fail(key: str, problem: str) -> ConfigError:
        line = lines.line(key)
        return ConfigError(f"{p}{f':{line}' if line else ''}: key {key!r}: {problem}")

    if not isinstance(raw, dict):
        raise ConfigError(f"{p}:1: a sweep configuration is a mapping with keys {', '.join(KEYS)}")
    unknown = [k for k in raw if k not in KEYS]
    if unknown:
        raise fail(str(unknown[0]), f"unknown key; allowed keys are {', '.join(KEYS)}")
    for k in ("analysis", "model"):
        if k not in raw:
            raise ConfigError(f"{p}: key {k!r} is required")
    if not isinstance(raw["analysis"], str):
        raise fail("analysis", "expected a name such as ssa.simulate")
    try:
        adapter = adapter_for(raw["analysis"])
    except ValueError as e:
        raise fail("analysis", str(e)) from None
    base = p.parent

    def path_of(key: str, suffixes: tuple[str, ...] | None = None, relative_to: Path | None = base) -> Path | None:
        v = raw.get(key)
        if v is None:
            return None
        if not isinstance(v, str) or not v:
            raise fail(key, "expected a path")
        q = Path(v) if Path(v).is_absolute() or relative_to is None else relative_to / v
        if suffixes and q.suffix.lower() not in suffixes:
            raise fail(key, f"expected a path ending in {' or '.join(suffixes)}, got {v!r}")
        return q

    options = raw.get("model_options") or {}
    if not isinstance(options, dict):
        raise fail("model_options", "expected a mapping of loader options")
    model_path = path_of("model")
    if not model_path.is_file():
        raise fail("model", f"file {model_path} not found")
    try:
        model = adapter.load(model_path, **options)
    except TypeError as e:
        raise fail("model_options", str(e)) from None

    seed = raw.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32:
        raise fail("seed", f"expected an integer in [0, 2**32), got {seed!r}")
    chunk = raw.get("chunk_size")
    if chunk is not None and (isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1):
        raise fail("chunk_size", f"expected a positive integer, got {chunk!r}")
    store = path_of("store", (".zarr",), relative_to=None)
    output = path_of("output", (".nc", ".nc4", ".h5", ".zarr"), relative_to=None)
    if output is not None and not output.parent.is_dir():
        raise fail("output", f"folder {output.parent} does not exist")

    given = [k for k in POINT_KEYS if k in raw]
    if len(given) != 1:
        raise ConfigError(f"{p}: exactly one of {', '.join(POINT_KEYS)} is required"
                          + (f" (found {', '.join(given)})" if given else ""))
    key = given[0]
    spec = raw[key]
    if key == "grid":
        if not isinstance(spec, dict) or not spec:
            raise fail("grid", "expected a mapping {parameter: [values]}")
        for name, vals in spec.items():
            if not isinstance(vals, list) or not vals:
                raise fail(f"grid.{name}", "expected a non-empty list of values")
        table: Any = spec
    elif key == "table":
        if isinstance(spec, str):
            table = _read_csv(path_of("table"), fail)
        elif isinstance(spec, list) and spec:
            for i, row in enumerate(spec):
                if not isinstance(row, dict):
                    raise fail(f"table[{i}]", "expected a mapping {parameter: value}")
            table = spec
        else:
            raise fail("table", "expected a non-empty list of mappings or a .csv path")
    else:
        if not isinstance(spec, dict) or "factors" not in spec:
            raise fail("one_at_a_time", "expected a mapping with 'factors' (and optionally 'parameters')")
        extra = [k for k in spec if k not in ("factors", "parameters")]
        if extra:
            raise fail(f"one_at_a_time.{extra[0]}", "unknown key; allowed: factors, parameters")
        if not isinstance(spec["factors"], list):
            raise fail("one_at_a_time.factors", "expected a list of numbers")
        names = spec.get("parameters")
        if names is not None and (not isinstance(names, list) or not all(isinstance(n, str) for n in names)):
            raise fail("one_at_a_time.parameters", "expected a list of parameter names")
        try:
            table = one_at_a_time(names if names is not None else adapter.parameters(model), spec["factors"])
        except ValueError as e:
            raise fail("one_at_a_time", str(e)) from None
    try:
        points = as_points(table)
    except (ValueError, TypeError) as e:
        raise fail(key, str(e)) from None
    _check_names(adapter, model, points, key, fail)

    fixed = raw.get("fixed") or {}
    if not isinstance(fixed, dict):
        raise fail("fixed", "expected a mapping of keyword arguments")
    problems = check_fixed(adapter, fixed, points.swept())
    if problems:
        bad = next(k for k in fixed if any(repr(k) in pr for pr in problems))
        raise fail(f"fixed.{bad}", problems[0])
    return SweepConfig(p, adapter, model, points, seed, dict(fixed), chunk, store, output)


def _check_names(adapter: Adapter, model: Any, points: Points, key: str, fail: Any) -> None:
    """Every distinct value of every column, applied to the model once: errors name the key."""
    from .core import resolve_point

    seen: set = set()
    for i in range(points.n):
        pt = points.point(i)
        checks = [(f"{key}.{n}" if key == "grid" else f"table[{i}].{n}", {n: pt[n]}) for n in points.swept()]
        if "parameter" in pt:
            where = f"{key}.parameters" if key == "one_at_a_time" else f"table[{i}].parameter"
            checks.append((where, {"parameter": pt["parameter"], "factor": pt["factor"]}))
        for where, single in checks:
            token = tuple(single.items())
            if token in seen:
                continue
            seen.add(token)
            try:
                adapter.apply(model, resolve_point(adapter, model, single))
            except (ValueError, KeyError) as e:
                msg = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
                raise fail(where, msg) from None


def _read_csv(path: Path, fail: Any) -> list[dict[str, Any]]:
    if not path.is_file():
        raise fail("table", f"file {path} not found")
    rows = []
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        for lineno, row in enumerate(reader, start=2):
            out = {}
            for k, v in row.items():
                if k is None or v is None:
                    raise ConfigError(f"{path}:{lineno}: expected {len(reader.fieldnames or [])} columns")
                v = v.strip()
                if k == "parameter":
                    out[k] = v
                    continue
                try:
                    out[k] = int(v) if v.lstrip("+-").isdigit() else float(v)
                except ValueError:
                    raise ConfigError(f"{path}:{lineno}: column {k!r}: {v!r} is not a number") from None
            rows.append(out)
    if not rows:
        raise fail("table", f"{path} has no rows")
    return rows
