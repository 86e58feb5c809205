"""Shared plotting helpers: matplotlib is imported only when a figure is asked for."""

from __future__ import annotations

from typing import Any


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the non-interactive Agg backend (a clear error without matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:  # pragma: no cover - matplotlib is a dependency of distsim
        raise RuntimeError("writing a PNG needs matplotlib: pip install matplotlib") from e
    return plt


def save(fig: Any, path: str) -> str:
    """Lay out ``fig``, write it to ``path`` (PNG, 120 dpi), close it and return ``path``."""
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    pyplot().close(fig)
    return path
