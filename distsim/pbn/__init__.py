"""Probabilistic Boolean networks: load, simulate, estimate steady-state probabilities.

>>> import distsim.pbn as pbn
>>> net = pbn.load("examples/pbn/bbm023_faure2006_mammalian_cell_cycle_10n.bnet", perturbation=0.01)
>>> ds = pbn.simulate(net, steps=1000, trajectories=4096, seed=1)
"""

from __future__ import annotations

import os

from ..models.formats import write_assa
from ..models.pbn import PBN, Predictor
from .inputs import as_network
from .influence import influence
from .simulate import simulate
from .steady import default_chains, steady_state


def load(path: str | os.PathLike, *, perturbation: float | None = None, inputs: str = "keep", format: str | None = None) -> PBN:
    """Load a PBN from ``.pbn``/``.assa`` (ASSA-PBN), ``.bnet``/BoolNet text, or BNMPy ``X = f, p`` text.

    ``inputs`` is the policy for free inputs of bnet/BoolNet/BNMPy files: 'keep' (default: an
    input keeps its value), 'zero', 'one' or 'random'. ``perturbation`` overrides p.
    """
    from ..models.formats import load as _load

    net = _load(path, format=format, inputs=inputs)
    return net.with_perturbation(perturbation) if perturbation is not None else net


__all__ = ["PBN", "Predictor", "as_network", "default_chains", "influence", "load", "simulate", "steady_state", "write_assa"]
