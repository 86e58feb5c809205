"""The zarr store of a sweep: written chunk by chunk as results arrive, resumable after a kill, and
verified on every resume and every read.

Layout: every per-point variable has the ``point`` dimension first, chunked by the sweep's chunk size,
so one sweep task writes whole zarr chunks (each chunk file is replaced atomically by zarr's local
store). A task writes its data, then one checksum per variable of the chunk (``chunk_digest``, a row
per chunk: BLAKE2b-64 of the values as stored), then its points' ``done`` flags (int8). A point counts
as done only when its chunk's data match their checksums: a kill at any moment leaves every chunk
either complete and verified, or not (and computed on the next run), and a chunk damaged later (flipped
bytes, a truncated or deleted chunk file) is recomputed, naming its points and its file. The store is
created in a hidden folder beside it and renamed into place, with a record (root attrs) of the
configuration (analysis, model digest, fixed arguments, points, seed; a store of another sweep is
refused), of every array's ``zarr.json`` (a deleted or damaged one is restored) and of the checksums
of the coordinates written once. A sweep may add points at the end of a store's (a grid growing in
its first parameter, a table growing by rows): the store grows and only the new points are computed.
``<store>.lock`` beside the store admits one sweep at a time.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import itertools
import json
import os
import shutil
import socket
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import xarray as xr

from ..errors import DataError, OutputError
from .layout import shaped

CONFIG_ATTR = "distsim_sweep_config"
RECORD_ATTR = "distsim_sweep_record"
CONFIG_KEYS = ("analysis", "model_sha256", "seed", "fixed", "parameters", "n_points", "points_sha256")
DIGEST = "chunk_digest"  # (chunk, variable): BLAKE2b-64 of the chunk's values of each variable; 0: none
DONE = "done"
_INTERNAL = (DIGEST, DONE)


class StoreMismatch(ValueError):
    """The store was written by a sweep with a different configuration."""


class StoreDamaged(DataError):
    """A sweep store that cannot be used as it is (the message names the store and the damaged file)."""


class StoreLocked(OutputError):
    """Another sweep holds the store's lock (the message names its host, process and start)."""


class StoreRepaired(UserWarning):
    """Damaged chunks of a store that the sweep recomputes, or metadata it restored (names the points)."""


def _open_group(path: Path, mode: str = "r") -> Any:
    import zarr

    return zarr.open_group(str(path), mode=mode, zarr_format=3)


def is_sweep_store(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a zarr folder written by :func:`distsim.sweep` (its root holds the sweep's record)."""
    p = Path(path)
    if not (p.is_dir() and (p / "zarr.json").is_file()):
        return False
    try:
        return CONFIG_ATTR in dict(_open_group(p).attrs)
    except Exception:  # noqa: BLE001 -- not a readable zarr group: not a sweep store
        return False


def digest(values: Any) -> int:
    """BLAKE2b-64 of an array's shape and values as stored (text: UTF-8 with lengths), never 0."""
    a = np.asarray(values)
    h = hashlib.blake2b(repr(a.shape).encode(), digest_size=8)
    if a.dtype.kind in "OUST":
        for item in a.ravel().tolist():
            b = (item.decode() if isinstance(item, bytes) else str(item)).encode("utf-8", "surrogatepass")
            h.update(len(b).to_bytes(8, "little"))
            h.update(b)
    else:
        a = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<"))
        h.update(a.dtype.str.encode())
        h.update(a.tobytes())
    return int.from_bytes(h.digest(), "little") or 1


def point_ranges(points: list[int]) -> str:
    """``[2, 3, 4, 9]`` -> ``'2-4, 9'``."""
    out: list[str] = []
    for p in sorted(points):
        if out and out[-1][1] == p - 1:
            out[-1] = (out[-1][0], p)
        else:
            out.append((p, p))
    return ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in out)  # type: ignore[misc]


@dataclass
class Verified:
    """What an existing store holds: per chunk, whether its data verify; the damaged chunks (by
    number: what is wrong) that the sweep recomputes; the points recomputed because the store grew."""

    done: np.ndarray
    damaged: dict[int, str] = field(default_factory=dict)
    regrown: list[int] = field(default_factory=list)


class SweepStore:
    """A sweep's zarr store at ``path`` (created on the first result; see the module docstring).
    ``coords``: the per-point coordinates (the swept values and seeds); ``prefix_digest(n)``: the
    points digest of this sweep's first ``n`` points (to recognise a store that this sweep extends;
    ``grow=False``: recognise it but leave it as it is, with :attr:`grows_from` set)."""

    def __init__(self, path: str | os.PathLike, config: dict[str, Any], n_points: int, chunk_size: int,
                 coords: dict[str, np.ndarray] | None = None,
                 prefix_digest: Callable[[int], str] | None = None, grow: bool = True):
        self.path = Path(path)
        self.config = config
        self.n = n_points
        self.chunk_size = chunk_size
        self.coords = coords or {}
        self.exists = False
        self.verified: Verified | None = None
        self.grows_from: int | None = None  # the store's points, when this sweep extends them
        self._record: dict[str, Any] = {}
        check_path(self.path)
        if self.path.exists():
            self._check_existing(prefix_digest, grow)

    # ---- opening: configuration, record, growth ------------------------------------------------

    def _check_existing(self, prefix_digest: Callable[[int], str] | None, grow: bool) -> None:
        try:
            group = _open_group(self.path)
            attrs = dict(group.attrs)
        except Exception as e:  # noqa: BLE001 -- anything unreadable is not ours to overwrite
            raise StoreDamaged(f"exists and is not a readable zarr store ({_one_line(e)}; {self.path / 'zarr.json'} "
                               "is the store's record); choose another store", file=str(self.path)) from e
        if CONFIG_ATTR not in attrs:
            raise ValueError(f"{self.path} exists but was not written by distsim.sweep; choose another store")
        if RECORD_ATTR not in attrs:
            raise StoreDamaged("was written by an older distsim, without checksums, so its points cannot be "
                               "verified; use a new store", file=str(self.path))
        old = json.loads(attrs[CONFIG_ATTR])
        self._record = attrs[RECORD_ATTR]
        self.chunk_size = int(attrs["chunk_size"])
        diff = [k for k in CONFIG_KEYS if old.get(k) != self.config.get(k)]
        grows = (set(diff) <= {"n_points", "points_sha256"} and self.n > old["n_points"]
                 and prefix_digest is not None and prefix_digest(old["n_points"]) == old["points_sha256"])
        if diff and not grows:
            details = "; ".join(f"{k}: store has {_short(old.get(k))}, this sweep has {_short(self.config.get(k))}"
                                for k in diff)
            hint = ""
            if set(diff) <= {"n_points", "points_sha256"}:
                hint = (" (a sweep may extend a store only by adding points after its points: a grid by new values "
                        "of its first parameter, a table by new rows, because point i's seed is derive_seeds(seed, "
                        "i); any other change of the points changes which point has which seed)")
            raise StoreMismatch(f"{self.path} holds a different sweep ({details}){hint}; use a new store or the "
                                "same configuration to resume")
        self.exists = True
        if grows:
            self.grows_from = old["n_points"]
            if not grow:  # only asked what the store holds: it is left as it is
                return
        restored = self._restore_metadata()
        regrown = self._grow(old["n_points"]) if grows else []
        self._check_coordinates()
        self.verified = self._verify()
        self.verified.regrown = regrown
        if restored:
            warnings.warn(StoreRepaired(f"{self.path}: restored {', '.join(restored)} from the store's record"),
                          stacklevel=3)

    def _restore_metadata(self) -> list[str]:
        """Rewrite every array's zarr.json that is missing or differs from the record."""
        restored = []
        for name, meta in self._record["arrays"].items():
            p = self.path / name / "zarr.json"
            try:
                ok = json.loads(p.read_text()) == meta
            except (OSError, ValueError):
                ok = False
            if not ok:
                _write_atomic(p, json.dumps(meta, indent=2))
                restored.append(f"{name}/zarr.json")
        return restored

    def _grow(self, n_old: int) -> list[int]:
        """Extend every per-point array to this sweep's points; the chunks from the last old one on
        get no checksum (the last old chunk, if partial, is recomputed with the new points)."""
        group = _open_group(self.path, mode="r+")
        C, N = self.chunk_size, self.n
        first_new = n_old // C
        for name, meta in self._record["arrays"].items():
            arr = group[name]
            if name == DIGEST:
                arr.resize((-(-N // C),) + arr.shape[1:])
                arr[first_new:] = 0
            elif meta.get("dimension_names", [None])[0] == "point":
                arr.resize((N,) + arr.shape[1:])
                if name == DONE:
                    arr[first_new * C:] = 0
        for name, values in self.coords.items():
            group[name][:] = values
        group["point"][:] = np.arange(N)
        self._record["arrays"] = {name: json.loads((self.path / name / "zarr.json").read_text())
                                  for name in self._record["arrays"]}
        self._record["static"].update({name: digest(group[name][:]) for name in (*self.coords, "point")})
        group.attrs.update({RECORD_ATTR: self._record, CONFIG_ATTR: json.dumps(self.config, sort_keys=True)})
        return list(range(first_new * C, min(n_old, (first_new + 1) * C))) if n_old % C else []

    def _check_coordinates(self) -> None:
        """The arrays written once (coordinates) against their checksums; the per-point ones are
        rewritten from this sweep's points, any other is refused."""
        group = _open_group(self.path, mode="r+")
        expected = dict(self.coords, point=np.arange(self.n))
        for name, want in self._record["static"].items():
            try:
                if digest(group[name][:]) == want:
                    continue
            except Exception:  # noqa: BLE001 -- an unreadable chunk is damage like any other
                pass
            why = f"does not match its checksum ({self._static_damage(name)})"
            if name in expected and digest(np.asarray(expected[name], dtype=group[name].dtype)) == want:
                group[name][:] = expected[name]
                warnings.warn(StoreRepaired(f"{self.path}: coordinate {name!r} {why}; rewritten from the "
                                            "sweep's points"), stacklevel=4)
                continue
            raise StoreDamaged(f"coordinate {name!r} {why}; restore it or remove the store to recompute every "
                               "point", file=str(self.path))

    def _static_damage(self, name: str) -> str:
        """Which chunk files of an array are missing or unreadable (else: its chunks hold other values)."""
        meta = self._record["arrays"][name]
        shape, cs = meta["shape"], meta["chunk_grid"]["configuration"]["chunk_shape"]
        sep = meta["chunk_key_encoding"].get("configuration", {}).get("separator", "/")
        arr = _open_group(self.path)[name]
        bad = []
        for idx in itertools.product(*(range(-(-s // c)) for s, c in zip(shape, cs))):
            key = f"{name}/" + sep.join(["c", *map(str, idx)])
            try:
                arr[tuple(slice(i * c, (i + 1) * c) for i, c in zip(idx, cs))]
            except Exception as e:  # noqa: BLE001
                bad.append(f"{key} cannot be read: {_one_line(e)}")
                continue
            if not (self.path / key).exists():
                bad.append(f"{key} is missing")
        return "; ".join(bad) if bad else f"the values in {name}/c/ differ"

    # ---- verification ----------------------------------------------------------------------------

    def _variables(self) -> list[str]:
        return list(self._record["variables"])

    def _files(self, name: str, k: int | None = None) -> str:
        """The chunk file of chunk ``k`` of an array (relative to the store), or its folder."""
        if k is None:
            return f"{name}/"
        ndim = len(self._record["arrays"][name]["shape"])
        sep = self._record["arrays"][name]["chunk_key_encoding"].get("configuration", {}).get("separator", "/")
        return f"{name}/" + sep.join(["c", str(k)] + ["0"] * (ndim - 1))

    def _verify(self) -> Verified:
        """Every chunk with checksums: its data read and checked (nothing trusts the done flags)."""
        C, n_chunks = self.chunk_size, -(-self.n // self.chunk_size)
        names = self._variables()
        rows = self._read_chunks(DIGEST)
        flags = self._read_chunks(DONE)
        data = {name: self._read_chunks(name) for name in names}
        done = np.zeros(n_chunks, dtype=bool)
        damaged: dict[int, str] = {}
        for k in range(n_chunks):
            row, flag = rows[k], flags[k]
            row = row[0] if isinstance(row, np.ndarray) else row
            claimed_by_flags = isinstance(flag, np.ndarray) and bool(np.any(flag == 1))
            if not isinstance(row, np.ndarray):
                damaged[k] = f"{self._files(DIGEST, k)} (its checksums) cannot be read ({row})"
                continue
            if not np.all(row != 0):
                if claimed_by_flags:
                    damaged[k] = f"{self._files(DIGEST, k)} holds no checksums, though its points are marked done"
                continue
            problem = None
            for j, name in enumerate(names):
                values = data[name][k]
                if not isinstance(values, np.ndarray):
                    problem = f"{self._files(name, k)} cannot be read ({values})"
                elif digest(values) != int(row[j]):
                    problem = f"{self._files(name, k)} {self._mismatch(name, k)}"
                if problem:
                    break
            if problem:
                damaged[k] = problem
                continue
            done[k] = True
            if not (isinstance(flag, np.ndarray) and np.all(flag == 1)):
                _open_group(self.path, mode="r+")[DONE][k * C:min((k + 1) * C, self.n)] = 1
        return Verified(done, damaged)

    def _mismatch(self, name: str, k: int) -> str:
        missing = not (self.path / self._files(name, k)).exists()
        return "is missing" if missing else "does not match its checksum"

    def _read_chunks(self, name: str) -> list[np.ndarray | str]:
        """The values of every chunk of an array (along its first dimension), or why it cannot be read;
        the whole array in one read when it reads."""
        arr = _open_group(self.path)[name]
        size = 1 if name == DIGEST else self.chunk_size
        n_chunks = -(-arr.shape[0] // size)
        try:
            whole = arr[:]
            return [whole[k * size:(k + 1) * size] for k in range(n_chunks)]
        except Exception:  # noqa: BLE001 -- find the chunks that do not read
            out: list[np.ndarray | str] = []
            for k in range(n_chunks):
                try:
                    out.append(arr[k * size:(k + 1) * size])
                except Exception as e:  # noqa: BLE001
                    out.append(_one_line(e))
            return out

    def done_chunks(self) -> np.ndarray:
        """Per chunk: True when its data are written and verify (a new store: none)."""
        if self.verified is None:
            return np.zeros(-(-self.n // self.chunk_size), dtype=bool)
        return self.verified.done

    # ---- writing ---------------------------------------------------------------------------------

    def create(self, first: xr.Dataset, coords: dict[str, np.ndarray], attrs: dict[str, Any]) -> None:
        """Lay out the store from the first computed chunk (``first``: dims point + per-point dims), in
        a hidden folder beside it that is then renamed into place."""
        import dask.array as da

        C, N = self.chunk_size, self.n
        n_chunks = -(-N // C)
        names = sorted(first.data_vars)
        data = {}
        for name in names:
            var = first[name]
            shape = (N,) + var.shape[1:]
            if var.dtype.kind in "OUST":  # text (GRN rule names): variable-length strings
                fill, dtype = "", np.dtypes.StringDType()
            else:
                fill, dtype = (np.nan if var.dtype.kind in "fc" else 0), var.dtype
            data[name] = (var.dims, da.full(shape, fill, dtype=dtype, chunks=(C,) + var.shape[1:]), var.attrs)
        data[DIGEST] = (("sweep_chunk", "sweep_variable"),
                        da.zeros((n_chunks, len(names)), dtype=np.uint64, chunks=(1, len(names))),
                        {"long_name": "BLAKE2b-64 of each variable's values in the chunk (0: not written)"})
        data[DONE] = ("point", da.zeros(N, dtype=np.int8, chunks=C),
                      {"long_name": "1 once the point's results are written and checksummed"})
        co = {k: v for k, v in first.coords.items() if "point" not in v.dims}
        co["point"] = np.arange(N)
        for k, v in coords.items():
            co[k] = ("point", v)
        tmpl = xr.Dataset(data, coords=co)
        for name in list(tmpl.variables):
            if tmpl[name].dtype.kind == "U":  # zarr v3: variable-length strings
                tmpl[name] = tmpl[name].astype(object)
        tmpl.attrs = dict(attrs, chunk_size=C)
        encoding = {name: {"chunks": (C,) + tmpl[name].shape[1:]} for name in names + [DONE]}
        encoding[DIGEST] = {"chunks": (1, len(names))}
        tmp = self.path.with_name(f".{self.path.name}.creating")
        shutil.rmtree(tmp, ignore_errors=True)  # a kill during an earlier creation (we hold the lock)
        tmpl.to_zarr(tmp, mode="w-", compute=False, consolidated=False, zarr_format=3, encoding=encoding)
        group = _open_group(tmp, mode="r+")
        static = [name for name in tmpl.variables if name not in data]
        self._record = {
            "variables": names,
            "arrays": {name: json.loads((tmp / name / "zarr.json").read_text()) for name in tmpl.variables},
            "static": {name: digest(group[name][:]) for name in static},
        }
        group.attrs.update({RECORD_ATTR: self._record, CONFIG_ATTR: json.dumps(self.config, sort_keys=True)})
        os.rename(tmp, self.path)
        self.exists = True

    def write(self, start: int, ds: xr.Dataset) -> None:
        """Write the points ``start .. start + ds.sizes['point']`` (one whole chunk): data, then their
        checksums, then the done flags (a chunk rewritten after damage first loses both)."""
        group = _open_group(self.path, mode="r+")
        stop = start + ds.sizes["point"]
        k = start // self.chunk_size
        names = self._variables()
        if sorted(ds.data_vars) != names:
            raise RuntimeError(f"point {start}: variables {sorted(ds.data_vars)}, the store has {names} (every "
                               "point's result must have the same variables)")
        if self.verified is not None and k in self.verified.damaged:
            group[DONE][start:stop] = 0
            group[DIGEST][k] = 0
        row = np.zeros(len(names), dtype=np.uint64)
        for j, name in enumerate(names):
            arr, var = group[name], ds[name]
            if arr.shape[1:] != var.shape[1:]:
                raise RuntimeError(f"point {start}: {name} has shape {var.shape[1:]}, the store has {arr.shape[1:]} "
                                   "(every point's result must have the same shape)")
            values = np.asarray(var.values)
            if values.dtype.kind not in "OUST":
                values = values.astype(arr.dtype)
            arr[start:stop] = values
            row[j] = digest(values)
        group[DIGEST][k] = row
        group[DONE][start:stop] = np.ones(stop - start, dtype=np.int8)

    # ---- reading ---------------------------------------------------------------------------------

    def load(self, verify: bool = True) -> xr.Dataset:
        """The whole sweep, read into memory and checked against the checksums (every chunk must be
        done and verify; a damaged one raises :class:`StoreDamaged` naming its file). ``verify=False``:
        the store was verified just before (:attr:`verified`)."""
        if verify or self.verified is None:
            self._restore_metadata()
            self.verified = self._verify()
        bad = self.verified.damaged or {k: "it is not computed" for k in np.flatnonzero(~self.verified.done)}
        if bad:
            k, why = next(iter(bad.items()))
            a, b = k * self.chunk_size, min((k + 1) * self.chunk_size, self.n) - 1
            raise StoreDamaged(f"chunk {k} (points {point_ranges(list(range(a, b + 1)))}): {why}; run the sweep "
                               "again to recompute it", file=str(self.path))
        ds = xr.open_zarr(self.path, consolidated=False, chunks=None, zarr_format=3).load()
        missing = [name for name in self._record["arrays"] if name not in ds.variables]
        if missing:
            raise StoreDamaged(f"variable {missing[0]!r} is missing ({missing[0]}/zarr.json)", file=str(self.path))
        for key in (CONFIG_ATTR, RECORD_ATTR):
            ds.attrs.pop(key, None)
        return ds.drop_vars(list(_INTERNAL))


def check_path(path: str | os.PathLike) -> None:
    """A store is a folder ending in .zarr in a folder that exists."""
    p = Path(path)
    if p.suffix.lower() != ".zarr":
        raise ValueError(f"{p}: a sweep store is a folder ending in .zarr")
    if not (p.parent if str(p.parent) else Path(".")).is_dir():
        raise ValueError(f"{p}: folder {p.parent} does not exist")


def open_store(path: str | os.PathLike) -> xr.Dataset:
    """A sweep store read back and verified (:meth:`SweepStore.load`): every point computed and its
    data matching their checksums, else :class:`StoreDamaged` naming the chunk's file. A grid sweep's
    store comes back with one dimension per parameter, as the sweep returned it (:mod:`.layout`). A store that a
    sweep is writing is refused (:class:`StoreLocked`)."""
    p = Path(path)
    with locked(p, readonly_ok=True):
        try:
            config = json.loads(dict(_open_group(p).attrs)[CONFIG_ATTR])
        except KeyError:
            raise ValueError(f"{p} was not written by distsim.sweep") from None
        except Exception as e:  # noqa: BLE001
            raise StoreDamaged(f"is not a readable zarr store ({_one_line(e)})", file=str(p)) from e
        st = SweepStore(p, config, config["n_points"], 1)
        return shaped(st.load(verify=False))


# ---- the lock -----------------------------------------------------------------------------------


@contextlib.contextmanager
def locked(path: str | os.PathLike, readonly_ok: bool = False) -> Iterator[str | None]:
    """Hold ``<store>.lock`` (an exclusive ``flock``, released by the kernel when the process dies);
    yields a note about the lock of a dead sweep taken over, or None. A lock held elsewhere raises
    :class:`StoreLocked` naming the host, process and start of its holder. ``readonly_ok``: a reader
    in a folder it cannot write goes on without the lock."""
    store = Path(path)
    check_path(store)
    lock = store.with_name(store.name + ".lock")
    try:
        fd, note = _acquire(store, lock)
    except PermissionError:
        if not readonly_ok:
            raise
        yield None
        return
    try:
        yield note
    finally:
        with contextlib.suppress(OSError):
            os.unlink(lock)
        os.close(fd)


def _acquire(store: Path, lock: Path) -> tuple[int, str | None]:
    me = {"host": socket.gethostname(), "pid": os.getpid(),
          "since": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
    while True:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        holder = _read_lock(fd)
        try:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise StoreLocked(f"in use by another sweep: {_describe(holder)}; wait for it to finish, or stop it",
                              file=str(store)) from None
        except (ImportError, OSError):  # no flock here (platform or file system): judge the holder's pid
            if holder and holder.get("pid") != me["pid"] and not _dead(holder):
                os.close(fd)
                raise StoreLocked(f"in use by another sweep: {_describe(holder)}; if it is not running, remove "
                                  f"{lock}", file=str(store)) from None
        try:
            same = os.fstat(fd).st_ino == os.stat(lock).st_ino
        except FileNotFoundError:
            same = False
        if not same:  # its holder removed it between our open and our lock: take the new one
            os.close(fd)
            continue
        holder = _read_lock(fd)  # what a dead holder left
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(me).encode(), 0)
        note = f"took over the lock of a sweep that is no longer running ({_describe(holder)})" if holder else None
        return fd, note


def _read_lock(fd: int) -> dict[str, Any] | None:
    try:
        info = json.loads(os.pread(fd, 4096, 0).decode() or "null")
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) else None


def _describe(holder: dict[str, Any] | None) -> str:
    if not holder:
        return "holder unknown"
    return f"process {holder.get('pid')} on host {holder.get('host')}, since {holder.get('since')}"


def _dead(holder: dict[str, Any]) -> bool:
    """A holder on this host whose process is gone (a holder on another host is never judged dead)."""
    if holder.get("host") != socket.gethostname() or not isinstance(holder.get("pid"), int):
        return False
    try:
        os.kill(holder["pid"], 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


# ---- helpers ------------------------------------------------------------------------------------


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)


def _one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0][:200]}" if text else type(e).__name__


def _short(v: Any) -> str:
    text = json.dumps(v, sort_keys=True) if not isinstance(v, str) else v
    return text if len(text) <= 60 else text[:57] + "..."
