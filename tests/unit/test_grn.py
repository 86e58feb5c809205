"""GRN inference (seed 002): exact fixtures, every rule, loaders and their errors, the mouse-eye optimum,
and runs that do not depend on shards, workers or a killed worker."""

import functools
import json
from pathlib import Path

import numpy as np
import pytest

import distsim.grn as grn
from distsim.engine import DaskExecutor, LocalExecutor
from distsim.engine.faults import KillWorkerOnce
from distsim.errors import DataError
from distsim.grn import cpu
from distsim.grn.ga import Consts, CPUOps
from distsim.grn.problem import pack_links, pack_state, unpack_links

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "examples" / "grn"
DATA = ROOT / "tests" / "data" / "grn"
OPTIMUM = 0.0005859375


@pytest.fixture(scope="module")
def mouse():
    return grn.load(EX / "mouse_eye.toml")


@pytest.fixture(scope="module")
def fixtures():
    return json.loads((DATA / "mouse_eye_grn_test_fixtures.json").read_text())


def optimum_links(prob):
    sol = json.loads((DATA / "mouse_eye_grn_optimum_example_solution.json").read_text())
    L = prob.links.copy()
    idx = {g: i for i, g in enumerate(prob.genes)}
    for ch in sol["link_changes_vs_reference"]:
        assert L[idx[ch["target"]], idx[ch["source"]]] == ch["reference"]
        L[idx[ch["target"]], idx[ch["source"]]] = ch["solution"]
    return L, np.array(sol["rules"], np.uint8)


def packed_scores(prob, links, rules):
    """Scores from the packed Numba kernel for a batch of individuals (links [P, n, n], rules [P, n])."""
    a, r = pack_links(links)
    return CPUOps(Consts.of(prob)).evaluate(a, r, np.asarray(rules, np.uint8))


# ---------------------------------------------------------------------------------------------- fixtures, rules

def test_fixture_trajectories_and_fitness_exact(mouse, fixtures):
    for case in fixtures["cases"]:
        traj = mouse.simulate(mouse.links, case["rules"])
        assert np.array_equal(traj, np.array(case["states_t0_to_t5"])), case["case"]
        assert mouse.mismatches(mouse.links, case["rules"]) == (case["node_mismatches"], case["link_mismatches"])
        assert mouse.fitness(mouse.links, case["rules"]) == case["fitness"]
        s = packed_scores(mouse, mouse.links[None], np.array(case["rules"])[None])[0]
        assert float(mouse.fitness_of_score(s)) == case["fitness"], case["case"]


def test_optimum_example_is_exact(mouse):
    L, rules = optimum_links(mouse)
    assert mouse.mismatches(L, rules) == (0, 6)
    assert mouse.fitness(L, rules) == OPTIMUM  # 0.1 * 6 / 1024 exactly in float64
    assert float(mouse.fitness_of_score(packed_scores(mouse, L[None], rules[None])[0])) == OPTIMUM


@pytest.mark.parametrize("rule", [0, 1, 2, 3])
def test_every_rule_truth_table(rule):
    """next_bit (the table lookup of both kernels) against the rules written out, for A, R in 0..4."""
    for a in range(5):
        for r in range(5):
            for old in (0, 1):
                want = {0: 1 if a > r else (0 if r > a else old), 1: 0 if r >= 1 else old,
                        2: 1 if a >= 2 else old, 3: 0 if r >= 2 else old}[rule]
                assert cpu.next_bit(a, r, np.uint32(old), rule) == want, (rule, a, r, old)


def test_only_active_sources_count():
    """g0 (off) represses g2, g1 (on) activates g2: under 'most' g2 switches on (the inactive repressor is ignored)."""
    L = np.zeros((3, 3), np.int8)
    L[2, 0], L[2, 1] = -1, 1
    p = grn.Problem(("g0", "g1", "g2"), L, [0, 1, 0], [0, 1, 1], iterations=1)
    assert p.simulate(L, [0, 0, 0])[1].tolist() == [0, 1, 1]
    assert p.simulate(L, [0, 0, 1])[1].tolist() == [0, 1, 0]  # absolute repressor never switches on
    assert int(packed_scores(p, L[None], np.zeros((1, 3)))[0]) == 0


@pytest.mark.parametrize("n", [5, 33, 70])
def test_packed_kernel_equals_reference_on_random_networks(n):
    rng = np.random.default_rng(n)
    prob = grn.Problem(tuple(f"x{i}" for i in range(n)), rng.choice([-1, 0, 1], (n, n), p=[.1, .8, .1]),
                       rng.integers(0, 2, n), rng.integers(0, 2, n), iterations=7, lam=0.75)
    P = 40
    links = rng.choice([-1, 0, 1], (P, n, n), p=[.15, .7, .15]).astype(np.int8)
    rules = rng.integers(0, 4, (P, n))
    got = packed_scores(prob, links, rules)
    want = [prob.score(*prob.mismatches(links[k], rules[k])) for k in range(P)]
    assert got.tolist() == want
    a, r = pack_links(links)
    assert np.array_equal(unpack_links(a, r, n), links)
    out = np.zeros((prob.iterations + 1, a.shape[1]), np.uint32)
    cpu.trajectory_words(a[0], r[0], rules[0].astype(np.uint8), pack_state(prob.initial), prob.iterations, out)
    assert np.array_equal(out, np.array([pack_state(x) for x in prob.simulate(links[0], rules[0])]))


# ---------------------------------------------------------------------------------------------- loaders

def test_all_formats_give_the_same_problem(mouse, tmp_path):
    states = EX / "mouse_eye_grn_states.csv"
    m = grn.load(EX / "mouse_eye_grn_links_matrix.csv", states=states)
    e = grn.load(EX / "mouse_eye_grn_edges.csv", states=states)
    d = {"genes": list(mouse.genes), "links": mouse.links.tolist(), "initial": mouse.initial.tolist(),
         "target": {g: int(v) for g, v in zip(mouse.genes, mouse.target)}}
    (tmp_path / "p.json").write_text(json.dumps(d))
    j = grn.load(tmp_path / "p.json")
    for p in (m, e, j):
        assert p.genes == mouse.genes and np.array_equal(p.links, mouse.links)
        assert np.array_equal(p.initial, mouse.initial) and np.array_equal(p.target, mouse.target)
        assert p.iterations == 5 and p.lam == 0.9
    assert grn.load(EX / "mouse_eye.toml", iterations=3).iterations == 3


BAD = [
    ("links.csv", "target\\source,a,b\na,1,0\nb,2,0\n", "links.csv:3: link sign must be -1, 0 or 1"),
    ("links.csv", "target\\source,a,b\na,1,0\na,0,0\n", "links.csv:3: row for 'a' given twice"),
    ("links.csv", "target\\source,a,b\na,1,0\n", "no row for gene(s) b"),
    ("links.csv", "target\\source,a,b\na,1\n", "links.csv:2: expected 3 columns"),
    ("edges.csv", "source,target,sign\na,c,1\n", "edges.csv:2: gene 'c' is not in the states file"),
    ("edges.csv", "source,target,sign\na,b,1\na,b,-1\n", "edges.csv:3: edge a -> b given twice"),
    ("edges.csv", "source,target,sign\na,b,x\n", "edges.csv:2: link sign must be"),
    ("p.toml", "genes = [\"a\", \"b\"\nedges = []\n", "p.toml"),
    ("p.toml", "genes = [\"a\", \"b\"]\nedges = [[\"a\", \"b\", 1]]\ninitial = [0, 1]\ntarget = [0, 2]\n",
     "p.toml:4: target: must be a list of 2 values 0/1"),
    ("p.json", "{\"genes\": [\"a\"], \"links\": [[1]], \"initial\": [0], \"target\": [1], \"speed\": 3}",
     "p.json:1: speed: unknown key"),
    ("p.json", "{\"genes\": [\"a\"],\n \"links\": [[1]], \"initial\": [0], \"target\": [1], \"lambda\": 0.123456789}",
     "lambda must be a fraction"),
    ("p.json", "{\"genes\": [\"a\"], \"links\": [[1]],", "p.json:1:"),
]


@pytest.mark.parametrize("name,text,message", BAD)
def test_bad_input_names_file_and_line(tmp_path, name, text, message):
    (tmp_path / "states.csv").write_text("node,init,target\na,1,0\nb,0,1\n")
    (tmp_path / name).write_text(text)
    states = tmp_path / "states.csv" if name.endswith(".csv") else None
    with pytest.raises(ValueError) as e:
        grn.load(tmp_path / name, states=states)
    assert message in str(e.value)


def test_bad_states_and_missing_states(tmp_path):
    (tmp_path / "s.csv").write_text("node,init,target\na,1,0\na,0,1\n")
    (tmp_path / "l.csv").write_text("target\\source,a\na,1\n")
    with pytest.raises(DataError, match=r"s.csv:3: gene .a. listed twice"):
        grn.load(tmp_path / "l.csv", states=tmp_path / "s.csv")
    (tmp_path / "s.csv").write_text("node,init,target\na,1,7\n")
    with pytest.raises(DataError, match=r"s.csv:2: target state of a must be 0 or 1"):
        grn.load(tmp_path / "l.csv", states=tmp_path / "s.csv")
    with pytest.raises(ValueError, match="needs a states file"):
        grn.load(tmp_path / "l.csv")
    with pytest.raises(ValueError, match="unknown problem format"):
        grn.load(tmp_path / "x.xlsx")


# ---------------------------------------------------------------------------------------------- the GA

CPU = LocalExecutor("cpu")


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_mouse_eye_optimum_reached_standard_mode(mouse, seed):
    ds = grn.infer(mouse, seed=seed, generations=800, target_fitness=OPTIMUM, client=CPU)
    assert ds.attrs["fitness"] == OPTIMUM and ds.attrs["stop_reason"] == "target"
    assert ds.attrs["node_mismatches"] == 0 and ds.attrs["link_changes"] == 6
    assert np.array_equal(ds.trajectory.values[-1], mouse.target)
    assert float(ds.best_so_far[-1]) == OPTIMUM


def test_faithful_mode_with_heavy_migration_reaches_optimum(mouse):
    """The reference semantics (rank pairs, children overwrite parents): migration is the selection, so
    heavy ring migration is needed (spec section 5: 256 migrants every generation)."""
    ds = grn.infer(mouse, mode="faithful", islands=4, population=256, migration_rate=64, migration_interval=1,
                   generations=800, target_fitness=OPTIMUM, seed=1, client=CPU)
    assert ds.attrs["fitness"] == OPTIMUM


def equal_runs(a, b):
    for v in ("best_fitness", "mean_fitness", "best_links", "best_rules", "trajectory"):
        assert np.array_equal(a[v].values, b[v].values), v
    for k in ("fitness", "generations", "best_island", "best_generation", "stop_reason"):
        assert a.attrs[k] == b.attrs[k], k


@pytest.mark.parametrize("kw", [
    dict(model="island", islands=4, population=64, migration_interval=4, migration_rate=4),
    dict(model="island", islands=3, population=32, selection="roulette", mode="faithful", migration_interval=3),
    dict(model="hybrid", islands=4, population=36, migration_interval=5, migration_rate=3),
    dict(model="island", islands=4, population=32, selection="roulette", migration_interval=8),
])
def test_same_result_for_one_and_several_shards(mouse, kw):
    one = grn.infer(mouse, generations=40, seed=7, client=CPU, shards=1, **kw)
    for s in (2, 3):
        equal_runs(one, grn.infer(mouse, generations=40, seed=7, client=CPU, shards=s, **kw))
    assert one.attrs["generations"] == 40


def test_cellular_and_master_slave_improve(mouse):
    for kw in (dict(model="cellular", population=100), dict(model="master-slave", population=128)):
        ds = grn.infer(mouse, generations=60, seed=3, client=CPU, **kw)
        assert ds.best_so_far.values[-1] < ds.best_so_far.values[0]
        assert np.all(np.diff(ds.best_so_far.values) <= 0)


KW = dict(islands=4, population=64, migration_interval=5, migration_rate=4, generations=30, seed=5)


def test_dask_cluster_equals_in_process(mouse, dask_client):
    local = grn.infer(mouse, client=CPU, shards=2, **KW)
    equal_runs(local, grn.infer(mouse, client=DaskExecutor(dask_client, "cpu"), **KW))


def test_worker_killed_mid_run_gives_the_same_result(mouse, dask_client, tmp_path):
    local = grn.infer(mouse, client=CPU, shards=2, **KW)
    marker = tmp_path / "killed"
    ex = DaskExecutor(dask_client, "cpu", wrap=functools.partial(KillWorkerOnce, marker=str(marker), round=3))
    ds = grn.infer(mouse, client=ex, **KW)
    assert marker.exists(), "the fault was not injected"
    equal_runs(local, ds)
    dask_client.wait_for_workers(2, timeout=60)


def test_seed_matters_and_time_limit_stops(mouse):
    a = grn.infer(mouse, generations=10, seed=1, client=CPU)
    b = grn.infer(mouse, generations=10, seed=2, client=CPU)
    assert not np.array_equal(a.best_fitness.values, b.best_fitness.values)
    c = grn.infer(mouse, generations=100000, seed=1, client=CPU, time_limit=0.3)
    assert c.attrs["stop_reason"] == "time_limit" and c.attrs["generations"] < 100000
    z = grn.infer(mouse, generations=0, seed=1, client=CPU)
    assert z.sizes["generation"] == 1


def test_bad_arguments(mouse):
    with pytest.raises(ValueError, match="model must be"):
        grn.infer(mouse, model="ring")
    with pytest.raises(ValueError, match="use 'island'"):
        grn.infer(mouse, model="master-slave", islands=2)
    with pytest.raises(ValueError, match="even"):
        grn.infer(mouse, population=33)
    with pytest.raises(ValueError, match="3x3"):
        grn.infer(mouse, model="cellular", population=14)
    with pytest.raises(ValueError, match="selection applies"):
        grn.infer(mouse, model="hybrid", selection="roulette")
    with pytest.raises(ValueError, match="at most half"):
        grn.infer(mouse, population=16, migration_rate=9)


def test_planted_solution_reaches_its_bound():
    prob, links, rules = grn.planted(40, changes=5, seed=3, return_solution=True)
    nm, lm = prob.mismatches(links, rules)
    assert nm == 0 and lm == 5
    assert prob.fitness(links, rules) == pytest.approx(0.1 * 5 / 1600, rel=1e-12)


def test_result_file_plot_and_cli(mouse, tmp_path, capsys):
    from distsim import results
    from distsim.cli import main

    ds = grn.infer(mouse, generations=20, seed=1, client=CPU, plot=str(tmp_path / "r.png"))
    assert (tmp_path / "r.png").stat().st_size > 10_000
    back = results.open_result(results.write(ds, tmp_path / "r.nc"))
    assert np.array_equal(back.best_links.values, ds.best_links.values)
    assert back.attrs["fitness"] == ds.attrs["fitness"]
    assert main(["--in-process", "--cpu", "--quiet", "grn", "infer", str(EX / "mouse_eye.toml"), "--target-fitness",
                 str(OPTIMUM), "--seed", "2", "-g", "800", "-o", str(tmp_path / "c.nc")]) == 0
    out = capsys.readouterr().out
    assert "best fitness 0.0005859375 (0 node mismatches, 6 link changes)" in out
    assert all(f"  {g} <- " in out for g in ("g03", "g05", "g15", "g16", "g22"))  # the five forced rows
    assert "time to target" in out


class ForgetfulExecutor(LocalExecutor):
    """In-process executor that loses shard 0's cached islands before round 2 (as if its worker had died)."""

    def run_round(self, fn, run_id, round_no, payloads):
        from distsim.engine import registry

        if round_no == 2:
            registry.put(run_id, 0, None, "grn")
        return super().run_round(fn, run_id, round_no, payloads)


@pytest.mark.parametrize("shards", [1, 2])
def test_lost_cache_is_rebuilt_by_replay(mouse, shards):
    kw = dict(KW, round_generations=5)
    equal_runs(grn.infer(mouse, client=CPU, shards=shards, **kw),
               grn.infer(mouse, client=ForgetfulExecutor("cpu"), shards=shards, **kw))
