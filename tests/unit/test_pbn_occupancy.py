"""The PBN kernel's register budget (``pbn.gpu._compile_for_occupancy``) without a GPU: builds asking for one
more resident block are taken while they add one and spill at most SPILL_OK bytes, up to DENSEST blocks."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from distsim.pbn import gpu


def _fake(monkeypatch, builds: dict[int | None, tuple[int, int]]) -> list:
    """builds[minb] = (resident blocks, spilled bytes) of the build with ``#define DS_MINB minb`` (None: none)."""
    asked = []

    def load_module(src: str):
        m = re.match(r"#define DS_MINB (\d+)\n", src)
        minb = int(m.group(1)) if m else None
        asked.append(minb)
        blocks, spill = builds[minb]
        fn = SimpleNamespace(blocks=blocks, local_size_bytes=spill)
        return SimpleNamespace(minb=minb, get_function=lambda name: fn)

    monkeypatch.setattr(gpu.cuda, "load_module", load_module)
    monkeypatch.setattr(gpu, "_blocks_per_sm", lambda fn: fn.blocks)
    return asked


@pytest.mark.parametrize("builds, want, tried", [
    # Sizek on an H200: 2 blocks, then 3, 4 without spilling, 5 spilling 152 B, 6 spilling 272 B
    ({None: (2, 0), 3: (3, 0), 4: (4, 0), 5: (5, 152), 6: (6, 272)}, (5, 5), [None, 3, 4, 5, 6]),
    # Montagud: 4 blocks spill 224 B (taken), 5 spill 448 B
    ({None: (2, 0), 3: (3, 0), 4: (4, 224), 5: (5, 448)}, (4, 4), [None, 3, 4, 5]),
    # a network whose first build spills (Raza, 321 nodes): kept
    ({None: (2, 456), 3: (3, 1000)}, (None, 2), [None, 3]),
    # a build that does not add a block ends the search
    ({None: (5, 0), 6: (5, 0)}, (None, 5), [None, 6]),
    # small networks stop at DENSEST
    ({None: (7, 0), 8: (8, 0)}, (8, 8), [None, 8]),
])
def test_denser_builds_while_they_add_blocks_and_spill_little(monkeypatch, builds, want, tried):
    asked = _fake(monkeypatch, builds)
    mod, per_sm = gpu._compile_for_occupancy("src")
    assert (mod.minb, per_sm) == want
    assert asked == tried
