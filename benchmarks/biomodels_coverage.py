"""How much of a folder of curated BioModels (SBML) distsim loads and simulates.

    python3 benchmarks/biomodels_coverage.py FOLDER [--timeout 60] [--jobs 2] [--out raw.md]

Each ``*.xml`` in FOLDER runs in its own subprocess (a crash of native code, or a model that runs
past ``--timeout`` seconds, costs only that model), in-process (no Dask), on the CPU backend:

1. ``distsim.ssa.load(path)`` as a user would call it (units give Omega, counts must be whole); a
   file it refuses because it requires the SBML package 'qual' is a Boolean model: it is loaded as
   ``distsim pbn`` loads it (``distsim.pbn.load``) and simulated for ``BOOLEAN_STEPS`` synchronous steps
   of ``BOOLEAN_TRAJECTORIES`` trajectories (seed 1, CPU), outcome ``simulated as a Boolean network
   (SBML-qual)``; a load refused for fast reactions is retried with ``fast="as_slow"`` (the documented
   option: ordinary reactions with their kinetic laws), and so is every later load of that model,
   outcome ``simulated with fast reactions as ordinary reactions`` (with or without system_size);
2. if that is refused with a message asking for ``system_size=`` (counts not whole, astronomical, or
   firing too fast) or naming a substance unit of another kind (gram), the model is loaded again with
   ``system_size`` = Omega chosen so that the **largest initial amount becomes 1000 molecules**
   (amounts read with ``system_size=1, rounding="nearest"``: counts plus the recorded roundings)
   and ``rounding="nearest"``: the documented options of :mod:`distsim.models.formats.sbml`;
3. ``distsim.ssa.simulate(net, t_end=1, points=3, realizations=4, seed=1, backend="cpu")``, with
   ``max_events`` capping the firings of a realization (a smoke test of the kernels, not a study);
4. if that stops because a firing made a count negative and the law consumes n > 1 molecules of a
   species but is 0 only when none are left (``k x^2`` written for concentrations), the model is
   loaded again with the same options and ``mass_action="stochastic"`` (powers of reactants become
   falling factorials: the documented option of :mod:`distsim.models.formats.sbml`) and simulated again;
5. if the run (of step 3, or of step 4 when it was taken) stops on a negative propensity or a firing
   that made a count negative, the model is loaded again with the same options and ``guard=True``
   (sign split and reactant guard: the documented option of :mod:`distsim.models.formats.sbml`) and
   simulated again.

Outcomes: ``simulated`` (as loaded), ``simulated with system_size``, ``simulated with
mass_action='stochastic'`` (step 4; with or without system_size), ``simulated as a Boolean network
(SBML-qual)`` and ``simulated with fast reactions as ordinary reactions`` (step 1), ``simulated with
guard`` (step 5; with or without the others), ``refused: <reason>`` (a
:class:`~distsim.errors.ModelError` at load, grouped by what it names), ``simulate error``
(an exception while simulating), ``load error`` (an exception other than ModelError), ``timeout``
(also when run again alone after the others: a first run may spend its time compiling kernels)
and ``crash`` (the subprocess died). The table (counts, percentages) and the model ids of each
class are printed and written to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_MOLECULES = 1000.0  # the largest initial amount becomes this many molecules (step 2)
MAX_EVENTS = 200_000  # firings per realization in the smoke run

# (pattern in a ModelError's message, reason) -- first match wins; the rest keep their first words
REASONS = [
    (r"which a rate rule changes continuously", "assignment rule reads a rate-rule variable"),
    (r"assignment rule .* reads time", "assignment rule reads time"),
    (r"trigger compares", "event trigger with time inside an expression"),
    (r"algebraic rule", "algebraic rules"),
    (r"rate rule for '[^']*': '[^']*' is a (species|compartment)", "rate rules for species or compartments"),
    (r"delay\(\)", "delay()"),
    (r"fast reactions", "fast reactions"),
    (r"conversion factor", "conversion factors"),
    (r"no kinetic law|without a kinetic law", "reactions without a kinetic law"),
    (r"requires the SBML package", "required SBML packages"),
    (r"stoichiometryMath|stoichiometry of", "stoichiometry (stoichiometryMath, not whole, zero)"),
    (r"assignments? to (a )?compartment", "assignments to compartments"),
    (r"the model has no species", "no species (ODEs of parameters only)"),
    (r"initial value is not finite|initial value = .* is negative", "assignment rule's initial value NaN, inf or < 0"),
    (r"no \(finite\) (initial )?value|has no initial amount", "a species or parameter without initial value"),
    (r"compartment '[^']*' has no size", "a compartment without size"),
    (r"molecules is negative|initial (amount|concentration) -", "negative initial amounts (voltages, round-off)"),
    (r"the model has no reactions", "no reactions"),
    (r"unknown substance unit", "substance units of another kind (gram)"),
    (r"the math uses", "math not supported (tanh, reaction rates in rules)"),
    (r"more than exact simulation can count|system_size", "counts too large (even with system_size)"),
]
# the same for an exception while simulating (the run stops the realization and names the cause)
SIM_REASONS = [
    (r"\(negative\)", "negative propensity (a net-rate law used as a propensity)"),
    (r"is NaN|is inf", "propensity NaN or infinite"),
    (r"made a species count negative", "a firing made a count negative"),
    (r"not a whole number of molecules", "assignment rule gives a non-whole count"),
]


def reason_of(message: str, reasons: list[tuple[str, str]] = REASONS) -> str:
    for pattern, reason in reasons:
        if re.search(pattern, message, re.IGNORECASE):
            return reason
    message = re.sub(r"^\S*[./]\S*?(:\d+)*: ", "", message)  # the file:line: prefix
    return " ".join(message.split()[:6])


def _omega(path: str, load) -> float:
    """Omega putting the largest initial amount at TARGET_MOLECULES molecules. The amounts are read with
    a probe Omega (1, else 1e-15 where counts of 1 per unit overflow 2**53) and rounding="nearest":
    the counts plus the recorded roundings ("species: value -> count"), divided by the probe."""
    from distsim.errors import ModelError

    for probe in (1.0, 1e-15):
        try:
            net = load(path, system_size=probe, rounding="nearest")
            break
        except ModelError as e:
            if probe != 1.0 or "more than exact simulation can count" not in e.message:
                raise
    values = [float(x) for x in net.initial]
    for item in dict(net.metadata).get("rounded", "").split("; "):
        m = re.search(r": (\S+) -> ", item)
        if m:
            values.append(float(m.group(1)))
    top = max((abs(v) for v in values), default=0.0) / probe
    return TARGET_MOLECULES / top if top > 0 else 1.0


def run_one(path: str) -> dict:
    """Load and simulate one model in this process; the outcome as a dict."""
    import warnings

    from distsim.errors import ModelError
    from distsim.ssa import load as ssa_load

    warnings.simplefilter("ignore")
    out: dict = {"model": Path(path).stem}
    load = _fast_retry(ssa_load, out)
    try:
        try:
            net = load(path)
        except ModelError as e:
            if QUAL_REFUSAL in e.message:
                return _boolean(path, out)
            if "system_size=" not in e.message and "unknown substance unit" not in e.message:
                return {**out, "outcome": "refused", "reason": reason_of(e.message), "message": str(e)}
            omega = _omega(path, load)
            net = load(path, system_size=omega, rounding="nearest")
            out["system_size"] = omega
    except ModelError as e:
        return {**out, "outcome": "refused", "reason": reason_of(e.message), "message": str(e)}
    except Exception as e:  # noqa: BLE001  (a bug to report, not a refusal)
        return {**out, "outcome": "load error", "reason": type(e).__name__, "message": f"{type(e).__name__}: {e}"}
    out.update(species=net.n_species, reactions=len(net.reactions))
    done = _simulate(net, out)
    options = {"system_size": out["system_size"], "rounding": "nearest"} if "system_size" in out else {}
    if done["outcome"] == "simulate error" and re.search(CONCENTRATION_LAW, done["message"]):
        try:  # step 4: the same reading with stochastic mass action
            net = load(path, mass_action="stochastic", **options)
        except Exception as e:  # noqa: BLE001  (it loaded without the option: a bug to report)
            return {**out, "outcome": "load error", "reason": type(e).__name__, "mass_action": "stochastic",
                    "message": f"{type(e).__name__}: {e}"}
        options["mass_action"] = "stochastic"
        out = {**out, "mass_action": "stochastic",
               "stochastic": dict(net.metadata).get("mass_action_stochastic", "")}
        done = _simulate(net, out)
        if done["outcome"].startswith("simulated"):
            return {**done, "outcome": STOCHASTIC}
    if done["outcome"] != "simulate error" or reason_of(done["message"], SIM_REASONS) not in GUARDED:
        return done
    try:  # step 5: the same reading, guarded
        net = load(path, guard=True, **options)
    except Exception as e:  # noqa: BLE001  (it loaded without the option: a bug to report)
        return {**out, "outcome": "load error", "reason": type(e).__name__, "guard": "load",
                "message": f"{type(e).__name__}: {e}"}
    again = _simulate(net, {**out, "guard": dict(net.metadata).get("guard", ""), "unguarded": done["message"]})
    return {**again, "outcome": GUARD} if again["outcome"].startswith("simulated") else again


def _fast_retry(load, out: dict):
    """``load``, retried with ``fast="as_slow"`` (recorded in ``out``) when it refuses fast reactions; every
    later load of the model then takes the option too (step 1)."""
    from distsim.errors import ModelError

    def fast_load(path: str, **options):
        if not out.get("fast"):
            try:
                return load(path, **options)
            except ModelError as e:
                if FAST_REFUSAL not in e.message:
                    raise
                out["fast"] = "as_slow"
        return load(path, fast="as_slow", **options)

    return fast_load


def _simulate(net, out: dict) -> dict:
    """Step 3: the smoke run of ``net``; ``out`` with its outcome."""
    from distsim.errors import ModelError
    from distsim.ssa import simulate

    try:
        t0 = time.perf_counter()
        simulate(net, t_end=1.0, points=3, realizations=4, seed=1, backend="cpu", client=None,
                 progress=False, quantiles=None, max_events=MAX_EVENTS)
        out = {**out, "seconds": round(time.perf_counter() - t0, 2)}
    except ModelError as e:  # refused when the run starts (what the reader let through)
        return {**out, "outcome": "refused", "phase": "simulate", "reason": reason_of(e.message) + " (at simulate)",
                "message": str(e)}
    except Exception as e:  # noqa: BLE001
        return {**out, "outcome": "simulate error", "reason": reason_of(str(e), SIM_REASONS),
                "message": f"{type(e).__name__}: {e}"}
    done = FAST if out.get("fast") else "simulated with system_size" if "system_size" in out else "simulated"
    return {**out, "outcome": done}


def _boolean(path: str, out: dict) -> dict:
    """An SBML-qual model (refused by the SSA reader): loaded as ``distsim pbn`` loads it
    (``distsim.pbn.load``) and simulated for a few synchronous steps on the CPU."""
    from distsim.errors import ModelError
    from distsim.pbn import load, simulate

    out = {**out, "boolean": True}
    try:
        net = load(path, format="sbml-qual")
    except ModelError as e:
        return {**out, "outcome": "refused", "reason": reason_of(e.message) + " (SBML-qual)", "message": str(e)}
    except Exception as e:  # noqa: BLE001
        return {**out, "outcome": "load error", "reason": type(e).__name__, "message": f"{type(e).__name__}: {e}"}
    out.update(nodes=net.n)
    try:
        t0 = time.perf_counter()
        simulate(net, steps=BOOLEAN_STEPS, trajectories=BOOLEAN_TRAJECTORIES, seed=1, backend="cpu", client=None,
                 progress=False)
    except Exception as e:  # noqa: BLE001
        return {**out, "outcome": "simulate error", "reason": type(e).__name__, "message": f"{type(e).__name__}: {e}"}
    return {**out, "outcome": QUAL, "seconds": round(time.perf_counter() - t0, 2)}


def run_isolated(path: Path, timeout: float) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--one", str(path)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"model": path.stem, "outcome": "timeout", "reason": f"over {timeout:g} s", "message": ""}
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        tail = (p.stderr.strip().splitlines() or ["(no output)"])[-1]
        return {"model": path.stem, "outcome": "crash", "reason": f"exit {p.returncode}", "message": tail}
    return json.loads(lines[-1])


STOCHASTIC = "simulated with mass_action='stochastic'"  # step 4
QUAL = "simulated as a Boolean network (SBML-qual)"  # step 1
QUAL_REFUSAL = "requires the SBML package 'qual'"  # the SSA reader's refusal of an SBML-qual document
BOOLEAN_STEPS, BOOLEAN_TRAJECTORIES = 100, 64  # the smoke run of an SBML-qual model
FAST = "simulated with fast reactions as ordinary reactions"  # step 1
FAST_REFUSAL = "fast reactions are not supported"  # the SSA reader's refusal of fast="true"
# the simulate error that step 4 retries: distsim.ssa.errors' reason for a law k x^2 on 2 X -> ...
CONCENTRATION_LAW = r"it consumes \d+ molecules of .* but its law is 0 only when none are left"
GUARD = "simulated with guard"  # step 5
# the simulate errors that step 5 retries (SIM_REASONS)
GUARDED = ("negative propensity (a net-rate law used as a propensity)", "a firing made a count negative")
SIMULATED = ("simulated", "simulated with system_size", STOCHASTIC, QUAL, FAST, GUARD)  # the outcomes that count as simulated
ORDER = [*SIMULATED, "refused", "simulate error", "load error", "timeout", "crash"]


def classify(r: dict) -> dict:
    """The reason of a refusal or simulate error, from its message (so cached outcomes follow REASONS)."""
    if r["outcome"] == "refused":
        at = " (at simulate)" if r.get("phase") == "simulate" or r["reason"].endswith("(at simulate)") else ""
        return {**r, "reason": reason_of(r["message"]) + at}
    if r["outcome"] == "simulate error":
        return {**r, "reason": reason_of(r["message"], SIM_REASONS)}
    return r


def report(results: list[dict], folder: str, seconds: float, source: str | None) -> list[str]:
    results = [classify(r) for r in results]
    n = len(results)
    pct = (lambda k: f"{100 * k / n:.1f}%") if n else (lambda k: "-")
    by = Counter(r["outcome"] for r in results)
    lines = [f"# BioModels coverage: {folder}", "",
             f"{n} SBML files; distsim {_version()}; python {platform.python_version()}; "
             f"{os.cpu_count()} CPUs; {seconds:.0f} s in all.", ""]
    if source:
        lines += [f"Source: {source}", ""]
    ok = sum(by[k] for k in SIMULATED)
    lines += [f"**Load and simulate: {ok} of {n} ({pct(ok)})**", "",
              "| outcome | models | share |", "|---|---:|---:|"]
    for k in ORDER:
        if by[k]:
            lines.append(f"| {k} | {by[k]} | {pct(by[k])} |")
    for outcome, title in (("refused", "Refusals"), ("simulate error", "Simulate errors")):
        why = Counter(r["reason"] for r in results if r["outcome"] == outcome)
        if why:
            lines += ["", f"{title} by reason:", "", "| reason | models |", "|---|---:|"]
            lines += [f"| {reason} | {k} |" for reason, k in why.most_common()]
    groups: dict[str, list[dict]] = defaultdict(list)
    for r in results:
        split = r["outcome"] in ("refused", "simulate error")
        groups[f"{r['outcome']}: {r['reason']}" if split else r["outcome"]].append(r)
    lines += ["", "## Models per class", ""]
    for key in sorted(groups, key=lambda g: (ORDER.index(g.split(":")[0]), g)):
        lines.append(f"**{key}** ({len(groups[key])}): " + ", ".join(
            r["model"] + (f" (system_size={r['system_size']:.3g})" if "system_size" in r else "")
            + (" (mass_action='stochastic')" if r.get("mass_action") and r["outcome"] != STOCHASTIC else "")
            + (" (guard)" if r.get("guard") and r["outcome"] != GUARD else "")
            for r in sorted(groups[key], key=lambda r: r["model"])))
        lines.append("")
    detail = [r for r in results if r["outcome"] not in SIMULATED]
    if detail:
        lines += ["## Messages", ""]
        lines += [f"- {r['model']}: {r['outcome']}: {_one_line(r['message'])}"
                  for r in sorted(detail, key=lambda r: r["model"])]
    guarded = [r for r in results if r["outcome"] == GUARD]
    if guarded:
        lines += ["", "## Guarded models: what guard=True changed, and the error without it", ""]
        lines += [f"- {r['model']}: {_one_line(r.get('guard', ''))}; without guard: {_one_line(r.get('unguarded', ''))}"
                  for r in sorted(guarded, key=lambda r: r["model"])]
    return lines


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split()).replace("|", "/")
    return text if len(text) <= limit else text[:limit] + " ..."


def _version() -> str:
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
        return f"commit {rev.stdout.strip()}" if rev.returncode == 0 else "(no git)"
    except OSError:
        return "(no git)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", nargs="?", help="folder of SBML files (*.xml)")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per model (load + simulate)")
    ap.add_argument("--jobs", type=int, default=2, help="models at once")
    ap.add_argument("--out", help="write the table here (markdown)")
    ap.add_argument("--source", help="where the files came from (repository, commit), for the table")
    ap.add_argument("--cache", help="JSON-lines file of outcomes: models already in it are not run again, new ones "
                    "are appended (resume a long run; delete it after changing distsim)")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # the subprocess: one model, JSON on stdout
    args = ap.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one)))
        return
    if not args.folder:
        ap.error("FOLDER is required")
    files = sorted(Path(args.folder).glob("*.xml"))
    if not files:
        ap.error(f"no *.xml files in {args.folder}")
    done: dict[str, dict] = {}
    if args.cache and Path(args.cache).exists():
        for line in Path(args.cache).read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                done[r["model"]] = r
    todo = [f for f in files if f.stem not in done]
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        for k, r in enumerate(pool.map(lambda f: run_isolated(f, args.timeout), todo), 1):
            done[r["model"]] = r
            if args.cache:
                with open(args.cache, "a") as fh:
                    fh.write(json.dumps(r) + "\n")
            print(f"{k}/{len(todo)} {r['model']}: {r['outcome']} {r.get('reason', '')}", file=sys.stderr)
    # a model's first run may compile kernels (Numba, then cached on disk) while other models compile
    # theirs: a timeout is run once more, alone, after the others
    for f in [f for f in todo if done[f.stem]["outcome"] == "timeout"]:
        r = run_isolated(f, args.timeout)
        done[r["model"]] = r
        print(f"again, alone: {r['model']}: {r['outcome']} {r.get('reason', '')}", file=sys.stderr)
    results = [done[f.stem] for f in files]
    lines = report(results, args.folder, time.perf_counter() - t0, args.source)
    print("\n".join(lines))
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
