"""``distsim.mcmc.to_inference_data``: an ``arviz.InferenceData`` of an :func:`~distsim.mcmc.infer_rates`
Dataset (ArviZ is optional: ``pip install arviz``)."""

from __future__ import annotations

from typing import Any

import xarray as xr

from .diagnostics import posterior_variables


def require_arviz() -> Any:
    """The arviz module (0.x: it has InferenceData), or an ImportError that says what to install."""
    try:
        import arviz
    except ImportError:
        raise ImportError("to_inference_data needs ArviZ: pip install arviz (a 0.x version; on "
                          "Python >= 3.12 pip install 'arviz<1'), or pip install 'distsim-bio[arviz]'") from None
    if not hasattr(arviz, "InferenceData"):
        raise ImportError(f"ArviZ {arviz.__version__} has no InferenceData (ArviZ 1.x replaced it by xarray.DataTree); "
                          "to_inference_data needs pip install 'arviz<1'")
    return arviz


def to_inference_data(ds: xr.Dataset) -> Any:
    """Groups of an ``arviz.InferenceData`` from a Dataset of :func:`~distsim.mcmc.infer_rates`:

    * ``posterior``: the rate parameters and derived quantities (chain, draw), with the Dataset's attrs;
    * ``sample_stats``: ``attempts`` (chain, draw, interval), the attempts until each interval's
      accepted path, with coordinate ``acceptance_rate`` (chain, interval);
    * ``observed_data``: ``observed_state`` (time, species), with coordinate ``observed`` (1 where
      measured, 0 where it follows from the conservation laws or the model's initial amounts) and
      attrs ``observations`` (the source) and ``initial_from_model``;
    * ``constant_data``: the gamma prior of each rate parameter, ``prior_shape`` and ``prior_rate``
      (parameter; 0 and 0 for the improper 1/theta prior).
    """
    az = require_arviz()
    names = posterior_variables(ds)
    params = ds.attrs["parameters"].split(",")
    posterior = xr.Dataset({v: ds[v] for v in names}, attrs=dict(ds.attrs))
    sample_stats = xr.Dataset({"attempts": ds["attempts"]})  # with coords iteration and acceptance_rate
    observed_data = xr.Dataset({"observed_state": ds["observed_state"]},  # with coord observed
                               attrs={"observations": ds.attrs["observations"],
                                      "initial_from_model": ds.attrs["initial_from_model"]})
    constant_data = xr.Dataset(
        {k: ("parameter", [float(ds[p].attrs[k]) for p in params], {"long_name": f"gamma prior {k.split('_')[1]}"})
         for k in ("prior_shape", "prior_rate")}, coords={"parameter": params})
    return az.InferenceData(posterior=posterior, sample_stats=sample_stats, observed_data=observed_data,
                            constant_data=constant_data)
