"""Curated BioModels against peer stochastic simulators (issue 30): moments within Monte Carlo error.

    python3 benchmarks/biomodels_peers.py refs [--only BIOMDnnn] [--peer roadrunner|copasi]
    python3 benchmarks/biomodels_peers.py table [--out benchmarks/raw/biomodels_peers_DATE.md]

``refs`` runs the peer (libRoadRunner's ``gillespie`` integrator, one ``simulate`` per realization
with seed ``SEED + r``; COPASI's ``directMethod`` (Gillespie's direct method; its
``stochastic`` Gibson-Bruck method refuses events) through basico, ``use_numbers=True``)
and writes its moments at the grid times to ``tests/data/biomodels/peers/<model>_<peer>.json``
(mean, variance, 4th central moment, realizations, versions, the command), which
``tests/unit/test_biomodels_peers.py`` compares with distsim without needing the peer. ``table``
runs distsim on every case and prints model, features, species, distsim mean +- se, peer mean +- se
and z (two-sample z on means; Bonferroni over all rows at alpha = 1e-3).

Omega: distsim reads ``system_size`` molecules per substance unit. COPASI gets the same count by
setting the model's Avogadro number to ``system_size / (mol per quantity unit)``, so its particle
numbers are amounts x Omega. libRoadRunner's Gillespie counts SBML amounts directly, so it is used
only for models whose units already give Omega = 1.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
BM = ROOT / "tests" / "data" / "biomodels"
PEERS = BM / "peers"
SEED = 20261127
ALPHA = 1e-3

# model, peer, system_size (None: from units), grid (t_end, points), species, realizations (peer, distsim)
CASES: list[dict] = [
    dict(model="BIOMD0000000012", peer="roadrunner", system_size=None, t_end=60.0, points=4,
         species=["PX", "PY", "X"], r_peer=2000, r_distsim=400),
    dict(model="BIOMD0000000284", peer="roadrunner", system_size=None, t_end=10.0, points=3,
         species=["A", "B", "C", "D"], r_peer=4000, r_distsim=4000),
    dict(model="BIOMD0000000159", peer="roadrunner", system_size=None, t_end=10.0, points=3,
         species=["x", "y", "y0"], r_peer=4000, r_distsim=4000),
    dict(model="BIOMD0000000267", peer="roadrunner", system_size=None, t_end=10.0, points=3,
         species=["free", "bound", "translocate"], r_peer=4000, r_distsim=4000),
    dict(model="BIOMD0000000101", peer="copasi", system_size=None, t_end=10.0, points=3,
         species=["RI", "RII", "lRIRII_endo", "RI_endo"], r_peer=1000, r_distsim=4000),
    dict(model="BIOMD0000000148", peer="roadrunner", system_size=None, t_end=10.0, points=3,
         species=["x1", "x2", "z"], r_peer=4000, r_distsim=4000),
    dict(model="BIOMD0000000012", peer="copasi", system_size=None, t_end=60.0, points=4,
         species=["PX", "PY", "X"], r_peer=500, r_distsim=400),
    dict(model="BIOMD0000000321", peer="copasi", system_size=10.0, t_end=2.0, points=3,
         species=["A_dopa", "C_dopa", "C_OMD"], r_peer=2000, r_distsim=4000),
    dict(model="BIOMD0000000104", peer="copasi", system_size=1000.0, t_end=2.0, points=5,
         species=["species_0", "species_1", "species_2"], r_peer=2000, r_distsim=4000),
    dict(model="BIOMD0000000507", peer="copasi", system_size=1.0, t_end=10.0, points=3,
         species=["species_1", "species_2"], r_peer=2000, r_distsim=4000),
]


NOTES = """Known differences (tests/unit/test_biomodels_peers.py):

* BIOMD321 (COPASI): **a distsim wrong answer.** The irreversible law `ka_b*A_dopa*(1-F_b)` is split
  by sign (`model_net_rate_split`) into `ka_b*A_dopa` and a spurious A_dopa-producing channel
  `ka_b*A_dopa*F_b`, though F_b = 0.209 (assignment rules) keeps the law positive: means agree, the
  variance of A_dopa is inflated (exact: Binomial(1010, exp(-ka_b t)), variance 107.6 at t = 1).
* BIOMD148, species z (libRoadRunner): **a peer error.** Its gillespie sets flag_resorption = 1 at the
  first firing although the trigger `x1 > x1_bar` (initialValue = true) is true from t = 0; distsim's
  mean of z follows the ODE (100.64 at t = 5), libRoadRunner's falls (98.27).
* Net-rate laws (BIOMD148, 284) against libRoadRunner: distsim fires forward and backward channels,
  libRoadRunner the net rate; the means agree, the variances are of different processes (not tested).
* BIOMD12: heavy tails (kurtosis up to 480: PY, X); the test compares a variance only where the kurtosis is
  at most n/20.
"""


def case_key(c: dict) -> str:
    return f"{c['model']}_{c['peer']}"


def grid(c: dict) -> np.ndarray:
    return np.linspace(0.0, c["t_end"], c["points"])


def features(path: Path) -> str:
    """What the model uses, read with libsbml (initial assignments, events, rate rules, time in laws)."""
    import libsbml

    m = libsbml.readSBMLFromFile(str(path)).getModel()
    out = []
    if m.getNumInitialAssignments():
        out.append(f"{m.getNumInitialAssignments()} initial assignments")
    if m.getNumEvents():
        out.append(f"{m.getNumEvents()} events")
    rate = [r.getVariable() for r in m.getListOfRules() if r.isRate()]
    if rate:
        out.append(f"rate rules ({', '.join(rate)})")
    assign = sum(1 for r in m.getListOfRules() if r.isAssignment())
    if assign:
        out.append(f"{assign} assignment rules")
    timed = sum(1 for r in m.getListOfReactions() if r.getKineticLaw() is not None
                and "symbols/time" in libsbml.writeMathMLToString(r.getKineticLaw().getMath()))
    if timed:
        out.append(f"time in {timed} laws")
    return ", ".join(out) or "mass action / plain laws"


def moments(x: np.ndarray) -> dict:
    """x: (realizations, times, species) -> mean, variance (ddof 1), 4th central moment, lists."""
    mean = x.mean(axis=0)
    var = x.var(axis=0, ddof=1)
    m4 = ((x - mean) ** 4).mean(axis=0)
    return {"mean": mean.tolist(), "variance": var.tolist(), "m4": m4.tolist()}


def run_roadrunner(c: dict) -> tuple[np.ndarray, str]:
    import roadrunner

    rr = roadrunner.RoadRunner(str(BM / f"{c['model']}.xml"))
    rr.setIntegrator("gillespie")
    it = rr.getIntegrator()
    it.variable_step_size = False
    out = np.empty((c["r_peer"], c["points"], len(c["species"])))
    for r in range(c["r_peer"]):
        rr.resetAll()
        it.setValue("seed", SEED + r)
        res = np.asarray(rr.simulate(0.0, c["t_end"], c["points"], selections=["time"] + c["species"]))
        assert np.allclose(res[:, 0], grid(c)), res[:, 0]
        out[r] = res[:, 1:]
    return out, f"libroadrunner {roadrunner.__version__} (gillespie)"


def _import_basico():
    """basico, with this process's locale kept: COPASI's import sets LC_ALL to "C", after which open()
    without an encoding reads ASCII and every later read of a UTF-8 file fails (seen in the test suite)."""
    import locale

    before = locale.setlocale(locale.LC_ALL)
    try:
        import basico
    finally:
        locale.setlocale(locale.LC_ALL, before)
    return basico


def run_copasi(c: dict) -> tuple[np.ndarray, str]:
    basico = _import_basico()

    basico.load_model(str(BM / f"{c['model']}.xml"))
    model = basico.get_current_model().getModel()
    if c["system_size"] is not None:  # particles = amount x Omega
        per_unit = model.getQuantity2NumberFactor() / model.getAvogadro()  # mol per quantity unit
        model.setAvogadro(c["system_size"] / per_unit, model.getFramework() if hasattr(model, "getFramework") else 0)
        model.compileIfNecessary()
    sp = basico.get_species()
    name_of = {row["sbml_id"]: name for name, row in sp.iterrows()}
    cols = [name_of[s] for s in c["species"]]
    out = np.empty((c["r_peer"], c["points"], len(c["species"])))
    for r in range(c["r_peer"]):
        df = basico.run_time_course(duration=c["t_end"], intervals=c["points"] - 1, method="directMethod",
                                    use_numbers=True, seed=SEED + r, use_seed=True)
        assert np.allclose(df.index.to_numpy(), grid(c)), df.index
        out[r] = df[cols].to_numpy()
    import COPASI

    return out, f"COPASI {COPASI.CVersion.VERSION.getVersion()} via basico {basico.__version__} (directMethod)"


def make_ref(c: dict) -> dict:
    t0 = time.time()
    x, peer = (run_roadrunner if c["peer"] == "roadrunner" else run_copasi)(c)
    ref = {k: c[k] for k in ("model", "peer", "system_size", "t_end", "points", "species", "r_distsim")}
    ref.update(times=grid(c).tolist(), realizations=int(x.shape[0]), seed0=SEED, peer_version=peer,
               command=f"python3 benchmarks/biomodels_peers.py refs --only {c['model']} --peer {c['peer']}",
               seconds=round(time.time() - t0, 1), **moments(x))
    return ref


def distsim_moments(ref: dict, seed: int = 1, realizations: int | None = None) -> dict:
    """distsim's mean and variance (molecules) at the reference's times."""
    from distsim import ssa

    kw = {} if ref["system_size"] is None else {"system_size": ref["system_size"]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        net = ssa.load(str(BM / f"{ref['model']}.xml"), **kw)
    R = realizations or ref["r_distsim"]
    ds = ssa.simulate(net, t_end=ref["t_end"], points=ref["points"], realizations=R, seed=seed, backend="cpu")
    assert np.allclose(ds["time"].values, ref["times"])
    sel = dict(species=ref["species"])
    return {"mean": ds["mean"].sel(**sel).values, "variance": ds["variance"].sel(**sel).values, "realizations": R,
            "features": dict(ds.attrs)}


def z_scores(ref: dict, d: dict) -> tuple[np.ndarray, np.ndarray]:
    """Two-sample z on means, and on variances (se from the peer's 4th central moment, as under H0)."""
    m1, v1, n1 = np.asarray(ref["mean"]), np.asarray(ref["variance"]), ref["realizations"]
    m2, v2, n2 = d["mean"], d["variance"], d["realizations"]
    se = np.sqrt(v1 / n1 + v2 / n2)
    zm = np.where(se > 0, (m2 - m1) / np.where(se > 0, se, 1), np.where(m1 == m2, 0.0, np.inf))
    vv = np.maximum(np.asarray(ref["m4"]) - v1 ** 2, 0.0) * (1 / n1 + 1 / n2)
    zv = np.where(vv > 0, (v2 - v1) / np.sqrt(np.where(vv > 0, vv, 1)), np.where(v1 == v2, 0.0, np.inf))
    return zm, zv


def z_limit(checks: int, alpha: float = ALPHA) -> float:
    from scipy.stats import norm

    return float(norm.isf(alpha / (2 * checks)))


def load_refs() -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(PEERS.glob("*.json"))]


def table(out: Path | None) -> int:
    refs = load_refs()
    rows, zs = [], []
    for ref in refs:
        t0 = time.time()
        d = distsim_moments(ref)
        zm, zv = z_scores(ref, d)
        feat = features(BM / f"{ref['model']}.xml")
        omega = ref["system_size"] or 1
        for k, t in enumerate(ref["times"]):
            if t == 0:
                continue
            for j, s in enumerate(ref["species"]):
                se_d = math.sqrt(d["variance"][k, j] / d["realizations"])
                se_p = math.sqrt(ref["variance"][k][j] / ref["realizations"])
                rows.append(f"| {ref['model']} | {feat} | {omega:g} | {ref['peer']} | {s} | {t:g} | "
                            f"{d['mean'][k, j]:.4g} ± {se_d:.2g} | {ref['mean'][k][j]:.4g} ± {se_p:.2g} | "
                            f"{zm[k, j]:+.2f} | {zv[k, j]:+.2f} |")
                zs += [zm[k, j], zv[k, j]]
        print(f"{ref['model']}: {time.time() - t0:.1f} s", file=sys.stderr)
    lim = z_limit(len(zs))
    bad = int(np.sum(np.abs(zs) > lim))
    head = ["| model | features | Omega | peer | species | t | distsim mean ± se | peer mean ± se | z (mean) | z (variance) |",
            "|---|---|---:|---|---|---:|---:|---:|---:|---:|"]
    text = "\n".join(head + rows) + (f"\n\n{len(zs)} z scores, |z| limit {lim:.2f} (alpha = {ALPHA:g} overall, "
                                     f"Bonferroni): {bad} beyond.\n")
    print(text)
    if out:
        out.write_text("# Curated BioModels: distsim against peer simulators (issue 30)\n\n"
                       "`python3 benchmarks/biomodels_peers.py table` (CPU, distsim seed 1; peers: "
                       + "; ".join(sorted({r["peer_version"] for r in refs})) + ")\n\n" + text + "\n" + NOTES)
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["refs", "table"])
    ap.add_argument("--only", default=None)
    ap.add_argument("--peer", default=None)
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    if a.what == "table":
        return table(a.out)
    PEERS.mkdir(exist_ok=True)
    for c in CASES:
        if (a.only and c["model"] != a.only) or (a.peer and c["peer"] != a.peer):
            continue
        ref = make_ref(c)
        (PEERS / f"{case_key(c)}.json").write_text(json.dumps(ref, indent=0) + "\n")
        print(f"{case_key(c)}: {ref['realizations']} realizations in {ref['seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
