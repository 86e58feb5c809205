"""Probabilistic Boolean networks: load, simulate, estimate steady-state probabilities.

>>> import distsim.pbn as pbn
>>> net = pbn.load("examples/pbn/bbm023_faure2006_mammalian_cell_cycle_10n.bnet", perturbation=0.01)
>>> ds = pbn.simulate(net, steps=1000, trajectories=4096, seed=1)
"""

from __future__ import annotations

import os
from typing import Mapping

from ..models.formats import MabossConfig, from_primes, read_maboss, write_assa, write_bnet
from ..models.pbn import PBN, Predictor
from .inputs import as_network
from .influence import influence
from .simulate import simulate
from .steady import default_chains, steady_state


def load(path: str | os.PathLike, *, perturbation: float | None = None, inputs: str = "keep", format: str | None = None,
         fixed: Mapping[str, int] | None = None, cfg: str | os.PathLike | None = None) -> PBN:
    """Load a PBN from ``.pbn``/``.assa`` (ASSA-PBN), ``.bnet``/BoolNet text, BNMPy ``X = f, p`` text,
    a MaBoSS ``.bnd`` (with its ``.cfg``: the one beside it, or ``cfg``) or an SBML-qual file.

    ``inputs`` is the policy for free inputs of bnet/BoolNet/BNMPy/SBML-qual files: 'keep'
    (default: an input keeps its value), 'zero', 'one' or 'random'. ``perturbation`` overrides p.
    ``fixed``: mutations/knockouts ``{"TP53": 0, "MYC": 1}`` (:meth:`PBN.with_fixed`). A MaBoSS
    model is the asynchronous PBN of its continuous-time chain: run it with ``mode="async"``; its
    initial states come from :func:`read_maboss`.
    """
    from ..models.formats import load as _load

    net = _load(path, format=format, inputs=inputs, cfg=cfg)
    if format == "maboss" or (format is None and os.fspath(path).lower().endswith((".bnd", ".cfg"))):
        _warn_maboss_initial(path, cfg)
    if perturbation is not None:
        net = net.with_perturbation(perturbation)
    return net.with_fixed(fixed) if fixed else net


def _warn_maboss_initial(path: str | os.PathLike, cfg: str | os.PathLike | None) -> None:
    """A PBN carries no initial states: say so when the model's .cfg fixes some (never drop them silently)."""
    import warnings

    from ..models.formats.maboss import read_rates

    conf = read_rates(path, cfg).config
    if conf.initial:
        shown = ", ".join(f"{k}={v}" for k, v in list(conf.initial.items())[:4])
        more = f" and {len(conf.initial) - 4} more" if len(conf.initial) > 4 else ""
        warnings.warn(f"{conf.cfg or path}: the .cfg fixes the initial values of {len(conf.initial)} node(s) ({shown}"
                      f"{more}); pbn.load returns the network only, so pass initial=pbn.read_maboss(path)[1].initial "
                      "to simulate/steady_state ('distsim pbn' applies them itself)", UserWarning, stacklevel=3)


__all__ = ["MabossConfig", "PBN", "Predictor", "as_network", "default_chains", "from_primes", "influence", "load",
           "read_maboss", "simulate", "steady_state", "write_assa", "write_bnet"]
