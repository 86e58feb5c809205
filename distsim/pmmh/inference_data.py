"""``distsim.pmmh.to_inference_data``: an ``arviz.InferenceData`` of a :func:`~distsim.pmmh.infer` Dataset
(ArviZ is optional, as for :func:`distsim.mcmc.to_inference_data`)."""

from __future__ import annotations

from typing import Any

import xarray as xr

from ..mcmc.diagnostics import posterior_variables
from ..mcmc.inference_data import require_arviz


def to_inference_data(ds: xr.Dataset) -> Any:
    """Groups: ``posterior`` (the parameters, with the Dataset's attrs), ``sample_stats``
    (``log_likelihood``: the particle filter's estimate of the current point, ``accepted``), and
    ``observed_data`` (``observed_value``, with the experiment, time and replicate of each observation)."""
    az = require_arviz()
    posterior = xr.Dataset({v: ds[v] for v in posterior_variables(ds)}, attrs=dict(ds.attrs))
    sample_stats = xr.Dataset({k: ds[k].reset_coords(drop=True) for k in ("log_likelihood", "accepted")})
    observed = xr.Dataset({"observed_value": ds["observed_value"]})
    return az.InferenceData(posterior=posterior, sample_stats=sample_stats, observed_data=observed)
