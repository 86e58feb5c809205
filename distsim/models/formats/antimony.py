"""Antimony model text (``.ant``), read through the ``antimony`` package (an optional extra:
``pip install 'distsim-bio[antimony]'``).

Antimony translates the text to SBML Level 3 Version 2, which :mod:`.sbml` then reads with its
stochastic convention (the kinetic law's value is the propensity; antimony's ``->`` marks a reaction
reversible, ``=>`` irreversible; species are concentrations in ``default_compartment`` of size 1
unless declared otherwise, so ``J1: E + S -> ES; k1*E*S`` is mass action with theta = ``k1``).

**Imports.** libantimony opens ``import "file"`` itself, from the current directory first, so an
import could read any local file (and echo its first token in an error). distsim reads imported
files itself instead and hands libantimony one text without imports: an ``import "file"`` line
(alone on its line) names a file relative to the importing file's folder, which must lie inside the
model's folder or one of ``import_dirs`` (a model held in memory has no folder: only
``import_dirs``). Imported files are UTF-8 and are placed before the text that imports them (each
once, at most :data:`MAX_IMPORTS` files); antimony's errors name the file and line they come from.
Any other use of the word ``import`` outside a ``//`` comment is refused. Parentheses and runs of
``!``/``-``/``+`` nest at most :data:`MAX_NESTING` deep (libantimony recurses on them).
"""

from __future__ import annotations

import dataclasses
import os
import re
import threading
from pathlib import Path
from typing import Any, Sequence

from ...errors import ModelError, decode_text
from ..reactions import ReactionNetwork
from .base import Format
from .sbml import read_sbml_string

__all__ = ["read_antimony", "parse_antimony", "antimony_to_sbml", "FORMAT"]

_LOCK = threading.Lock()  # libantimony keeps global state
MAX_IMPORTS = 100  # files one model may import, directly or not
_IMPORT_LINE = re.compile(r'[ \t]*import[ \t]+"([^"\n]*)"[ \t]*;?[ \t]*(?://.*)?')
_IMPORT_WORD = re.compile(r"\bimport\b")
_ERROR_LINE = re.compile(r"line (\d+)")
MAX_NESTING = 256  # parentheses, and '!', '-' or '+' in a row: libantimony recurses (5,000 '!' kill the process)
_UNARY_RUN = re.compile(r"[!+-][!+\-\s]*")  # one character class repeated: linear, no backtracking stack
_PAREN = re.compile(r"[()\n]")


def read_antimony(path: str | os.PathLike, *, reversible: str = "split", system_size: float | None = None,
                  rounding: str = "error", import_dirs: Sequence[str | os.PathLike] = ()) -> ReactionNetwork:
    """Read an antimony file (``.ant``); the options are the SBML reader's (:func:`.sbml.read_sbml`);
    imports may come from its folder and ``import_dirs``."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"model file not found: {os.fspath(path)}")
    if not p.is_file():
        raise IsADirectoryError(f"not a file: {os.fspath(path)}")
    text = decode_text(p.read_bytes(), file=os.fspath(path))
    return parse_antimony(text, file=os.fspath(path), reversible=reversible, name=p.stem, system_size=system_size,
                          rounding=rounding, import_dirs=import_dirs, folder=p.resolve().parent)


def parse_antimony(text: str, *, file: str = "<antimony>", reversible: str = "split", name: str = "",
                   system_size: float | None = None, rounding: str = "error",
                   import_dirs: Sequence[str | os.PathLike] = (), folder: str | os.PathLike | None = None
                   ) -> ReactionNetwork:
    """Read antimony model text held in memory (the main module of the text); imports may come from
    ``folder`` (where relative ones start; None: the current directory) and ``import_dirs``."""
    sbml = antimony_to_sbml(text, file=file, import_dirs=import_dirs, folder=folder)
    net = read_sbml_string(sbml, file=file, reversible=reversible, name=name, system_size=system_size,
                           rounding=rounding)
    if name and net.name == "__main":  # antimony's name for an unnamed model: the file's stem says more
        net = dataclasses.replace(net, name=name)
    return net


class _Piece:
    """Lines ``first``.. of the text handed to libantimony come from line 1.. of ``file``."""

    def __init__(self, file: str, first: int, lines: int):
        self.file, self.first, self.lines = file, first, lines


def _imports(text: str, file: str, folder: Path | None) -> tuple[str, list[tuple[Path, int]]]:
    """``text`` with its import lines blanked, and the files they name (with the line)."""
    out, found = [], []
    for lineno, line in enumerate(text.split("\n"), start=1):
        m = _IMPORT_LINE.fullmatch(line.rstrip("\r"))
        if m:
            target = Path(m.group(1))
            if not target.is_absolute():
                if folder is None:
                    target = Path.cwd() / target
                else:
                    target = folder / target
            found.append((target, lineno))
            out.append("")
            continue
        code = line.split("//", 1)[0]
        if _IMPORT_WORD.search(code):
            raise ModelError("an import must be a line 'import \"file\"' of its own", file=file, line=lineno)
        out.append(line)
    return "\n".join(out), found


def _inline(text: str, file: str, folder: Path | None, import_dirs: Sequence[str | os.PathLike]
            ) -> tuple[str, list[_Piece]]:
    """One text without imports (imported files first, each once) and where its lines come from."""
    allowed = ([folder] if folder is not None else []) + [Path(d).resolve() for d in import_dirs]
    order: list[tuple[str, str]] = []  # (file, text without imports), dependencies first
    done: set[Path] = set()
    body, found = _imports(text, file, folder)
    stack: list[tuple[Path | None, str, str, list[tuple[Path, int]]]] = [(None, file, body, found)]
    while stack:
        real, cur, cur_body, pending = stack[-1]
        if not pending:
            stack.pop()
            order.append((cur, cur_body))
            if real is not None:
                done.add(real)
            continue
        target, lineno = pending.pop(0)
        real = target.resolve()
        if not any(real == d or d in real.parents for d in allowed):
            where = ", ".join(str(d) for d in allowed) or "nowhere (text held in memory: pass import_dirs)"
            raise ModelError(f"import of {str(target)[:200]!r}: imports may only come from {where}", file=cur,
                             line=lineno)
        if real in done:
            continue
        if any(entry[0] == real for entry in stack):
            raise ModelError(f"import of {str(target)[:200]!r} is circular", file=cur, line=lineno)
        if len(done) + len(stack) > MAX_IMPORTS:
            raise ModelError(f"more than {MAX_IMPORTS} imported files", file=cur, line=lineno)
        if not real.is_file():
            raise ModelError(f"imported file {str(target)[:200]!r} not found", file=cur, line=lineno)
        sub = str(real)
        sub_body, sub_found = _imports(decode_text(real.read_bytes(), file=sub), sub, real.parent)
        stack.append((real, sub, sub_body, sub_found))
    pieces, parts, first = [], [], 1
    for f, t in order:
        n = t.count("\n") + 1
        pieces.append(_Piece(f, first, n))
        parts.append(t)
        first += n
    return "\n".join(parts), pieces


def _check_nesting(text: str, pieces: list[_Piece], file: str) -> None:
    """ModelError when parentheses or unary operators nest deeper than MAX_NESTING (before libantimony,
    which recurses on them; read_sbml would refuse such math anyway)."""
    def where(pos: int) -> tuple[str, int]:
        n = text.count("\n", 0, pos) + 1
        p = next((p for p in pieces if p.first <= n < p.first + p.lines), None)
        return (file, n) if p is None else (p.file, n - p.first + 1)

    for m in _UNARY_RUN.finditer(text):
        run = m.group()
        if len(run) > MAX_NESTING and sum(run.count(c) for c in "!+-") > MAX_NESTING:
            f, line = where(m.start())
            raise ModelError(f"more than {MAX_NESTING} operators '!', '-' or '+' in a row", file=f, line=line)
    depth = 0
    for m in _PAREN.finditer(text):
        if m.group() == "(":
            depth += 1
            if depth > MAX_NESTING:
                f, line = where(m.start())
                raise ModelError(f"parentheses nest more than {MAX_NESTING} deep", file=f, line=line)
        elif m.group() == ")":
            depth = max(depth - 1, 0)


def _located(msg: str, pieces: list[_Piece], file: str) -> ModelError:
    """antimony's error, naming the file and line of the text it points at."""
    m = _ERROR_LINE.search(msg)
    if m:
        n = int(m.group(1))
        for p in pieces:
            if p.first <= n < p.first + p.lines:
                line = n - p.first + 1
                return ModelError(f"antimony: {msg[:m.start()]}line {line}{msg[m.end():]}", file=p.file, line=line)
    return ModelError(f"antimony: {msg}", file=file)


def _last_error(antimony: Any, text: str) -> str:
    """antimony's last error on one line. Its message may quote the text cut inside a UTF-8 character
    (SWIG then raises UnicodeDecodeError): the text with every non-ASCII character as '?' (the same
    lines) is read again for a message that names the line."""
    try:
        msg = antimony.getLastError() or ""
    except UnicodeDecodeError:
        antimony.clearPreviousLoads()
        antimony.loadAntimonyString(text.encode("ascii", "replace").decode("ascii"))
        try:
            msg = antimony.getLastError() or ""
        except UnicodeDecodeError:
            msg = ""
    return " ".join(msg.split()) or "antimony could not read the text"


def antimony_to_sbml(text: str, *, file: str = "<antimony>", import_dirs: Sequence[str | os.PathLike] = (),
                     folder: str | os.PathLike | None = None) -> str:
    """The SBML (L3V2) string antimony makes of ``text``; errors become :class:`ModelError`.

    ``folder``: where relative imports of ``text`` start (the model file's folder; None: the current
    directory); imports may come from ``folder`` and ``import_dirs``."""
    try:
        import antimony  # noqa: PLC0415 (optional dependency)
    except ImportError:
        raise ModelError("reading antimony needs the antimony package; install it with "
                         "\"pip install 'distsim-bio[antimony]'\" (or 'pip install antimony')", file=file) from None
    if "\x00" in text:
        raise ModelError("antimony text contains a NUL character", file=file,
                         line=text.count("\n", 0, text.index("\x00")) + 1)
    whole, pieces = _inline(text, file, None if folder is None else Path(folder).resolve(), import_dirs)
    _check_nesting(whole, pieces, file)
    if "\x00" in whole:
        raise ModelError("an imported antimony file contains a NUL character", file=file)
    with _LOCK:
        antimony.clearPreviousLoads()
        if antimony.loadAntimonyString(whole) < 0:
            raise _located(_last_error(antimony, whole), pieces, file)
        module = antimony.getMainModuleName()
        sbml = antimony.getSBMLString(module) if module else ""
        antimony.clearPreviousLoads()
    if not sbml:
        raise ModelError("antimony produced no SBML (no model in the text?)", file=file)
    return sbml


FORMAT = Format("antimony", "reaction", (".ant", ".antimony"), lambda path, head: False, read_antimony,
                "antimony text (by extension .ant, or format='antimony')", aliases=("ant",),
                options=("reversible", "system_size", "rounding", "import_dirs"))
