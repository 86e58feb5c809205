"""The record each model format contributes to the format table (:mod:`.registry`)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable

KINDS = {"boolean": "Boolean-network", "reaction": "reaction-network"}


@dataclass(frozen=True)
class Format:
    """One model format (in the manner of xarray's backend entrypoints).

    ``sniff(path, head)`` answers from the file's first bytes whether the file looks like this
    format (xarray's ``guess_can_open``); ``read(path, **options)`` reads it, taking the keyword
    ``options`` listed; ``write(model, path)`` writes one, where the format has a writer.
    ``looks_like`` says what ``sniff`` looks for (for the error when no format matches).
    """

    name: str
    kind: str  # a key of KINDS
    extensions: tuple[str, ...]  # lower case, with the dot
    sniff: Callable[[str | os.PathLike, bytes], bool]
    read: Callable[..., Any]
    looks_like: str
    write: Callable[[Any, str | os.PathLike], None] | None = None
    aliases: tuple[str, ...] = ()
    options: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"format {self.name!r}: kind must be one of {', '.join(KINDS)}, got {self.kind!r}")


def content_lines(head: bytes, comments: tuple[str, ...] = ("#", "//")):
    """``(line number, stripped text)`` of the lines of ``head`` that are not blank or comments
    (decoded leniently: sniffing never fails on bad bytes; the reader reports them)."""
    text = head.decode("utf-8-sig", errors="replace")
    for lineno, raw in enumerate(text.split("\n"), start=1):
        s = raw.strip()
        if s and not s.startswith(comments):
            yield lineno, s


def first_content_line(head: bytes) -> tuple[int, str] | None:
    """The first line of ``head`` that is not blank or a comment, or None."""
    return next(content_lines(head), None)
