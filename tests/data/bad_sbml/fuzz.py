"""Mutation fuzzer for the SBML reader (issue 19); the reproducers in this folder came from it.

    python tests/data/bad_sbml/fuzz.py [--n 1000] [--seed 1] [--out /tmp/sbml_fuzz] [--timeout 10]

Mutates the SBML files of tests/data/dsmts and tests/data/ecosystem (byte flips, truncation,
duplicated/deleted/swapped lines, deep nesting of <apply>, recursive or exploding function
definitions, huge/non-finite/negative numbers, invalid UTF-8, DOCTYPEs with entities, events and
rules in odd shapes) and loads each mutant with ``distsim.ssa.load`` in a worker subprocess. A
worker that dies (signal) is a *crash*; one that takes longer than ``--timeout`` seconds is a
*hang*; any exception other than distsim's ModelError (and the documented FileNotFoundError) is a
*foreign* error, RecursionError counted apart. Failing mutants are saved under ``--out``. Prints a
table of outcomes; exits 1 if anything but "ok" and "clean error" occurred. Not run by the tests
(``tests/unit/test_bad_sbml.py`` loads the minimised reproducers).
"""

from __future__ import annotations

import argparse
import os
import random
import re
import select
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SEEDS = (sorted((ROOT / "tests" / "data" / "dsmts").glob("*/*.xml"))
         + sorted((ROOT / "tests" / "data" / "ecosystem").glob("*.xml")))

WORKER = r"""
import sys, warnings
warnings.simplefilter("ignore")
sys.setrecursionlimit(1000)
from distsim.errors import ModelError
from distsim.ssa import load
for line in sys.stdin:
    path = line.rstrip("\n")
    try:
        load(path)
        out = "ok"
    except ModelError as e:
        out = "clean error" if e.file == path else "error without file"
    except RecursionError:
        out = "RecursionError"
    except Exception as e:
        out = "foreign " + type(e).__name__ + ": " + str(e).replace("\n", " ")[:150]
    sys.stdout.write(out + "\n")
    sys.stdout.flush()
"""


# ---- mutations ---------------------------------------------------------------------------------------

def _lines(b: bytes) -> list[bytes]:
    return b.split(b"\n")


def flip(rng: random.Random, b: bytes) -> bytes:
    a = bytearray(b)
    for _ in range(rng.randint(1, 8)):
        a[rng.randrange(len(a))] = rng.randrange(256)
    return bytes(a)


def truncate(rng: random.Random, b: bytes) -> bytes:
    return b[:rng.randrange(len(b))]


def dup_line(rng: random.Random, b: bytes) -> bytes:
    ls = _lines(b)
    k = rng.randrange(len(ls))
    ls.insert(k, ls[k])
    return b"\n".join(ls)


def del_line(rng: random.Random, b: bytes) -> bytes:
    ls = _lines(b)
    del ls[rng.randrange(len(ls))]
    return b"\n".join(ls)


def swap_lines(rng: random.Random, b: bytes) -> bytes:
    ls = _lines(b)
    i, j = rng.randrange(len(ls)), rng.randrange(len(ls))
    ls[i], ls[j] = ls[j], ls[i]
    return b"\n".join(ls)


def deep_apply(rng: random.Random, b: bytes) -> bytes:
    n = rng.choice([300, 999, 2000, 20000, 200000])
    op = rng.choice([b"<plus/>", b"<minus/>", b"<times/>", b"<exp/>", b"<abs/>"])
    head = b"<apply>" + op + (b"" if op in (b"<exp/>", b"<abs/>") else b"<cn> 1 </cn>")
    deep = head * n + b"<cn> 1 </cn>" + b"</apply>" * n
    m = re.search(rb"<ci>\s*\w+\s*</ci>", b)
    if not m:
        return b + deep
    return b[:m.start()] + deep + b[m.end():]


def long_sum(rng: random.Random, b: bytes) -> bytes:
    n = rng.choice([300, 5000, 100000])
    m = re.search(rb"<ci>\s*(\w+)\s*</ci>", b)
    if not m:
        return b
    return b[:m.start()] + b"<apply><plus/>" + m.group(0) * n + b"</apply>" + b[m.end():]


def numbers(rng: random.Random, b: bytes) -> bytes:
    bad = rng.choice([b"1e400", b"-1e400", b"NaN", b"INF", b"-INF", b"9" * 5000, b"-3", b"0", b"1e-400",
                      b"2.5", b"0x10", b"", b"1e308", b"4294967297"])
    hits = list(re.finditer(rb'(value|size|initialAmount|initialConcentration|stoichiometry)="[^"]*"|'
                            rb"<cn[^>]*>\s*[^<]*\s*</cn>", b))
    if not hits:
        return b
    m = rng.choice(hits)
    if m.group(0).startswith(b"<cn"):
        rep = b"<cn> " + bad + b" </cn>"
    else:
        rep = m.group(1) + b'="' + bad + b'"'
    return b[:m.start()] + rep + b[m.end():]


def bad_utf8(rng: random.Random, b: bytes) -> bytes:
    k = rng.randrange(len(b))
    return b[:k] + rng.choice([b"\xff\xfe", b"\xc3", b"\xed\xa0\x80", b"\x00", "\u202e\u00e9".encode()]) + b[k:]


def doctype(rng: random.Random, b: bytes) -> bytes:
    ents = b'<!DOCTYPE sbml [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">' \
           b'<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;"><!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">]>'
    k = b.find(b"<sbml")
    body = b[:k] + ents + b[k:]
    return body.replace(b'name="', b'name="&d;', 1)


FUNCS = [
    # recursive function definition
    b'<listOfFunctionDefinitions><functionDefinition id="f"><math xmlns="http://www.w3.org/1998/Math/MathML">'
    b'<lambda><bvar><ci>x</ci></bvar><apply><ci>f</ci><ci>x</ci></apply></lambda></math></functionDefinition>'
    b'</listOfFunctionDefinitions>',
    # exponential blow-up: f1(x) = f0(x) + f0(x), ... f40
    b'<listOfFunctionDefinitions>' + b"".join(
        b'<functionDefinition id="f%d"><math xmlns="http://www.w3.org/1998/Math/MathML"><lambda><bvar><ci>x</ci>'
        b'</bvar>%s</lambda></math></functionDefinition>' % (
            k, b"<apply><plus/><apply><ci>f%d</ci><ci>x</ci></apply><apply><ci>f%d</ci><ci>x</ci></apply></apply>"
            % (k - 1, k - 1) if k else b"<ci>x</ci>") for k in range(41)) + b"</listOfFunctionDefinitions>",
    # lambda without body / without arguments
    b'<listOfFunctionDefinitions><functionDefinition id="g"><math xmlns="http://www.w3.org/1998/Math/MathML">'
    b'<lambda/></math></functionDefinition></listOfFunctionDefinitions>',
    b'<listOfFunctionDefinitions><functionDefinition id="g"/></listOfFunctionDefinitions>',
]

EXTRAS = [
    b'<listOfEvents><event id="e"><trigger initialValue="true" persistent="true"><math xmlns="http://www.w3.org/1998/'
    b'Math/MathML"><apply><gt/><csymbol encoding="text" definitionURL="http://www.sbml.org/sbml/symbols/time"> t '
    b'</csymbol><cn>1</cn></apply></math></trigger><listOfEventAssignments><eventAssignment variable="NOPE"><math '
    b'xmlns="http://www.w3.org/1998/Math/MathML"><cn>1</cn></math></eventAssignment></listOfEventAssignments>'
    b'</event></listOfEvents>',
    b'<listOfEvents><event id="e"><trigger initialValue="true" persistent="true"/></event></listOfEvents>',
    b'<listOfEvents><event/></listOfEvents>',
    b'<listOfRules><assignmentRule variable="q"><math xmlns="http://www.w3.org/1998/Math/MathML"><ci>q</ci></math>'
    b'</assignmentRule></listOfRules>',
    b'<listOfRules><assignmentRule/><algebraicRule/></listOfRules>',
    b'<listOfInitialAssignments><initialAssignment symbol="X"/></listOfInitialAssignments>',
    b'<listOfConstraints><constraint><math xmlns="http://www.w3.org/1998/Math/MathML"><true/></math></constraint>'
    b'</listOfConstraints>',
]


def insert_block(rng: random.Random, b: bytes) -> bytes:
    block = rng.choice(FUNCS + EXTRAS)
    if block in FUNCS:
        b = re.sub(rb"<ci>\s*\w+\s*</ci>", rng.choice([b"<apply><ci>f</ci><cn>1</cn></apply>",
                                                        b"<apply><ci>f40</ci><cn>1</cn></apply>",
                                                        b"<apply><ci>g</ci></apply>"]), b, count=1)
    k = b.find(b"<listOf")
    return b[:k] + block + b[k:] if k >= 0 else b + block


def drop_attr(rng: random.Random, b: bytes) -> bytes:
    hits = list(re.finditer(rb'\s[A-Za-z]+="[^"]*"', b))
    if not hits:
        return b
    m = rng.choice(hits)
    return b[:m.start()] + b[m.end():]


def dup_element(rng: random.Random, b: bytes) -> bytes:
    hits = list(re.finditer(rb"<(reaction|species|parameter|compartment|speciesReference|apply)\b.*?</\1>|"
                            rb"<(species|parameter|compartment|speciesReference)\b[^>]*/>", b, re.S))
    if not hits:
        return b
    m = rng.choice(hits)
    return b[:m.end()] + m.group(0) + b[m.end():]


def strip_tags(rng: random.Random, b: bytes) -> bytes:
    hits = list(re.finditer(rb"</[A-Za-z]+>", b))
    if not hits:
        return b
    m = rng.choice(hits)
    return b[:m.start()] + b[m.end():]


def wrong_ns(rng: random.Random, b: bytes) -> bytes:
    return rng.choice([b.replace(b'level="3"', b'level="9"', 1), b.replace(b'version="1"', b'version="7"', 1),
                       b.replace(b"level3/version1/core", b"level3/version1/comp", 1),
                       b.replace(b"<sbml ", b'<sbml xmlns:fbc="http://www.sbml.org/sbml/level3/version1/fbc/'
                                           b'version2" fbc:required="false" ', 1),
                       b.replace(b"<math", b"<math:math", 1), b.replace(b"<model", b"<modelx", 1)])


MUTATIONS = [flip, truncate, dup_line, del_line, swap_lines, deep_apply, long_sum, numbers, bad_utf8, doctype,
             insert_block, drop_attr, dup_element, strip_tags, wrong_ns]


def mutate(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    names = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        f = rng.choice(MUTATIONS)
        data = f(rng, data) or data
        names.append(f.__name__)
    return data, "+".join(names)


# ---- running -----------------------------------------------------------------------------------------

class Worker:
    def __init__(self) -> None:
        env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        self.p = subprocess.Popen([sys.executable, "-c", WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, env=env, text=True, bufsize=1)

    def run(self, path: str, timeout: float) -> str:
        self.p.stdin.write(path + "\n")
        self.p.stdin.flush()
        ready, _, _ = select.select([self.p.stdout], [], [], timeout)
        if not ready:
            self.p.kill()
            self.p.wait()
            return "hang"
        line = self.p.stdout.readline()
        if not line:
            rc = self.p.wait()
            return f"crash (signal {-rc})" if rc < 0 else f"crash (exit {rc})"
        return line.rstrip("\n")

    def alive(self) -> bool:
        return self.p.poll() is None

    def close(self) -> None:
        if self.alive():
            self.p.stdin.close()
            self.p.wait()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default="/tmp/sbml_fuzz")
    ap.add_argument("--timeout", type=float, default=10.0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    seeds = [(p, p.read_bytes()) for p in SEEDS]
    worker = Worker()
    # warm-up (imports) outside the timed runs
    worker.run(str(seeds[0][0]), 120.0)
    tally: Counter = Counter()
    by_mutation: Counter = Counter()
    t0 = time.time()
    for k in range(args.n):
        src, data = rng.choice(seeds)
        data, how = mutate(rng, data)
        path = out / f"m{k:05d}.xml"
        path.write_bytes(data)
        res = worker.run(str(path), args.timeout)
        kind = res.split(":")[0] if res.startswith("foreign") else res
        tally[kind] += 1
        if res in ("ok", "clean error"):
            path.unlink()
        else:
            by_mutation[(kind, how)] += 1
            (out / f"m{k:05d}.txt").write_text(f"{src.name}\n{how}\n{res}\n")
            print(f"{path}: {res} ({src.name}; {how})", flush=True)
        if not worker.alive():
            worker = Worker()
            worker.run(str(seeds[0][0]), 120.0)
    worker.close()
    print(f"\n{args.n} mutants in {time.time() - t0:.0f} s (seed {args.seed}):")
    for kind, n in tally.most_common():
        print(f"  {kind:24s} {n}")
    return 0 if set(tally) <= {"ok", "clean error"} else 1


if __name__ == "__main__":
    sys.exit(main())
