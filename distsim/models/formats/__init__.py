"""Model file formats: ASSA-PBN ``.pbn`` and bnet (read/write), BoolNet, BNMPy/KGBN, MaBoSS
``.bnd`` + ``.cfg`` and SBML-qual (read) for Boolean networks; SBML and distsim's reaction text format (read/write) for reaction networks.

All formats are listed in one table, :data:`.registry.FORMATS`; :func:`.registry.load` reads any
of them (by ``format=``, extension or content). :func:`load` and :func:`detect_format` here are
its Boolean-network views (reaction networks: :mod:`.reaction_formats`). No reader evaluates its
input; all report errors as :class:`~distsim.errors.ModelError` with file and line. See
:mod:`.boolnet` for the free-input policies (``inputs=``).
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..pbn import PBN

__all__ = ["load", "detect_format", "FORMATS", "Format", "INPUT_POLICIES", "read_assa", "parse_assa", "to_assa_text",
           "write_assa", "read_boolnet", "parse_boolnet", "read_bnmpy", "parse_bnmpy", "to_bnet_text", "write_bnet",
           "read_maboss", "find_cfg", "MabossConfig", "read_sbml_qual", "is_sbml_qual", "from_primes", "registry"]

# Each name is imported from its module on first use (PEP 562): a reader of one format (``distsim maboss``
# reads .bnd files through .maboss alone) does not import every other format's reader.
_LAZY = {"FORMATS": "registry", "Format": "registry", "INPUT_POLICIES": "boolnet", "read_assa": "assa",
         "parse_assa": "assa", "to_assa_text": "assa", "write_assa": "assa", "read_boolnet": "boolnet",
         "parse_boolnet": "boolnet", "to_bnet_text": "boolnet", "write_bnet": "boolnet", "read_bnmpy": "bnmpy",
         "parse_bnmpy": "bnmpy", "read_maboss": "maboss", "find_cfg": "maboss", "MabossConfig": "maboss",
         "read_sbml_qual": "sbml_qual", "is_sbml_qual": "sbml_qual", "from_primes": "primes"}


def __getattr__(name: str) -> Any:
    if name == "registry":
        return importlib.import_module(".registry", __name__)
    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


def detect_format(path: str | os.PathLike) -> str:
    """The Boolean-network format of ``path`` (``"assa"``, ``"boolnet"``, ``"bnmpy"``, ``"maboss"``,
    ``"sbml-qual"``), by extension or else by content."""
    from . import registry

    return registry.detect(path, kind="boolean").name


def load(path: str | os.PathLike, *, format: str | None = None, inputs: str = "keep",
         cfg: str | os.PathLike | None = None) -> PBN:
    """Read a PBN file. ``format``: ``"assa"``, ``"boolnet"``, ``"bnet"``, ``"bnmpy"``, ``"maboss"``
    or ``"sbml-qual"`` (default: detected). ``inputs``: free-input policy for bnet/BoolNet/BNMPy/
    SBML-qual, one of ``"keep"`` (identity), ``"zero"``, ``"one"``, ``"random"``. ``cfg``: the
    MaBoSS ``.cfg`` (default: the one beside the ``.bnd``; see :func:`read_maboss` for the initial
    states). A missing file raises :class:`FileNotFoundError`.
    """
    from . import registry
    from .boolnet import INPUT_POLICIES

    if inputs not in INPUT_POLICIES:
        raise ValueError(f"unknown free-input policy {inputs!r}; expected one of {', '.join(INPUT_POLICIES)}")
    options = {"cfg": cfg} if cfg is not None else {}
    return registry.load(path, kind="boolean", format=format, inputs=inputs, **options)
