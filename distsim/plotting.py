"""Shared plotting helpers: matplotlib is imported only when a figure is asked for."""

from __future__ import annotations

from typing import Any


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the non-interactive Agg backend (a clear error without matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:  # pragma: no cover - matplotlib is in the plot extra
        raise RuntimeError("writing a PNG needs matplotlib: pip install 'distsim[plot]'") from e
    return plt
