"""Posterior summaries and convergence diagnostics of an MCMC Dataset (ArviZ layout: the data
variables are the posterior, each with dims (chain, draw)).

R-hat is the rank-normalised split R-hat (the larger of the bulk and folded versions) and the ESS
are the bulk and tail (5% and 95% quantile) effective sample sizes of Vehtari, Gelman, Simpson,
Carpenter and Buerkner (2021), computed by arviz-stats, the implementation ArviZ uses.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import xarray as xr

from ..errors import ConvergenceWarning

RHAT_MAX = 1.01  # Vehtari et al. 2021: use the draws only when R-hat < 1.01 ...
ESS_MIN = 400  # ... and the bulk ESS is at least 400 (100 per chain for 4 chains)


def posterior_variables(ds: xr.Dataset) -> list[str]:
    """The data variables with dims (chain, draw, ...): the posterior."""
    return [str(v) for v, da in ds.data_vars.items() if da.dims[:2] == ("chain", "draw")]


def convergence(ds: xr.Dataset) -> pd.DataFrame:
    """R-hat, bulk ESS and tail ESS per posterior variable (NaN where undefined: one chain for
    R-hat, fewer than 4 draws for all three)."""
    from arviz_stats.base import array_stats

    rows = {}
    for v in posterior_variables(ds):
        x = np.asarray(ds[v].transpose("chain", "draw").values, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            rows[v] = (float(array_stats.rhat(x)), float(array_stats.ess(x, method="bulk")),
                       float(array_stats.ess(x, method="tail", prob=(0.05, 0.95))))
    return pd.DataFrame.from_dict(rows, orient="index", columns=["rhat", "ess_bulk", "ess_tail"]).rename_axis(
        "variable")


def interval_columns(prob: float) -> tuple[str, str]:
    """Names of the central ``prob`` interval's ends: ``("2.5%", "97.5%")`` for 0.95."""
    lo = (1 - prob) / 2
    return f"{100 * lo:.6g}%", f"{100 * (1 - lo):.6g}%"


def summary(ds: xr.Dataset, prob: float = 0.95) -> pd.DataFrame:
    """One row per posterior variable: ``mean``, ``sd``, the ends of the central ``prob`` interval
    (columns named by their quantile, e.g. ``2.5%`` and ``97.5%``), ``rhat``, ``ess_bulk`` and
    ``ess_tail``. Mean, sd (ddof=1) and quantiles are over all chains' finite draws."""
    if not 0 < prob < 1:
        raise ValueError(f"prob must be in (0, 1), got {prob!r}")
    lo_col, hi_col = interval_columns(prob)
    lo = (1 - prob) / 2
    rows = {}
    for v in posterior_variables(ds):
        x = np.asarray(ds[v].values, dtype=np.float64).ravel()
        x = x[np.isfinite(x)]
        q = np.quantile(x, [lo, 1 - lo]) if x.size else (np.nan, np.nan)
        rows[v] = {"mean": x.mean() if x.size else np.nan, "sd": x.std(ddof=1) if x.size > 1 else np.nan,
                   lo_col: q[0], hi_col: q[1]}
    table = pd.DataFrame.from_dict(rows, orient="index", columns=["mean", "sd", lo_col, hi_col], dtype=np.float64)
    return table.rename_axis("variable").join(convergence(ds))


def warn_if_not_converged(ds: xr.Dataset) -> None:
    """A :class:`~distsim.errors.ConvergenceWarning` naming every variable whose stored ``rhat`` is
    > 1.01 or ``ess_bulk`` < 400 (or not computable: fewer than 4 draws)."""
    diag = pd.DataFrame({k: ds[k].values for k in ("rhat", "ess_bulk")}, index=ds["variable"].values)
    bad_rhat = diag.index[diag["rhat"] > RHAT_MAX]
    bad_ess = diag.index[~(diag["ess_bulk"] >= ESS_MIN)]
    if len(bad_rhat) == 0 and len(bad_ess) == 0:
        return
    parts = []
    if len(bad_rhat):
        parts.append(f"R-hat > {RHAT_MAX} for " + ", ".join(f"{v} ({diag.at[v, 'rhat']:.3g})" for v in bad_rhat))
    if len(bad_ess):
        parts.append(f"bulk ESS < {ESS_MIN} for " + ", ".join(f"{v} ({diag.at[v, 'ess_bulk']:.3g})"
                                                           for v in bad_ess))
    warnings.warn(f"the chains have not converged: {'; '.join(parts)}. Run more iterations (or more chains, "
                  "or a longer burn-in) before using these draws.", ConvergenceWarning, stacklevel=3)
