"""CPU == GPU for SBML events and rules without a GPU: ``kernels/ssa_events.cu`` compiled for the host
by g++ (``cuda_host.h``: CUDA's keywords and intrinsics, IEEE doubles, no contraction) and launched
by the unchanged ``distsim.ssa.gpu_events`` code with NumPy standing in for CuPy
(``cuda_on_host.py``) gives the Numba loop's realizations bit for bit, for every method (its raw
outputs: grid states, firings per reaction, events and error words per realization). It checks the CUDA twin's logic
and the launch code's argument order; the device itself is checked by
tests/gpu/test_ssa_events_gpu.py. Skipped where g++ is not installed."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from distsim.models.compile_reactions import compile_network
from distsim.ssa import cpu, gpu, gpu_events, load
from distsim.ssa.block import SSABlock
from distsim.ssa.methods import METHODS

from cuda_on_host import GXX, HostModule, fake_cupy
from test_ssa import DSMTS
from test_ssa_events import BIRTH, STILL, event, with_events

pytestmark = pytest.mark.skipif(GXX is None, reason="g++ not on PATH")


@pytest.fixture
def host_gpu(monkeypatch, tmp_path_factory):
    """distsim.ssa's GPU launches with kernels compiled for the host and NumPy for CuPy."""
    workdir = tmp_path_factory.mktemp("host_kernels")
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy())
    monkeypatch.setattr(gpu, "_module", lambda key, source, options=(): HostModule(source(), workdir))


def sbml_boost():
    """The events-and-rules SBML model of test_sbml_semantics (concentrations, a parameter assigned by
    a non-persistent event with a priority, two rules), with a reaction that makes the trigger rise."""
    from test_sbml_semantics import EVENTS, RULES, model, par, rx, sp

    from distsim.models.formats.sbml import read_sbml_string

    species = sp("A", 8) + sp("C", 3, hosu=False) + sp("total", 0)
    params = par("k", 0.1, constant=False) + par("double", 0, constant=False)
    return read_sbml_string(model(species, params, rx("R", {"A": 1}, {}, "k * A") + rx("B", {}, {"A": 1}, "0.3"),
                                  RULES + EVENTS, size=2.0))


def birth_stop_resume():
    plain = load(BIRTH["law"], format="text")
    return with_events(plain, [event(plain, "stop", "time >= 3", {"k": "0"}),
                               event(plain, "resume", "time >= 4", {"k": "5"})])


CASES = {
    "00019-rule": lambda: load(DSMTS / "00019" / "00019-sbml-l3v1.xml"),
    "00028-time-event": lambda: load(DSMTS / "00028" / "00028-sbml-l3v1.xml"),
    "00032-time-event": lambda: load(DSMTS / "00032" / "00032-sbml-l3v1.xml"),
    "00033-state-event": lambda: load(DSMTS / "00033" / "00033-sbml-l3v1.xml"),
    "sbml-events-and-rules": sbml_boost,
    "parameter-changes": birth_stop_resume,
}


def both(net, method: str, realizations: int = 150, seed: int = 5, grid=None) -> tuple[dict, dict]:
    """The events kernel's raw outputs (one launch; grid states as [realization, time, species]) and
    the CPU's."""
    c = compile_network(net)
    grid = np.linspace(0.0, 20.0, 21) if grid is None else grid
    b = SSABlock(c, seed, 0, realizations, grid, method, True, True)
    firings = np.zeros(c.n_reactions, np.uint64)
    (rec, ev, er), = gpu_events._chunks(b, METHODS[method], firings)
    on_gpu = {"trajectories": rec.transpose(2, 0, 1), "events": ev, "errors": er, "firings": firings}
    on_cpu = cpu.simulate_block(c, method=METHODS[method].cpu, real0=0, realizations=realizations, seed=seed,
                                grid=grid, keep_trajectories=True)
    return on_gpu, on_cpu


@pytest.mark.parametrize("method", list(METHODS))
@pytest.mark.parametrize("case", CASES)
def test_events_kernel_on_the_host_equals_the_cpu(host_gpu, case, method):
    on_gpu, on_cpu = both(CASES[case](), method)
    assert not on_cpu["errors"].any()
    for k in ("trajectories", "events", "errors", "firings"):
        assert np.array_equal(on_gpu[k].astype(np.int64), on_cpu[k].astype(np.int64)), k


@pytest.mark.parametrize("method", ["direct", "tree"])
def test_event_errors_on_the_host_equal_the_cpu(host_gpu, method):
    """The same error words (code and event or assignment index) at the same realizations."""
    plain = load(STILL, format="text")
    bad_value = with_events(plain, [event(plain, "halve", "time >= 1.5", {"X": "X / 2"})])
    loop = with_events(plain, [event(plain, "up", "X < 5 and time >= 1", {"X": "9"}),
                               event(plain, "down", "X > 5", {"X": "1"})])
    for net in (bad_value, loop):
        on_gpu, on_cpu = both(net, method, realizations=3, grid=np.array([0.0, 2.0]))
        assert on_cpu["errors"].all()
        for k in ("errors", "events"):
            assert np.array_equal(on_gpu[k].astype(np.int64), on_cpu[k].astype(np.int64)), k
