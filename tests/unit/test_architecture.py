"""The package's shape (ARCHITECTURE.md): layers import only downwards, workloads are siblings, no cycles.

Every import is read from the source with ``ast`` (function-level imports too), so a lazy import
cannot hide a dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "distsim"

# lowest first; a module may import its own top-level package and those of lower layers only
LAYERS = [
    {"errors", "rng", "backends", "plotting"},
    {"models", "results"},
    {"engine", "cluster"},
    {"pbn", "ssa", "grn", "mcmc", "maboss"},
    {"sweep", "pmmh"},
    {"cli"},
    {"__main__"},
]
WORKLOADS = LAYERS[3]


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in ROOT.rglob("*.py")}


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """Modules of distsim that ``name`` imports (``from pkg import sub`` counts as pkg.sub when sub is a module)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in known else mod for a in node.names]
        else:
            continue
        for t in targets:
            while t and t not in known:  # 'distsim.x.y.attr' -> the module that holds it
                t = t.rpartition(".")[0]
            if t.startswith("distsim"):
                out.add(t)
    out.discard(name)
    return out


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    return {name: _imports(name, path, set(mods)) for name, path in mods.items()}


def _top(name: str) -> str:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else ""


def _layer(top: str) -> int:
    for k, members in enumerate(LAYERS):
        if top in members:
            return k
    raise AssertionError(f"distsim.{top} is in no layer of this test (and of ARCHITECTURE.md): place it")


def test_every_package_has_a_layer():
    for name in _modules():
        if _top(name):
            _layer(_top(name))


def test_layers_import_only_downwards():
    bad = []
    for name, deps in _graph().items():
        if not _top(name):
            continue  # distsim/__init__.py: lazy attribute access only
        me = _layer(_top(name))
        for d in deps:
            if _top(d) and _top(d) != _top(name) and _layer(_top(d)) >= me:
                bad.append(f"{name} -> {d}")
    assert not bad, "imports against the layering:\n" + "\n".join(sorted(bad))


def test_workloads_are_siblings():
    bad = [f"{n} -> {d}" for n, deps in _graph().items() for d in deps
           if _top(n) in WORKLOADS and _top(d) in WORKLOADS and _top(d) != _top(n)]
    assert not bad, "a workload imports another workload:\n" + "\n".join(sorted(bad))


def test_no_import_cycles():
    graph = _graph()
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(n: str, stack: list[str]) -> None:
        state[n] = 1
        stack.append(n)
        for d in sorted(graph.get(n, ())):
            if state.get(d) == 1:
                cycles.append(stack[stack.index(d):] + [d])
            elif d not in state:
                visit(d, stack)
        stack.pop()
        state[n] = 2

    for n in sorted(graph):
        if n not in state:
            visit(n, [])
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


@pytest.mark.parametrize("workload", sorted(WORKLOADS))
def test_workload_is_an_attribute_of_distsim(workload):
    import distsim

    assert getattr(distsim, workload).__name__ == f"distsim.{workload}"
