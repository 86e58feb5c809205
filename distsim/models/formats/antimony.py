"""Antimony model text (``.ant``), read through the ``antimony`` package (an optional extra:
``pip install 'distsim-bio[antimony]'``).

Antimony translates the text to SBML Level 3 Version 2, which :mod:`.sbml` then reads with its
stochastic convention (the kinetic law's value is the propensity; antimony's ``->`` marks a reaction
reversible, ``=>`` irreversible; species are concentrations in ``default_compartment`` of size 1
unless declared otherwise, so ``J1: E + S -> ES; k1*E*S`` is mass action with theta = ``k1``).
"""

from __future__ import annotations

import dataclasses
import os
import threading
from pathlib import Path

from ...errors import ModelError
from ..reactions import ReactionNetwork
from .base import Format
from .sbml import read_sbml_string

__all__ = ["read_antimony", "parse_antimony", "antimony_to_sbml", "FORMAT"]

_LOCK = threading.Lock()  # libantimony keeps global state


def read_antimony(path: str | os.PathLike, *, reversible: str = "split") -> ReactionNetwork:
    """Read an antimony file (``.ant``)."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"model file not found: {os.fspath(path)}")
    if not p.is_file():
        raise IsADirectoryError(f"not a file: {os.fspath(path)}")
    try:
        text = p.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ModelError(f"not a UTF-8 text file ({e.reason} at byte {e.start})", file=os.fspath(path)) from None
    return parse_antimony(text, file=os.fspath(path), reversible=reversible, name=p.stem)


def parse_antimony(text: str, *, file: str = "<antimony>", reversible: str = "split",
                   name: str = "") -> ReactionNetwork:
    """Read antimony model text held in memory (the main module of the text)."""
    net = read_sbml_string(antimony_to_sbml(text, file=file), file=file, reversible=reversible, name=name)
    if name and net.name == "__main":  # antimony's name for an unnamed model: the file's stem says more
        net = dataclasses.replace(net, name=name)
    return net


def antimony_to_sbml(text: str, *, file: str = "<antimony>") -> str:
    """The SBML (L3V2) string antimony makes of ``text``; errors become :class:`ModelError`."""
    try:
        import antimony  # noqa: PLC0415 (optional dependency)
    except ImportError:
        raise ModelError("reading antimony needs the antimony package; install it with "
                         "\"pip install 'distsim-bio[antimony]'\" (or 'pip install antimony')", file=file) from None
    if "\x00" in text:
        raise ModelError("antimony text contains a NUL character", file=file)
    with _LOCK:
        antimony.clearPreviousLoads()
        if antimony.loadAntimonyString(text) < 0:
            msg = (antimony.getLastError() or "antimony could not read the text").strip()
            raise ModelError(f"antimony: {' '.join(msg.split())}", file=file)
        module = antimony.getMainModuleName()
        sbml = antimony.getSBMLString(module) if module else ""
        antimony.clearPreviousLoads()
    if not sbml:
        raise ModelError("antimony produced no SBML (no model in the text?)", file=file)
    return sbml


FORMAT = Format("antimony", "reaction", (".ant", ".antimony"), lambda path, head: False, read_antimony,
                "antimony text (by extension .ant, or format='antimony')", aliases=("ant",), options=("reversible",))
