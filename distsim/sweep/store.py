"""The zarr store of a sweep: written chunk by chunk as results arrive, resumable after a kill.

Layout: every per-point variable has the ``point`` dimension first, chunked by the sweep's chunk size,
so one sweep task writes whole zarr chunks (each chunk file is replaced atomically by zarr's local
store). A task's data is written first, then its points' ``done`` flags (int8, same chunking): a kill
at any moment leaves every point either complete and marked done, or not marked done (and recomputed
on the next run). The sweep configuration (analysis, model digest, fixed arguments, points, seed) is
kept in the attrs; a store made by a different configuration is refused.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

CONFIG_ATTR = "distsim_sweep_config"
CONFIG_KEYS = ("analysis", "model_sha256", "seed", "fixed", "parameters", "n_points", "points_sha256")


class StoreMismatch(ValueError):
    """The store was written by a sweep with a different configuration."""


def _open_group(path: Path, mode: str = "r") -> Any:
    import zarr

    return zarr.open_group(str(path), mode=mode, zarr_format=3)


class SweepStore:
    """A sweep's zarr store at ``path`` (created on the first result; see the module docstring)."""

    def __init__(self, path: str | os.PathLike, config: dict[str, Any], n_points: int, chunk_size: int):
        self.path = Path(path)
        self.config = config
        self.n = n_points
        self.chunk_size = chunk_size
        self.exists = False
        if self.path.suffix.lower() != ".zarr":
            raise ValueError(f"{self.path}: a sweep store is a folder ending in .zarr")
        if not (self.path.parent if str(self.path.parent) else Path(".")).is_dir():
            raise ValueError(f"{self.path}: folder {self.path.parent} does not exist")
        if self.path.exists():
            self._check_existing()

    def _check_existing(self) -> None:
        try:
            group = _open_group(self.path)
            attrs = dict(group.attrs)
        except Exception as e:  # noqa: BLE001 -- anything unreadable is not ours to overwrite
            raise ValueError(f"{self.path} exists and is not a readable zarr store ({e}); choose another store") from e
        if CONFIG_ATTR not in attrs:
            raise ValueError(f"{self.path} exists but was not written by distsim.sweep; choose another store")
        old = json.loads(attrs[CONFIG_ATTR])
        diff = [k for k in CONFIG_KEYS if old.get(k) != self.config.get(k)]
        if diff:
            details = "; ".join(f"{k}: store has {_short(old.get(k))}, this sweep has {_short(self.config.get(k))}"
                                for k in diff)
            raise StoreMismatch(f"{self.path} holds a different sweep ({details}); use a new store or the same "
                                "configuration to resume")
        self.chunk_size = int(attrs["chunk_size"])
        self.exists = True

    def done_chunks(self) -> np.ndarray:
        """Per chunk: True when every point of it is marked done. An unreadable flag counts as not done."""
        n_chunks = -(-self.n // self.chunk_size)
        out = np.zeros(n_chunks, dtype=bool)
        if not self.exists:
            return out
        try:
            done = _open_group(self.path)["done"]
        except KeyError:
            return out
        for k in range(n_chunks):
            a, b = k * self.chunk_size, min((k + 1) * self.chunk_size, self.n)
            try:
                out[k] = bool(np.all(done[a:b] == 1))
            except Exception:  # noqa: BLE001
                out[k] = False
        return out

    def create(self, first: xr.Dataset, coords: dict[str, np.ndarray], attrs: dict[str, Any]) -> None:
        """Lay out the store from the first computed chunk (``first``: dims point + per-point dims)."""
        import dask.array as da

        C, N = self.chunk_size, self.n
        data = {}
        for name, var in first.data_vars.items():
            shape = (N,) + var.shape[1:]
            fill = np.nan if var.dtype.kind == "f" else 0
            data[name] = (var.dims, da.full(shape, fill, dtype=var.dtype, chunks=(C,) + var.shape[1:]), var.attrs)
        data["done"] = ("point", da.zeros(N, dtype=np.int8, chunks=C),
                        {"long_name": "1 once the point's results are written"})
        co = {k: v for k, v in first.coords.items() if "point" not in v.dims}
        co["point"] = np.arange(N)
        for k, v in coords.items():
            co[k] = ("point", v)
        tmpl = xr.Dataset(data, coords=co)
        for name in list(tmpl.variables):
            if tmpl[name].dtype.kind == "U":  # zarr v3: variable-length strings
                tmpl[name] = tmpl[name].astype(object)
        tmpl.attrs = dict(attrs, **{CONFIG_ATTR: json.dumps(self.config, sort_keys=True), "chunk_size": C})
        encoding = {name: {"chunks": (C,) + tmpl[name].shape[1:]} for name in data}
        tmpl.to_zarr(self.path, mode="w-", compute=False, consolidated=False, zarr_format=3, encoding=encoding)
        self.exists = True

    def write(self, start: int, ds: xr.Dataset) -> None:
        """Write the points ``start .. start + ds.sizes['point']`` (one whole chunk): data, then done flags."""
        group = _open_group(self.path, mode="r+")
        stop = start + ds.sizes["point"]
        for name, var in ds.data_vars.items():
            arr = group[name]
            if arr.shape[1:] != var.shape[1:]:
                raise RuntimeError(f"point {start}: {name} has shape {var.shape[1:]}, the store has {arr.shape[1:]} "
                                   "(every point's result must have the same shape)")
            arr[start:stop] = var.values
        group["done"][start:stop] = np.ones(stop - start, dtype=np.int8)

    def load(self) -> xr.Dataset:
        """The whole sweep, read into memory (without the ``done`` flags)."""
        ds = xr.open_zarr(self.path, consolidated=False, chunks=None, zarr_format=3).load()
        ds.attrs.pop(CONFIG_ATTR, None)
        return ds.drop_vars("done")


def _short(v: Any) -> str:
    text = json.dumps(v, sort_keys=True) if not isinstance(v, str) else v
    return text if len(text) <= 60 else text[:57] + "..."
