"""Result conventions: xarray Datasets with named dims, units and provenance; netCDF/zarr writing.

Dimension names used across workloads: ``chain``, ``trajectory``, ``realization``, ``time``,
``step``, ``species``, ``node``, ``target``, ``island``, ``generation``, ``draw``, ``point``.
Every variable carries ``units`` and ``long_name`` where meaningful; the Dataset's ``attrs``
carry provenance (:func:`provenance`). Attributes are flat strings/numbers so both netCDF and zarr
store them.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import shutil
import tempfile
from pathlib import Path
from typing import Any

import xarray as xr

from .errors import OutputError

FORMATS = {".nc": "netcdf", ".nc4": "netcdf", ".h5": "netcdf", ".zarr": "zarr"}


def _version() -> str:
    from . import __version__

    return __version__


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
    import dask
    import numpy

    attrs: dict[str, Any] = {
        "Conventions": "CF-1.10",
        "distsim_version": _version(),
        "workload": workload,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "numpy_version": numpy.__version__,
        "dask_version": dask.__version__,
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
