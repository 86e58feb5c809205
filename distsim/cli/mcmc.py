"""``distsim mcmc rates``: posterior of mass-action rate constants from exact discrete observations.

    distsim mcmc rates MODEL --data obs.csv --iterations N --burn-in B --chains C
                       [--prior k1=gamma:SHAPE,RATE ...] [--improper-prior] [--derived K_M=(k2+k3)/k1 ...]
                       [--thin K] [--seed S] [-o posterior.nc] [--plot post.png] [--bands bands.png]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from .common import client, finish


def register(subparsers: Any) -> None:
    """Add the ``mcmc`` command (with its ``rates`` subcommand) to the ``distsim`` parser."""
    mc = subparsers.add_parser("mcmc", help="Bayesian rate inference by data-augmentation MCMC (seed 003)")
    ms = mc.add_subparsers(dest="mcmc_command", metavar="MCMC_COMMAND")
    ms.required = True
    r = ms.add_parser("rates", help="posterior of the rate constants given exact observations",
                      formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    r.add_argument("model", help="reaction network (.rxn text or SBML); mass-action reactions only")
    r.add_argument("--data", required=True, help="CSV 'time,<species>...' (blank = unobserved)")
    r.add_argument("--iterations", type=int, default=50_000, help="Gibbs iterations per chain, burn-in included")
    r.add_argument("--burn-in", type=int, default=10_000)
    r.add_argument("--chains", type=int, default=4)
    r.add_argument("--thin", type=int, default=1)
    r.add_argument("--prior", action="append", default=[], metavar="NAME=gamma:SHAPE,RATE",
                   help="gamma prior of a rate parameter (one per parameter, by its name in the model)")
    r.add_argument("--improper-prior", action="store_true",
                   help="use the improper 1/theta prior for parameters without --prior (may be improper!)")
    r.add_argument("--derived", action="append", default=[], metavar="NAME=EXPR",
                   help="derived quantity of the parameters, e.g. K_M=(k2+k3)/k1")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--max-attempts", type=int, default=None, help="attempts per interval and iteration before "
                   "giving up (default 2^31)")
    r.add_argument("--output", "-o", default=None, help="write the posterior Dataset (.nc or .zarr)")
    r.add_argument("--plot", default=None, help="PNG of posterior histograms and the joint of the first two rates")
    r.add_argument("--bands", default=None, help="PNG of 95%% pointwise bands of the latent paths")
    r.add_argument("--band-draws", type=int, default=200, help="draws re-simulated for --bands (default 200)")


def run(args: argparse.Namespace) -> int:
    """Run ``distsim mcmc rates``."""
    from .. import results
    from ..mcmc.priors import parse_prior_spec
    from ..mcmc.sampler import MAX_ATTEMPTS, infer_rates, summary
    from ..models.formats.reaction_formats import load_reactions as load

    prior = dict(parse_prior_spec(p) for p in args.prior)
    if args.output:
        results.check_output_path(args.output)
    for png in (args.plot, args.bands):
        if png is not None and not str(png).lower().endswith(".png"):
            raise ValueError(f"{png}: plots are written as .png")
    net = load(args.model)
    print(net.summary())
    t0 = time.perf_counter()
    with client(args) as dask_client:
        ds = infer_rates(net, args.data, prior=prior, improper_prior=args.improper_prior, iterations=args.iterations,
                         burn_in=args.burn_in, chains=args.chains, thin=args.thin, seed=args.seed, client=dask_client,
                         derived=args.derived or None, backend="cpu" if getattr(args, "cpu", False) else None,
                         max_attempts=args.max_attempts or MAX_ATTEMPTS, progress=not getattr(args, "quiet", False))
    a = ds.attrs
    print(f"{a['chains']} chains x {a['iterations']} iterations (burn-in {a['burn_in']}, thin {a['thin']}) on "
          f"{a['backend']}: {a['iterations_per_second']:.4g} iterations/s, {a['attempts_per_second']:.4g} attempts/s "
          f"({a['attempts_simulated']:.4g} attempts in {a['sampling_seconds']:.2f} s)")
    print(f"{'variable':<12} {'mean':>11} {'sd':>11} {'2.5%':>11} {'97.5%':>11} {'R-hat':>7} {'ESS':>8}")
    for row in summary(ds):
        print(f"{row['variable']:<12} {row['mean']:11.4g} {row['sd']:11.4g} {row['lo']:11.4g} {row['hi']:11.4g} "
              f"{row['rhat']:7.3f} {row['ess_bulk']:8.0f}")
    acc = ds.acceptance_rate.mean("chain").values
    print("acceptance per interval: " + " ".join(f"{v:.2e}" for v in acc))
    if args.plot:
        from ..mcmc.plots import plot_posterior

        plot_posterior(ds, args.plot)
    if args.bands:
        from ..mcmc.trajectories import latent_trajectories

        latent_trajectories(ds, net, args.data, draws=args.band_draws, plot=args.bands)
    return finish(ds, args.output, t0, plot=args.plot, bands=args.bands)
