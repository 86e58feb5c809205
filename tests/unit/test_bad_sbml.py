"""Hostile SBML never crashes, hangs or leaks a foreign exception (issue 19).

* The minimised reproducers of tests/data/bad_sbml (SIGSEGVs in libsbml, RecursionError, a 2^40
  inlining blow-up, entities, an unknown encoding) each give a clean ModelError naming the file,
  loaded in a subprocess so that a crash would show as a signal, within a time limit.
* A small fixed-seed run of the mutation fuzzer (tests/data/bad_sbml/fuzz.py) gives only loads and
  clean errors.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BAD = ROOT / "tests" / "data" / "bad_sbml"
EXPECTED = {
    "deep_apply_20000.xml.gz": "nest more than 1000 deep",
    "deep_apply_600.xml": "nests more than 256 deep",
    "long_sum_3000.xml.gz": "nests more than 256 deep",
    "exploding_functions.xml": "more than 100000 nodes",
    "doctype_entities.xml": "DOCTYPE",
    "unknown_encoding.xml": "unknown encoding",
    "wide_sum_200000.xml.gz": "more than 50000 elements",
}
LOAD = """
import json, sys, warnings
warnings.simplefilter("ignore")
from distsim.errors import ModelError
from distsim.ssa import load
out = []
for path in sys.argv[1:]:
    try:
        load(path)
        out.append(["ok", ""])
    except ModelError as e:
        out.append(["ModelError", str(e)])
    except BaseException as e:
        out.append([type(e).__name__, str(e)[:300]])
print(json.dumps(out))
"""


def _run(paths: list[Path], timeout: float) -> list[list[str]]:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, "-c", LOAD, *map(str, paths)], capture_output=True, text=True,
                       timeout=timeout, env=env)
    assert p.returncode == 0, f"loader process died (returncode {p.returncode}): {p.stderr[-2000:]}"
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_reproducers_give_clean_errors(tmp_path):
    paths = []
    for name in sorted(EXPECTED):
        src = BAD / name
        if name.endswith(".gz"):
            dst = tmp_path / name[:-3]
            dst.write_bytes(gzip.decompress(src.read_bytes()))
            paths.append(dst)
        else:
            paths.append(src)
    results = _run(paths, timeout=120)
    for name, path, (kind, msg) in zip(sorted(EXPECTED), paths, results):
        assert kind == "ModelError", f"{name}: {kind}: {msg}"
        assert msg.startswith(str(path)), f"{name}: the error does not name the file: {msg}"
        assert EXPECTED[name] in msg, f"{name}: {msg}"


def test_small_fuzz_campaign(tmp_path):
    """150 mutants (fixed seed) of the DSMTS and ecosystem files: only loads and clean errors."""
    spec = importlib.util.spec_from_file_location("sbml_fuzz", BAD / "fuzz.py")
    fuzz = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fuzz)
    import random

    rng = random.Random(20261123)
    seeds = [p.read_bytes() for p in fuzz.SEEDS]
    paths = []
    for k in range(150):
        data, _ = fuzz.mutate(rng, rng.choice(seeds))
        paths.append(tmp_path / f"m{k:03d}.xml")
        paths[-1].write_bytes(data)
    results = _run(paths, timeout=300)
    bad = [(p.name, kind, msg) for p, (kind, msg) in zip(paths, results)
           if kind not in ("ok", "ModelError") or (kind == "ModelError" and not msg.startswith(str(p)))]
    assert not bad, bad
    assert sum(kind == "ModelError" for kind, _ in results) > 50  # the mutants do hit the checks


def test_duplicate_species_names_its_line(tmp_path):
    """Found by the campaign of 2026-11-26 (SBML/27/295): a duplicated <species> element was reported
    without a line."""
    from distsim.errors import ModelError
    from distsim.ssa import load

    src = (Path(__file__).resolve().parents[1] / "data" / "dsmts" / "00001" / "00001-sbml-l3v1.xml").read_text()
    line = next(ln for ln in src.splitlines() if "<species " in ln)
    bad = tmp_path / "dup.xml"
    bad.write_text(src.replace(line, line + "\n" + line, 1))
    with pytest.raises(ModelError, match="duplicate species id 'X'") as e:
        load(bad)
    assert e.value.line == src.splitlines().index(line) + 2
