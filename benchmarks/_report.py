"""Shared by the benchmark scripts: print a markdown table and optionally write it to a file."""

from __future__ import annotations

from pathlib import Path


def emit(lines: list[str], out: str | None) -> None:
    table = "\n".join(lines)
    print(table)
    if out:
        Path(out).write_text(table + "\n")
