"""Discrete observations of a reaction network and the full states they determine.

Observations are exact counts of some species at times t_0 < t_1 < ... < t_n (seed 003, section
3.2). A CSV file has a header ``time,<species>...``; an empty cell (or a species without a column)
is unobserved. The unobserved counts are recovered from the network's **conservation laws**
(integer vectors c with V c = 0 for the stoichiometry V, so c . x(t) is constant): the totals
c . x and the unobserved counts are the unknowns of one linear system over all times. The full
state at every time must follow uniquely, as integers >= 0; otherwise a clear error names the
species that stay unidentified (or the line where the data contradict the network).
"""

from __future__ import annotations

import csv
import math
import os
from collections import Counter
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import DataError, read_text
from ..models.reactions import MAX_COUNT, ReactionNetwork


class ObservationError(DataError):
    """Bad observations: names the source (file and line where there is one)."""


@dataclass(frozen=True)
class Observations:
    """Full states ``states[k, s]`` at ``times[k]`` (after conservation) and which were observed."""

    times: np.ndarray  # float64 [n+1]
    states: np.ndarray  # int64 [n+1, S]
    observed: np.ndarray  # bool [n+1, S]
    species: tuple[str, ...]
    source: str = "<observations>"
    from_model: tuple[str, ...] = ()  # species whose first value is the model's initial amount (not observed)

    @property
    def n_intervals(self) -> int:
        return len(self.times) - 1


def conservation_laws(net: ReactionNetwork) -> np.ndarray:
    """Integer basis [L, S] of the left null space of the stoichiometry: c with V c = 0 (exact, rational)."""
    S = net.n_species
    rows = [[Fraction(int(v)) for v in row] for row in net.stoichiometry()]
    pivots = _row_reduce(rows, S)  # the free columns give the null space
    basis = []
    for free in (c for c in range(S) if c not in pivots):
        vec = [Fraction(0)] * S
        vec[free] = Fraction(1)
        for i, pc in enumerate(pivots):
            vec[pc] = -rows[i][free]
        basis.append(_primitive(vec))
    return np.asarray(basis, dtype=np.int64).reshape(len(basis), S)


def _row_reduce(rows: list[list[Fraction]], n_cols: int) -> list[int]:
    """Bring ``rows`` to reduced row echelon form (in place, exact); returns the pivot columns."""
    pivots: list[int] = []
    r = 0
    for col in range(n_cols):
        piv = next((i for i in range(r, len(rows)) if rows[i][col] != 0), None)
        if piv is None:
            continue
        rows[r], rows[piv] = rows[piv], rows[r]
        p = rows[r][col]
        rows[r] = [v / p for v in rows[r]]
        for i in range(len(rows)):
            if i != r and rows[i][col] != 0:
                f = rows[i][col]
                rows[i] = [a - f * b for a, b in zip(rows[i], rows[r])]
        pivots.append(col)
        r += 1
        if r == len(rows):
            break
    return pivots


def _primitive(vec: list[Fraction]) -> list[int]:
    """The integer multiple of ``vec`` with coprime entries whose first non-zero entry is positive."""
    den = math.lcm(*(v.denominator for v in vec))
    ints = [int(v * den) for v in vec]
    g = math.gcd(*ints) or 1
    ints = [v // g for v in ints]
    if next(v for v in ints if v != 0) < 0:
        ints = [-v for v in ints]
    return ints


def read_csv(path: str | os.PathLike, counts: bool = True) -> tuple[np.ndarray, dict[str, np.ndarray], list[int], int]:
    """``time,<species>...`` CSV -> (times, {species: float array with NaN where blank}, line of each
    row, line of the header); ``counts=False`` takes any finite numbers (noisy measurements)."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"observations file not found: {os.fspath(path)}")
    f = os.fspath(path)
    rows = []
    for n, line in enumerate(read_text(p, error=ObservationError).split("\n"), 1):
        if line.strip() and not line.lstrip().startswith("#"):
            try:
                rows.append((n, [c.strip() for c in next(csv.reader([line]))]))
            except csv.Error as e:
                raise ObservationError(f"bad CSV row ({e})", file=f, line=n) from None
    if not rows:
        raise ObservationError("empty file; expected a header 'time,<species>...'", file=f, line=1)
    hline, header = rows[0]
    if header[0].lower() != "time":
        raise ObservationError(f"the first column must be 'time', got {header[0][:40]!r}", file=f, line=hline)
    if len(header) < 2:
        raise ObservationError("no species columns after 'time'", file=f, line=hline)
    dup = [h for h, c in Counter(header).items() if c > 1]
    if dup:
        raise ObservationError(f"duplicate column {dup[0][:40]!r}", file=f, line=hline)
    times, cols = [], {h: [] for h in header[1:]}
    for n, row in rows[1:]:
        if len(row) != len(header):
            raise ObservationError(f"{len(row)} fields, the header has {len(header)}", file=f, line=n)
        times.append(_number(row[0], "time", f, n))
        for h, cell in zip(header[1:], row[1:]):
            if cell == "" or cell.upper() in ("NA", "NAN"):
                cols[h].append(math.nan)
            else:
                v = _number(cell, h, f, n)
                cols[h].append(_count(v, h, cell, f, n) if counts else v)
    return np.asarray(times, float), {h: np.asarray(v, float) for h, v in cols.items()}, [n for n, _ in rows[1:]], hline


def _number(cell: str, what: str, f: str, n: int) -> float:
    try:
        v = float(cell)
    except ValueError:
        raise ObservationError(f"{what} = {cell[:40]!r} is not a number", file=f, line=n) from None
    if not math.isfinite(v):
        raise ObservationError(f"{what} = {cell[:40]!r} is not finite", file=f, line=n)
    return v


def _count(v: float, what: str, cell: Any, f: str | None, n: int | None) -> float:
    """``v`` if it is a count (a whole number in [0, 2**53]), else an error naming ``what`` and ``cell``."""
    if not (0 <= v <= MAX_COUNT and v == math.floor(v)):
        raise ObservationError(f"{what} = {str(cell)[:40]!r} is not a non-negative integer count (at most 2**53)",
                               file=f, line=n)
    return v


def as_observations(net: ReactionNetwork, data: Any) -> Observations:
    """Observations from a CSV path, a pandas DataFrame (a ``time`` column or index) or an xarray
    Dataset/DataArray (dim ``time``; a DataArray needs a ``species`` dim), with full states solved."""
    if isinstance(data, Observations):
        return data
    if isinstance(data, (str, os.PathLike)):
        times, cols, lines, header = read_csv(data)
        return _solve(net, times, cols, os.fspath(data), lines, header)
    mod = type(data).__module__
    if mod.startswith("pandas"):
        df = data.reset_index() if "time" not in getattr(data, "columns", []) else data
        if "time" not in df.columns:
            raise ObservationError("DataFrame observations need a 'time' column or index")
        cols = {str(c): df[c].to_numpy(dtype=float) for c in df.columns if c != "time"}
        return _solve(net, df["time"].to_numpy(dtype=float), cols, "<DataFrame>")
    if mod.startswith("xarray"):
        import xarray as xr

        if isinstance(data, xr.DataArray):
            if "species" not in data.dims:
                raise ObservationError("DataArray observations need dims ('time', 'species')")
            data = data.to_dataset(dim="species")
        if "time" not in data.coords:
            raise ObservationError("xarray observations need a 'time' coordinate")
        cols = {str(k): np.asarray(v.values, float) for k, v in data.data_vars.items()}
        return _solve(net, np.asarray(data["time"].values, float), cols, "<Dataset>")
    raise TypeError(f"observations must be a CSV path, pandas DataFrame or xarray object, got {type(data).__name__}")


class _Where:
    """Errors located in the source: the line of data row k (or "row k" without a file), else the header."""

    def __init__(self, src: str, lines: list[int] | None, header: int | None):
        self.src, self.lines, self.header = src, lines, header

    def __call__(self, msg: str, k: int | None = None) -> ObservationError:
        if self.lines is None:
            return ObservationError(msg + (f" (row {k})" if k is not None else ""), file=self.src)
        return ObservationError(msg, file=self.src, line=self.header if k is None else self.lines[k])


def _solve(net: ReactionNetwork, times: np.ndarray, cols: dict[str, np.ndarray], src: str,
           lines: list[int] | None = None, header: int | None = None) -> Observations:
    err = _Where(src, lines, header)
    unknown = [c for c in cols if c not in net.species]
    if unknown:
        raise err(f"column {unknown[0][:40]!r} is not a species of the model ({', '.join(net.species)})")
    _check_times(times, err)
    x = _observed(net, len(times), cols, err)
    obs = ~np.isnan(x)
    C = conservation_laws(net)
    from_model = () if obs.all() else _fill_or_initial(net, times, x, obs, C, err)
    xi = x.astype(np.int64)
    if len(C):
        tot = xi @ C.T
        for k in range(1, len(times)):
            if not np.array_equal(tot[k], tot[0]):
                lw = int(np.flatnonzero(tot[k] != tot[0])[0])
                raise err(f"the observations violate the conservation law {_law_text(net, C[lw])} "
                          f"({tot[0, lw]} at t={times[0]:g}, {tot[k, lw]} here)", k)
    return Observations(times, xi, obs, tuple(net.species), src, from_model)


def _check_times(times: np.ndarray, err: _Where) -> None:
    """At least two times, finite and strictly increasing."""
    K = len(times)
    if K < 2:
        raise err(f"need at least two observation times, got {K}")
    for k in range(K):
        if not math.isfinite(times[k]):
            raise err("time is not finite", k)
        if k and not times[k] > times[k - 1]:
            raise err(f"times must increase strictly ({times[k - 1]:g} then {times[k]:g})", k)


def _observed(net: ReactionNetwork, K: int, cols: dict[str, np.ndarray], err: _Where) -> np.ndarray:
    """The observed counts as a [K, S] float array, NaN where unobserved; each count is checked."""
    x = np.full((K, net.n_species), np.nan)
    for name, v in cols.items():
        if len(v) != K:
            raise err(f"column {name!r} has {len(v)} values for {K} times")
        x[:, net.index(name)] = v
    for k, s in zip(*np.nonzero(~np.isnan(x))):
        try:
            _count(x[k, s], net.species[s], x[k, s], None, None)
        except ObservationError as e:
            raise err(e.message, int(k)) from None
    return x


def _fill_or_initial(net: ReactionNetwork, times: np.ndarray, x: np.ndarray, obs: np.ndarray, C: np.ndarray,
                     err: _Where) -> tuple[str, ...]:
    """Fill the unobserved entries of ``x`` in place; where the observations alone leave the state
    unidentified, with the model's initial amounts of the species unobserved at the first time
    (returned: the species whose first value comes from the model)."""
    try:
        _fill_unobserved(net, times, x, obs, C, err)
    except ObservationError:
        first = [s for s in range(net.n_species) if not obs[0, s]]
        known = obs.copy()
        known[0, first] = True
        x[0, first] = [net.initial[s] for s in first]
        try:
            _fill_unobserved(net, times, x, known, C, err)
        except ObservationError as e:
            raise ObservationError(f"{e.message} (also with the model's initial amounts of "
                                   f"{', '.join(net.species[s] for s in first)} at the first time)",
                                   file=e.file, line=e.line) from None
        return tuple(net.species[s] for s in first)
    return ()


def _fill_unobserved(net: ReactionNetwork, times: np.ndarray, x: np.ndarray, obs: np.ndarray, C: np.ndarray,
                     err: _Where) -> None:
    """Solve for the unobserved entries of ``x`` (in place) from the conservation laws ``C``."""
    K, S = x.shape
    L = C.shape[0]
    # unknowns: totals T_l (one per law) and every unobserved x[k, s]; equations C x_k - T = 0
    miss = [(k, s) for k in range(K) for s in range(S) if not obs[k, s]]
    col = {m: L + i for i, m in enumerate(miss)}
    A = np.zeros((K * L, L + len(miss)))
    b = np.zeros(K * L)
    for k in range(K):
        for lw in range(L):
            r = k * L + lw
            A[r, lw] = -1.0
            for s in range(S):
                if C[lw, s]:
                    if obs[k, s]:
                        b[r] -= C[lw, s] * x[k, s]
                    else:
                        A[r, col[(k, s)]] = C[lw, s]
    undetermined = _undetermined(A, L)
    if undetermined:
        bad = sorted({net.species[miss[i][1]] for i in undetermined})
        ks = sorted({miss[i][0] for i in undetermined})
        raise err(f"the state is not identified: {', '.join(bad)} cannot be determined from the observed "
                  f"species and the conservation laws ({_laws_text(net, C)}) at time(s) "
                  f"{', '.join(f'{times[k]:g}' for k in ks[:5])}{' ...' if len(ks) > 5 else ''}; observe them "
                  "(e.g. give the full state at the first time)", ks[0])
    sol, *_ = np.linalg.lstsq(A, b, rcond=None)
    for i, (k, s) in enumerate(miss):
        v = sol[L + i]
        if abs(v - round(v)) > 1e-6 or round(v) < 0:
            raise err(f"the conservation laws give {net.species[s]} = {v:.6g}, not a non-negative integer: the "
                      "observations contradict the network", k)
        x[k, s] = round(v)
    resid = A @ sol - b
    if np.max(np.abs(resid)) > 1e-6:
        raise err(f"the observations violate the conservation laws ({_laws_text(net, C)})",
                  int(np.argmax(np.abs(resid))) // L)


def _undetermined(A: np.ndarray, n_totals: int) -> list[int]:
    """Indices (into the unobserved entries) of unknowns not fixed by A z = b: nonzero in the null space."""
    if A.size == 0:  # no conservation law: nothing unobserved can be recovered
        return list(range(A.shape[1] - n_totals))
    u, sv, vt = np.linalg.svd(A, full_matrices=True)
    tol = max(A.shape) * (sv[0] if len(sv) else 1.0) * 1e-10
    rank = int(np.sum(sv > tol))
    null = vt[rank:]
    if null.shape[0] == 0:
        return []
    return [i - n_totals for i in range(n_totals, A.shape[1]) if np.max(np.abs(null[:, i])) > 1e-8]


def _law_text(net: ReactionNetwork, c: np.ndarray) -> str:
    terms = [f"{'' if abs(v) == 1 else abs(int(v))}{net.species[s]}" for s, v in enumerate(c) if v]
    sign = ["-" if v < 0 else "+" for v in c if v]
    out = ("-" if sign[0] == "-" else "") + terms[0]
    for sg, t in zip(sign[1:], terms[1:]):
        out += f" {sg} {t}"
    return out + " = const"


def _laws_text(net: ReactionNetwork, C: np.ndarray) -> str:
    return "; ".join(_law_text(net, c) for c in C) if len(C) else "none"
