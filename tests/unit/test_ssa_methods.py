"""The table of SSA methods (distsim.ssa.methods): its traits, the automatic choice, the CLI's choices,
the per-method compilation of the CPU loop and its disk cache."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from distsim.backends import cuda
from distsim.ssa import choose_method, gpu, load, simulate
from distsim.ssa.cpu import CPUMethod
from distsim.ssa.generators import random_network
from distsim.ssa.methods import METHODS, direct

ROOT = Path(__file__).resolve().parents[2]


def test_table_and_traits():
    assert {"direct", "warp", "tree", "ar"} <= set(METHODS)
    for name, m in METHODS.items():
        assert m.name == name and m.summary and m.needs_depgraph
        if m.cuda_header is not None:
            assert (cuda.kernels_dir() / m.cuda_header).is_file()
    assert [n for n, m in METHODS.items() if not m.bit_identical] == ["warp"]


def test_automatic_choice():
    assert choose_method(32, "cpu") == choose_method(32, "gpu") == "direct"
    assert choose_method(33, "cpu") == "tree" and choose_method(33, "gpu") == "warp"
    net = random_network(40)
    assert choose_method(net) == "tree"
    assert simulate(net, t_end=0.1, points=3, realizations=8, backend="cpu").attrs["method"] == "tree"


def test_cli_choices_come_from_the_table(capsys):
    from distsim.cli import build_parser

    parser = build_parser()
    for name in ("auto", *METHODS):
        assert parser.parse_args(["ssa", "simulate", "m.rxn", "--t-end", "1", "--method", name]).method == name
    with pytest.raises(SystemExit):
        parser.parse_args(["ssa", "simulate", "m.rxn", "--t-end", "1", "--method", "magic"])
    assert "invalid choice: 'magic'" in capsys.readouterr().err


EVERY = CPUMethod("direct-every-propensity", direct.reset, direct.update, direct.event, direct.select,
                  direct.aux_size, needs_depgraph=False)


def _every_method():
    """'direct' without the dependency graph, on the generic GPU kernel (-DDS_NEEDS_DEPGRAPH=0)."""
    return replace(METHODS["direct"], name="direct-every-propensity", cpu=EVERY, gpu=gpu.simulate_generic)


@pytest.mark.parametrize("backend", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def test_without_dependency_graph_same_realizations(backend, monkeypatch):
    """needs_depgraph=False recomputes every propensity after a firing; propensities depend on the
    state only, so the realizations are those of the dependency-graph update (a check of the graph)."""
    monkeypatch.setitem(METHODS, "direct-every-propensity", _every_method())
    net = load(ROOT / "examples" / "ssa" / "dimerisation.rxn")
    kw = dict(t_end=5.0, points=6, realizations=300, seed=5, keep_trajectories=True, quantiles=None)
    a = simulate(net, method="direct", backend="cpu", **kw)
    b = simulate(net, method="direct-every-propensity", backend=backend, **kw)
    assert np.array_equal(a["trajectory"].values, b["trajectory"].values)
    assert np.array_equal(a["firings"].values, b["firings"].values)


CACHE_PROBE = """
import numpy as np
from distsim.models.compile_reactions import compile_network
from distsim.ssa import cpu, load
from distsim.ssa.methods import METHODS
c = compile_network(load({model!r}))
cpu.simulate_block(c, method=METHODS["tree"].cpu, real0=0, realizations=4, seed=1, grid=np.linspace(0, 1, 3))
print(sum(cpu._simulate.stats.cache_hits.values()), sum(cpu._simulate.stats.cache_misses.values()))
"""


def test_method_loop_is_cached_on_disk(tmp_path):
    """A CPUMethod is a Numba type keyed by its name: a second process loads the compiled loop."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path), PYTHONPATH=str(ROOT))
    code = CACHE_PROBE.format(model=str(ROOT / "examples" / "ssa" / "michaelis_menten.rxn"))
    runs = [subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
            for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
    assert runs[0].stdout.split() == ["0", "1"] and runs[1].stdout.split() == ["1", "0"]
