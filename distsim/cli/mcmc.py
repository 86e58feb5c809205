"""``distsim mcmc rates``: posterior of mass-action rate constants from exact discrete observations (DA-MCMC);
``distsim mcmc petab`` and ``distsim mcmc noisy``: posteriors from noisy measurements (PMMH, distsim.pmmh)."""

from __future__ import annotations

import argparse
import time
from typing import Any

from .common import (LazyDefault, backend, check_outputs, client, finish, parse_pairs, positive_float, positive_int,
                     progress, subparser)

EXAMPLE = """\
example (the Michaelis-Menten data of Niemi and Wheeler 2011; about 2 minutes on 2 CPU cores, seconds on a GPU):
  distsim mcmc rates examples/mcmc/michaelis_menten.rxn --data examples/mcmc/mm_observations.csv \\
      --iterations 500 --burn-in 100 --prior k1=gamma:2,1000 --prior k2=gamma:2,10 --prior k3=gamma:2,10 \\
      --derived "K_M=(k2+k3)/k1"
"""


SAMPLER = "distsim.mcmc.sampler"  # the home of the defaults (read only when shown or used)


def register(subparsers: Any) -> None:
    """Add the ``mcmc`` command (``rates``, ``petab``, ``noisy``) to the ``distsim`` parser."""
    mc = subparsers.add_parser("mcmc", help="Bayesian rate inference: exact counts (data-augmentation MCMC, Niemi and "
                               "Wheeler 2011) or noisy measurements (particle MCMC)")
    ms = mc.add_subparsers(dest="mcmc_command", metavar="MCMC_COMMAND")
    ms.required = True
    r = subparser(ms, "rates", help="posterior of the rate constants given exact observations", epilog=EXAMPLE)
    r.add_argument("model", help="reaction network (.rxn text or SBML); mass-action reactions only")
    _model_options(r)
    r.add_argument("--data", required=True, metavar="CSV", help="observations: 'time,<species>...' (blank = "
                   "unobserved)")
    r.add_argument("--iterations", type=positive_int, default=LazyDefault(SAMPLER, "ITERATIONS"), metavar="N",
                   help="Gibbs iterations per chain, burn-in included (default: %(default)s, as in Python; about 15 s "
                        "on one H200 for the example below, about 2 hours on 2 CPU cores; see the README for what "
                        "converges)")
    r.add_argument("--burn-in", type=int, default=None, metavar="N",
                   help="iterations dropped from each chain (default: a fifth of the iterations done)")
    r.add_argument("--chains", type=positive_int, default=4, metavar="N", help="independent chains")
    r.add_argument("--thin", type=positive_int, default=1, metavar="K", help="keep every K-th draw")
    r.add_argument("--prior", action="append", default=[], metavar="NAME=gamma:SHAPE,RATE",
                   help="gamma prior of a rate parameter (one per parameter, by its name in the model)")
    r.add_argument("--improper-prior", action="store_true",
                   help="use the improper 1/theta prior for parameters without --prior (the posterior may be "
                        "improper)")
    r.add_argument("--derived", action="append", default=[], metavar="NAME=EXPR",
                   help="derived quantity of the parameters, e.g. K_M=(k2+k3)/k1 (repeatable)")
    r.add_argument("--seed", type=int, default=0, help="random seed; a seed gives the same draws on any hardware")
    r.add_argument("--time-limit", type=positive_float, default=None, metavar="SECONDS",
                   help="stop after the round of iterations that passes this many seconds (the result is that of "
                        "the iterations done)")
    r.add_argument("--max-attempts", type=positive_int, default=None, metavar="N",
                   help="attempts per interval and iteration before the interval is called impossible (default: 10^7)")
    r.add_argument("--output", "-o", default=None, metavar="PATH", help="write the posterior Dataset (.nc or .zarr)")
    r.add_argument("--plot", default=None, metavar="PNG",
                   help="PNG of the posterior histograms and the joint of the first two rates")
    r.add_argument("--trace", default=None, metavar="PNG", help="PNG of the draws against iteration, per chain")
    r.add_argument("--bands", default=None, metavar="PNG", help="PNG of 95%% pointwise bands of the latent paths")
    r.add_argument("--band-draws", type=positive_int, default=200, metavar="N", help="draws re-simulated for --bands")
    for option in ("--noise", "--observable"):  # refused with a pointer to `mcmc noisy`
        r.add_argument(option, action="append", default=[], metavar="...",
                       help="not for exact counts: noisy measurements run 'distsim mcmc noisy' (PMMH)")
    _register_petab(ms)
    _register_noisy(ms)


def _model_options(r: Any) -> None:
    r.add_argument("--format", choices=["sbml", "antimony", "text"], default=None,
                   help="the model's format (default: from the extension, else the content)")
    r.add_argument("--reversible", choices=["split", "forward", "error"], default="split",
                   help="SBML reversible reactions: split a law kf*A - kr*B into two reactions, take the law as the "
                   "forward propensity, or refuse")


PETAB_EXAMPLE = """\
example (PEtab test suite case 0001; seconds on 2 CPU cores):
  distsim mcmc petab tests/data/pmmh/petab_0001/_0001.yaml --system-size 10 --iterations 200 --burn-in 50 \\
      --chains 2 --particles 64
"""


def _register_petab(ms: Any) -> None:
    r = subparser(ms, "petab", help="posterior of a PEtab problem's parameters from noisy data (particle MCMC)",
                  epilog=PETAB_EXAMPLE)
    r.add_argument("problem", help="PEtab v1 problem YAML (SBML model, observable, condition, measurement and "
                   "parameter tables)")
    r.add_argument("--system-size", type=positive_float, default=1.0, metavar="OMEGA",
                   help="molecules per substance unit of the SBML: species amounts in the observables are count / "
                        "OMEGA (default 1: counts)")
    r.add_argument("--rounding", choices=["error", "nearest"], default="error",
                   help="SBML amounts that are not whole numbers of molecules: refuse (default), or round to the "
                        "nearest count (recorded in the result's attrs)")
    _pmmh_options(r)


NOISY_EXAMPLE = """\
example (immigration-death counts with Poisson noise, replicates at t = 4; about 20 s on 2 CPU cores):
  distsim mcmc noisy tests/data/pmmh/immigration_death.rxn --data examples/mcmc/noisy_immigration_death.csv \\
      --observable y=X --noise poisson --prior k1=gamma:2,1 --iterations 200 --burn-in 50 --chains 2 --particles 32
"""


def _register_noisy(ms: Any) -> None:
    r = subparser(ms, "noisy", help="posterior of rate and noise parameters from a model and a CSV of noisy "
                  "measurements (particle MCMC)", epilog=NOISY_EXAMPLE)
    r.add_argument("model", help="reaction network (.rxn text, Antimony or SBML; any kinetic law the SSA supports)")
    _model_options(r)
    r.add_argument("--data", required=True, metavar="CSV",
                   help="measurements: 'time,<column>...' (blank = not measured; a time on several consecutive rows: "
                        "replicates)")
    r.add_argument("--observable", action="append", default=[], metavar="NAME=FORMULA",
                   help="column NAME is a formula of species and parameters, e.g. total=A+2*B (repeatable; a column "
                        "named like a species without it is that species' amount)")
    r.add_argument("--noise", action="append", default=[], metavar="[NAME=]MODEL:PARAM",
                   help="noise model of column NAME, or of every other column without NAME=: MODEL one of normal, "
                        "lognormal, poisson, negbin (pmmh.NOISE_MODELS; poisson has no :PARAM); PARAM the sd (normal; "
                        "of log y for lognormal) or the dispersion (negbin): a number or a parameter name (inferred "
                        "when it has a --prior)")
    r.add_argument("--prior", action="append", default=[], metavar="NAME=DIST",
                   help="prior of an inferred parameter (one per parameter): gamma:SHAPE,RATE, lognormal:MU,SIGMA, "
                        "uniform:LO,HI or loguniform:LO,HI")
    r.add_argument("--initial", action="append", default=[], metavar="NAME=VALUE",
                   help="an inferred parameter's starting value, or a species' initial count (a number, or a "
                        "parameter name: round(value x OMEGA) molecules); repeatable")
    r.add_argument("--species-scale", type=positive_float, default=1.0, metavar="OMEGA",
                   help="observables read species amounts as count / OMEGA (default 1: counts)")
    _pmmh_options(r)


def _pmmh_options(r: Any) -> None:
    r.add_argument("--particles", default="auto", metavar="N|auto",
                   help="particles of the filter, or 'auto': doubled until Var(log-likelihood estimate) < 1.5")
    r.add_argument("--iterations", type=positive_int, default=2_000, metavar="N",
                   help="Metropolis-Hastings iterations per chain, burn-in included")
    r.add_argument("--burn-in", type=int, default=500, metavar="N",
                   help="iterations dropped from each chain (the proposal adapts during them)")
    r.add_argument("--chains", type=positive_int, default=4, metavar="N", help="independent chains")
    r.add_argument("--seed", type=int, default=0, help="random seed; a seed gives the same draws on any hardware")
    r.add_argument("--time-limit", type=positive_float, default=None, metavar="SECONDS",
                   help="stop after the round of iterations that passes this many seconds")
    r.add_argument("--output", "-o", default=None, metavar="PATH", help="write the posterior Dataset (.nc or .zarr)")


def run(args: argparse.Namespace) -> int:
    """Run ``distsim mcmc rates``, ``distsim mcmc petab`` or ``distsim mcmc noisy``."""
    if args.mcmc_command == "petab":
        return run_petab(args)
    if args.mcmc_command == "noisy":
        return run_noisy(args)
    if args.noise or args.observable:
        from ..errors import UsageError

        raise UsageError(f"--{'noise' if args.noise else 'observable'}: mcmc rates takes exact counts; for noisy "
                         "measurements run PMMH with 'distsim mcmc noisy MODEL --data CSV --noise ...'")
    from ..mcmc.priors import parse_prior_spec
    from ..mcmc.diagnostics import summary
    from ..mcmc.sampler import MAX_ATTEMPTS, infer_rates
    from ..models.sources import load_network as load

    check_outputs(args, data=[args.output], figures=[args.plot, args.trace, args.bands])
    prior = dict(parse_prior_spec(p) for p in args.prior)
    net = load(args.model, format=args.format, reversible=args.reversible)
    print(net.summary())
    t0 = time.perf_counter()
    with client(args) as dask_client:
        ds = infer_rates(net, args.data, prior=prior, improper_prior=args.improper_prior,
                         iterations=LazyDefault.resolve(args.iterations), burn_in=args.burn_in,
                         chains=args.chains, thin=args.thin, seed=args.seed, client=dask_client,
                         derived=args.derived or None, backend=backend(args),
                         max_attempts=args.max_attempts or MAX_ATTEMPTS, progress=progress(args),
                         time_limit=args.time_limit)
    a = ds.attrs
    print(f"{a['chains']} chains x {a['iterations']} iterations (burn-in {a['burn_in']}, thin {a['thin']}) on "
          f"{a['backend']}: {a['iterations_per_second']:.4g} iterations/s, {a['attempts_per_second']:.4g} attempts/s "
          f"({a['attempts_simulated']:.4g} attempts in {a['sampling_seconds']:.2f} s)"
          + (" -- stopped by the time limit" if a.get("stopped_by") == "time_limit" else ""))
    table = summary(ds, prob=0.95)
    lo, hi = table.columns[2:4]  # the interval's ends, named by their quantiles
    print(f"{'variable':<12} {'mean':>11} {'sd':>11} {lo:>11} {hi:>11} {'R-hat':>7} {'ESS':>8}")
    for name, row in table.iterrows():
        print(f"{name:<12} {row['mean']:11.4g} {row['sd']:11.4g} {row[lo]:11.4g} {row[hi]:11.4g} "
              f"{row['rhat']:7.3f} {row['ess_bulk']:8.0f}")
    acc = ds.acceptance_rate.mean("chain").values
    print("acceptance per interval: " + " ".join(f"{v:.2e}" for v in acc))
    if a["initial_from_model"]:
        print(f"first values of {a['initial_from_model'].replace(',', ', ')} (unobserved) are the model's initial amounts")

    def posterior(path: str) -> None:
        from ..mcmc.plots import plot_posterior

        plot_posterior(ds, path)

    def trace(path: str) -> None:
        from ..mcmc.plots import plot_trace

        plot_trace(ds, path)

    def bands(path: str) -> None:
        from ..mcmc.trajectories import latent_trajectories

        latent_trajectories(ds, net, args.data, draws=args.band_draws, plot=path)

    return finish(args, ds, args.output, t0, {"plot": (args.plot, posterior), "trace": (args.trace, trace),
                                                 "bands": (args.bands, bands)})


def _particles(args: argparse.Namespace) -> int | str:
    from ..errors import UsageError

    if args.particles == "auto":
        return "auto"
    try:
        n = int(args.particles)
    except ValueError:
        n = 0
    if n < 1:
        raise UsageError(f"--particles {args.particles!r}: expected a positive integer or 'auto'")
    return n


def run_petab(args: argparse.Namespace) -> int:
    """Run ``distsim mcmc petab``: PMMH (distsim.pmmh) on a PEtab problem."""
    from ..pmmh.petab import read_problem

    check_outputs(args, data=[args.output])
    particles = _particles(args)
    p = read_problem(args.problem, system_size=args.system_size, rounding=args.rounding)
    return _run_pmmh(args, p["net"], p["observables"], p["experiments"], p["prior"], p["initial"], particles,
                     args.system_size, {"petab_problem": p["source"]})


def run_noisy(args: argparse.Namespace) -> int:
    """Run ``distsim mcmc noisy``: PMMH (distsim.pmmh) on a model and a CSV of noisy measurements."""
    from ..errors import UsageError
    from ..models.sources import load_network
    from ..pmmh.csvdata import read_noisy
    from ..pmmh.priors import as_prior

    check_outputs(args, data=[args.output])
    particles = _particles(args)
    prior = parse_pairs(args.prior, "--prior")
    for name, spec in prior.items():
        try:
            as_prior(name, spec)
        except ValueError as e:
            raise UsageError(f"--prior {name}={spec}: {e}") from None
    if not prior:
        raise UsageError("give a --prior NAME=DIST for every parameter to infer (e.g. --prior k1=gamma:2,1)")
    noise: dict[str | None, str] = {}
    for item in args.noise:
        name, eq, spec = item.partition("=")
        key = name.strip() if eq else None
        if key in noise:
            raise UsageError(f"--noise {item!r}: {'column ' + repr(key) if key else 'the default'} is given twice")
        noise[key] = spec if eq else item
    initial: dict[str, float | str] = {}
    for name, value in parse_pairs(args.initial, "--initial").items():
        try:
            initial[name] = float(value)
        except ValueError:
            initial[name] = value
    net = load_network(args.model, format=args.format, reversible=args.reversible)
    try:
        p = read_noisy(net, args.data, noise=noise, observables=parse_pairs(args.observable, "--observable"),
                       prior=prior, initial=initial)
    except ValueError as e:
        if type(e) is ValueError:  # a bad option value (a file's problems are DistsimErrors naming it)
            raise UsageError(str(e)) from None
        raise
    return _run_pmmh(args, net, p["observables"], p["experiments"], prior, p["initial"], particles,
                     args.species_scale, {"data_file": args.data})


def _run_pmmh(args: argparse.Namespace, net: Any, observables: list, experiments: list, prior: dict, initial: dict,
              particles: int | str, species_scale: float, attrs: dict[str, str]) -> int:
    """PMMH on a checked problem: say which sampler runs and why, run it, print the summary, write."""
    from ..mcmc.diagnostics import summary
    from ..pmmh.sampler import infer

    print(net.summary())
    print("noisy observations (" + ", ".join(f"{o.name}: {o.noise}" for o in observables) +
          "): particle marginal Metropolis-Hastings with exact SSA particles ran (distsim mcmc rates, the exact "
          "data-augmentation sampler, takes exact counts of mass-action networks instead)")
    t0 = time.perf_counter()
    with client(args) as dask_client:
        ds = infer(net, observables, experiments, prior=prior, initial=initial,
                   particles=particles, iterations=args.iterations, burn_in=args.burn_in, chains=args.chains,
                   seed=args.seed, client=dask_client, backend=backend(args), progress=progress(args),
                   time_limit=args.time_limit, species_scale=species_scale)
    ds.attrs.update(attrs)
    a = ds.attrs
    print(f"{a['chains']} chains x {a['iterations']} iterations (burn-in {a['burn_in']}), {a['particles']} particles "
          f"(Var log-likelihood {a['loglik_variance_at_start']:.3g}) on {a['backend']}: "
          f"{a['iterations_per_second']:.4g} iterations/s"
          + (" -- stopped by the time limit" if a.get("stopped_by") == "time_limit" else ""))
    table = summary(ds, prob=0.95)
    lo, hi = table.columns[2:4]
    print(f"{'variable':<12} {'mean':>11} {'sd':>11} {lo:>11} {hi:>11} {'R-hat':>7} {'ESS':>8}")
    for name, row in table.iterrows():
        print(f"{name:<12} {row['mean']:11.4g} {row['sd']:11.4g} {row[lo]:11.4g} {row[hi]:11.4g} "
              f"{row['rhat']:7.3f} {row['ess_bulk']:8.0f}")
    print("acceptance per chain: " + " ".join(f"{v:.2f}" for v in ds.acceptance_rate.values))
    return finish(args, ds, args.output, t0, {})
