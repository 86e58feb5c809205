"""PBN file formats: ASSA-PBN ``.pbn`` (read/write), bnet and BoolNet (read/write), BNMPy/KGBN,
MaBoSS ``.bnd`` + ``.cfg`` and SBML-qual (read).

:func:`load` picks the reader by extension (``.pbn``/``.assa``: ASSA-PBN; ``.bnet``: bnet/BoolNet;
``.bnd``: MaBoSS; ``.sbml``, or ``.xml`` declaring the qual namespace: SBML-qual) or, for ``.txt``
and anything else, by the first line that is not blank or a comment:
``targets...`` -> BoolNet; ``type=``, ``n=``, ``perturbation=`` or ``nodeNames`` -> ASSA-PBN;
``NAME = expr[, prob]`` -> BNMPy; ``NAME, expr`` -> bnet. ``format=`` overrides the choice.
No reader evaluates its input; all report errors as :class:`ModelError` with file and line.
See :mod:`.boolnet` for the free-input policies (``inputs=``).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..errors import ModelError
from ..pbn import PBN
from .assa import parse_assa, read_assa, to_assa_text, write_assa
from .bnmpy import parse_bnmpy, read_bnmpy
from .boolnet import INPUT_POLICIES, parse_boolnet, read_boolnet, to_bnet_text, write_bnet
from .maboss import MabossConfig, find_cfg, read_maboss
from .primes import from_primes
from .sbml_qual import is_sbml_qual, read_sbml_qual

__all__ = ["load", "detect_format", "FORMATS", "INPUT_POLICIES", "read_assa", "parse_assa", "to_assa_text",
           "write_assa", "read_boolnet", "parse_boolnet", "read_bnmpy", "parse_bnmpy", "to_bnet_text", "write_bnet",
           "read_maboss", "find_cfg", "MabossConfig", "read_sbml_qual", "from_primes"]

FORMATS = {"assa": "assa", "pbn": "assa", "boolnet": "boolnet", "bnet": "boolnet", "bnmpy": "bnmpy",
           "kgbn": "bnmpy", "maboss": "maboss", "bnd": "maboss", "sbml-qual": "sbml_qual", "sbml_qual": "sbml_qual"}
_EXTENSIONS = {".pbn": "assa", ".assa": "assa", ".bnet": "boolnet", ".bnd": "maboss", ".sbml": "sbml_qual"}
_MABOSS_START = re.compile(r"node\s+[A-Za-z_][A-Za-z_0-9]*\s*(\{|$)", re.IGNORECASE)
_ASSA_START = re.compile(r"(type|n|perturbation)\s*=|nodeNames\s*$")
_BNMPY_LINE = re.compile(r"[^\s&|!^(),=:#]+\s*=")


def detect_format(path: str | os.PathLike) -> str:
    """``"assa"``, ``"boolnet"``, ``"bnmpy"``, ``"maboss"`` or ``"sbml_qual"`` for ``path``, by
    extension or else by content."""
    ext = Path(path).suffix.lower()
    if ext in _EXTENSIONS:
        return _EXTENSIONS[ext]
    if ext == ".cfg":
        raise ModelError("a MaBoSS .cfg holds variables and run settings, not the network: load the .bnd (the .cfg "
                         "beside it is read, or pass cfg=)", file=str(path))
    if is_sbml_qual(path):
        return "sbml_qual"
    with open(path, encoding="utf-8-sig", errors="replace") as fh:
        for lineno, raw in enumerate(fh, start=1):
            s = raw.strip()
            if not s or s.startswith("#") or s.startswith("//"):
                continue
            if s.startswith("<"):
                raise ModelError("an XML file that is not SBML-qual (SBML reaction models are read by distsim.ssa)",
                                 file=str(path), line=lineno)
            if _MABOSS_START.match(s):
                return "maboss"
            if s.lower().startswith("targets"):
                return "boolnet"
            if _ASSA_START.match(s):
                return "assa"
            if _BNMPY_LINE.match(s):
                return "bnmpy"
            if "," in s:
                return "boolnet"
            raise ModelError("cannot tell the file format from this line (expected 'targets, factors', "
                             "'NAME = expr, prob', 'NAME, expr' or an ASSA-PBN 'type=' line); pass format=",
                             file=str(path), line=lineno)
    raise ModelError("the file is empty (no line that is not blank or a comment)", file=str(path), line=1)


def load(path: str | os.PathLike, *, format: str | None = None, inputs: str = "keep",
         cfg: str | os.PathLike | None = None) -> PBN:
    """Read a PBN file. ``format``: ``"assa"``, ``"boolnet"``, ``"bnet"``, ``"bnmpy"``, ``"maboss"``
    or ``"sbml-qual"`` (default: detected). ``inputs``: free-input policy for bnet/BoolNet/BNMPy/
    SBML-qual, one of ``"keep"`` (identity), ``"zero"``, ``"one"``, ``"random"``. ``cfg``: the
    MaBoSS ``.cfg`` (default: the one beside the ``.bnd``; see :func:`read_maboss` for the initial
    states). A missing file raises :class:`FileNotFoundError`.
    """
    if inputs not in INPUT_POLICIES:
        raise ValueError(f"unknown free-input policy {inputs!r}; expected one of {', '.join(INPUT_POLICIES)}")
    if not Path(path).is_file():
        if not Path(path).exists():
            raise FileNotFoundError(f"model file not found: {os.fspath(path)}")
        raise IsADirectoryError(f"not a file: {os.fspath(path)}")
    if format is None:
        kind = detect_format(path)
    else:
        try:
            kind = FORMATS[format.lower()]
        except KeyError:
            raise ValueError(f"unknown format {format!r}; expected one of {', '.join(FORMATS)}") from None
    if cfg is not None and kind != "maboss":
        raise ValueError("cfg= is for MaBoSS .bnd models only")
    if kind == "maboss":
        return read_maboss(path, cfg)[0]
    if kind == "sbml_qual":
        return read_sbml_qual(path, inputs=inputs)
    if kind == "assa":
        return read_assa(path)
    if kind == "boolnet":
        return read_boolnet(path, inputs=inputs)
    return read_bnmpy(path, inputs=inputs)
