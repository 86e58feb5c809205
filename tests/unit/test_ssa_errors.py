"""Runtime numeric errors of kinetic laws: division by zero, NaN, negative propensities and negative
counts stop a run with one SimulationError naming the reaction, its law, the time and the state --
the same on CPU and GPU, for every seed, output grid and method."""

from __future__ import annotations

import numpy as np
import pytest

from distsim.models.compile_reactions import compile_network
from distsim.models.formats.reaction_text import parse_reactions
from distsim.ssa import cpu, simulate
from distsim.ssa.block import SSABlock
from distsim.ssa.errors import ERR_BITS, ERR_MASK, ERR_NEGATIVE, ERR_PROPENSITY, SimulationError
from distsim.ssa.methods import METHODS

BIT_IDENTICAL = [name for name, m in METHODS.items() if m.bit_identical]


def _net(law: str, a0: int = 5):
    return parse_reactions(f"make: 0 -> A ; 1\nbad: A -> 0 ; law: {law}\ninit: A = {a0}", name="bad")


def _message(net, **kw) -> str:
    with pytest.raises(SimulationError) as info:
        simulate(net, t_end=10, realizations=300, **kw)
    return str(info.value)


@pytest.mark.parametrize("law, value", [("1/0", "is inf (a division by zero or an overflow)"),
                                        ("0/0", "is NaN (0/0, or a function outside its domain)"),
                                        ("A/(A-A)", "is inf (a division by zero or an overflow)"),
                                        ("-A", "is -5 (negative)"),
                                        ("log(A - 5)", "is -inf (a division by zero or an overflow)"),
                                        ("sqrt(4 - A)", "is NaN (0/0, or a function outside its domain)")])
@pytest.mark.parametrize("seed, points, quantiles", [(0, 11, None), (1, 101, (0.5,)), (2, 11, (0.05, 0.95))])
def test_bad_law_at_the_start(law, value, seed, points, quantiles):
    """Whatever the seed and grid (the histogram pilot included), the law's first evaluation fails."""
    msg = _message(_net(law), seed=seed, points=points, quantiles=quantiles)
    lead = '256 of the first 256' if quantiles else '300 of 300'  # quantiles: a pilot's error, before the run
    assert msg.startswith(f"{lead} realizations stopped: the propensity "
                          f"of reaction 1 'bad' (law: "), msg
    state = ", with A = 5" if "A" in law else ""  # the counts the law reads
    assert f") {value} at t = 0 in realization 0 (seed {seed}){state}; check the rate laws" in msg, msg


@pytest.mark.parametrize("method", list(METHODS))
def test_bad_law_during_the_run(method):
    """A/(A - 3) is negative once A = 1: the error is that of the first failed realization, mid-run."""
    msg = _message(_net("A/(A - 3)", a0=0), seed=4, method=method, quantiles=None)
    assert "the propensity of reaction 1 'bad' (law: A / (A - 3.0)) is -0.5 (negative) at t = " in msg, msg
    assert "in realization 0 (seed 4), with A = 1;" in msg and " at t = 0 " not in msg, msg


def test_negative_count():
    msg = _message(_net("2.0", a0=3), seed=4, quantiles=None)
    assert ": firing reaction 1 'bad' (law: 2.0) made a species count negative at t = " in msg, msg
    assert "in realization 0 (seed 4), giving A = -1;" in msg, msg


def _block(net, method: str, realizations: int = 400) -> SSABlock:
    return SSABlock(compile_network(net), 9, 0, realizations, np.linspace(0.0, 6.0, 7), method)


@pytest.mark.parametrize("method", list(METHODS))
def test_error_words_name_the_reaction(method):
    """Per realization: the code in the low bits, the failing reaction above; A/(4 - A) fails (inf) only
    in the realizations that reach A = 4 before t = 6."""
    b = _block(_net("A/(4 - A)", a0=0), method)
    out = cpu.simulate_block(b.compiled, method=METHODS[method].cpu, real0=0, realizations=b.realizations,
                             seed=b.seed, grid=b.grid)
    words = out["errors"].astype(np.int64)
    failed = words != 0
    assert 0 < failed.sum() < len(words)
    assert np.all(words[failed] & ERR_MASK == ERR_PROPENSITY) and np.all(words[failed] >> ERR_BITS == 1)
    word, t, x, v = cpu.replay(b.compiled, METHODS[method].cpu, int(np.argmax(failed)), seed=b.seed, grid=b.grid)
    assert word == words[failed][0] and x[0] == 4 and v == np.inf and 0 < t < 6


@pytest.mark.gpu
@pytest.mark.parametrize("method", list(METHODS))
@pytest.mark.parametrize("law, a0", [("1/0", 5), ("-A", 5), ("A/(A - 3)", 0), ("2.0", 3)])
def test_gpu_gives_the_cpu_error(method, law, a0):
    """The same SimulationError text on both backends (the generated, generic and warp kernels)."""
    net = _net(law, a0)
    kw = dict(seed=4, method=method, quantiles=None)
    assert _message(net, backend="gpu", **kw) == _message(net, backend="cpu", **kw)


@pytest.mark.gpu
@pytest.mark.parametrize("method", BIT_IDENTICAL)
@pytest.mark.parametrize("law, a0, code", [("A/(4 - A)", 0, ERR_PROPENSITY), ("2.0", 3, ERR_NEGATIVE)])
def test_gpu_error_words_equal_cpu(method, law, a0, code):
    """Bit-identical methods give the CPU's error word for every realization."""
    b = _block(_net(law, a0), method)
    m = METHODS[method]
    words = cpu.simulate_block(b.compiled, method=m.cpu, real0=0, realizations=b.realizations, seed=b.seed,
                               grid=b.grid)["errors"]
    assert np.any(words & ERR_MASK == code)
    assert np.array_equal(m.gpu(b, m)["errors"], words)
