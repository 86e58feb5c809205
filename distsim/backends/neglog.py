"""The table of distsim's ``-log u`` (``dsmath.neglog_u01`` on CPUs, ``kernels/dsmath.cuh`` on GPUs), without
Numba: a GPU process reads the table into its CUDA sources without importing the CPU kernels' compiler."""

from __future__ import annotations

import decimal
import functools

import numpy as np


def _neglog_table() -> np.ndarray:
    """(1/c, log c) for c = j/256, j = 192..384, interleaved; log c correctly rounded (decimal, so the
    same bits on every machine)."""
    ctx = decimal.Context(prec=40)
    out = []
    for j in range(192, 385):
        c = j / 256.0
        out += [1.0 / c, float(ctx.ln(decimal.Decimal(c)))]
    return np.asarray(out, dtype=np.float64)


NEGLOG_TABLE = _neglog_table()


@functools.cache
def neglog_table_cuda() -> str:
    """The table as a C initializer for ``kernels/dsmath.cuh`` (``DS_NEGLOG_TABLE_INIT``)."""
    return "#define DS_NEGLOG_TABLE_INIT {" + ", ".join(float(v).hex() for v in NEGLOG_TABLE) + "}\n"
