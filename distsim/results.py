"""Result conventions: xarray Datasets with named dims, units and provenance; netCDF/zarr writing.

Dimension names used across workloads: ``chain``, ``trajectory``, ``realization``, ``time``,
``step``, ``species``, ``node``, ``target``, ``island``, ``generation``, ``draw``, ``point``.
Every variable carries ``units`` and ``long_name`` where meaningful; the Dataset's ``attrs``
carry provenance (:func:`provenance`). Attributes are flat strings/numbers so both netCDF and zarr
store them.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import functools
import json
import os
import platform
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from .errors import DataError, OutputError, did_you_mean

FORMATS = {".nc": "netcdf", ".nc4": "netcdf", ".h5": "netcdf", ".zarr": "zarr"}


def _version() -> str:
    from . import __version__

    return __version__


def _dask_version() -> str:
    """Dask's version without importing dask (0.1-0.2 s, where a run in one process needs none of it)."""
    import sys

    if "dask" in sys.modules:
        return sys.modules["dask"].__version__
    return _installed_version("dask")


@functools.cache
def _installed_version(dist: str) -> str:
    """An installed distribution's version (its metadata read once per process: ~1-2 ms a call)."""
    from importlib.metadata import version

    return version(dist)


def provenance(
    *,
    workload: str,
    seed: int | None = None,
    model_name: str | None = None,
    model_sha256: str | None = None,
    backend: str | None = None,
    devices: list[str] | tuple[str, ...] | None = None,
    executor: str | None = None,
    wall_time_s: float | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """Provenance attributes for a result Dataset (None values are left out)."""
    import numpy

    attrs: dict[str, Any] = {
        "Conventions": "CF-1.10",
        "distsim_version": _version(),
        "workload": workload,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "numpy_version": numpy.__version__,
        "dask_version": _dask_version(),
        "seed": seed,
        "model_name": model_name,
        "model_sha256": model_sha256,
        "backend": backend,
        "devices": ", ".join(sorted(set(devices))) if devices else None,
        "executor": executor,
        "wall_time_s": None if wall_time_s is None else float(wall_time_s),
    }
    for k, v in extra.items():
        attrs[k] = v
    clean = {}
    for k, v in attrs.items():
        if v is None:
            continue
        if isinstance(v, bool):
            v = int(v)
        elif not isinstance(v, (str, int, float)):
            v = str(v)
        clean[k] = v
    return clean


# A Dataset without dask: xarray checks each Variable it builds from data for dask arrays, importing
# dask.array (0.3-1.3 s in a new process), and each index it builds from an array for a dask collection,
# importing dask (0.1-0.2 s). Built on its fast path from NumPy arrays (lists as ``np.asarray`` makes them, as
# xarray does) and pandas indexes, the Dataset is the same (tests/unit/test_results_dataset.py).
try:
    from xarray.core.indexing import PandasIndexingAdapter
except ImportError:  # another xarray: its ordinary build (the same Dataset, slower)
    PandasIndexingAdapter = None
try:
    from xarray.core.indexes import PandasIndex

    if not hasattr(xr.Dataset, "_construct_direct"):
        PandasIndex = None
except ImportError:
    PandasIndex = None


def variable(dims: str | tuple[str, ...], values: Any, attrs: dict | None = None) -> xr.Variable:
    """The Variable ``(dims, values, attrs)`` of NumPy data, built without the dask check."""
    return xr.Variable(dims, np.asarray(values), attrs, fastpath=True)


def coordinate(dim: str, values: Any, attrs: dict | None = None) -> xr.Variable | tuple:
    """The dimension coordinate ``(dim, values, attrs)``, its index made from a pandas Index as xarray
    makes it (``pd.Index`` of the values, the values' dtype kept), without the dask check."""
    values = np.asarray(values)
    if PandasIndexingAdapter is None or values.dtype.kind not in "fiuU":
        return dim, values, attrs
    return xr.IndexVariable(dim, PandasIndexingAdapter(pd.Index(values), dtype=values.dtype), attrs, fastpath=True)


class Labels:
    """Text labels that recur from call to call (a model's state names), kept once as the rows of one
    pandas Index: :meth:`coordinate` takes rows of it, so a coordinate of long labels is not rebuilt from
    Python strings into NumPy text and a pandas Index each time (labels added since the Index was last
    built, until they are a quarter of it: built as before). The coordinate equals :func:`coordinate` of the
    same labels (NumPy's ``<U`` dtype of the longest one, the Index xarray makes)."""

    def __init__(self) -> None:

        self.text: list[str] = []
        self._lens = np.zeros(0, np.int64)  # len of each label
        self._index: Any = None  # pd.Index of text[:_built]
        self._built = 0

    def __len__(self) -> int:
        return len(self.text)

    def extend(self, labels: list[str]) -> None:

        self.text.extend(labels)
        self._lens = np.concatenate([self._lens, np.fromiter(map(len, labels), np.int64, len(labels))])

    def coordinate(self, dim: str, rows: Any, attrs: dict | None = None) -> xr.Variable | tuple:
        """The dimension coordinate of labels ``text[rows]`` (a dimension of ``len(rows)``)."""

        rows = np.asarray(rows, np.intp)
        if PandasIndexingAdapter is not None and rows.size and rows.max() >= self._built and \
                4 * (len(self.text) - self._built) >= self._built:
            # rebuilt as one piece once a quarter more labels came (a pandas Index of pieces is taken from
            # slowly); pd.Index of the list: the dtype of pd.Index of its NumPy text, 15 times faster
            self._index, self._built = pd.Index(self.text), len(self.text)
            if self._index.dtype != pd.Index(np.asarray(self.text[:1])).dtype:  # another pandas
                self._index = pd.Index(np.asarray(self.text))
        if PandasIndexingAdapter is None or rows.size == 0 or rows.max() >= self._built:
            return coordinate(dim, [self.text[i] for i in rows.tolist()], attrs)
        dtype = np.dtype(f"<U{max(1, int(self._lens[rows].max()))}")
        return xr.IndexVariable(dim, PandasIndexingAdapter(self._index.take(rows), dtype=dtype), attrs,
                                fastpath=True)


def dataset(data: dict[str, tuple], coords: dict[str, Any]) -> xr.Dataset:
    """``xr.Dataset(data, coords=coords)`` for NumPy data (``name: (dims, values[, attrs])``) and
    dimension coordinates (``name: values`` or ``name: (name, values[, attrs])``, or a Variable as
    :meth:`Labels.coordinate` makes it), built without importing dask."""
    coords = {k: v if isinstance(v, (tuple, xr.Variable)) else (k, v) for k, v in coords.items()}
    variables = {k: variable(*v) for k, v in data.items()}
    coord_vars = {k: v if isinstance(v, xr.Variable) else coordinate(*v) if v[0] in (k, (k,)) else variable(*v)
                  for k, v in coords.items()}
    return _direct(variables, coord_vars) or xr.Dataset(variables, coords=coord_vars)


def _direct(variables: dict[str, xr.Variable], coords: dict[str, Any]) -> xr.Dataset | None:
    """The Dataset of data ``variables`` and dimension coordinates ``coords`` (pandas-indexed Variables
    along their own dimension) as xarray's constructor makes it, without its merge and alignment (a
    quarter of a millisecond; most of a small result's Dataset); None where that does not apply (other
    coordinates, a name twice, dimensions of different sizes): then the constructor builds it."""
    if PandasIndex is None or set(variables) & set(coords):
        return None
    if not all(isinstance(v, xr.IndexVariable) and v.dims == (k,) and isinstance(v._data, PandasIndexingAdapter)
               for k, v in coords.items()):
        return None
    dims: dict[str, int] = {}  # in xarray's order: the data variables' first
    for v in (*variables.values(), *coords.values()):
        for d, n in zip(v.dims, v.shape):
            if dims.setdefault(d, n) != n:
                return None
    out, indexes = dict(variables), {}
    for k, v in coords.items():  # as PandasIndex.from_variables makes them
        indexes[k] = index = PandasIndex(v._data.array, k, coord_dtype=v.dtype)
        index.index.name = k
        out.update(index.create_variables({k: v}))
    return xr.Dataset._construct_direct(out, set(coords), dims, None, indexes=indexes)


def _own_store(p: Path) -> bool:
    """Whether folder ``p`` is a zarr store written by distsim (its root attributes carry distsim_version)."""
    for meta, key in (("zarr.json", "attributes"), (".zattrs", None)):
        try:
            doc = json.loads((p / meta).read_text())
        except (OSError, ValueError):
            continue
        attrs = doc.get(key, {}) if key else doc
        if isinstance(attrs, dict) and "distsim_version" in attrs:
            return True
    return False


def check_folder(path: str | os.PathLike) -> Path:
    """The folder that output ``path`` goes to exists, is a folder and can be written (a probe file is
    created there and removed), so that a run never ends unable to write what it computed. Returns it."""
    p = Path(path)
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        first = next((a for a in [parent, *parent.parents] if a.exists() or a.is_symlink()), None)
        if first is not None and not first.is_dir():
            raise OutputError(f"{first} is a file, not a folder", file=str(p))
        raise OutputError(f"folder {parent} does not exist", file=str(p))
    try:
        fd, probe = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".probe", dir=parent)
    except OSError as e:
        raise OutputError(f"folder {parent} cannot be written ({e.strerror or e})", file=str(p)) from None
    os.close(fd)
    os.unlink(probe)
    return parent


def check_output_path(path: str | os.PathLike, *, overwrite: bool = False) -> Path:
    """Validate an output path before any work is done: a known extension, a writable parent folder
    (:func:`check_folder`), and nothing in the way unless ``overwrite`` (and even then, only a file, or
    a zarr store that distsim wrote: other folders are never replaced)."""
    p = Path(path)
    fmt = FORMATS.get(p.suffix.lower())
    if fmt is None:
        raise OutputError(f"unknown output format {p.suffix!r}; use one of {', '.join(sorted(FORMATS))}", file=str(p))
    check_folder(p)
    if p.exists() or p.is_symlink():
        if p.is_dir() and not (fmt == "zarr" and _own_store(p)):
            raise OutputError("a folder that is not a result store written by distsim; it is never replaced", file=str(p))
        if not overwrite:
            raise OutputError("exists; choose another path or allow replacing it (--overwrite, overwrite=True)",
                              file=str(p))
    return p


@contextlib.contextmanager
def _numpy_only(ds: xr.Dataset):  # noqa: ANN202 (a context manager)
    """While a Dataset of NumPy arrays is written: xarray's netCDF writer asks whether each array is a
    dask array and which dask scheduler runs, importing dask.array and distributed to answer (0.6-0.8 s
    of a new process that needs neither). Where neither is imported yet and no variable is chunked, both
    answer "absent" for the write (an ImportError, which xarray and dask handle), the answers xarray
    cached are forgotten after it, and the file is the same."""
    from xarray.namedarray import pycompat

    names = [n for n in ("dask.array", "distributed") if n not in sys.modules]
    cache = getattr(pycompat, "_cached_duck_array_modules", None)
    if not names or not isinstance(cache, dict) or "dask" in cache or any(v.chunks for v in ds.variables.values()):
        yield
        return
    for n in names:
        sys.modules[n] = None  # type: ignore[assignment]  (import raises ImportError)
    try:
        yield
    finally:
        for n in names:
            if sys.modules.get(n, 0) is None:
                del sys.modules[n]
        cache.pop("dask", None)


def write(ds: xr.Dataset, path: str | os.PathLike, *, overwrite: bool = False) -> Path:
    """Write to netCDF (``.nc``, via h5netcdf) or zarr (``.zarr``) atomically: the data go to a temporary
    name in the same folder, which is renamed once complete. An existing path is replaced only with
    ``overwrite`` (see :func:`check_output_path`)."""
    p = check_output_path(path, overwrite=overwrite)
    fmt = FORMATS[p.suffix.lower()]
    parent = p.parent if str(p.parent) else Path(".")
    tmp: Path | None = None
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{p.name}.", dir=parent))
        target = tmp / p.name
        if fmt == "netcdf":
            with _numpy_only(ds):
                ds.to_netcdf(target, engine="h5netcdf")
        else:
            # fixed-width unicode has no zarr v3 spec: store text as variable-length strings
            ds = ds.copy()
            for name in list(ds.variables):
                if ds[name].dtype.kind == "U":
                    ds[name] = ds[name].astype(object)
            ds.to_zarr(target, mode="w", consolidated=False)
        if p.is_dir():  # an old distsim store: move it aside, put the new one in place, then delete the old
            os.replace(p, tmp / "replaced")
        os.replace(target, p)
    except OSError as e:  # full disk, a folder made read-only meanwhile: name the user's path, not ours
        raise OutputError(f"could not be written ({e.strerror or type(e).__name__})", file=str(p)) from e
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    return p


def open_result(path: str | os.PathLike) -> xr.Dataset:
    """Open a result written by :func:`write`."""
    p = Path(path)
    if FORMATS.get(p.suffix.lower()) == "zarr":
        return xr.open_zarr(p, consolidated=False)
    return xr.open_dataset(p, engine="h5netcdf")


# ---- tables ---------------------------------------------------------------------------------------

# dimensions of per-sample detail (one entry per realization or trajectory, histogram bins): left out
# of a result's summary table unless named in ``variables``
DETAIL_DIMS = ("realization", "trajectory", "bin")
# posterior draws (distsim.mcmc): summarised over these dimensions, one row per variable and statistic
DRAW_DIMS = ("chain", "draw")
DRAW_QUANTILES = (0.05, 0.5, 0.95)
TABLE_FORMATS = {".csv": "csv", ".tsv": "tsv", ".parquet": "parquet"}


def _draw_summary(ds: xr.Dataset, names: list[str]) -> xr.Dataset:
    """Mean, sd, quantiles and (when the result has them) R-hat and ESS of posterior draws, over dim ``variable``."""
    stats: dict[str, list[float]] = {"mean": [], "sd": [], **{f"q{round(q * 100):02d}": [] for q in DRAW_QUANTILES}}
    for name in names:
        x = ds[name].load()
        dims = [d for d in DRAW_DIMS if d in x.dims]
        stats["mean"].append(float(x.mean(dims)))
        stats["sd"].append(float(x.std(dims, ddof=1)) if x.size > 1 else float("nan"))
        for q in DRAW_QUANTILES:
            stats[f"q{round(q * 100):02d}"].append(float(x.quantile(q, dims)))
    if "variable" in ds.coords:  # per-variable diagnostics stored as coordinates (rhat, ess_bulk, ess_tail)
        known = {str(v): i for i, v in enumerate(ds["variable"].values)}
        for k, c in ds.coords.items():
            if c.dims == ("variable",) and k != "variable" and c.dtype.kind in "fiu":
                stats[str(k)] = [float(c.values[known[n]]) if n in known else float("nan") for n in names]
    return xr.Dataset({k: ("variable", v) for k, v in stats.items()}, coords={"variable": names})


def to_table(ds: xr.Dataset | str | os.PathLike, variables: list[str] | None = None, *,
             wide: bool = False) -> Any:
    """A result (or the path of one) as a tidy :class:`pandas.DataFrame`, one variable at a time, so
    that no array larger than one variable is ever built (``Dataset.to_dataframe`` crosses every
    dimension of every variable).

    ``variables`` (default: the summary, i.e. every data variable without a per-sample dimension
    :data:`DETAIL_DIMS`; posterior draws summarised per variable). Long form (default): columns
    ``name``, the dimensions and coordinates of each variable (empty where a variable lacks them),
    ``value`` (numbers) and ``text`` (text-valued variables). ``wide=True``: one column per variable;
    the variables must share their dimensions."""

    file = None
    if not isinstance(ds, xr.Dataset):
        file = os.fspath(ds)
        if not os.path.exists(file):
            raise FileNotFoundError(f"{file}: no such result")
        if Path(file).suffix.lower() not in FORMATS:
            raise DataError(f"not a result ({', '.join(sorted(FORMATS))})", file=file)
        try:
            ds = open_result(file)
        except (OSError, ValueError) as e:
            raise DataError(f"cannot be read as a result ({str(e).splitlines()[0] if str(e) else type(e).__name__})",
                            file=file) from None
    if variables is None:
        chosen = [n for n in ds.data_vars if not set(ds[n].dims) & set(DETAIL_DIMS)]
    else:
        chosen = list(variables)
        unknown = [n for n in chosen if n not in ds.data_vars]
        if unknown:
            raise KeyError(f"{file + ': ' if file else ''}no variable {unknown[0]!r} in this result"
                           f"{did_you_mean(unknown[0], ds.data_vars)}; it has {', '.join(map(str, ds.data_vars))}")
    arrays = {str(n): ds[n] for n in chosen}
    draws = [n for n in arrays if "draw" in arrays[n].dims]
    if draws and variables is None:  # a posterior: its summary, per variable
        summary = _draw_summary(ds, draws)
        arrays = {**{str(k): v for k, v in summary.data_vars.items()},
                  **{n: a for n, a in arrays.items() if n not in draws}}
    if not arrays:
        return pd.DataFrame(columns=["name", "value"])
    if wide:
        dims = {tuple(sorted(a.dims)) for a in arrays.values()}
        if len(dims) > 1:
            groups = "; ".join(f"({', '.join(d)}): " + ", ".join(n for n, a in arrays.items() if tuple(sorted(a.dims)) == d)
                               for d in sorted(dims))
            raise ValueError(f"a wide table needs variables of the same dimensions; choose among {groups}")
        return xr.Dataset(arrays).to_dataframe().reset_index()
    parts = []
    for name, da in arrays.items():
        da = da.load()
        column = "text" if da.dtype.kind in "USO" else "value"
        df = da.rename(None).to_dataframe(name=column).reset_index()
        df.insert(0, "name", name)
        parts.append(df)
    table = pd.concat(parts, ignore_index=True, sort=False)
    for col in table.columns:  # integer coordinates stay integers where other variables leave them empty
        kinds = {p[col].dtype.kind for p in parts if col in p.columns}
        if kinds == {"i"} or kinds == {"u"}:
            table[col] = table[col].astype("Int64")
    last = [c for c in ("value", "text") if c in table.columns]
    return table[[c for c in table.columns if c not in last] + last]


def write_table(table: Any, path: str | os.PathLike, *, overwrite: bool = False) -> Path:
    """Write a DataFrame as CSV (``.csv``), tab-separated (``.tsv``) or Parquet (``.parquet``, needs
    pyarrow: ``pip install "distsim-bio[parquet]"``), atomically, never replacing a file without ``overwrite``."""
    p = check_table_path(path, overwrite=overwrite)
    fmt = TABLE_FORMATS[p.suffix.lower()]
    parent = p.parent if str(p.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", dir=parent)
    os.close(fd)
    try:
        if fmt == "parquet":
            table.to_parquet(tmp, index=False)
        else:
            table.to_csv(tmp, index=False, sep="\t" if fmt == "tsv" else ",")
        os.replace(tmp, p)
    except OSError as e:
        raise OutputError(f"could not be written ({e.strerror or type(e).__name__})", file=str(p)) from e
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return p


def check_table_path(path: str | os.PathLike, *, overwrite: bool = False) -> Path:
    """Validate a table's output path before any work (format, folder, nothing replaced without ``overwrite``)."""
    p = Path(path)
    fmt = TABLE_FORMATS.get(p.suffix.lower())
    if fmt is None:
        raise OutputError(f"unknown table format {p.suffix!r}; use one of {', '.join(sorted(TABLE_FORMATS))}",
                          file=str(p))
    if fmt == "parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise OutputError('writing Parquet needs pyarrow: pip install "distsim-bio[parquet]" (or write .csv)',
                              file=str(p)) from None
    check_folder(p)
    if p.is_dir():
        raise OutputError("is a folder; it is never replaced", file=str(p))
    if p.exists() and not overwrite:
        raise OutputError("exists; choose another path or allow replacing it (--overwrite, overwrite=True)",
                          file=str(p))
    return p
