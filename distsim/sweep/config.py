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
    output: mm_sweep.nc               # optional: the final Dataset, .nc or .zarr (relative to the working folder;
                                      #   a grid's has one dimension per parameter, a table's a 'point' dimension)
"""

from __future__ import annotations

import csv
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


from ..errors import ConfigError, DistsimError, read_text
from ..models.yaml_limits import MAX_INT_DIGITS, MAX_LINE, Lines, load_yaml
from .adapters import Adapter, adapter_for, check_fixed
from .points import UNSET_PREFIXES, Points, as_points, one_at_a_time

KEYS = ("analysis", "model", "model_options", "seed", "fixed", "grid", "table", "one_at_a_time", "chunk_size",
        "store", "output")
POINT_KEYS = ("grid", "table", "one_at_a_time")
MAX_BYTES = 1 << 20  # a sweep file (larger tables go in a .csv: table: points.csv)
MAX_TABLE_BYTES = 1 << 30  # a table .csv

__all__ = ["ConfigError", "SweepConfig", "load_config", "KEYS", "POINT_KEYS"]


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


# ------------------------------------------------------------------------------------------------
# YAML with limits: distsim.models.yaml_limits (shared with the PEtab reader)


def _parse_yaml(p: Path) -> tuple[Any, Lines]:
    return load_yaml(p, "sweep configuration", MAX_BYTES, " (put a large table in a .csv file: table: points.csv)")


# ------------------------------------------------------------------------------------------------
# the schema


class _Doc:
    """The parsed document and :meth:`fail`, an error naming the file, the key's line and the key."""

    def __init__(self, p: Path, raw: dict[str, Any], lines: Lines):
        self.p, self.raw, self.lines = p, raw, lines

    def fail(self, key: str, problem: str) -> ConfigError:
        return ConfigError(f"key {key!r}: {problem}", file=str(self.p), line=self.lines.line(key))

    def path(self, key: str, suffixes: tuple[str, ...] | None = None, relative: bool = True) -> Path | None:
        """The path under ``key`` (relative to the YAML file's folder, or to the working folder)."""
        v = self.raw.get(key)
        if v is None:
            return None
        if not isinstance(v, str) or not v or "\0" in v:
            raise self.fail(key, "expected a path")
        q = Path(v) if Path(v).is_absolute() or not relative else self.p.parent / v
        if suffixes and q.suffix.lower() not in suffixes:
            raise self.fail(key, f"expected a path ending in {' or '.join(suffixes)}, got {v[:80]!r}")
        return q

    def is_file(self, key: str, q: Path) -> bool:
        try:
            return q.is_file()
        except (OSError, ValueError) as e:
            raise self.fail(key, f"cannot use the path ({getattr(e, 'strerror', None) or e})") from None


def load_config(path: str | os.PathLike) -> SweepConfig:
    """Read and validate a sweep YAML file (nothing is computed); raises :class:`ConfigError`."""
    p = Path(path)
    raw, lines = _parse_yaml(p)
    if not isinstance(raw, dict):
        raise ConfigError(f"a sweep configuration is a mapping with keys {', '.join(KEYS)}", file=str(p), line=1)
    doc = _Doc(p, raw, lines)
    adapter = _check_keys(doc)
    model = _load_model(doc, adapter)
    seed, chunk, store, output = _settings(doc)
    key, points = _points(doc, adapter, model)
    fixed = _fixed(doc, adapter, model, points)
    _check_names(adapter, model, points, fixed, key, doc.fail)
    return SweepConfig(p, adapter, model, points, seed, fixed, chunk, store, output)


def _check_keys(doc: _Doc) -> Adapter:
    unknown = [k for k in doc.raw if k not in KEYS]
    if unknown:
        raise doc.fail(str(unknown[0])[:80], f"unknown key; allowed keys are {', '.join(KEYS)}")
    for k in ("analysis", "model"):
        if k not in doc.raw:
            raise ConfigError(f"key {k!r} is required", file=str(doc.p), line=1)
    if not isinstance(doc.raw["analysis"], str):
        raise doc.fail("analysis", "expected a name such as ssa.simulate")
    try:
        return adapter_for(doc.raw["analysis"])
    except ValueError as e:
        raise doc.fail("analysis", str(e)) from None


def _load_model(doc: _Doc, adapter: Adapter) -> Any:
    from ..models.formats import registry

    options = doc.raw.get("model_options") or {}
    if not isinstance(options, dict) or not all(isinstance(k, str) for k in options):
        raise doc.fail("model_options", "expected a mapping of loader options")
    fmt = options.get("format")
    if fmt is not None:
        if not isinstance(fmt, str):
            raise doc.fail("model_options.format", "expected a format name")
        try:
            registry.get(fmt)
        except DistsimError as e:
            raise doc.fail("model_options.format", e.message) from None
    model_path = doc.path("model")
    if model_path is None:
        raise doc.fail("model", "expected a path")
    if not doc.is_file("model", model_path):
        raise doc.fail("model", f"file {model_path} not found")
    try:
        return adapter.load(model_path, **options)
    except TypeError as e:
        raise doc.fail("model_options", str(e)) from None
    except (DistsimError, ValueError, KeyError, OSError) as e:
        raise doc.fail("model", str(e)) from None


def _settings(doc: _Doc) -> tuple[int, int | None, Path | None, Path | None]:
    """seed, chunk_size, store and output."""
    seed = doc.raw.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32:
        raise doc.fail("seed", f"expected an integer in [0, 2**32), got {str(seed)[:40]}")
    chunk = doc.raw.get("chunk_size")
    if chunk is not None and (isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1):
        raise doc.fail("chunk_size", f"expected a positive integer, got {str(chunk)[:40]}")
    store = doc.path("store", (".zarr",), relative=False)
    output = doc.path("output", (".nc", ".nc4", ".h5", ".zarr"), relative=False)
    if output is not None:
        try:
            folder_ok = output.parent.is_dir()
        except (OSError, ValueError):
            folder_ok = False
        if not folder_ok:
            raise doc.fail("output", f"folder {str(output.parent)[:200]} does not exist")
    return seed, chunk, store, output


def _points(doc: _Doc, adapter: Adapter, model: Any) -> tuple[str, Points]:
    given = [k for k in POINT_KEYS if k in doc.raw]
    if len(given) != 1:
        raise ConfigError(f"exactly one of {', '.join(POINT_KEYS)} is required"
                          + (f" (found {', '.join(given)})" if given else ""), file=str(doc.p),
                          line=doc.lines.line(given[1]) if len(given) > 1 else 1)
    key = given[0]
    spec = doc.raw[key]
    if key == "grid":
        table = _grid(doc, spec)
    elif key == "table":
        table = _table(doc, spec)
    else:
        table = _one_at_a_time(doc, spec, adapter, model)
    try:
        return key, as_points(table)
    except (ValueError, TypeError) as e:
        raise doc.fail(key, str(e)) from None


def _grid(doc: _Doc, spec: Any) -> Any:
    if not isinstance(spec, dict) or not spec:
        raise doc.fail("grid", "expected a mapping {parameter: [values]}")
    for name, vals in spec.items():
        if not isinstance(name, str):
            raise doc.fail("grid", f"parameter names must be text, got {str(name)[:40]}")
        if not isinstance(vals, list) or not vals:
            raise doc.fail(f"grid.{name}", "expected a non-empty list of values")
    return spec


def _table(doc: _Doc, spec: Any) -> Any:
    if isinstance(spec, str):
        path = doc.path("table")
        if not doc.is_file("table", path):
            raise doc.fail("table", f"file {path} not found")
        return _read_csv(path, doc)
    if isinstance(spec, list) and spec:
        for i, row in enumerate(spec):
            if not isinstance(row, dict) or not all(isinstance(k, str) for k in row):
                raise doc.fail(f"table[{i}]", "expected a mapping {parameter: value}")
        return spec
    raise doc.fail("table", "expected a non-empty list of mappings or a .csv path")


def _one_at_a_time(doc: _Doc, spec: Any, adapter: Adapter, model: Any) -> Any:
    if not isinstance(spec, dict) or "factors" not in spec:
        raise doc.fail("one_at_a_time", "expected a mapping with 'factors' (and optionally 'parameters')")
    extra = [k for k in spec if k not in ("factors", "parameters")]
    if extra:
        raise doc.fail(f"one_at_a_time.{str(extra[0])[:40]}", "unknown key; allowed: factors, parameters")
    if not isinstance(spec["factors"], list):
        raise doc.fail("one_at_a_time.factors", "expected a list of numbers")
    names = spec.get("parameters")
    if names is not None and (not isinstance(names, list) or not all(isinstance(n, str) for n in names)):
        raise doc.fail("one_at_a_time.parameters", "expected a list of parameter names")
    try:
        return one_at_a_time(names if names is not None else adapter.parameters(model), spec["factors"])
    except ValueError as e:
        raise doc.fail("one_at_a_time", str(e)) from None


def _fixed(doc: _Doc, adapter: Adapter, model: Any, points: Points) -> dict[str, Any]:
    fixed = doc.raw.get("fixed") or {}
    if not isinstance(fixed, dict):
        raise doc.fail("fixed", "expected a mapping of keyword arguments")
    bad_key = next((k for k in fixed if not isinstance(k, str)), None)
    if bad_key is not None:
        raise doc.fail("fixed", f"argument names must be text, got {str(bad_key)[:40]}")
    problems = check_fixed(adapter, fixed, points.swept())
    if problems:
        bad = next((k for k in fixed if repr(k) in problems[0]), None)
        raise doc.fail(f"fixed.{bad}" if bad is not None else "fixed", problems[0])
    from .core import validate

    fixed = _integers(adapter, fixed)
    try:
        validate(adapter, model, {}, fixed)
    except (ValueError, KeyError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
        bad = _named(msg, fixed)
        raise doc.fail(f"fixed.{bad}" if bad is not None else "fixed", msg) from None
    return dict(fixed)


def _named(msg: str, keys: Any) -> str | None:
    """The key that an analysis's message is about: its first word ('target: ...' for 'targets'), or quoted."""
    word = re.split(r"[\s:]", msg, maxsplit=1)[0]
    return next((k for k in keys if k.rstrip("s") == word.rstrip("s")), None) or \
        next((k for k in keys if repr(k) in msg), None)


def _integers(adapter: Adapter, fixed: dict[str, Any]) -> dict[str, Any]:
    """Whole numbers written as floats (``realizations: 1e5``) become integers where the analysis
    takes an integer."""
    import inspect

    params = inspect.signature(adapter.resolve()).parameters
    return {k: int(v) if isinstance(v, float) and v.is_integer() and abs(v) < 2**63
            and params[k].annotation in ("int", int) else v for k, v in fixed.items()}


def _check_names(adapter: Adapter, model: Any, points: Points, fixed: dict[str, Any], key: str, fail: Any) -> None:
    """Every distinct value of every column, checked as the sweep checks it before a run
    (:func:`distsim.sweep.core.check_point`): errors name the key."""
    from .core import check_point, distinct_singles

    for i, single in distinct_singles(points):
        if "parameter" in single:
            where = f"{key}.parameters" if key == "one_at_a_time" else f"table[{i}].parameter"
        else:
            (name,) = single
            where = f"{key}.{name}" if key == "grid" else f"table[{i}].{name}"
        try:
            check_point(adapter, model, single, fixed)
        except (ValueError, KeyError) as e:
            msg = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
            raise fail(where, msg) from None


def _read_csv(path: Path, doc: _Doc) -> list[dict[str, Any]]:
    """A table of points: a header of names, then one row of numbers per point."""
    f = str(path)
    size = path.stat().st_size
    if size > MAX_TABLE_BYTES:
        raise ConfigError(f"the table has {size:,} bytes; at most {MAX_TABLE_BYTES:,}", file=f)
    lines = [(n, ln) for n, ln in enumerate(read_text(path, error=ConfigError).split("\n"), 1) if ln.strip()]
    long = next(((n, ln) for n, ln in lines if len(ln) > MAX_LINE), None)
    if long is not None:
        raise ConfigError(f"line of {len(long[1]):,} characters; a line has at most {MAX_LINE:,}", file=f,
                          line=long[0])
    if len(lines) < 2:
        raise doc.fail("table", f"{path} has no rows")
    rows = []
    header: list[str] = []
    for n, line in lines:
        try:
            cells = [c.strip() for c in next(csv.reader([line]))]
        except csv.Error as e:
            raise ConfigError(f"bad CSV row ({e})", file=f, line=n) from None
        if not header:
            header = cells
            continue
        if len(cells) != len(header):
            raise ConfigError(f"expected {len(header)} columns", file=f, line=n)
        rows.append({k: v if k == "parameter" else None if _unset(k, v) else _csv_number(k, v, f, n)
                     for k, v in zip(header, cells)})
    return rows


def _unset(k: str, v: str) -> bool:
    """An empty or '-' cell in a column that a point may leave unset (``fix.NODE``: not fixed)."""
    return k.startswith(UNSET_PREFIXES) and v in ("", "-")


def _csv_number(k: str, v: str, f: str, n: int) -> int | float:
    try:
        if v.lstrip("+-").isdigit():
            if len(v) > MAX_INT_DIGITS:
                raise ValueError
            return int(v)
        return float(v)
    except ValueError:
        raise ConfigError(f"column {k!r}: {v[:40]!r} is not a number", file=f, line=n) from None
