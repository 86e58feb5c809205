"""A small mutation and grammar fuzzer for distsim's input formats (used by ``tests/unit/test_fuzz.py``
and ``benchmarks/fuzz_campaign.py``).

Each format has seed files from the repository (``examples/``, ``tests/data/``); :func:`mutate`
applies one to three random mutations (byte flips, truncation, duplicated / deleted / swapped
lines, huge and non-finite numbers, unicode, invalid UTF-8, deep nesting, injected code, very
long fields, YAML alias bombs) with a fixed seed. Two formats are written from a grammar instead
(:func:`sweep_yaml`, :func:`observations_csv`: random but mostly well-formed documents, which reach
the checks behind the parser), then mutated once in three. :class:`Runner` loads every input through the
public loader in a separate worker process, one input at a time, with a time limit: a hang or a
native crash (SIGSEGV) of the loader shows up as an outcome, not as a dead test session.

Outcomes: ``ok`` (loaded), ``clean`` (a :class:`distsim.errors.DistsimError` naming the file and a
line), ``no-line`` (a distsim error naming the file but no line), ``foreign`` (any other
exception, or a distsim error that does not name the file), ``recursion`` (RecursionError),
``hang`` (over the time limit) and ``died`` (the worker process died).
"""

from __future__ import annotations

import json
import multiprocessing as mp
import random
import re
import shutil
import tempfile
import time
import tomllib
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
EX = ROOT / "examples"
DATA = ROOT / "tests" / "data"

OUTCOMES = ("ok", "clean", "no-line", "foreign", "recursion", "hang", "died")
FAILURES = ("foreign", "recursion", "hang", "died")


# ------------------------------------------------------------------------------------------------
# formats: seed inputs (a dict of file name -> bytes; the first file is the one mutated unless the
# format lists several mutable files) and the loader that the worker calls


@dataclass(frozen=True)
class FuzzFormat:
    name: str
    seeds: tuple[dict[str, bytes], ...]
    mutable: tuple[str, ...]  # file names that may be mutated (one is picked per input)
    nesting: str  # how deep nesting is written in this format: "paren" | "bracket" | "yaml" | "xml"
    support: bool = False  # whether the input folder needs the SUPPORT files
    generate: Callable[[random.Random], dict[str, bytes]] | None = None  # a grammar: inputs made from scratch


def _read(p: Path) -> bytes:
    return p.read_bytes()


def _grn_json_seeds() -> list[bytes]:
    d = tomllib.loads((EX / "grn" / "mouse_eye.toml").read_text())
    links = {k: v for k, v in d.items() if k != "edges"}
    genes = d["genes"]
    idx = {g: i for i, g in enumerate(genes)}
    mat = [[0] * len(genes) for _ in genes]
    for s, t, sign in d["edges"]:
        mat[idx[t]][idx[s]] = sign
    links["links"] = mat
    small = {"genes": ["a", "b"], "edges": [["a", "b", 1], ["b", "a", -1]], "initial": {"a": 1, "b": 0},
             "target": [0, 1], "iterations": 3, "lambda": 0.5, "rules": ["most", "jr"]}
    return [json.dumps(d, indent=1).encode(), json.dumps(links).encode(), json.dumps(small, indent=2).encode()]


def _qual_doc(math: str, doctype: str = "") -> bytes:
    """A two-species SBML-qual document: y's function term is ``math``."""
    return f"""<?xml version="1.0" encoding="UTF-8"?>{doctype}
<sbml xmlns="http://www.sbml.org/sbml/level3/version1/core" level="3" version="1"
      xmlns:qual="http://www.sbml.org/sbml/level3/version1/qual/version1" qual:required="true">
<model id="m"><listOfCompartments><compartment id="c" constant="true"/></listOfCompartments>
<qual:listOfQualitativeSpecies>
<qual:qualitativeSpecies qual:id="x" qual:compartment="c" qual:constant="false" qual:maxLevel="1"/>
<qual:qualitativeSpecies qual:id="y" qual:compartment="c" qual:constant="false" qual:maxLevel="1"/>
</qual:listOfQualitativeSpecies>
<qual:listOfTransitions><qual:transition qual:id="t">
<qual:listOfInputs><qual:input qual:id="i" qual:qualitativeSpecies="x" qual:transitionEffect="none"
  qual:thresholdLevel="1"/></qual:listOfInputs>
<qual:listOfOutputs><qual:output qual:qualitativeSpecies="y" qual:transitionEffect="assignmentLevel"/></qual:listOfOutputs>
<qual:listOfFunctionTerms><qual:defaultTerm qual:resultLevel="0"/>
<qual:functionTerm qual:resultLevel="1"><math xmlns="http://www.w3.org/1998/Math/MathML">{math}</math></qual:functionTerm>
</qual:listOfFunctionTerms></qual:transition></qual:listOfTransitions></model></sbml>
""".encode()


_BND = b"""Node x {
  logic = (y & !z) | x;
  rate_up = @logic ? $u : 0;
  rate_down = @logic ? 0 : 1;
}
Node y { logic = !x; rate_up = @logic ? 2.0 : 0; rate_down = @logic ? 0 : 1; }
Node z { logic = x ^ y; }
"""
_CFG = b"""$u = 1.5;
x.istate = 1;
y.istate = 0.3 [1], 0.7 [0];
time_tick = 0.5;
max_time = 10;
sample_count = 100;
"""


# PEtab problems: the files read_problem reads (the SBML is fuzzed as "SBML"), under their own names;
# (system_size, rounding) of each problem by its YAML's name (default: the test suite cases' 10, "error")
PETAB = DATA / "pmmh"
PETAB_OPTIONS = {"Perelson_Science1996.yaml": (1e-3, "nearest")}


def _petab_seeds() -> list[dict[str, bytes]]:
    import yaml

    out = []
    for problem in [PETAB / f"petab_{c}" / f"_{c}.yaml" for c in ("0001", "0007", "0008", "0016")] + \
            [PETAB / "perelson_science1996" / "Perelson_Science1996.yaml"]:
        doc = yaml.safe_load(problem.read_text())
        (p,) = doc["problems"]
        names = [doc["parameter_file"]] + [n for k in ("sbml_files", "condition_files", "measurement_files",
                                                         "observable_files") for n in p[k]]
        out.append({problem.name: _read(problem)} | {n: _read(problem.parent / n) for n in names})
    return out


def formats() -> list[FuzzFormat]:
    """The formats and their seeds (files of the repository, a few written here) or grammars."""
    pbn = EX / "pbn"
    bad = DATA / "bad"

    def one(name: str, files: list[Path], fname: str, nesting: str) -> FuzzFormat:
        return FuzzFormat(name, tuple({fname: _read(p)} for p in files), (fname,), nesting)

    grn = EX / "grn"
    states = _read(grn / "mouse_eye_grn_states.csv")
    small_states = b"node,init,target\na,1,0\nb,0,1\nc,1,1\n"
    sweeps = sorted((EX / "sweeps").glob("*.yaml"))
    sweep_seeds = [{"sweeps/config.yaml": _read(p)} for p in sweeps]
    sweep_seeds.append({"sweeps/config.yaml": b"analysis: ssa.simulate\nmodel: ../ssa/michaelis_menten.rxn\n"
                        b"base: &b {t_end: 10, points: 3}\nfixed: *b\n"
                        b"table:\n  - {k1: 0.001, S: 100}\n  - {k1: 0.002, S: 300}\n"})
    return [
        one("ASSA .pbn", sorted(pbn.glob("*.pbn")) + sorted(pbn.glob("*.assa")) + sorted(bad.glob("*.pbn")),
            "model.pbn", "paren"),
        one(".bnet", [pbn / "bbm023_faure2006_mammalian_cell_cycle_10n.bnet",
                      pbn / "bbm070_grieco2013_mapk_cancer_cell_fate_53n.bnet"] + sorted(bad.glob("*.bnet")),
            "model.bnet", "paren"),
        one("BoolNet", [DATA / "shmulevich2002_boolnet.txt", bad / "boolnet_prob_sum.txt"], "model.txt", "paren"),
        one("BNMPy", sorted(pbn.glob("*.txt")) + [bad / "bnmpy_bad_prob.txt"], "model.txt", "paren"),
        one(".rxn", sorted((EX / "ssa").glob("*.rxn")) + [DATA / "reactions" / "good_features.rxn"],
            "model.rxn", "paren"),
        one("SBML", sorted((DATA / "dsmts").glob("*/*.xml")), "model.xml", "xml"),
        one("GRN TOML", [grn / "mouse_eye.toml"], "problem.toml", "bracket"),
        FuzzFormat("GRN JSON", tuple({"problem.json": b} for b in _grn_json_seeds()), ("problem.json",), "bracket"),
        FuzzFormat("GRN CSV", ({"links.csv": _read(grn / "mouse_eye_grn_links_matrix.csv"), "states.csv": states},
                               {"links.csv": _read(grn / "mouse_eye_grn_edges.csv"), "states.csv": states},
                               {"links.csv": b"source,target,sign\na,b,+\nb,c,-\nc,a,activation\n",
                                "states.csv": small_states}),
                   ("links.csv", "states.csv"), "paren"),
        FuzzFormat("MCMC observations CSV", ({"obs.csv": _read(EX / "mcmc" / "mm_observations.csv")},), ("obs.csv",),
                   "paren", support=True),
        FuzzFormat("sweep YAML", tuple(sweep_seeds), ("sweeps/config.yaml",), "yaml", support=True),
        FuzzFormat("SBML-qual", ({"model.sbml": _read(pbn / "bbm023_faure2006_mammalian_cell_cycle_10n.sbml")},
                                 {"model.sbml": _qual_doc("<apply><geq/><ci>x</ci><ci>i</ci></apply>")},
                                 {"model.sbml": _qual_doc("<apply><not/>" * 300 + "<ci>x</ci>" + "</apply>" * 300)},
                                 {"model.sbml": _qual_doc(
                                     "<piecewise><piece><cn>1</cn><apply><eq/><ci>x</ci><cn>0</cn></apply></piece>"
                                     "<otherwise><apply><divide/><cn>0</cn><cn>0</cn></apply></otherwise>"
                                     "</piecewise>")}),
                   ("model.sbml",), "xml"),
        FuzzFormat("MaBoSS", ({"model.bnd": _read(pbn / "maboss_calzone2010_cell_fate_28n.bnd"),
                               "model.cfg": _read(pbn / "maboss_calzone2010_cell_fate_28n.cfg")},
                              {"model.bnd": _BND, "model.cfg": _CFG}),
                   ("model.bnd", "model.cfg"), "paren"),
        one("antimony", sorted((DATA / "ecosystem").glob("*.ant")), "model.ant", "paren"),
        FuzzFormat("PEtab", tuple(_petab_seeds()), tuple(sorted({n for s in _petab_seeds() for n in s
                                                                 if n.endswith((".yaml", ".tsv"))})), "paren"),
        FuzzFormat("noisy CSV", ({"data.csv": _read(EX / "mcmc" / "noisy_immigration_death.csv"),
                                  "model.rxn": _read(DATA / "pmmh" / "immigration_death.rxn")},),
                   ("data.csv",), "paren"),
        FuzzFormat("sweep YAML (grammar)", (), ("sweeps/config.yaml",), "yaml", support=True, generate=sweep_yaml),
        FuzzFormat("observations CSV (grammar)", (), ("obs.csv",), "paren", support=True, generate=observations_csv),
    ]


# ------------------------------------------------------------------------------------------------
# grammars: random documents that are mostly well-formed, so that they reach the checks after parsing

_SCALARS = ["0", "1", "-1", "2.5", "1e-3", "1e300", "-1e309", ".nan", ".inf", "-.inf", "null", "true", "false", "~",
            "''", "x", "'k1'", "\"S\"", "0x1F", "1_000", "9" * 40, "2024-01-01", "[]", "{}", "é"]


def _yaml_value(rnd: random.Random, depth: int) -> str:
    r = rnd.random()
    if depth > 2 or r < 0.5:
        return rnd.choice(_SCALARS)
    if r < 0.8:
        return "[" + ", ".join(_yaml_value(rnd, depth + 1) for _ in range(rnd.randrange(0, 5))) + "]"
    return "{" + ", ".join(f"{rnd.choice(_PARAMS)}: {_yaml_value(rnd, depth + 1)}" for _ in range(rnd.randrange(0, 4))) \
        + "}"


_PARAMS = ["k1", "k2", "k3", "S", "E", "ES", "P", "t_end", "points", "realizations", "perturbation", "select.x1.0",
           "fix.x1", "fix.x9", "target", "precision", "chains", "quantiles", "steps", "trajectories", "bogus", "k1.x"]
_MODELS = ["../ssa/michaelis_menten.rxn", "../pbn/bnmpy_shmulevich2002_examplePBN_3n.txt", "missing.rxn", "/etc/passwd",
           "..", "../ssa", "", "../ssa/michaelis_menten.rxn\x00"]
_ANALYSES = ["ssa.simulate", "pbn.steady_state", "pbn.simulate", "mcmc.sample", "grn.optimize", "ssa", "", "os.system"]


def sweep_yaml(rnd: random.Random) -> dict[str, bytes]:
    """A sweep configuration from the grammar of ``distsim.sweep.config`` (keys, points, settings)."""
    lines = []
    keys = ["analysis", "model", "seed", "fixed", rnd.choice(["grid", "table", "one_at_a_time", "grid"]), "chunk_size",
            "store", "output"]
    if rnd.random() < 0.2:
        keys.append(rnd.choice(["grid", "table", "bogus", "seed", "Analysis"]))  # a second kind of points, a duplicate
    rnd.shuffle(keys)
    for key in keys:
        if rnd.random() < 0.1:
            continue
        if key == "analysis":
            lines.append(f"analysis: {rnd.choice(_ANALYSES)}")
        elif key == "model":
            lines.append(f"model: {rnd.choice(_MODELS)!r}" if rnd.random() < 0.3 else f"model: {rnd.choice(_MODELS)}")
        elif key == "fixed":
            lines.append("fixed:")
            lines += [f"  {rnd.choice(_PARAMS)}: {_yaml_value(rnd, 1)}" for _ in range(rnd.randrange(0, 5))]
        elif key == "grid":
            lines.append("grid:")
            for _ in range(rnd.randrange(0, 4)):
                vals = ", ".join(rnd.choice(_SCALARS[:8]) for _ in range(rnd.randrange(0, 5)))
                lines.append(f"  {rnd.choice(_PARAMS)}: [{vals}]")
        elif key == "table":
            lines.append("table:")
            for _ in range(rnd.randrange(0, 4)):
                row = ", ".join(f"{rnd.choice(_PARAMS)}: {rnd.choice(_SCALARS[:8])}" for _ in range(rnd.randrange(0, 3)))
                lines.append(f"  - {{{row}}}")
        elif key == "one_at_a_time":
            lines.append("one_at_a_time:")
            lines.append(f"  factors: {_yaml_value(rnd, 1)}")
            if rnd.random() < 0.5:
                lines.append(f"  {rnd.choice(['parameters', 'bogus'])}: [{rnd.choice(_PARAMS)}]")
        elif key in ("store", "output"):
            lines.append(f"{key}: {rnd.choice(['out.nc', 'out.zarr', '/dev/null', '../x.nc', 'x.txt', '', '[]'])}")
        else:
            lines.append(f"{key}: {rnd.choice(_SCALARS)}")
    return {"sweeps/config.yaml": ("\n".join(lines) + "\n").encode()}


_COLUMNS = ["E", "S", "ES", "P", "e", "X", "time", "", "S ", "\"S\""]
_CELLS = ["0", "1", "120", "301", "-1", "2.5", "", "nan", "inf", "1e300", "x", "1e3", " 7", "\"5\"", "9" * 30]


def observations_csv(rnd: random.Random) -> dict[str, bytes]:
    """A CSV of observations from its grammar: a ``time`` column, species columns, numeric rows."""
    cols = ["time"] + rnd.sample(_COLUMNS, rnd.randrange(0, 5))
    if rnd.random() < 0.1:
        rnd.shuffle(cols)
    lines = []
    if rnd.random() < 0.3:
        lines.append("# " + rnd.choice(["comment", "time,E", ""]))
    lines.append(",".join(cols))
    t = 0.0
    for _ in range(rnd.randrange(0, 12)):
        t += rnd.choice([0.0, 1.0, 10.0, -5.0, 0.5])
        cells = [repr(t) if rnd.random() < 0.9 else rnd.choice(_CELLS)]
        cells += [rnd.choice(_CELLS[:6]) if rnd.random() < 0.8 else rnd.choice(_CELLS) for _ in cols[1:]]
        if rnd.random() < 0.05:
            cells.append("1")  # a ragged row
        lines.append(",".join(cells))
    return {"obs.csv": ("\n".join(lines) + rnd.choice(["\n", "", "\r\n"])).encode()}


# files the input folders of formats with support=True get (sweep YAML seeds name models relative to their
# folder; the observations are loaded against the Michaelis-Menten model)
SUPPORT = {"ssa/michaelis_menten.rxn": EX / "ssa" / "michaelis_menten.rxn",
           "pbn/bnmpy_shmulevich2002_examplePBN_3n.txt": EX / "pbn" / "bnmpy_shmulevich2002_examplePBN_3n.txt"}


# ------------------------------------------------------------------------------------------------
# mutations

_NUMBER = re.compile(rb"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
HUGE = [b"nan", b"NaN", b"inf", b"-inf", b"Infinity", b"1e309", b"-1e309", b"1e-400", b"9" * 5000, b"-" + b"9" * 5000,
        b"-1", b"-0", b"0", b"1e18", b"18446744073709551617", b"0x10", b"1_000", b".5e", b"1e99999999999"]
UNICODE = ["é", "\u202e", "\u0000", "𝔸", "\ufeff", "\u2028", "∅", "\u00a0", "ß", "中文", "\U0001f600", "\x1b[31m"]
INVALID_UTF8 = [b"\xff", b"\xfe\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf0\x28\x8c\x28", b"\x80", b"\xe2\x82"]
INJECT = [b"__import__('os').system('touch /tmp/distsim_pwned')", b"${HOME}", b"$(id)", b"`id`", b"{{7*7}}",
          b"!!python/object/apply:os.system ['touch /tmp/distsim_pwned']", b"eval(compile('1','x','eval'))",
          b"<!ENTITY x SYSTEM 'file:///etc/passwd'>", b"&x;", b"%s%s%s%n", b"'; DROP TABLE x; --", b"\\x00"]


def _deep(kind: str, rnd: random.Random) -> bytes:
    n = rnd.choice([50, 200, 1000, 5000, 30000])
    if kind == "bracket":
        return b"[" * n + b"1" + b"]" * n
    if kind == "yaml":
        return rnd.choice([b"[" * n + b"1" + b"]" * n, b"{a: " * n + b"1" + b"}" * n, b"- " * min(n, 2000) + b"x"])
    if kind == "xml":
        return b"<apply><minus/>" * min(n, 3000) + b"<ci>x</ci>" + b"</apply>" * min(n, 3000)
    return rnd.choice([b"(" * n + b"x" + b")" * n, b"!" * n + b"x", b"-" * n + b"1", b"maj(" * n + b"x" + b")" * n,
                       b"2^" * n + b"2", b"a & " * n + b"b"])


def _alias_bomb(rnd: random.Random) -> bytes:
    lines = [b"a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for k in range(1, rnd.choice([6, 9, 12])):
        refs = b", ".join([b"*a%d" % (k - 1)] * 10)
        lines.append(b"a%d: &a%d [%s]" % (k, k, refs))
    return b"\n".join(lines) + b"\n"


MAX_BYTES = 2_000_000  # inputs are cut here (a long line repeated 2,000 times would be 400 MB)


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


def mutate(data: bytes, rnd: random.Random, nesting: str, others: list[bytes]) -> bytes:
    """One to three random mutations of ``data`` (``others``: seed files to splice from)."""
    for _ in range(rnd.choice([1, 1, 2, 3])):
        data = _mutate_once(data, rnd, nesting, others)[:MAX_BYTES]
    return data


def _mutate_once(data: bytes, rnd: random.Random, nesting: str, others: list[bytes]) -> bytes:
    op = rnd.randrange(14)
    pos = rnd.randrange(len(data) + 1)
    if op == 0:  # byte flips
        b = bytearray(data)
        for _ in range(rnd.choice([1, 2, 8])):
            if b:
                b[rnd.randrange(len(b))] = rnd.randrange(256)
        return bytes(b)
    if op == 1:  # truncation
        return data[:pos]
    lines = _lines(data)
    k = rnd.randrange(len(lines))
    if op == 2:  # duplicated line(s)
        return b"\n".join(lines[:k] + [lines[k]] * rnd.choice([2, 3, 50, 2000]) + lines[k + 1:])
    if op == 3:  # deleted lines
        j = min(len(lines), k + rnd.choice([1, 1, 3, 10]))
        return b"\n".join(lines[:k] + lines[j:])
    if op == 4:  # swapped lines
        j = rnd.randrange(len(lines))
        lines[k], lines[j] = lines[j], lines[k]
        return b"\n".join(lines)
    if op == 5:  # a number replaced by a huge, tiny, negative or non-finite one
        nums = list(_NUMBER.finditer(data))
        if nums:
            m = rnd.choice(nums)
            return data[:m.start()] + rnd.choice(HUGE) + data[m.end():]
        return data[:pos] + rnd.choice(HUGE) + data[pos:]
    if op == 6:  # unicode
        return data[:pos] + rnd.choice(UNICODE).encode() + data[pos:]
    if op == 7:  # invalid UTF-8
        return data[:pos] + rnd.choice(INVALID_UTF8) + data[pos:]
    if op == 8:  # deep nesting, at a random place or in place of a token
        deep = _deep(nesting, rnd)
        words = list(re.finditer(rb"[A-Za-z_][A-Za-z0-9_]*|\d+", data))
        if words and rnd.random() < 0.7:
            m = rnd.choice(words)
            return data[:m.start()] + deep + data[m.end():]
        return data[:pos] + deep + data[pos:]
    if op == 9:  # injected code
        return data[:pos] + rnd.choice(INJECT) + data[pos:]
    if op == 10:  # a very long field (beyond csv's default field limit) or line
        fill = rnd.choice([b"\"" + b"a" * 200_000, b"x" * 200_000, b"," * 100_000, b"1" * 100_000, b" " * 100_000])
        return data[:pos] + fill + data[pos:]
    if op == 11:  # splice a piece of another seed (any format)
        other = rnd.choice(others) if others else data
        a = rnd.randrange(len(other) + 1)
        return data[:pos] + other[a:a + rnd.randrange(1, 400)] + data[pos:]
    if op == 12 and nesting == "yaml" and rnd.random() < 0.5:  # an alias bomb as valid top-level keys
        return data.rstrip(b"\n") + b"\n" + _alias_bomb(rnd)
    if op == 12:  # YAML alias bomb, duplicated key, or other structural junk
        junk = rnd.choice([_alias_bomb(rnd), b"\n&a x: *a\n", b"\n? [a, b]\n: c\n", b"\n!!binary AAAA\n", b"\x00",
                           b"\r", b"\t", b"\n---\n", b"\"", b"'", b"#", b"//", b"\\"])
        return data[:pos] + junk + data[pos:]
    # op 13: a random line replaced by a line of another seed
    other_lines = _lines(rnd.choice(others)) if others else lines
    lines[k] = rnd.choice(other_lines)
    return b"\n".join(lines)


def cases(fmt: FuzzFormat, n: int, seed: int, others: list[bytes]) -> list[tuple[str, dict[str, bytes]]]:
    """``n`` mutated inputs of ``fmt``: (label, files); ``label`` reproduces the input: format/seed/index."""
    out = []
    for i in range(n):
        rnd = random.Random(f"{fmt.name}/{seed}/{i}")
        if fmt.generate is not None:
            files = fmt.generate(rnd)
            if rnd.random() < 1 / 3:
                target = rnd.choice(fmt.mutable)
                files[target] = _mutate_once(files[target], rnd, fmt.nesting, others)[:MAX_BYTES]
        else:
            files = dict(rnd.choice(fmt.seeds))
            target = rnd.choice([m for m in fmt.mutable if m in files])  # seeds may name their files differently
            files[target] = mutate(files[target], rnd, fmt.nesting, others)
        out.append((f"{fmt.name}/{seed}/{i}", files))
    return out


def all_seed_bytes(fmts: list[FuzzFormat]) -> list[bytes]:
    return [b for f in fmts for s in f.seeds for b in s.values()]


# ------------------------------------------------------------------------------------------------
# the worker: loads one input at a time and reports how it went


def _load(fmt: str, d: Path) -> object:
    if fmt == "selftest: crash":  # the harness's own checks: a native crash and a hang
        import os
        import signal

        os.kill(os.getpid(), signal.SIGSEGV)
    if fmt == "selftest: hang":
        time.sleep(3600)
    if fmt in ("ASSA .pbn", ".bnet", "BoolNet", "BNMPy", "SBML-qual"):
        import distsim.pbn as pbn

        return pbn.load(next(p for p in d.iterdir() if p.is_file() and p.name.startswith("model")))
    if fmt == "MaBoSS":
        import distsim.pbn as pbn

        return pbn.load(d / "model.bnd")
    if fmt in (".rxn", "SBML", "antimony"):
        import distsim.ssa as ssa

        return ssa.load(next(p for p in d.iterdir() if p.is_file() and p.name.startswith("model")))
    if fmt in ("GRN TOML", "GRN JSON"):
        from distsim.grn.problem import load

        return load(d / ("problem.toml" if fmt == "GRN TOML" else "problem.json"))
    if fmt == "GRN CSV":
        from distsim.grn.problem import load

        return load(d / "links.csv", states=d / "states.csv")
    if fmt in ("MCMC observations CSV", "observations CSV (grammar)"):
        import distsim.ssa as ssa
        from distsim.mcmc import as_observations

        return as_observations(ssa.load(d / "ssa" / "michaelis_menten.rxn"), d / "obs.csv")
    if fmt == "PEtab":  # read_problem and the problem `distsim mcmc petab` builds before the chains start
        from distsim.pmmh.petab import read_problem
        from distsim.pmmh.sampler import build_problem

        (problem,) = [p for p in d.iterdir() if p.suffix == ".yaml"]
        size, rounding = PETAB_OPTIONS.get(problem.name, (10.0, "error"))
        p = read_problem(problem, system_size=size, rounding=rounding)
        return build_problem(p["net"], p["observables"], p["experiments"], p["prior"], p["initial"],
                             species_scale=size)
    if fmt == "noisy CSV":  # `distsim mcmc noisy model.rxn --data data.csv --observable y=X --noise poisson
        import distsim.ssa as ssa  # (--prior k1=gamma:2,1)` up to the chains' start
        from distsim.pmmh.csvdata import read_noisy
        from distsim.pmmh.sampler import build_problem

        net, prior = ssa.load(d / "model.rxn"), {"k1": "gamma:2,1"}
        p = read_noisy(net, d / "data.csv", noise={None: "poisson"}, observables={"y": "X"}, prior=prior)
        return build_problem(net, p["observables"], p["experiments"], prior, p["initial"])
    if fmt in ("sweep YAML", "sweep YAML (grammar)"):
        from distsim.sweep.config import load_config

        return load_config(d / "sweeps" / "config.yaml")
    raise KeyError(fmt)


def classify(fmt: str, d: Path) -> tuple[str, str]:
    """Load the input in folder ``d``; return (outcome, detail)."""
    from distsim.errors import DistsimError

    try:
        _load(fmt, d)
    except DistsimError as e:
        msg = str(e)
        if str(d) not in msg:
            return "foreign", f"{type(e).__name__} not naming the file: {msg[:300]}"
        return ("clean" if e.line is not None else "no-line"), msg[:300]
    except RecursionError:
        return "recursion", _last_frame()
    except Exception as e:  # noqa: BLE001 (that is the point: any other exception is a finding)
        return "foreign", f"{type(e).__name__}: {str(e)[:200]} at {_last_frame()}"
    return "ok", ""


def _last_frame() -> str:
    import sys

    tb = traceback.extract_tb(sys.exc_info()[2])
    mine = [f for f in tb if "distsim" in f.filename and "tests" not in f.filename] or tb
    f = mine[-1]
    return f"{Path(f.filename).name}:{f.lineno} ({f.name})"


WARM = ("distsim.grn.problem", "distsim.mcmc", "distsim.pbn", "distsim.pmmh", "distsim.ssa",
        "distsim.sweep.config")


def _worker(conn, warm: tuple[str, ...]) -> None:
    import importlib
    import os
    import sys

    sys.path.insert(0, str(ROOT))  # the checkout these tests belong to, not another installed copy
    os.chdir(tempfile.gettempdir())
    for module in warm:  # imported before the first timed input
        importlib.import_module(module)
    conn.send("ready")
    while True:
        job = conn.recv()
        if job is None:
            return
        fmt, d = job
        conn.send(classify(fmt, Path(d)))


class Runner:
    """Loads inputs in a spawned worker process, one at a time, restarting it after a hang or a crash."""

    def __init__(self, timeout: float = 10.0, warm: tuple[str, ...] = WARM):
        self.timeout = timeout
        self.warm = warm
        self.ctx = mp.get_context("spawn")
        self.proc = None
        self.conn = None
        self.tmp = Path(tempfile.mkdtemp(prefix="distsim-fuzz-"))
        self.count = 0

    def _start(self) -> None:
        self.conn, child = self.ctx.Pipe()
        self.proc = self.ctx.Process(target=_worker, args=(child, self.warm), daemon=True)
        self.proc.start()
        child.close()
        if not self.conn.poll(120) or self.conn.recv() != "ready":
            raise RuntimeError("the fuzz worker did not start")

    def _stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.join()
            self.proc = None

    def run(self, fmt: str, files: dict[str, bytes], timeout: float | None = None,
            support: bool = False) -> tuple[str, str, float]:
        """(outcome, detail, seconds) of loading ``files`` as ``fmt`` (``timeout``: this input's limit;
        ``support``: add the SUPPORT files to the input's folder)."""
        timeout = self.timeout if timeout is None else timeout
        if self.proc is None or not self.proc.is_alive():
            self._start()
        self.count += 1
        d = self.tmp / f"case{self.count}"
        d.mkdir()
        for name, src in SUPPORT.items() if support else ():
            (d / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, d / name)
        for name, data in files.items():
            (d / name).parent.mkdir(parents=True, exist_ok=True)
            (d / name).write_bytes(data)
        t0 = time.perf_counter()
        self.conn.send((fmt, str(d)))
        try:
            if not self.conn.poll(timeout):
                self._stop()
                result = ("hang", f"no answer within {timeout:g} s")
            else:
                result = self.conn.recv()
        except (EOFError, ConnectionError):
            self.proc.join()
            code = self.proc.exitcode
            self.proc = None
            result = ("died", f"worker exit code {code}")
        shutil.rmtree(d, ignore_errors=True)
        return result[0], result[1], time.perf_counter() - t0

    def close(self) -> None:
        if self.proc is not None and self.proc.is_alive():
            try:
                self.conn.send(None)
                self.proc.join(5)
            except (OSError, BrokenPipeError):
                pass
        self._stop()
        shutil.rmtree(self.tmp, ignore_errors=True)
