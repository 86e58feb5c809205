"""Steady-state estimator (seed 000, Algorithms 1-3), SCC reduction and influence against exact values."""

import math

import numpy as np
import pytest
from scipy import stats

from distsim.models.boolean import evaluate, parse_expression
from distsim.models.pbn import PBN
from distsim.pbn import influence, load, reference as ref, steady_state
from distsim.pbn.stats import ChainSums, between_variance, burn_in, rhat, sample_size

BACKENDS = ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)]


def exact(net, target, mode="sync"):
    pi = ref.stationary_distribution(net, mode)
    tgt = tuple((net.index(k), v) for k, v in target.items())
    return float(pi[ref.target_mask(net, tgt)].sum())


def min_hits(trials: int, confidence: float, alpha: float = 0.01) -> int:
    """Smallest k with P(Binomial(trials, confidence) < k) <= alpha."""
    k = 0
    while stats.binom.cdf(k, trials, confidence) <= alpha:
        k += 1
    return k


@pytest.mark.parametrize("backend", BACKENDS)
def test_coverage_over_seeds(examples, backend):
    """The estimate lies within +-r of the exact value in at least the stated share of seeds."""
    net = load(examples / "bnmpy_shmulevich2002_examplePBN_3n.txt", perturbation=0.01)
    targets = [{"x1": 1}, {"x1": 0, "x2": 1}, {"x3": 0}]
    truth = [exact(net, t) for t in targets]
    r, s = 2e-3, 0.95
    hits = trials = 0
    for seed in range(8):
        ds = steady_state(net, targets, precision=r, confidence=s, seed=seed, backend=backend)
        assert ds.attrs["converged"] == 1
        for k, t in enumerate(truth):
            hits += abs(float(ds.probability[k]) - t) <= r
            trials += 1
    assert hits >= min_hits(trials, s), f"{hits}/{trials} within +-{r}"


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_faure_within_precision(examples, mode):
    net = load(examples / "bbm023_faure2006_mammalian_cell_cycle_10n.bnet", perturbation=0.01)
    targets = [{"v_CycE": 1}, {"v_Rb": 0, "v_p27": 1}]
    ds = steady_state(net, targets, mode=mode, precision=3e-3, seed=4)
    for k, t in enumerate(targets):
        assert abs(float(ds.probability[k]) - exact(net, t, mode)) <= 3e-3
        assert float(ds.ci_low[k]) <= float(ds.probability[k]) <= float(ds.ci_high[k])
        assert 0 < float(ds.half_width[k]) <= 3e-3
        assert int(ds.sample_size[k]) >= int(ds.sample_size_required[k])
        assert int(ds.burn_in[k]) >= int(ds.burn_in_required[k])
        assert float(ds.rhat[k]) < ds.attrs["rhat_threshold"]
    assert ds.attrs["steps_simulated"] >= ds.attrs["chains"] * ds.attrs["chain_length"]


def chained_network(p: float) -> PBN:
    """x0..x2 are the relevant part (x0 is reset to 0 by every update step, so how long it stays 1
    depends on how often perturbation steps happen); x3..x8 are downstream (irrelevant)."""
    names = [f"x{i}" for i in range(9)]
    rules = ["0", "x0 | x1 & !x2", "x1", "x0 ^ x4", "x3 | x2", "!x5 & x3", "x6 ^ x7", "x8 & x3", "x7 | x1"]
    preds = [[(parse_expression(r, names.index), 1.0)] for r in rules]
    preds[1].append((parse_expression("!x0", names.index), 0.5))
    return PBN.create(names, preds, perturbation=p)


def test_scc_reduction_keeps_redundant_perturbations():
    net = chained_network(0.1)
    target = {"x0": 1, "x2": 0}
    truth = exact(net, target)
    # the sensitivity check: dropping the redundant nodes *without* their perturbations is wrong
    naive = exact(net.subnetwork([0, 1, 2]), target)
    assert abs(naive - truth) > 0.02
    r = 2e-3
    red = steady_state(net, target, precision=r, seed=3, reduce=True)
    full = steady_state(net, target, precision=r, seed=3, reduce=False)
    assert red.attrs["nodes_removed"] == 6 and full.attrs["nodes_removed"] == 0
    assert abs(float(red.probability[0]) - truth) <= r
    assert abs(float(full.probability[0]) - truth) <= r
    assert abs(float(red.probability[0]) - float(full.probability[0])) <= 2 * r


def test_influence_matches_exact(examples):
    net = load(examples / "bnmpy_shmulevich2002_examplePBN_3n.txt", perturbation=0.01)
    ds = influence(net, "x1", precision=1e-3, seed=5)
    pi = ref.stationary_distribution(net)
    X = ref.all_states(net.n)
    for jj, name in enumerate(ds.parent.values):
        j = net.index(str(name))
        truth = 0.0
        for p in net.predictors[0]:
            lo, hi = X.copy(), X.copy()
            lo[:, j], hi[:, j] = False, True
            truth += p.probability * pi[evaluate(p.expr, lo) != evaluate(p.expr, hi)].sum()
        assert abs(float(ds.influence[jj]) - truth) <= float(ds.influence_halfwidth[jj])
    assert math.isclose(float(ds.joint_probability.sum()), 1.0, abs_tol=1e-9)


def test_results_do_not_depend_on_chain_split(examples):
    net = load(examples / "bbm023_faure2006_mammalian_cell_cycle_10n.bnet", perturbation=0.01)
    a = steady_state(net, "v_CycE=1", precision=5e-3, seed=1, chains=512, segments=4)
    b = steady_state(net, "v_CycE=1", precision=5e-3, seed=1, chains=512, segments=4)
    assert float(a.probability[0]) == float(b.probability[0])
    c = steady_state(net, "v_CycE=1", precision=5e-3, seed=2, chains=512, segments=4)
    assert float(c.probability[0]) != float(a.probability[0])


def test_plot_and_history(examples, tmp_path):
    net = load(examples / "bnmpy_shmulevich2002_examplePBN_3n.txt", perturbation=0.01)
    png = tmp_path / "conv.png"
    ds = steady_state(net, "x1=1", precision=5e-3, seed=1, plot=str(png))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert ds.sizes["round"] >= 1 and np.all(np.diff(ds.history_length.values) >= 0)


@pytest.mark.parametrize("kwargs,msg", [
    (dict(target="nope=1"), "unknown node"),
    (dict(target="x1=2"), "must be 0 or 1"),
    (dict(target="x1"), "NODE=0"),
    (dict(target="x1=1", precision=0.7), "precision"),
    (dict(target="x1=1", confidence=1.5), "confidence"),
    (dict(target="x1=1", mode="parallel"), "mode"),
    (dict(target="x1=1", seed=-3), "seed"),
    (dict(target="x1=1", plot="x.pdf"), "png"),
])
def test_bad_arguments(examples, kwargs, msg):
    net = load(examples / "bnmpy_shmulevich2002_examplePBN_3n.txt", perturbation=0.01)
    target = kwargs.pop("target")
    with pytest.raises((ValueError, TypeError), match=msg):
        steady_state(net, target, **kwargs)


def test_formulas():
    # Raftery & Lewis worked example (pbn-research notes): pi ~ 0.3, alpha 0.03, beta 0.07
    assert abs(sample_size(0.03, 0.07, 0.01, 0.95) - 1.5e5) / 1.5e5 < 0.05
    assert burn_in(0.03, 0.07, 0.001) == math.ceil(math.log(0.001 * 0.1 / 0.07) / math.log(0.9))
    # R-hat: identical chains -> ~1 ((n-1)/n W / W); very different chains -> large
    same = ChainSums(chains=4, psi=100, s1=4 * 50, s2=4 * 50 * 50)
    assert rhat(same) < 1.0
    apart = ChainSums(chains=4, psi=100, s1=0 + 0 + 100 + 100, s2=2 * 100 * 100)
    assert rhat(apart) == math.inf
    mixed = ChainSums(chains=2, psi=100, s1=30 + 70, s2=30 * 30 + 70 * 70)
    B = 100 / (2 - 1) * ((0.3 - 0.5) ** 2 + (0.7 - 0.5) ** 2)  # n/(m-1) sum (mu_i - mu)^2
    W = (0.3 * 0.7 * 100 / 99 + 0.7 * 0.3 * 100 / 99) / 2  # mean within-chain sample variance
    assert math.isclose(rhat(mixed), math.sqrt((99 / 100 * W + B / 100) / W), rel_tol=1e-12)
    assert math.isclose(between_variance(mixed), B, rel_tol=1e-12)


def test_degenerate_target_and_limits():
    names = ["a", "b"]
    const = parse_expression("1", names.index)
    net = PBN.create(names, [[(const, 1.0)], [(parse_expression("a & b", names.index), 1.0)]], perturbation=0.01,
                     fixed=["a"])
    ds = steady_state(net, ["a=0", "a=1"], precision=1e-2, seed=1, initial={"a": 1})
    assert ds.probability.values.tolist() == [0.0, 1.0]
    assert ds.degenerate.values.tolist() == [1, 1]
    slow = load_shmulevich()
    limited = steady_state(slow, "x1=1", precision=1e-4, seed=1, chains=512, max_steps=3e5)
    assert limited.attrs["converged"] == 0 and "max_steps" in limited.attrs["note"]
    assert limited.attrs["steps_simulated"] <= 3e5
    with pytest.raises(ValueError, match="first round"):
        steady_state(slow, "x1=1", precision=1e-4, seed=1, max_steps=1e5)
    with pytest.warns(UserWarning, match="ergodic"):
        steady_state(slow.with_perturbation(0.0), "x1=1", precision=1e-2, seed=1, max_steps=1e6)


def load_shmulevich():
    from pathlib import Path

    return load(Path(__file__).resolve().parents[2] / "examples" / "pbn" / "bnmpy_shmulevich2002_examplePBN_3n.txt",
                perturbation=0.01)
