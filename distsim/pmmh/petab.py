"""``distsim.pmmh.petab``: read a PEtab v1 problem (YAML + condition, measurement, observable and
parameter TSVs + SBML) and run PMMH on it. The TSVs are read with :mod:`csv` (parsing only); formulas
go through the project's expression parser; the SBML through :mod:`distsim.models.formats.sbml`.

Mapping: an observable's ``observableFormula`` reads species as amounts in the model's substance unit
(count / ``system_size``); ``noiseDistribution`` normal with ``observableTransformation`` lin is
``normal``, with log ``lognormal``, with log10 ``lognormal`` with noise parameter ln(10) x sigma (the same
density in y: see :func:`_observables`); ``noiseFormula`` a number or a parameter id. Other noise
distributions (``laplace``) are refused: the filter's device noise kernel has no Laplace code.
Parameters with ``estimate`` 1 get their ``objectivePriorType`` prior (``uniform``, ``lognormal``,
``parameterScaleUniform``, ``parameterScaleNormal`` on a log scale) or, without one, uniform on
[lowerBound, upperBound] on their ``parameterScale`` (lin: ``uniform``; log/log10: ``loguniform``);
the others are fixed at ``nominalValue``. Initial amounts may be estimated: a species whose SBML
initial assignment is an estimated parameter alone (``A = a0``), or whose condition-table value is
one, starts at round(a0 x system_size) molecules (in a condition, a number or a fixed parameter's
id sets it instead). Estimated parameters read by nothing else (e.g. inside a longer initial
assignment formula) are fixed at their nominal value with a warning. Placeholders
``observableParameter{n}_{id}`` and ``noiseParameter{n}_{id}`` take the values of each measurement's
``observableParameters``/``noiseParameters`` (numbers or parameter ids); an observable measured with
several different overrides becomes one observable per override (``{id}``, ``{id}__2``, ...).
Replicates (several measurements of one observable at one time in one condition) are kept, in the
measurement table's order, as replicates of the :class:`~distsim.pmmh.Experiment` (their log densities
add; each is one observation of the result's ``observed_value``, numbered by ``observation_replicate``).
Not supported (a clear error): pre-equilibration, Laplace noise, condition values that are neither
numbers nor (for species) parameter ids.
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from ..errors import ConfigError, DataError, ModelError, did_you_mean, read_text
from ..models.yaml_limits import load_yaml
from .observation import Experiment, Observable, compile_observables, measurement_problem
from .priors import Prior

MAX_TSV_BYTES = 64 * 2**20
LN10 = math.log(10.0)


def _tsv(path: Path) -> list[dict[str, str]]:
    """Rows of a PEtab table (header line first), each {column: text}; bounded in size."""
    if path.stat().st_size > MAX_TSV_BYTES:
        raise DataError(f"the table has more than {MAX_TSV_BYTES} bytes", file=str(path))
    reader = csv.reader(io.StringIO(read_text(path, error=DataError), newline=""), delimiter="\t")
    try:
        rows = [(reader.line_num, r) for r in reader]
    except csv.Error as e:
        raise DataError(f"bad TSV row ({e})", file=str(path), line=reader.line_num) from None
    if not rows:
        raise DataError("empty table (expected a header line)", file=str(path), line=1)
    head = [h.strip() for h in rows[0][1]]
    out = []
    for i, r in rows[1:]:
        if not any(v.strip() for v in r):
            continue
        if len(r) > len(head):
            raise DataError(f"{len(r)} fields but {len(head)} columns", file=str(path), line=i)
        d = {h: (r[k].strip() if k < len(r) else "") for k, h in enumerate(head)}
        d["__line__"] = str(i)
        out.append(d)
    return out


def _number(text: str, what: str, path: Path, line: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise DataError(f"{what}: {text!r} is not a number", file=str(path), line=int(line)) from None
    return v


def read_problem(problem_yaml: str | os.PathLike, *, system_size: float, rounding: str = "error") -> dict[str, Any]:
    """The parts of a PEtab v1 problem as :func:`distsim.pmmh.infer` takes them: network, observables,
    experiments, prior, initial, and the parameter scales (ids -> 'lin'/'log'/'log10'). ``rounding``:
    the SBML reader's (``"nearest"``: initial amounts that are not whole numbers of molecules are rounded,
    recorded in the network's metadata; default: refused)."""
    path = Path(problem_yaml)
    if not path.is_file():
        raise ConfigError(f"PEtab problem file not found: {path}")
    doc, key_lines = load_yaml(path, "PEtab problem file", MAX_TSV_BYTES)

    def line_of(key: str) -> int:
        return key_lines.line(key) or 1

    version = doc.get("format_version") if isinstance(doc, dict) else None  # (never str(): aliases may nest deep)
    if not (version in ("1", "1.0.0") or (type(version) is int and version == 1)):
        raise ConfigError("expected a PEtab v1 problem (format_version: 1)", file=str(path),
                          line=line_of("format_version"))
    probs = doc.get("problems")
    if not isinstance(probs, list) or len(probs) != 1 or not isinstance(probs[0], dict):
        raise ConfigError("expected exactly one entry under 'problems'", file=str(path),
                          line=line_of("problems"))
    p = probs[0]
    here = path.parent

    def table(key: str, name: object) -> Path:
        f = here / name if isinstance(name, str) and name and "\0" not in name else None
        try:
            if f is not None and f.is_file():
                return f
        except OSError:  # a name too long, ...
            pass
        shown = repr(name[:200]) if isinstance(name, str) else f"a {type(name).__name__}"
        raise ConfigError(f"'{key}': {shown} is not a file next to the problem file", file=str(path),
                          line=line_of(key if key == "parameter_file" else f"problems[0].{key}"))

    def files(key: str) -> list[Path]:
        v = p.get(key)
        if not isinstance(v, list) or not v or not all(isinstance(x, str) for x in v):
            raise ConfigError(f"'{key}' must be a list of file names", file=str(path),
                              line=line_of(f"problems[0].{key}"))
        return [table(key, x) for x in v]

    sbml = files("sbml_files")
    if len(sbml) != 1:
        raise ConfigError("expected one SBML file", file=str(path), line=line_of("problems[0].sbml_files"))
    params_file = table("parameter_file", doc.get("parameter_file"))
    parameters = _tsv(params_file)
    observables = [r | {"__file__": str(f)} for f in files("observable_files") for r in _tsv(f)]
    conditions = [r | {"__file__": str(f)} for f in files("condition_files") for r in _tsv(f)]
    meas_files = files("measurement_files")
    measurements = [r | {"__file__": str(f)} for f in meas_files for r in _tsv(f)]
    if not measurements:
        raise DataError("no measurement (the table has no rows)", file=str(meas_files[0]), line=1)

    # parameters: nominal values, estimate flags, scales, priors
    nominal: dict[str, float] = {}
    prior: dict[str, Prior] = {}
    scales: dict[str, str] = {}
    lines: dict[str, int] = {}
    for r in parameters:
        pid, line = r.get("parameterId", ""), r["__line__"]
        lines[pid] = int(line)
        if not pid.isidentifier():
            raise DataError(f"parameterId {pid!r} is not an identifier", file=str(params_file), line=int(line))
        nominal[pid] = _number(r.get("nominalValue", ""), f"nominalValue of {pid}", params_file, line)
        scale = r.get("parameterScale", "lin") or "lin"
        if scale not in ("lin", "log", "log10"):
            raise DataError(f"parameterScale of {pid} is {scale!r}, not lin, log or log10", file=str(params_file),
                            line=int(line))
        scales[pid] = scale
        if r.get("estimate", "1") in ("1", "1.0", "true", "True"):
            prior[pid] = _prior(r, pid, scale, params_file, line)

    net = _network(sbml[0], nominal, system_size, rounding, (params_file, lines))
    model_params = set(net.params)
    obs, reads, obs_names = _observables(observables, measurements, net, nominal, prior)
    set_by = _initial_assignments(sbml[0], net, prior, nominal, system_size)
    fixed = {k: v for k, v in nominal.items() if k in model_params and k not in prior}
    exps = _experiments(measurements, conditions, obs_names, net, fixed, system_size, set_by, nominal, prior,
                        {o.name: o.noise for o in obs})
    used = model_params | reads | {v for e in exps for v in e.initial.values() if isinstance(v, str)}
    for pid in list(prior):
        if pid not in used:
            warnings.warn(f"PEtab parameter {pid!r} is estimated in {params_file.name} but nothing the SSA or the "
                          f"observables read uses it alone: distsim's PMMH fixes it at its nominal value "
                          f"{nominal[pid]:g}", UserWarning, stacklevel=3)
            del prior[pid]
    if not prior:
        raise ConfigError("no estimated parameter that the model's reactions or the observables read",
                          file=str(params_file), line=1)
    # chains start at the nominal values (PMMH works on log scale: a nominal 0 starts at the prior's center)
    initial = {k: nominal[k] if nominal[k] > 0 else prior[k].center() for k in prior}
    for k, v in initial.items():
        lo, hi = prior[k].support()
        if not (0 < v < math.inf and lo <= v <= hi):
            raise DataError(f"{k}: the chains start at {v:g} (its nominalValue, or its prior's center if that is "
                            f"<= 0), which is not > 0 inside its prior's support ({prior[k]})", file=str(params_file),
                            line=lines[k])
    return {"net": net, "observables": obs, "experiments": exps, "prior": prior, "initial": initial,
            "scales": {k: scales[k] for k in prior}, "source": str(path)}


def _prior(r: dict[str, str], pid: str, scale: str, file: Path, line: str) -> Prior:
    lo = _number(r.get("lowerBound", ""), f"lowerBound of {pid}", file, line)
    hi = _number(r.get("upperBound", ""), f"upperBound of {pid}", file, line)
    kind = r.get("objectivePriorType", "") or ""
    args = [a for a in (r.get("objectivePriorParameters", "") or "").split(";") if a.strip()]
    vals = [_number(a, f"objectivePriorParameters of {pid}", file, line) for a in args]
    ln = {"log": 1.0, "log10": math.log(10.0)}.get(scale)
    try:
        if not kind:
            return Prior("uniform", lo, hi) if scale == "lin" else Prior("loguniform", lo, hi)
        if len(vals) != 2:
            raise ValueError(f"{kind} needs two objectivePriorParameters")
        if kind == "uniform":
            return Prior("uniform", *vals)
        if kind == "logNormal":
            return Prior("lognormal", *vals)
        if kind == "parameterScaleUniform" and ln is not None:
            return Prior("loguniform", math.exp(vals[0] * ln), math.exp(vals[1] * ln))
        if kind == "parameterScaleNormal" and ln is not None:
            return Prior("lognormal", vals[0] * ln, vals[1] * ln)
    except ValueError as e:
        raise DataError(f"prior of {pid}: {e}", file=str(file), line=int(line)) from None
    raise DataError(f"objectivePriorType {kind!r} of {pid} (scale {scale}) is not supported for a positive rate "
                    "parameter; use uniform, logNormal, or parameterScaleUniform/parameterScaleNormal on a log scale",
                    file=str(file), line=int(line))


def _network(sbml: Path, nominal: dict[str, float], system_size: float, rounding: str = "error",
             where: tuple[Path, dict[str, int]] | None = None):
    """The SBML with the PEtab nominal values of its parameters (they may set initial amounts). ``where``:
    the parameter table and its lines, named by the error when the SBML reads but not with those values."""
    from ..errors import DistsimError
    from ..models.formats.sbml import check_sbml_file, read_sbml_string

    check_sbml_file(str(sbml))
    import libsbml

    doc = libsbml.readSBMLFromFile(str(sbml))
    model = doc.getModel()
    if model is None:
        raise ConfigError("no model in the SBML file", file=str(sbml))
    own = libsbml.writeSBMLToString(doc)
    changed = []
    for k, v in nominal.items():
        par = model.getParameter(k)
        if par is not None:
            if par.getValue() != float(v):
                changed.append(k)
            par.setValue(float(v))
    try:
        return read_sbml_string(libsbml.writeSBMLToString(doc), file=str(sbml), name=sbml.stem,
                                system_size=system_size, rounding=rounding)
    except DistsimError as e:
        if not changed or where is None:
            raise
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:  # with the SBML's own values?
                read_sbml_string(own, file=str(sbml), name=sbml.stem, system_size=system_size, rounding=rounding)
            except DistsimError:
                raise e from None
        # the nominal values are to blame: the one the message names (by id, else value), else the first changed
        def named(text: str) -> bool:
            return re.search(rf"(?<![\w.]){re.escape(text)}(?![\w.])", e.message) is not None

        k = next((k for k in changed if named(k)), None) or next((k for k in changed if named(repr(nominal[k]))),
                                                                 changed[0])
        raise DataError(f"{k} = {nominal[k]:g} (its nominalValue) in the SBML: {e.message}", file=str(where[0]),
                        line=where[1][k]) from None


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _observables(rows: list[dict[str, str]], measurements: list[dict[str, str]], net, nominal: dict[str, float],
                 prior: dict[str, Prior]) -> tuple[list[Observable], set[str], dict[tuple[str, str, str], str]]:
    """The observables, the parameter ids their formulas read, and the observable name of each
    (observableId, observableParameters, noiseParameters) of the measurements. Placeholders
    ``observableParameter{n}_{id}`` / ``noiseParameter{n}_{id}`` take the n-th value of the row's
    ``observableParameters`` / ``noiseParameters`` (a number or a parameter id): an observable measured with
    k different overrides becomes k observables ``{id}``, ``{id}__2``, ... Parameters that are neither the
    model's nor estimated read as their nominal values."""
    overrides: dict[str, list[tuple[str, str, tuple[Path, int]]]] = {}
    for m in measurements:
        where = (Path(m["__file__"]), int(m["__line__"]))
        key = (m.get("observableParameters", ""), m.get("noiseParameters", ""), where)
        seen = overrides.setdefault(m.get("observableId", ""), [])
        if all(k[:2] != key[:2] for k in seen):
            seen.append(key)
    out, reads, names = [], set(), {}
    extra = [k for k in prior if k not in net.params]
    for r in rows:
        f, line = Path(r["__file__"]), int(r["__line__"])
        oid = r.get("observableId", "")
        if not oid.isidentifier() or any(oid == o.name for o in out):
            raise DataError(f"observableId {oid!r} must be a unique identifier", file=str(f), line=line)
        dist = r.get("noiseDistribution", "normal") or "normal"
        trans = r.get("observableTransformation", "lin") or "lin"
        if dist != "normal" or trans not in ("lin", "log", "log10"):
            why = (" (Laplace noise has no device noise kernel yet)" if dist == "laplace" else "")
            raise DataError(f"observable {oid}: noiseDistribution {dist!r} with observableTransformation {trans!r} is "
                            f"not supported{why}: normal with lin, log or log10", file=str(f), line=line)
        keys = overrides.get(oid) or [("", "", (f, line))]
        for k, (op, npar, where) in enumerate(keys):
            name = oid if k == 0 else f"{oid}__{k + 1}"
            names[(oid, op, npar)] = name
            formula = _fill(r.get("observableFormula", ""), "observableParameter", oid, op, net, nominal, prior, where)
            noise_f = _fill(r.get("noiseFormula", ""), "noiseParameter", oid, npar, net, nominal, prior, where)
            bare = noise_f.strip("()")
            try:
                float(bare)
            except ValueError:
                if bare not in prior and bare not in net.params:
                    raise DataError(f"observable {oid}: noiseFormula {r.get('noiseFormula', '')!r} must be a number or "
                                    "a parameter id (or a noiseParameter placeholder)"
                                    f"{did_you_mean(bare, sorted(nominal))}",
                                    file=str(f), line=line) from None
            reads |= {n for n in _IDENT.findall(formula + " " + noise_f) if n in prior}
            if trans == "log10":
                # log10 y ~ N(log10 h, sigma^2) has density, in y (PEtab's, the Jacobian included), of
                #   exp(-(log10 y - log10 h)^2 / (2 sigma^2)) / (sqrt(2 pi) sigma y ln 10)
                # and log10 y - log10 h = (ln y - ln h) / ln 10: this is exactly lognormal (ln y ~ N(ln h, s^2)) with
                # s = ln(10) sigma, whose normaliser sqrt(2 pi) s y is that same sqrt(2 pi) sigma y ln 10
                noise_f = f"({LN10!r}) * ({noise_f})"
            ob = Observable(name, formula, "normal" if trans == "lin" else "lognormal", noise_f)
            try:  # the formulas' errors at the table's line (the problem compiles them again)
                compile_observables(net, [ob], extra, 1.0)
            except ModelError as e:
                raise DataError(f"observable {oid}: {e.message}", file=str(f), line=line) from None
            out.append(ob)
    return out, reads, names


def _fill(text: str, kind: str, oid: str, values: str, net, nominal: dict[str, float], prior: dict[str, Prior],
          where: tuple[Path, int]) -> str:
    """``text`` with its placeholders {kind}{n}_{oid} replaced by the n-th of ``values`` (';'-separated)
    and fixed non-model parameters by their nominal values (parenthesised numbers)."""
    vals = [v.strip() for v in values.split(";")] if values.strip() else []

    def value(v: str, what: str) -> str:
        try:
            return f"({float(v)!r})"
        except ValueError:
            pass
        if v in prior or v in net.params:
            return v
        if v in nominal:
            return f"({nominal[v]!r})"
        raise DataError(f"{what} is {v!r}, neither a number nor a parameter id{did_you_mean(v, sorted(nominal))}",
                        file=str(where[0]), line=where[1])

    def sub(m: re.Match) -> str:
        name = m.group(0)
        ph = re.fullmatch(rf"{kind}(\d+)_{re.escape(oid)}", name)
        if ph:
            digits = ph.group(1)
            n = int(digits) if len(digits) < 10 else 0  # (int() refuses > 4,300 digits)
            if not 1 <= n <= len(vals):
                col = "observableParameters" if kind == "observableParameter" else "noiseParameters"
                short = name if len(name) <= 80 else f"{name[:40]}...{name[-20:]}"
                raise DataError(f"observable {oid}: {short} needs {digits[:12]}{'...' if len(digits) > 12 else ''} "
                                f"value(s) in {col}, the measurement gives {len(vals)}", file=str(where[0]),
                                line=where[1])
            return value(vals[n - 1], f"{name} of observable {oid}")
        if name in nominal and name not in prior and name not in net.params:
            return f"({nominal[name]!r})"
        return name

    return _IDENT.sub(sub, text)


def _initial_assignments(sbml: Path, net, prior: dict[str, Prior], nominal: dict[str, float], omega: float
                         ) -> dict[str, str]:
    """{species: estimated parameter} of the SBML initial assignments that are that parameter alone
    (``A = a0``): the species starts at round(a0 x system_size) molecules, checked against the reader's
    count at the nominal value (a concentration in a compartment of size other than 1 is refused)."""
    import libsbml

    model = libsbml.readSBMLFromFile(str(sbml)).getModel()
    out = {}
    for ia in model.getListOfInitialAssignments():
        sym, math_ = ia.getSymbol(), ia.getMath()
        if sym not in net.species or math_ is None or not math_.isName() or math_.getName() not in prior:
            continue
        pid = math_.getName()
        want = net.initial[net.index(sym)]
        if math.floor(nominal[pid] * omega + 0.5) != want:
            raise DataError(f"the initial assignment {sym} = {pid} gives {want} molecules at {pid} = {nominal[pid]:g}, "
                            f"not {pid} x system_size ({omega:g}): only amounts (or concentrations in a compartment "
                            "of size 1) can be estimated", file=str(sbml))
        out[sym] = pid
    return out


def _experiments(measurements: list[dict[str, str]], conditions: list[dict[str, str]],
                 obs_names: dict[tuple[str, str, str], str], net,
                 fixed: dict[str, float], omega: float, set_by: dict[str, str], nominal: dict[str, float],
                 prior: dict[str, Prior], noise_of: dict[str, str]) -> list[Experiment]:
    names = sorted({k[0] for k in obs_names})
    conds = {r.get("conditionId", ""): r for r in conditions}
    by_cond: dict[str, dict[float, dict[str, float]]] = {}
    for r in measurements:
        f, line = Path(r["__file__"]), int(r["__line__"])
        if r.get("preequilibrationConditionId", ""):
            raise DataError("pre-equilibration is not supported", file=str(f), line=line)
        oid, cid = r.get("observableId", ""), r.get("simulationConditionId", "")
        if oid not in names:
            raise DataError(f"unknown observableId {oid!r}{did_you_mean(oid, names)}", file=str(f), line=line)
        if cid not in conds:
            raise DataError(f"unknown simulationConditionId {cid!r}{did_you_mean(cid, list(conds))}", file=str(f),
                            line=line)
        t = _number(r.get("time", ""), "time", f, str(line))
        y = _number(r.get("measurement", ""), "measurement", f, str(line))
        if not (math.isfinite(t) and t >= 0):
            raise DataError(f"time {t} must be finite and >= 0", file=str(f), line=line)
        slot = by_cond.setdefault(cid, {}).setdefault(t, {})
        oid = obs_names[(oid, r.get("observableParameters", ""), r.get("noiseParameters", ""))]
        why = None if math.isnan(y) else measurement_problem(noise_of[oid], y)
        if why:
            raise DataError(f"observable {oid}: {why}", file=str(f), line=line)
        slot.setdefault(oid, []).append(y)  # replicates in the table's order
    out = []
    for cid, at in by_cond.items():
        c = conds[cid]
        initial: dict[str, int | str] = dict(set_by)
        params = dict(fixed)
        for k, v in c.items():
            if k in ("conditionId", "conditionName", "__line__", "__file__") or v == "":
                continue
            if k in net.species and v in prior:
                initial[k] = v  # an estimated initial amount
                continue
            if k in net.species and v in nominal:
                v = repr(nominal[v])  # a fixed parameter's value
            val = _number(v, f"condition {cid}, {k}", Path(c["__file__"]), c["__line__"])
            if k in net.species:
                count = val * omega
                if abs(count - round(count)) > 1e-9 * max(1.0, abs(count)):
                    raise DataError(f"condition {cid}: {k} = {val:g} is {count:g} molecules (system_size {omega:g}), "
                                    "not a whole number", file=c["__file__"], line=int(c["__line__"]))
                initial[k] = int(round(count))
            elif k in net.params:
                params[k] = val
            else:
                raise DataError(f"condition {cid}: {k!r} is neither a species nor a parameter of the model",
                                file=c["__file__"], line=int(c["__line__"]))
        times = sorted(at)
        data = {o: [_one_or_all(at[t].get(o, [np.nan])) for t in times] for o in obs_names.values()
                if any(o in at[t] for t in times)}
        out.append(Experiment(times, data, initial=initial, parameters=params, name=cid, source=c["__file__"]))
    return out


def _one_or_all(ys: list[float]) -> float | list[float]:
    """One measurement as a number, replicates as their list (:class:`~distsim.pmmh.Experiment`'s data)."""
    return ys[0] if len(ys) == 1 else ys


def petab(problem_yaml: str | os.PathLike, *, system_size: float = 1.0, rounding: str = "error", **kwargs: Any
          ) -> xr.Dataset:
    """Run :func:`distsim.pmmh.infer` on a PEtab v1 problem (``kwargs``: its options: ``particles``,
    ``iterations``, ``burn_in``, ``chains``, ``seed``, ``time_limit``, ``client``, ``backend``, ...).
    ``system_size``: molecules per substance unit of the SBML (the species in the observables are
    amounts: count / system_size); ``rounding``: that of :func:`read_problem`. Posterior variables are the
    PEtab parameter ids, on the linear scale."""
    from .sampler import infer

    p = read_problem(problem_yaml, system_size=system_size, rounding=rounding)
    ds = infer(p["net"], p["observables"], p["experiments"], prior=p["prior"], initial=p["initial"],
               species_scale=system_size, **kwargs)
    ds.attrs["petab_problem"] = p["source"]
    ds.attrs["petab_scales"] = ",".join(f"{k}={v}" for k, v in p["scales"].items())
    return ds
