"""MaBoSS-compatible CSV files of a :func:`~distsim.maboss.maboss` Dataset: ``PREFIX_probtraj.csv`` and
``PREFIX_fp.csv``, laid out as MaBoSS writes them (tab-separated), so its scripts and plots read them."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import xarray as xr

from ..errors import OutputError


def write_csv(ds: xr.Dataset, prefix: str | os.PathLike, *, overwrite: bool = False) -> list[Path]:
    """Write ``PREFIX_probtraj.csv`` (Time, TH, ErrorTH, H, HD=0, then State/Proba/ErrorProba for each
    state with time in the window) and ``PREFIX_fp.csv`` (MaBoSS's fixed-point table)."""
    paths = [Path(f"{os.fspath(prefix)}_probtraj.csv"), Path(f"{os.fspath(prefix)}_fp.csv")]
    for p in paths:
        parent = p.parent if str(p.parent) else Path(".")
        if not parent.is_dir():
            raise OutputError(f"folder {parent} does not exist", file=str(p))
        if p.exists() and not overwrite:
            raise OutputError("exists; choose another prefix or allow replacing it (--overwrite)", file=str(p))
    prob = ds.probability.values
    err = ds.probability_error.values
    states = [str(s) for s in ds.state.values]
    width = int((prob > 0).sum(axis=1).max(initial=0))
    lines = ["Time\tTH\tErrorTH\tH\tHD=0" + "\tState\tProba\tErrorProba" * width]
    for k, t in enumerate(ds.time.values):
        row = [f"{t:.4f}", f"{ds.TH.values[k]:.9g}", f"{ds.ErrorTH.values[k]:.9g}", f"{ds.H.values[k]:.9g}",
               f"{prob[k].sum():.9g}"]
        for j in np.flatnonzero(prob[k] > 0):
            row += [states[j], f"{prob[k, j]:.9g}", f"{err[k, j]:.9g}"]
        lines.append("\t".join(row))
    fp = ds.fixed_point_probability.values
    fp_lines = [f"Fixed Points ({fp.size})"]
    if fp.size:
        fp_lines.append("FP\tProba\tState\t" + "\t".join(str(n) for n in ds.model_node.values))
        for i, label in enumerate(ds.fixed_point.values):
            bits = "\t".join(str(int(b)) for b in ds.fixed_point_state.values[i])
            fp_lines.append(f"#{i + 1}\t{fp[i]:.9g}\t{label}\t{bits}")
    for p, text in zip(paths, ("\n".join(lines) + "\n", "\n".join(fp_lines) + "\n")):
        tmp = p.with_name(f".{p.name}.tmp")
        tmp.write_text(text)
        os.replace(tmp, p)
    return paths
