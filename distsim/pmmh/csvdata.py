"""A model + a noisy CSV as a PMMH problem (``distsim mcmc noisy``): observables, noise models and one
experiment from a ``time,<column>...`` file.

The CSV is that of ``distsim mcmc rates`` (:func:`distsim.mcmc.observations.read_csv`; blank = not
measured) with any numbers as values, and a time repeated on consecutive rows: replicates (independent
measurements at that time). A column is an observable named in ``observables`` (a formula of species
and parameters), else a species' amount. A noise spec is ``MODEL:PARAM`` (``poisson`` alone), PARAM a
number or a parameter name (a model parameter, or inferred: it needs a prior).
"""

from __future__ import annotations

import math
import os
from typing import Any, Mapping

from ..errors import DataError, did_you_mean, read_text
from ..mcmc.observations import read_csv
from ..models.reactions import MAX_COUNT, ReactionNetwork
from .observation import NOISE_MODELS, Experiment, Observable, measurement_problem


def parse_noise(spec: str, what: str = "noise") -> tuple[str, str | float | None]:
    """(model, parameter) of ``"normal:0.5"``, ``"negbin:r"`` or ``"poisson"`` (the parameter a float
    when it is a number, else a parameter name)."""
    model, colon, param = (s.strip() for s in str(spec).partition(":"))
    if model not in NOISE_MODELS:
        raise ValueError(f"{what}: unknown noise model {model!r} (one of {', '.join(NOISE_MODELS)})"
                         f"{did_you_mean(model, NOISE_MODELS)}")
    if model == "poisson":
        if colon:
            raise ValueError(f"{what}: Poisson noise has no parameter; give 'poisson', got {spec!r}")
        return model, None
    if not param:
        raise ValueError(f"{what}: {model} noise needs a parameter, a number or a parameter name "
                         f"(e.g. {model}:0.5), got {spec!r}")
    try:
        return model, float(param)
    except ValueError:
        return model, param


def read_noisy(net: ReactionNetwork, data: str | os.PathLike, *, noise: Mapping[str | None, str],
               observables: Mapping[str, str] | None = None, prior: Mapping[str, Any] | None = None,
               initial: Mapping[str, float | str] | None = None) -> dict[str, Any]:
    """The arguments of :func:`distsim.pmmh.infer` for ``net`` and the CSV ``data``: ``{"observables",
    "experiments", "initial"}``. ``noise``: {column: "MODEL:PARAM"}, key None for every other column;
    ``observables``: {column: formula}; ``prior``: the inferred parameters (to check noise parameters);
    ``initial``: a species' initial count (a number, or a parameter name: round(value x species_scale)
    molecules) or an inferred parameter's starting value."""
    f = os.fspath(data)
    times, cols, lines, hline = read_csv(f, counts=False)
    if not len(times):
        raise DataError("no measurements: the header is the only row", file=f, line=hline)
    observables, prior, initial = dict(observables or {}), dict(prior or {}), dict(initial or {})
    names = list(cols)
    for name in observables:
        if name not in cols:
            raise DataError(f"observable {name!r} has no column (columns: {', '.join(names)})"
                            f"{did_you_mean(name, names)}", file=f, line=hline)

    def at(name: str) -> int | None:  # an error's column (the file is read again only then)
        return _header_columns(f, hline, names)[name]

    for k, name in enumerate(names, 2):
        if name not in observables and name not in net.species:
            raise DataError(f"column {k} ({name!r}) is neither a species of the model ({', '.join(net.species)}) "
                            f"nor an observable with a formula{did_you_mean(name, net.species)}", file=f, line=hline,
                            column=at(name))
    for name in noise:
        if name is not None and name not in cols:
            raise DataError(f"noise model given for {name!r}, which is not a column (columns: {', '.join(names)})"
                            f"{did_you_mean(name, names)}", file=f, line=hline)
    obs = []
    for name in names:
        spec = noise.get(name, noise.get(None))
        if spec is None:
            raise DataError(f"column {name!r} has no noise model: give one for it or for every column "
                            f"(e.g. normal:1, poisson)", file=f, line=hline, column=at(name))
        model, param = parse_noise(spec, f"noise of {name!r}")
        if isinstance(param, str) and param not in net.params and param not in prior:
            raise DataError(f"the noise parameter {param!r} of {name!r} is neither a number nor a model parameter: "
                            f"give it a prior to infer it", file=f, line=hline, column=at(name))
        obs.append(Observable(name, observables.get(name, name), model, param))
    x0, start = {}, {}
    for k, v in initial.items():
        if k in net.species:
            if not isinstance(v, str) and not (0 <= v <= MAX_COUNT and v == math.floor(v)):
                raise ValueError(f"initial count of {k!r} is {v!r}, not a whole number >= 0")
            x0[k] = v if isinstance(v, str) else int(v)
        elif k in prior:
            if isinstance(v, str):
                raise ValueError(f"starting value of {k!r} is {v!r}, not a number")
            start[k] = float(v)
        else:
            raise ValueError(f"initial value for {k!r}: neither a species of the model nor an inferred parameter"
                             f"{did_you_mean(k, list(net.species) + list(prior))}")
    for n, row in zip(lines, zip(*(cols[o.name] for o in obs))):  # the values, row by row, at their lines
        for o, v in zip(obs, row):
            why = None if math.isnan(v) else measurement_problem(o.noise, float(v))
            if why:
                raise DataError(f"column {o.name!r}: {why}", file=f, line=n, column=at(o.name))
    return {"observables": obs, "experiments": [_experiment(times, cols, lines, f, x0)], "initial": start}


def _header_columns(f: str, hline: int, names: list[str]) -> dict[str, int | None]:
    """The 1-based character column of each name in the header line (None where it cannot be found)."""
    text = read_text(f, error=DataError).split("\n")[hline - 1]
    out: dict[str, int | None] = {}
    pos = text.find(",") + 1  # past 'time'
    for name in names:
        i = text.find(name, pos)
        out[name] = None if i < 0 else i + 1
        pos = pos if i < 0 else i + len(name)
    return out


def _experiment(times: Any, cols: dict[str, Any], lines: list[int], f: str, x0: dict) -> Experiment:
    """One experiment: rows of equal time (consecutive) are that time's replicates."""
    groups: list[list[int]] = []
    for i, t in enumerate(times):
        if t < 0:
            raise DataError(f"time {t:g} is negative", file=f, line=lines[i])
        if groups and t == times[groups[-1][0]]:
            groups[-1].append(i)
        elif groups and not t > times[groups[-1][0]]:
            raise DataError(f"times must increase ({times[groups[-1][0]]:g} then {t:g}); replicates are consecutive "
                            "rows with one time", file=f, line=lines[i])
        else:
            groups.append([i])
    data = {name: [float(v[g[0]]) if len(g) == 1 else [float(v[i]) for i in g] for g in groups]
            for name, v in cols.items()}
    return Experiment(times=[float(times[g[0]]) for g in groups], data=data, initial=x0, source=f)
