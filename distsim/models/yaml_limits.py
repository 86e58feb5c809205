"""YAML as distsim reads every YAML input (sweep configurations, PEtab problems): PyYAML's safe loader with
limits -- file size, line length, nesting, values after alias expansion, integers of at most 30 digits,
finite floats, and numbers as scientists write them (2e-3) -- where every problem is a
:class:`~distsim.errors.ConfigError` naming the file, line and column; :class:`Lines` gives each key's line."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import yaml

from ..errors import ConfigError, line_of_offset, read_text

MAX_DEPTH = 32  # nesting of YAML collections (a sweep or a PEtab problem needs 3)
MAX_VALUES = 1_000_000  # YAML values after expanding aliases (a guard against alias bombs)
MAX_LINE = 65_536  # characters in one line
MAX_INT_DIGITS = 30  # integers in YAML (and in a sweep table .csv)


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader; integers of at most 30 digits and finite floats."""

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        digits = sum(c.isdigit() for c in node.value)
        if digits > MAX_INT_DIGITS:
            raise yaml.constructor.ConstructorError(None, None, f"integer of {digits} digits is too large",
                                                    node.start_mark)
        return super().construct_yaml_int(node)

    def construct_yaml_float(self, node: yaml.ScalarNode) -> float:
        value = super().construct_yaml_float(node)
        if not math.isfinite(value):
            raise yaml.constructor.ConstructorError(None, None, f"{node.value[:20]!r} is not a finite number",
                                                    node.start_mark)
        return value


_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_yaml_int)
_Loader.add_constructor("tag:yaml.org,2002:float", _Loader.construct_yaml_float)
# numbers as scientists write them: YAML 1.1 reads 2e-3 and 1E5 as text (it wants 2.0e-3, 1.0e+5);
# YAML 1.2 (and this loader) reads them as floats. Asked after YAML 1.1's own resolvers.
_Loader.add_implicit_resolver("tag:yaml.org,2002:float",
                              re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"),
                              list("-+0123456789."))

_OPEN = (yaml.FlowSequenceStartToken, yaml.FlowMappingStartToken, yaml.BlockSequenceStartToken,
         yaml.BlockMappingStartToken)
_CLOSE = (yaml.FlowSequenceEndToken, yaml.FlowMappingEndToken, yaml.BlockEndToken)


def _check_depth(text: str, p: Path) -> None:
    """The scanner is iterative; the composer recurses: bound the nesting before composing."""
    depth = 0
    for tok in yaml.scan(text, Loader=_Loader):
        if isinstance(tok, _OPEN):
            depth += 1
            if depth > MAX_DEPTH:
                raise ConfigError(f"collections nest more than {MAX_DEPTH} deep", file=str(p),
                                  line=tok.start_mark.line + 1, column=tok.start_mark.column + 1)
        elif isinstance(tok, _CLOSE):
            depth -= 1


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for kv in node.value for n in kv]
    return []


def _check_aliases(root: yaml.Node, p: Path) -> None:
    """Count the values of the document with aliases expanded (iteratively, each node once)."""
    size: dict[int, int] = {}
    open_: set[int] = set()
    stack = [root]
    while stack:
        node = stack[-1]
        if id(node) in size:
            stack.pop()
            continue
        pending = [c for c in _children(node) if id(c) not in size]
        if id(node) in open_ or not pending:
            if any(id(c) in open_ for c in pending):
                raise ConfigError("an alias refers to a collection that contains it", file=str(p),
                                  line=node.start_mark.line + 1)
            size[id(node)] = min(1 + sum(size[id(c)] for c in _children(node)), MAX_VALUES + 1)
            open_.discard(id(node))
            stack.pop()
            if size[id(node)] > MAX_VALUES:
                raise ConfigError(f"the document has more than {MAX_VALUES:,} values (aliases expanded)",
                                  file=str(p), line=node.start_mark.line + 1)
        else:
            open_.add(id(node))
            stack.extend(pending)


def _yaml_error(e: yaml.YAMLError, text: str, p: Path) -> ConfigError:
    mark = getattr(e, "problem_mark", None)
    if mark is not None:
        line, col = mark.line + 1, mark.column + 1
    elif isinstance(e, yaml.reader.ReaderError):
        line, col = line_of_offset(text, e.position)
    else:
        line = col = None
    problem = getattr(e, "problem", None) or (e.reason if isinstance(e, yaml.reader.ReaderError) else str(e))
    return ConfigError(f"not valid YAML: {problem}", file=str(p), line=line, column=col)


def load_yaml(p: Path, what: str, max_bytes: int, too_big: str = "") -> tuple[Any, "Lines"]:
    """The document of the YAML file ``p`` (a ``what``, e.g. "sweep configuration", of at most ``max_bytes``;
    ``too_big``: advice appended to that error) and the lines of its keys."""
    try:
        size = p.stat().st_size
        if size > max_bytes:
            raise ConfigError(f"the file has {size:,} bytes; a {what} has at most {max_bytes:,}{too_big}", file=str(p))
        text = read_text(p, error=ConfigError)
    except FileNotFoundError:
        raise ConfigError(f"cannot read the {what} (no such file)", file=str(p)) from None
    except OSError as e:
        raise ConfigError(f"cannot read the {what} ({e.strerror or e})", file=str(p)) from None
    for n, line in enumerate(text.split("\n"), 1):
        if len(line) > MAX_LINE:
            raise ConfigError(f"line of {len(line):,} characters; a line has at most {MAX_LINE:,}", file=str(p),
                              line=n)
    loader = None
    try:
        _check_depth(text, p)
        loader = _Loader(text)
        node = loader.get_single_node()
        if node is None:
            return None, Lines(None)
        _check_aliases(node, p)
        return loader.construct_document(node), Lines(node)
    except yaml.YAMLError as e:
        raise _yaml_error(e, text, p) from None
    finally:
        if loader is not None:
            loader.dispose()


class Lines:
    """Line numbers of the keys of a YAML document (paths like ``fixed.t_end``, ``table[2].k1``)."""

    def __init__(self, root: yaml.Node | None):
        self.lines: dict[str, int] = {}
        seen: set[int] = set()
        stack = [(root, "")] if root is not None else []
        while stack:  # iterative, each node once (the keys under an alias have their anchor's lines)
            node, path = stack.pop()
            self.lines.setdefault(path, node.start_mark.line + 1)
            if id(node) in seen:
                continue
            seen.add(id(node))
            if isinstance(node, yaml.MappingNode):
                for k, v in node.value:
                    name = k.value if isinstance(k, yaml.ScalarNode) else "?"
                    sub = f"{path}.{name}" if path else str(name)
                    self.lines.setdefault(sub, k.start_mark.line + 1)
                    stack.append((v, sub))
            elif isinstance(node, yaml.SequenceNode):
                stack.extend((v, f"{path}[{i}]") for i, v in enumerate(node.value))

    def line(self, key: str) -> int | None:
        while key:
            if key in self.lines:
                return self.lines[key]
            key = key.rpartition(".")[0] if "." in key else key.rpartition("[")[0]
        return self.lines.get("")
