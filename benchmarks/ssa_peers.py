"""Peer SSA tools for side-by-side throughput: GillesPy2 (C++ SSACSolver), libRoadRunner (gillespie), rebop.

    python benchmarks/ssa_peers.py --model mm|chain [--n 1000] [--realizations 200] [--seed 0]
                                   [--peers gillespy2 roadrunner rebop] [--max-seconds 120] [--firings F]

Each adapter runs one :class:`distsim.models.reactions.ReactionNetwork` (mass action only) with the same
initial state, end time and output grid (``points`` equally spaced times in [0, t_end]), one
realization after another on one core (single process, no worker pools), and reports throughput in
realizations per CPU-second. Peers are optional: install them with
``pip install -r benchmarks/requirements-peers.txt`` (GillesPy2 also needs ``g++``; its SCons is found
through the venv's ``bin/``, which :func:`run_peer` puts first on ``PATH``).

Propensity conventions (distsim: a_j(x) = theta_j * prod_i C(x_i, r_ij), so 2A -> B has
theta * x(x-1)/2). Checked in each peer's source/docs and by ``tests/unit/test_ssa_peers.py``
(a 2A, 3A and A+B network whose firing probability differs by convention):

* **GillesPy2 1.8.3** mass action (``Reaction(rate=...)``, ``gillespy2/core/reaction.py``,
  ``_create_mass_action``) writes 2X as ``k * X * (X - 1) / vol`` and X+Y as ``k * X * Y / vol``
  (vol = 1): the falling factorial *without* the 1/2!. It refuses total order > 2. Adapter: order <= 2
  uses mass action with ``k = theta / prod_i r_ij!``; order > 2 uses a custom
  ``propensity_function`` ``k * X * (X - 1) * (X - 2) ...`` with the same ``k``.
* **libRoadRunner 2.10** (``gillespie`` integrator) uses the SBML kinetic law value as the propensity
  (species as amounts: ``hasOnlySubstanceUnits=true``, compartment size 1). Adapter writes the law
  explicitly, ``theta * X * (X - 1) / 2`` (in general theta * prod falling factorials / prod r!), so
  roadrunner's own mass-action handling (its issue #1135 on S1+S1) never comes into play.
* **rebop 0.9.2** mass action (numeric ``rate`` in ``add_reaction``, reactant listed twice for 2A)
  is ``k * A * (A - 1)`` (its docstring: "4.2 * A * (A-1)" is the equivalent explicit rate; its Rust
  ``Rate::rate`` multiplies n (n-1) ... (n-r+1)), i.e. the falling factorial without 1/r!; for 3A
  likewise ``k * A(A-1)(A-2)``. Adapter: ``k = theta / prod r!``.

Fixed species (``net.fixed``) are passed to every peer as "reactant and product with the same
stoichiometry", so reactions read them but do not change them.

How each peer is driven (the public API, as a user would):

* GillesPy2: ``SSACSolver(model=m)`` once (set-up: code generation + g++ build), then ONE
  ``m.run(solver=solver, number_of_trajectories=R, seed=s)`` for all realizations -- the C++
  executable simulates them one after another in a child process, whose CPU time is counted
  (``RUSAGE_CHILDREN``). Per-call costs (process start, dependency-graph build, text streaming of
  the trajectories) are thus paid once per batch, not per realization. The Python parent parses the
  streamed output while the child simulates, so wall time can be *below* CPU time (two processes at
  once): compare peers per CPU-second.
* libRoadRunner: SBML load (LLVM JIT) + ``setIntegrator("gillespie")``, ``variable_step_size=False``
  once; per realization ``reset()``, ``integrator.seed = s_i``, ``simulate(0, t_end, points)``.
* rebop: ``Gillespie()`` + ``add_reaction`` once; per realization
  ``run(init, tmax=t_end, nb_steps=points-1, rng=generator)`` (returns an xarray Dataset). Building
  that Dataset costs ~1-2 ms per call, ~30-60x rebop's Rust engine on MM, and rebop's default dense
  representation costs O(M*N) per step on large networks, so ``variant="sparse"`` (public
  ``sparse=True``) and ``variant="core"`` (the engine alone: the Rust call ``run`` makes, sparse, no
  Dataset; same seeds, identical results) are timed too. See :data:`VARIANTS`. The CLI prints all.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from distsim.models.reactions import Reaction, ReactionNetwork  # noqa: E402

PEERS = ("gillespy2", "roadrunner", "rebop")

_THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS",
                "VECLIB_MAXIMUM_THREADS", "RAYON_NUM_THREADS")
UNAVAILABLE = "unavailable: "


# ---- small helpers -----------------------------------------------------------------------------------


@contextlib.contextmanager
def _single_thread_env() -> Iterator[None]:
    """Thread-count variables = 1 and the venv's bin/ first on PATH, for the duration of a run.

    Set here rather than at import so that importing this module next to distsim's own (multi-threaded)
    CPU SSA changes nothing. Child processes (GillesPy2's C++ solver) inherit them.
    """
    old = {k: os.environ.get(k) for k in (*_THREAD_VARS, "PATH")}
    try:
        for k in _THREAD_VARS:
            os.environ[k] = "1"
        os.environ["PATH"] = _path_with_venv_bin()
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _path_with_venv_bin() -> str:
    """PATH with this interpreter's bin/ first (GillesPy2 looks for ``scons`` there; without it, it runs
    ``python -m SCons`` with the *base* interpreter, which has no SCons inside a venv)."""
    path = os.environ.get("PATH", "")
    vbin = str(Path(sys.executable).parent)
    parts = [p for p in path.split(os.pathsep) if p and p != vbin]
    return os.pathsep.join([vbin, *parts])


def _cpu_now() -> float:
    """CPU seconds of this process (all threads) plus its waited-for children, user + system."""
    try:
        import resource

        s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime
    except ImportError:  # pragma: no cover - non-POSIX
        t = os.times()
        return t.user + t.system + t.children_user + t.children_system


def _timed(fn: Callable[[], object]) -> tuple[object, float, float]:
    c0, w0 = _cpu_now(), time.perf_counter()
    out = fn()
    return out, _cpu_now() - c0, time.perf_counter() - w0


def _check_mass_action(net: ReactionNetwork) -> None:
    for j, r in enumerate(net.reactions):
        if not r.mass_action:
            raise ValueError(f"peer adapters support mass-action networks only; reaction "
                             f"{r.name or j + 1} has a general kinetic law")


def _sides(net: ReactionNetwork, j: int) -> tuple[dict[int, int], dict[int, int]]:
    """Reactants and products of reaction j as {species index: stoichiometry}; a fixed species appears
    with the same stoichiometry on both sides (read, never changed)."""
    r = net.reactions[j]
    rct: dict[int, int] = {}
    prd: dict[int, int] = {}
    for i, s in r.reactants:
        rct[i] = rct.get(i, 0) + s
    for i, s in r.products:
        if i not in net.fixed:
            prd[i] = prd.get(i, 0) + s
    for i in net.fixed:
        if i in rct:
            prd[i] = rct[i]
    return rct, prd


def _falling_constant(net: ReactionNetwork, j: int) -> float:
    """Rate constant k for a peer whose mass action is k * prod_i x_i (x_i - 1) ... (x_i - r_i + 1):
    k = theta_j / prod_i r_i! (distsim's propensity is theta_j * prod_i C(x_i, r_i))."""
    rct, _ = _sides(net, j)
    return net.theta(j) / math.prod(math.factorial(s) for s in rct.values())


def _names(net: ReactionNetwork) -> list[str]:
    """Peer-side species ids (s0, s1, ...): valid SBML/C++/expression identifiers, no clashes."""
    return [f"s{i}" for i in range(net.n_species)]


def _seeds(seed: int, n: int, stream: int) -> np.ndarray:
    """n positive 31-bit integer seeds from stream ``stream`` of ``seed`` (0 = warm-up, 1 = timed run)."""
    ss = np.random.SeedSequence([int(seed), stream])
    return (ss.generate_state(max(n, 1), dtype=np.uint32) >> 1).astype(np.int64) + 1


# ---- peers ---------------------------------------------------------------------------------------------


class _Peer:
    name = ""
    batch = False  # True: one call simulates all realizations (no per-realization time budget)

    def __init__(self, net: ReactionNetwork, t_end: float, points: int, variant: str):
        self.net, self.t_end, self.points, self.variant = net, float(t_end), int(points), variant

    def setup(self) -> None:
        raise NotImplementedError

    def simulate(self, n: int, seed: int, stream: int, deadline: float | None) -> np.ndarray:
        """Final states [done, n_species] of up to n realizations (fewer if the deadline passes)."""
        raise NotImplementedError


class _GillesPy2(_Peer):
    name = "gillespy2"
    batch = True

    def setup(self) -> None:
        import gillespy2
        from gillespy2 import Model, Parameter, Reaction as GReaction, Species, SSACSolver

        with contextlib.suppress(Exception):
            gillespy2.log.setLevel("ERROR")
        net, names = self.net, _names(self.net)
        m = Model(name="distsim_peer")
        m.add_species([Species(name=names[i], initial_value=int(x), mode="discrete")
                       for i, x in enumerate(net.initial)])
        params, reactions = [], []
        for j in range(net.n_reactions):
            rct, prd = _sides(net, j)
            pname = f"k{j}"
            params.append(Parameter(name=pname, expression=repr(_falling_constant(net, j))))
            kw = dict(name=f"r{j}", reactants={names[i]: s for i, s in rct.items()},
                      products={names[i]: s for i, s in prd.items()})
            if sum(rct.values()) <= 2:  # GillesPy2 mass action: k*X*(X-1) for 2X, k*X*Y for X+Y
                reactions.append(GReaction(rate=pname, **kw))
            else:  # GillesPy2 refuses order > 2 as mass action: same falling-factorial law, spelled out
                factors = [pname] + [f"({names[i]} - {k})" if k else names[i]
                                     for i, s in rct.items() for k in range(s)]
                reactions.append(GReaction(propensity_function=" * ".join(factors), **kw))
        m.add_parameter(params)
        m.add_reaction(reactions)
        m.timespan(np.linspace(0.0, self.t_end, self.points))
        self.model = m
        self.solver = SSACSolver(model=m)  # generates and compiles the C++ solver (g++ via SCons)

    def simulate(self, n, seed, stream, deadline):
        s = int(_seeds(seed, 1, stream)[0])
        res = self.model.run(solver=self.solver, number_of_trajectories=n, seed=s)
        names = _names(self.net)
        out = np.empty((n, self.net.n_species), dtype=np.int64)
        for r in range(n):
            traj = res[r]
            if len(traj["time"]) != self.points:
                raise RuntimeError(f"gillespy2 returned {len(traj['time'])} output times, expected {self.points}")
            out[r] = [int(round(traj[nm][-1])) for nm in names]
        return out


def sbml_document(net: ReactionNetwork) -> str:
    """SBML L3V1 text of ``net``: amounts (hasOnlySubstanceUnits, compartment size 1) and explicit kinetic
    laws theta * prod_i x_i (x_i - 1) ... (x_i - r_i + 1) / prod_i r_i! (= distsim's propensity)."""
    _check_mass_action(net)
    names = _names(net)

    def ci(x: str) -> str:
        return f"<ci> {x} </ci>"

    def cn(v: int) -> str:
        return f'<cn type="integer"> {v} </cn>'

    def apply(op: str, args: list[str]) -> str:
        return f"<apply><{op}/>{''.join(args)}</apply>"

    sp = "".join(f'<species id="{names[i]}" compartment="c" initialAmount="{int(x)}" '
                 f'hasOnlySubstanceUnits="true" boundaryCondition="false" constant="false"/>'
                 for i, x in enumerate(net.initial))
    pa = "".join(f'<parameter id="k{j}" value="{net.theta(j)!r}" constant="true"/>'
                 for j in range(net.n_reactions))
    rx = []
    for j in range(net.n_reactions):
        rct, prd = _sides(net, j)
        factors = [ci(f"k{j}")]
        denom = 1
        for i, s in rct.items():
            denom *= math.factorial(s)
            factors += [ci(names[i]) if k == 0 else apply("minus", [ci(names[i]), cn(k)]) for k in range(s)]
        law = factors[0] if len(factors) == 1 else apply("times", factors)
        if denom != 1:
            law = apply("divide", [law, cn(denom)])

        def refs(side: dict[int, int], tag: str) -> str:
            if not side:
                return ""
            items = "".join(f'<speciesReference species="{names[i]}" stoichiometry="{s}" constant="true"/>'
                            for i, s in side.items())
            return f"<{tag}>{items}</{tag}>"

        rx.append(f'<reaction id="r{j}" reversible="false" fast="false">'
                  f'{refs(rct, "listOfReactants")}{refs(prd, "listOfProducts")}'
                  f'<kineticLaw><math xmlns="http://www.w3.org/1998/Math/MathML">{law}</math></kineticLaw>'
                  f'</reaction>')
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            '<sbml xmlns="http://www.sbml.org/sbml/level3/version1/core" level="3" version="1">'
            '<model id="distsim_peer" substanceUnits="item" timeUnits="second" extentUnits="item">'
            '<listOfCompartments><compartment id="c" spatialDimensions="3" size="1" constant="true"/>'
            f'</listOfCompartments><listOfSpecies>{sp}</listOfSpecies>'
            + (f"<listOfParameters>{pa}</listOfParameters>" if pa else "")
            + f"<listOfReactions>{''.join(rx)}</listOfReactions></model></sbml>\n")


class _RoadRunner(_Peer):
    name = "roadrunner"

    def setup(self) -> None:
        import roadrunner

        with contextlib.suppress(Exception):
            roadrunner.Logger.setLevel(roadrunner.Logger.LOG_ERROR)
        rr = roadrunner.RoadRunner(sbml_document(self.net))  # parse + LLVM JIT
        rr.setIntegrator("gillespie")
        rr.integrator.variable_step_size = False  # default True: one row per event, not our grid
        rr.timeCourseSelections = ["time", *_names(self.net)]
        self.rr = rr

    def simulate(self, n, seed, stream, deadline):
        rr, it = self.rr, self.rr.integrator
        seeds = _seeds(seed, n, stream)
        out = np.empty((n, self.net.n_species), dtype=np.int64)
        for r in range(n):
            rr.reset()  # floating species back to their initial amounts, time to 0
            it.seed = int(seeds[r])
            res = rr.simulate(0.0, self.t_end, self.points)
            if r == 0 and res.shape[0] != self.points:
                raise RuntimeError(f"roadrunner returned {res.shape[0]} output times, expected {self.points}")
            out[r] = np.rint(res[-1, 1:])
            if deadline is not None and time.perf_counter() > deadline:
                return out[: r + 1]
        return out


class _Rebop(_Peer):
    name = "rebop"

    def setup(self) -> None:
        import rebop

        net, names = self.net, _names(self.net)
        g = rebop.Gillespie()
        known: set[int] = set()
        for j in range(net.n_reactions):
            rct, prd = _sides(net, j)
            known |= set(rct) | set(prd)
            g.add_reaction(_falling_constant(net, j),  # rebop mass action: k * A * (A - 1) for 2A
                           [names[i] for i, s in rct.items() for _ in range(s)],
                           [names[i] for i, s in prd.items() for _ in range(s)])
        self.g = g
        self.known = sorted(known)  # species rebop knows (others never change)
        self.init = {names[i]: int(net.initial[i]) for i in self.known}

    def simulate(self, n, seed, stream, deadline):
        names = _names(self.net)
        rng = np.random.default_rng(np.random.SeedSequence([int(seed), stream]))
        out = np.tile(np.asarray(self.net.initial, dtype=np.int64), (n, 1))
        cols = self.known
        core = self.variant == "core"
        if core:
            lib = getattr(self.g, "gillespie", None)
            if lib is None or not hasattr(lib, "run") or not hasattr(lib, "set_init"):
                raise RuntimeError("this rebop has no Gillespie.gillespie.run/set_init (variant 'core')")
            umax = np.iinfo(np.uint64).max
        for r in range(n):
            if core:  # what rebop.Gillespie.run does, minus building the xarray Dataset
                lib.set_init(self.init)
                times, res = lib.run(self.t_end, self.points - 1, params={},
                                     seed=rng.integers(umax, dtype=np.uint64), sparse=True, var_names=None)
                nt = len(times)
                last = [int(res[names[i]][-1]) for i in cols]
            else:
                ds = self.g.run(self.init, tmax=self.t_end, nb_steps=self.points - 1, rng=rng,
                                sparse=True if self.variant == "sparse" else None)
                nt = ds.sizes["time"]
                last = [int(ds[names[i]].values[-1]) for i in cols]
            if r == 0 and nt != self.points:
                raise RuntimeError(f"rebop returned {nt} output times, expected {self.points}")
            out[r, cols] = last
            if deadline is not None and time.perf_counter() > deadline:
                return out[: r + 1]
        return out


_ADAPTERS: dict[str, type[_Peer]] = {"gillespy2": _GillesPy2, "roadrunner": _RoadRunner, "rebop": _Rebop}

#: Ways to drive each peer; the first is the default (the public API with the tool's defaults).
#: rebop: "public" = ``rebop.Gillespie.run(...)`` as documented (dense reactions: rebop 0.9.2's
#: ``sparse=None`` means False, although the docstring speaks of a heuristic; returns an xarray Dataset,
#: ~1-2 ms of Python per call, which dominates small models); "sparse" = the same with the documented
#: ``sparse=True`` (per-step cost O(M) instead of O(M*N): 170x faster on the 1,000-chain, ~5% slower on
#: MM); "core" = the Rust call that ``run`` makes (``Gillespie.gillespie.set_init`` + ``.run``), with
#: ``sparse=True`` and no Dataset: the engine's own speed. All three consume the same seeds and give
#: identical trajectories. "core" uses a private attribute and may break with a new rebop.
VARIANTS: dict[str, tuple[str, ...]] = {"gillespy2": ("ssac",), "roadrunner": ("gillespie",),
                                        "rebop": ("public", "sparse", "core")}


# ---- public API ------------------------------------------------------------------------------------------


def available() -> dict[str, str]:
    """peer -> version string, or ``"unavailable: <reason>"`` when it cannot run here."""
    out: dict[str, str] = {}
    try:
        import gillespy2

        with _single_thread_env():
            missing = [d for d in ("g++",) if shutil.which(d) is None]
            if shutil.which("scons") is None:
                missing.append("scons (pip install scons; the venv's bin/ must hold the scons script)")
        out["gillespy2"] = (UNAVAILABLE + "C++ solver needs " + ", ".join(missing)) if missing \
            else str(gillespy2.__version__)
    except Exception as e:  # noqa: BLE001 - any import failure is a reason
        out["gillespy2"] = f"{UNAVAILABLE}import gillespy2 failed ({type(e).__name__}: {e})"
    try:
        import roadrunner

        out["roadrunner"] = str(roadrunner.__version__)
    except Exception as e:  # noqa: BLE001
        out["roadrunner"] = f"{UNAVAILABLE}import roadrunner (pip: libroadrunner) failed ({type(e).__name__}: {e})"
    try:
        import rebop

        out["rebop"] = str(rebop.__version__)
    except Exception as e:  # noqa: BLE001
        out["rebop"] = f"{UNAVAILABLE}import rebop failed ({type(e).__name__}: {e})"
    return out


def runnable() -> tuple[str, ...]:
    """The peers that :func:`available` reports as usable."""
    return tuple(p for p, v in available().items() if not v.startswith(UNAVAILABLE))


def run_peer(name: str, net: ReactionNetwork, *, t_end: float, points: int, realizations: int, seed: int = 0,
             warmup: int = 1, max_seconds: float | None = None, variant: str | None = None) -> dict:
    """Run ``realizations`` SSA realizations of ``net`` on peer ``name`` (single process, one core).

    ``points`` output times equally spaced on [0, t_end] (as every peer is asked to return them).
    Set-up (model build, g++ compile, JIT) is timed separately, then one warm-up run of ``warmup``
    realizations (untimed, other seeds), then the timed run. ``max_seconds`` (wall) stops the per-
    realization peers (roadrunner, rebop) early; ``result["realizations"]`` is the number actually run.
    GillesPy2 simulates the whole batch in one call and ignores it. ``variant`` picks how the peer is
    driven (:data:`VARIANTS`; default the first: the public API).

    Returns a dict with ``peer``, ``version``, ``realizations``, ``requested_realizations``,
    ``cpu_seconds`` (process + waited-for children), ``wall_seconds``, ``setup_seconds`` (wall; also
    ``setup_cpu_seconds``), ``warmup_seconds``, ``realizations_per_cpu_second``,
    ``realizations_per_wall_second``, ``mean_final`` / ``std_final`` (float arrays over ``net.species``),
    ``final_states`` (int64 [realizations, n_species]), ``species``, ``t_end``, ``points``, ``seed``,
    ``mode`` ("batch" or "per-realization"), ``variant``.
    """
    if name not in _ADAPTERS:
        raise ValueError(f"unknown peer {name!r}; peers are {', '.join(PEERS)}")
    _check_mass_action(net)
    if realizations < 1:
        raise ValueError("realizations must be >= 1")
    if points < 2 or not t_end > 0:
        raise ValueError("need points >= 2 and t_end > 0")
    variant = VARIANTS[name][0] if variant is None else variant
    if variant not in VARIANTS[name]:
        raise ValueError(f"unknown variant {variant!r} for {name}; variants are {', '.join(VARIANTS[name])}")
    version = available()[name]
    if version.startswith(UNAVAILABLE):
        raise RuntimeError(f"{name} {version}")
    peer = _ADAPTERS[name](net, t_end, points, variant)
    with _single_thread_env():
        _, setup_cpu, setup_wall = _timed(peer.setup)
        warm_wall = 0.0
        if warmup > 0:
            _, _, warm_wall = _timed(lambda: peer.simulate(warmup, seed, 0, None))
        deadline = None if max_seconds is None else time.perf_counter() + float(max_seconds)
        final, cpu, wall = _timed(lambda: peer.simulate(realizations, seed, 1, deadline))
    final = np.asarray(final, dtype=np.int64)
    done = final.shape[0]
    return {
        "peer": name,
        "version": version,
        "realizations": done,
        "requested_realizations": int(realizations),
        "cpu_seconds": cpu,
        "wall_seconds": wall,
        "setup_seconds": setup_wall,
        "setup_cpu_seconds": setup_cpu,
        "warmup_seconds": warm_wall,
        "realizations_per_cpu_second": done / cpu if cpu > 0 else float("inf"),
        "realizations_per_wall_second": done / wall if wall > 0 else float("inf"),
        "mean_final": final.mean(axis=0),
        "std_final": final.std(axis=0, ddof=1) if done > 1 else np.zeros(net.n_species),
        "final_states": final,
        "species": tuple(net.species),
        "t_end": float(t_end),
        "points": int(points),
        "seed": int(seed),
        "mode": "batch" if peer.batch else "per-realization",
        "variant": variant,
    }


def firings_per_second(result: dict, firings_per_realization: float, *, wall: bool = False) -> float:
    """Reaction firings per CPU-second (or per wall-second) of a :func:`run_peer` result, given the mean
    number of firings per realization (from distsim's own run of the same network; peers do not all
    expose event counts)."""
    key = "realizations_per_wall_second" if wall else "realizations_per_cpu_second"
    return float(result[key]) * float(firings_per_realization)


# ---- models and CLI -------------------------------------------------------------------------------------------


def michaelis_menten() -> tuple[ReactionNetwork, float, int]:
    """MM: E+S->ES (k1=0.001), ES->E+S (k2=0.2), ES->E+P (k3=0.1); x0 E=120 S=301; t_end 100, 101 points."""
    E, S, ES, P = range(4)
    net = ReactionNetwork.create(
        ["E", "S", "ES", "P"], {"E": 120, "S": 301, "ES": 0, "P": 0},
        [Reaction(((E, 1), (S, 1)), ((ES, 1),), "k1", name="bind"),
         Reaction(((ES, 1),), ((E, 1), (S, 1)), "k2", name="unbind"),
         Reaction(((ES, 1),), ((E, 1), (P, 1)), "k3", name="convert")],
        {"k1": 0.001, "k2": 0.2, "k3": 0.1}, name="michaelis_menten")
    return net, 100.0, 101


def cyclic_chain(n: int) -> tuple[ReactionNetwork, float, int]:
    """Cyclic chain S_i -> S_{i+1 mod N}, rate 1, x_i(0) = 1; t_end 10, 11 points (N * 10 firings expected)."""
    net = ReactionNetwork.create(
        [f"S{i}" for i in range(n)], [1] * n,
        [Reaction(((i, 1),), (((i + 1) % n, 1),), 1.0, name=f"hop{i}") for i in range(n)],
        name=f"cyclic_chain_{n}")
    return net, 10.0, 11


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", choices=("mm", "chain"), default="mm")
    ap.add_argument("--n", type=int, default=1000, help="chain length (--model chain)")
    ap.add_argument("--realizations", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--peers", nargs="+", choices=PEERS, default=list(PEERS))
    ap.add_argument("--max-seconds", type=float, default=120.0,
                    help="wall budget per per-realization peer (roadrunner, rebop); 0 = none")
    ap.add_argument("--firings", type=float, default=None,
                    help="mean firings per realization (default: N*t_end for the chain, none for MM)")
    ap.add_argument("--show", type=int, default=4, help="species shown in the mean-final column")
    ap.add_argument("--default-variant-only", dest="all_variants", action="store_false",
                    help="one row per peer (default: also rebop 'sparse' and 'core', see VARIANTS)")
    a = ap.parse_args(argv)
    for k in _THREAD_VARS:
        os.environ[k] = "1"

    net, t_end, points = michaelis_menten() if a.model == "mm" else cyclic_chain(a.n)
    firings = a.firings if a.firings is not None else (a.n * t_end if a.model == "chain" else None)
    avail = available()
    print(f"# {net.summary()}; t_end={t_end}, {points} output points, {a.realizations} realizations, "
          f"seed {a.seed}; one core (single process), rates per CPU-second incl. child processes")
    head = "| peer | version | setup s | realizations | CPU s | real./CPU-s | real./wall-s |"
    head += " firings/CPU-s |" if firings else ""
    head += f" mean final ({', '.join(net.species[:a.show])}) |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for p in a.peers:
        v = avail[p]
        if v.startswith(UNAVAILABLE):
            print(f"| {p} | {v} |")
            continue
        for var in (VARIANTS[p] if a.all_variants else VARIANTS[p][:1]):
            label = p if var == VARIANTS[p][0] else f"{p} ({var})"
            try:
                r = run_peer(p, net, t_end=t_end, points=points, realizations=a.realizations, seed=a.seed,
                             max_seconds=a.max_seconds or None, variant=var)
            except Exception as e:  # noqa: BLE001 - report and go on with the other peers
                print(f"| {label} | {v} | failed: {type(e).__name__}: {e} |")
                continue
            mean = ", ".join(f"{m:.2f}" for m in r["mean_final"][: a.show])
            row = (f"| {label} | {v} | {r['setup_seconds']:.2f} | {r['realizations']} | {r['cpu_seconds']:.3f} | "
                   f"{r['realizations_per_cpu_second']:,.1f} | {r['realizations_per_wall_second']:,.1f} |")
            row += f" {firings_per_second(r, firings):.3g} |" if firings else ""
            print(row + f" {mean} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
