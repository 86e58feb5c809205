"""Minimised reproducers of every class of bad input that crashed, recursed or hung a loader (issue 19):
each now raises a distsim error naming the file and the line, quickly."""

from __future__ import annotations

import pickle
import shutil
import signal
from pathlib import Path

import pytest

import distsim.grn as grn
import distsim.pbn as pbn
import distsim.ssa as ssa
from distsim.cli import main
from distsim.errors import ConfigError, DataError, DistsimError, ModelError
from distsim.models.boolean import MAX_DEPTH as MAX_BOOLEAN_DEPTH
from distsim.mcmc import ObservationError, as_observations
from distsim.sweep.config import load_config

ROOT = Path(__file__).resolve().parents[2]
MM = ROOT / "examples" / "ssa" / "michaelis_menten.rxn"


@pytest.fixture(autouse=True)
def no_hang():
    """Each case must finish within 20 s (they used to recurse, crash or run for minutes)."""

    def hang(signum, frame):
        raise TimeoutError("the loader hangs")

    old = signal.signal(signal.SIGALRM, hang)
    signal.alarm(20)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def write(tmp_path: Path, name: str, data: str | bytes) -> Path:
    p = tmp_path / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data if isinstance(data, bytes) else data.encode())
    return p


def check(err: DistsimError, path: Path, line: int, phrase: str) -> None:
    assert err.file == str(path) and err.line == line, str(err)
    assert str(err).startswith(f"{path}:{line}:") and phrase in str(err), str(err)


# ------------------------------------------------------------------------------------------------
# Boolean formats (.pbn, .bnet, BoolNet, BNMPy)

DEEP = 5000
BDEEP = MAX_BOOLEAN_DEPTH + 1


@pytest.mark.parametrize("name,text,line,phrase", [
    # nesting is bounded by memory (issue 30), beyond MAX_DEPTH: see test_parsers_bounded.py for what loads
    ("deep_parens.bnet", "A, B\nB, " + "(" * BDEEP + "A" + ")" * BDEEP + "\n", 2, "nested too deeply"),
    ("deep_not.bnet", "A, B\nB, " + "!" * BDEEP + "A\n", 2, "nested too deeply"),
    ("deep_calls.txt", "A = B\nB = " + "maj(" * BDEEP + "A" + ")" * BDEEP + "\n", 2, "nested too deeply"),
    ("deep.pbn", "n=1\nnodeNames\nx\nendNodeNames\nnode x\n1 : " + "(" * BDEEP + "x" + ")" * BDEEP + "\nendNode\n",
     6, "nested too deeply"),
    ("huge_threshold.bnet", "A, B\nB, sumgt(A, B, " + "9" * 5000 + ")\n", 2, "too large"),
    ("wide_maj.bnet", "A, B\nB, maj(" + ", ".join(["A"] * 3000) + ")\n", 2, "too large to expand"),
    ("huge_n.pbn", "n=" + "9" * 5000 + "\nnodeNames\nx\nendNodeNames\n", 1, "n must be"),
    ("long_probability.txt", "A = B, " + "1" * 100_000 + "x\nB = A\n", 1, "must be a positive number"),
    ("inf_probability.txt", "A = B, 1e309\nB = A\n", 1, "finite"),
])
def test_boolean_formats(tmp_path, name, text, line, phrase):
    p = write(tmp_path, name, text)
    with pytest.raises(ModelError) as e:
        pbn.load(p)
    check(e.value, p, line, phrase)


def test_invalid_utf8_names_line_and_column(tmp_path):
    p = write(tmp_path, "m.bnet", b"A, B\nB, A & \xff\n")
    with pytest.raises(ModelError) as e:
        pbn.load(p)
    check(e.value, p, 2, "not UTF-8")
    assert e.value.column == 8


def test_nesting_within_the_limit_loads(tmp_path):
    p = write(tmp_path, "ok.bnet", "A, B\nB, " + "(" * 90 + "!A" + ")" * 90 + "\n")
    assert pbn.load(p).n == 2


# ------------------------------------------------------------------------------------------------
# reaction text (.rxn)


@pytest.mark.parametrize("text,line,phrase", [
    ("A -> B ; law: " + "(" * DEEP + "A" + ")" * DEEP + "\n", 1, "nested too deeply"),
    ("A -> B ; law: " + "-" * DEEP + "A\n", 1, "nested too deeply"),
    ("A -> B ; law: " + "2^" * DEEP + "A\n", 1, "nested too deeply"),
    ("A -> B ; law: 1e309 * A\n", 1, "too large"),
    ("A -> B ; k = " + "1" * 100_000 + "x\n", 1, "bad number"),
    ("A -> B ; 1\ninit: A = " + "9" * 5000 + "\n", 2, "too large"),
    ("A -> B ; 1\ninit: A = 1e300\n", 2, "too large"),
    ("A -> B ; 1\ninit: A = inf\n", 2, "bad number"),
    ("A -> B ; 1\ninit: A = -3\n", 2, "negative"),
    ("9" * 5000 + " A -> B ; 1\n", 1, "too large"),
    ("1001 A -> B ; 1\n", 1, "too large"),
    ("# nothing but\n# comments\n", 2, "empty model"),
])
def test_reaction_text(tmp_path, text, line, phrase):
    p = write(tmp_path, "m.rxn", text)
    with pytest.raises(ModelError) as e:
        ssa.load(p)
    check(e.value, p, line, phrase)


def test_unknown_format_and_undetectable_content_name_the_file(tmp_path):
    p = write(tmp_path, "m.dat", "hello\n")
    with pytest.raises(ModelError) as e:
        ssa.load(p)
    check(e.value, p, 1, "cannot tell the reaction-network format")
    with pytest.raises(ModelError, match="unknown reaction-network format 'bngl'") as e:
        ssa.load(MM, format="bngl")
    assert e.value.file == str(MM)


# ------------------------------------------------------------------------------------------------
# GRN problem files

GRN_TOML = 'genes = ["a", "b"]\nedges = [["a", "b", 1]]\ninitial = [0, 1]\ntarget = [1, 0]\n'
GRN_JSON = '{"genes": ["a", "b"],\n "edges": [["a", "b", 1]],\n "initial": [0, 1],\n "target": [1, 0]}\n'


@pytest.mark.parametrize("name,text,line,phrase", [
    ("p.toml", GRN_TOML + "x = " + "[" * DEEP + "]" * DEEP + "\n", 5, "nest more than"),
    ("p.toml", GRN_TOML + "iterations = " + "9" * 5000 + "\n", 5, "too large"),
    ("p.toml", GRN_TOML + "lambda = nan\n", 5, "not finite"),
    ("p.toml", GRN_TOML + "max_connectivity_distance = inf\n", 5, "not finite"),
    ("p.toml", GRN_TOML + "iterations = 10000000000\n", 5, "must be in [1, 1000000]"),
    ("p.toml", GRN_TOML + 'name = "unterminated\n', 5, "invalid TOML"),
    ("p.toml", GRN_TOML.replace("initial", "initial \x1b"), 3, "invalid TOML"),
    ("p.json", GRN_JSON.replace('"genes"', '"x": ' + "[" * DEEP + "]" * DEEP + ', "genes"'), 1, "nest more than"),
    ("p.json", GRN_JSON.replace("[0, 1]", "[0, " + "1" * 5000 + "]"), 3, "too large"),
    ("p.json", GRN_JSON.replace("[0, 1]", "[0, NaN]"), 3, "not finite"),
    ("p.json", GRN_JSON.replace('"a", "b", 1', '["a"], "b", 1'), 2, "unknown gene"),
    ("p.json", GRN_JSON.replace("}", ', "lambda": 1e400}'), 4, "not finite"),
])
def test_grn_toml_json(tmp_path, name, text, line, phrase):
    p = write(tmp_path, name, text)
    with pytest.raises(ConfigError) as e:
        grn.load(p)
    check(e.value, p, line, phrase)


@pytest.mark.parametrize("links,states,bad,line,phrase", [
    ("source,target,sign\na,b," + '"' + "x" * 200_000 + "\n", "node,i,t\na,1,0\nb,0,1\n", "l", 2, "bad CSV row"),
    ("target\\source,a,b\na,1,0\n", "node,i,t\na,1,0\nb,0,1\n", "l", 1, "no row for gene(s) b"),
    ("source,target,sign\na,b,1\n", "node,i,t\n", "s", 1, "no genes listed"),
    ("source,target,sign\na,b,1\n", b"node,i,t\na,1,0\nb\xfe,0,1\n", "s", 3, "not UTF-8"),
    ("", "node,i,t\na,1,0\n", "l", 1, "the file is empty"),
])
def test_grn_csv(tmp_path, links, states, bad, line, phrase):
    lp, sp = write(tmp_path, "l.csv", links), write(tmp_path, "s.csv", states)
    with pytest.raises(DataError) as e:
        grn.load(lp, states=sp)
    check(e.value, lp if bad == "l" else sp, line, phrase)


# ------------------------------------------------------------------------------------------------
# observations CSV (MCMC)

OBS = "time,E,S,ES,P\n0,120,301,0,0\n10,100,,,\n"


@pytest.mark.parametrize("text,line,phrase", [
    (OBS.replace("100,,,", "1e309,,,"), 3, "not finite"),
    (OBS.replace("100,,,", "inf,,,"), 3, "not finite"),
    (OBS.replace("100,,,", "1e300,,,"), 3, "not a non-negative integer count"),
    (OBS.replace("100,,,", "-1,,,"), 3, "not a non-negative integer count"),
    (OBS.replace("100,,,", '"' + "1" * 200_000 + ",,,"), 3, "bad CSV row"),
    (OBS.replace("time,E,S,ES,P", "time" + ",X" * 100_000), 1, "duplicate column"),
    (OBS.replace("time,E,S,ES,P", "time,E,S,ES,Q"), 1, "not a species"),
    ("# only\n" + OBS.split("\n")[0] + "\n0,1,1,1,1\n", 2, "at least two"),
    (OBS.replace("10,100", "\xff10,100"), 3, "not a number"),
])
def test_observations(tmp_path, text, line, phrase):
    p = write(tmp_path, "obs.csv", text)
    with pytest.raises(ObservationError) as e:
        as_observations(ssa.load(MM), p)
    assert isinstance(e.value, DataError)
    check(e.value, p, line, phrase)


def test_unobserved_species_without_a_conservation_law_are_not_identified(tmp_path):
    net = write(tmp_path, "bd.rxn", "0 -> A ; 1\nA -> 0 ; 0.1\n0 -> B ; 1\n")
    p = write(tmp_path, "obs.csv", "time,A,B\n0,1,2\n1,3,\n")
    with pytest.raises(ObservationError) as e:
        as_observations(ssa.load(net), p)
    check(e.value, p, 3, "not identified: B")


# ------------------------------------------------------------------------------------------------
# sweep YAML


@pytest.fixture
def sweep_dir(tmp_path):
    shutil.copyfile(MM, tmp_path / "mm.rxn")
    return tmp_path


GOOD = "analysis: ssa.simulate\nmodel: mm.rxn\nfixed:\n  t_end: 5\ngrid:\n  k1: [0.001, 0.002]\n"


def bomb(levels: int) -> str:
    out = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    out += [f"a{k}: &a{k} [{', '.join([f'*a{k - 1}'] * 10)}]" for k in range(1, levels)]
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("text,line,phrase", [
    (b"analysis: ssa.simulate\nmodel: mm.rxn\xff\n", 2, "not UTF-8"),
    ("analysis: ssa.simulate\nmodel: " + "x" * 5000 + "\ngrid: {k1: [1]}\n", 2, "key 'model': cannot use the path"),
    ("analysis: ssa.simulate\nmodel:\ngrid: {k1: [1]}\n", 2, "key 'model': expected a path"),
    (GOOD + "model_options: {format: bngl}\n", 7, "key 'model_options.format': unknown model format 'bngl'"),
    (GOOD + bomb(12), 12, "more than 1,000,000 values"),
    (GOOD + "x: &a [1, *a]\n", 7, "refers to a collection that contains it"),
    (GOOD.replace("[0.001, 0.002]", "[" * DEEP + "]" * DEEP), 6, "nest more than"),
    (GOOD.replace("t_end: 5", "t_end: " + "9" * 5000), 4, "too large"),
    (GOOD.replace("0.002", ".inf"), 6, "not a finite number"),
    (GOOD.replace("0.002", "1.0e+999"), 6, "not a finite number"),
    (GOOD.replace("t_end: 5", "1: 5"), 3, "argument names must be text"),
    (GOOD.replace("t_end: 5", "t_end: 5\x00"), 4, "not valid YAML"),
    (GOOD + "grid: !!python/object/apply:os.system ['echo pwned']\n", 7, "not valid YAML"),
])
def test_sweep_yaml(sweep_dir, text, line, phrase):
    p = write(sweep_dir, "s.yaml", text)
    with pytest.raises(ConfigError) as e:
        load_config(p)
    check(e.value, p, line, phrase)


def test_sweep_table_csv(sweep_dir):
    write(sweep_dir, "t.csv", "k1,S\n0.001,100\n0.002," + "9" * 5000 + "\n")
    p = write(sweep_dir, "s.yaml", GOOD.replace("grid:\n  k1: [0.001, 0.002]\n", "table: t.csv\n"))
    with pytest.raises(ConfigError) as e:
        load_config(p)
    check(e.value, sweep_dir / "t.csv", 3, "is not a number")


def test_sweep_model_error_keeps_both_locations(sweep_dir):
    write(sweep_dir, "mm.rxn", "A -> B ; k = 1\nA -> ; \n")
    p = write(sweep_dir, "s.yaml", GOOD.replace("k1", "k"))
    with pytest.raises(ConfigError) as e:
        load_config(p)
    check(e.value, p, 2, f"key 'model': {sweep_dir / 'mm.rxn'}:2:")


# ------------------------------------------------------------------------------------------------
# the error type itself and the CLI


def test_error_format_and_pickling():
    e = DataError("bad cell", file="x.csv", line=3, column=7)
    assert str(e) == "x.csv:3:7: bad cell" and isinstance(e, ValueError)
    assert str(ModelError("no file")) == "<model>: no file" and str(ConfigError("plain")) == "plain"
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is DataError and (back.file, back.line, back.column, str(back)) == ("x.csv", 3, 7, str(e))


@pytest.mark.parametrize("files,args", [
    ({"m.rxn": "A -> B ; law: " + "(" * DEEP + "A" + ")" * DEEP + "\n"},
     ["ssa", "simulate", "{d}/m.rxn", "--t-end", "1"]),
    ({"s.yaml": b"analysis: ssa.simulate\n\xff\n"}, ["sweep", "{d}/s.yaml"]),
    ({"l.csv": "target\\source,a\na,7\n", "s.csv": "node,i,t\na,1,0\n"},
     ["grn", "infer", "{d}/l.csv", "--states", "{d}/s.csv"]),
])
def test_cli_prints_one_line_and_exits_2(tmp_path, capsys, files, args):
    for name, data in files.items():
        write(tmp_path, name, data)
    assert main(["--in-process", "-q"] + [a.format(d=tmp_path) for a in args]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"distsim: error: {tmp_path}/") and err.count("\n") == 1, err
