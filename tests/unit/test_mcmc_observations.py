"""Observations that leave species out: the conservation laws fill what they determine; species
unobserved at the first time take the model's initial amounts when that identifies the state."""

from pathlib import Path

import numpy as np
import pytest

from distsim.errors import DataError
from distsim.mcmc import as_observations, infer_rates
from distsim.models.formats.reaction_text import parse_reactions
from distsim.ssa import load

EX = Path(__file__).resolve().parents[2] / "examples" / "mcmc"
PRIOR = {"k1": (2, 1000), "k2": (2, 10), "k3": (2, 10)}


def _partial(tmp_path, with_t0: bool) -> Path:
    """The seed-003 data with only E and S (and, with_t0, ES and P at the first time only)."""
    rows = np.genfromtxt(EX / "mm_observations.csv", delimiter=",", names=True, comments="#", skip_header=3)
    lines = ["time,E,S,ES,P"]
    for k, r in enumerate(rows):
        first = with_t0 and k == 0
        lines.append(f"{r['time']:g},{int(r['E'])},{int(r['S'])},{'0' if first else ''},{'0' if first else ''}")
    path = tmp_path / f"partial{int(with_t0)}.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.filterwarnings("ignore::distsim.errors.ConvergenceWarning")  # 12 iterations: not converged
def test_unobserved_first_values_come_from_the_model(tmp_path):
    net = load(EX / "michaelis_menten.rxn")
    partial = as_observations(net, _partial(tmp_path, False))
    written = as_observations(net, _partial(tmp_path, True))
    assert partial.from_model == ("ES", "P") and written.from_model == ()
    assert np.array_equal(partial.states, written.states)
    a = infer_rates(net, _partial(tmp_path, False), prior=PRIOR, iterations=12, burn_in=2, chains=2, seed=3,
                    backend="cpu", client=None)
    b = infer_rates(net, _partial(tmp_path, True), prior=PRIOR, iterations=12, burn_in=2, chains=2, seed=3,
                    backend="cpu", client=None)
    for v in ("k1", "k2", "k3"):
        assert np.array_equal(a[v].values, b[v].values)
    # the output says which first values came from the model (issue 20)
    assert a.attrs["initial_from_model"] == "ES,P" and b.attrs["initial_from_model"] == ""
    assert np.array_equal(a.observed.values[0], [1, 1, 0, 0]) and np.array_equal(b.observed.values[0], [1, 1, 1, 1])
    pytest.importorskip("arviz")
    from distsim.mcmc import to_inference_data

    assert to_inference_data(a).observed_data.attrs["initial_from_model"] == "ES,P"


def test_not_identified_even_with_the_model_is_a_clear_error(tmp_path):
    net = parse_reactions("A -> B ; k = 1\nB -> C ; k2 = 1\ninit: A = 10\n")
    data = tmp_path / "obs.csv"
    data.write_text("time,A\n0,10\n1,7\n2,5\n")  # B and C after t0 are not determined
    with pytest.raises(DataError, match="not identified.*initial amounts of B, C"):
        as_observations(net, data)


@pytest.mark.filterwarnings("ignore::distsim.errors.ConvergenceWarning")  # 6 iterations: not converged
def test_cli_says_which_first_values_came_from_the_model(tmp_path, capsys):
    from distsim.cli import main

    assert main(["--in-process", "--quiet", "--cpu", "mcmc", "rates", str(EX / "michaelis_menten.rxn"), "--data",
                 str(_partial(tmp_path, False)), "--iterations", "6", "--burn-in", "2", "--chains", "2", "--prior",
                 "k1=gamma:2,1000", "--prior", "k2=gamma:2,10", "--prior", "k3=gamma:2,10"]) == 0
    assert "first values of ES, P (unobserved) are the model's initial amounts" in capsys.readouterr().out
