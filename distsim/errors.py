"""distsim's own error types: every problem with a user's input file or object is one of these.

``str(err)`` reads ``file:line:column: message`` (``file:line: message`` without a column,
``file: message`` without a line), so a user can jump straight to the problem; ``file``,
``line`` and ``column`` are also attributes. The subclasses are also ``ValueError`` subclasses,
so code that catches ``ValueError`` keeps working.

* :class:`ModelError`: a model file or model object (PBN, reaction network, SBML, GRN problem object);
* :class:`ConfigError`: a configuration file (sweep YAML, GRN TOML/JSON problem file);
* :class:`DataError`: a data file (observation CSV, GRN links/edges/states CSV);
* :class:`OutputError`: an output path (an existing file, a foreign folder, a missing folder);
* :class:`UsageError`: a bad argument of the command line.
"""

from __future__ import annotations

from typing import Iterable


class DistsimError(Exception):
    """Base class: a bad input, located by ``file``, ``line`` and ``column`` where known."""

    default_file: str | None = None  # what ``str()`` shows when no file is known

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None,
                 column: int | None = None):
        self.message = message
        self.file = file
        self.line = line
        self.column = column
        where = file or self.default_file
        if where is not None:
            if line is not None:
                where += f":{line}"
                if column is not None:
                    where += f":{column}"
            message = f"{where}: {message}"
        super().__init__(message)

    def __reduce__(self):  # keep file/line/column across pickling (Dask workers -> client)
        return _rebuild, (type(self), self.message, self.file, self.line, self.column)


def _rebuild(cls: type, message: str, file: str | None, line: int | None, column: int | None) -> DistsimError:
    return cls(message, file=file, line=line, column=column)


class ModelError(DistsimError, ValueError):
    """A model file or model object is invalid."""

    default_file = "<model>"


class ConfigError(DistsimError, ValueError):
    """A configuration file is invalid (sweep YAML, GRN problem TOML/JSON)."""


class DataError(DistsimError, ValueError):
    """A data file is invalid (observations CSV, GRN links/edges/states CSV)."""


class OutputError(DistsimError, ValueError):
    """An output cannot be written where asked (it exists, or its folder does not)."""


class UsageError(DistsimError, ValueError):
    """A command-line argument is invalid."""


class SBMLWarning(UserWarning):
    """Something in an SBML document that distsim reads leniently (the message says how)."""


class ConvergenceWarning(UserWarning):
    """MCMC draws that do not show convergence (R-hat > 1.01 or bulk ESS < 400): the message names the
    variables."""


def line_of_offset(data: bytes | str, offset: int) -> tuple[int, int]:
    """1-based (line, column) of position ``offset`` in ``data`` (for bytes, the column counts the
    characters of the valid UTF-8 before ``offset``)."""
    nl = b"\n" if isinstance(data, bytes) else "\n"
    start = data.rfind(nl, 0, offset) + 1  # type: ignore[arg-type]
    line = data.count(nl, 0, offset) + 1  # type: ignore[arg-type]
    prefix = data[start:offset]
    if isinstance(prefix, bytes):
        prefix = prefix.decode("utf-8", errors="replace")
    return line, len(prefix) + 1


def decode_text(data: bytes, *, file: str, error: type[DistsimError] = ModelError) -> str:
    """UTF-8 text of a file's bytes (a leading BOM dropped); invalid bytes raise ``error`` naming the
    file, line and column."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line, col = line_of_offset(data, e.start)
        raise error(f"not UTF-8 text ({e.reason}: byte 0x{data[e.start]:02x})", file=file, line=line,
                    column=col) from None


def read_text(path, *, error: type[DistsimError] = ModelError) -> str:
    """Read a UTF-8 text file; a missing file raises :class:`FileNotFoundError`, invalid UTF-8 and
    other read failures (a folder, a name too long, ...) raise ``error`` naming the file."""
    import os

    file = os.fspath(path)
    try:
        with open(file, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        raise
    except OSError as e:
        raise error(f"cannot read the file ({e.strerror or e})", file=file) from None
    return decode_text(data, file=file, error=error)


def did_you_mean(name: object, known: Iterable[object]) -> str:
    """`` (did you mean 'x'?)`` naming the entries of ``known`` closest to ``name``, else ``""``: the one
    suffix of every "unknown name" message (nodes, species, parameters, variables). A name that only
    lacks a prefix the names share (BBM nodes are ``v_Casp3``, not ``Casp3``) or differs in case is named alone."""
    import difflib

    names = [str(k) for k in known]
    text = str(name)
    low = text.lower()
    same = [k for k in names if k.lower() == low or (len(text) >= 2 and k.lower().endswith("_" + low))]
    close = same or difflib.get_close_matches(text, names, n=3, cutoff=0.6)
    if not close:
        return ""
    return " (did you mean " + " or ".join(f"'{c}'" for c in close[:3]) + "?)"
