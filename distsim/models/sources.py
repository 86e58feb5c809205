"""One entry point for every way a user brings a reaction network (:func:`load_network`).

* a :class:`ReactionNetwork` -- returned as it is;
* a ``gillespy2.Model`` -- :func:`distsim.models.gillespy2.from_gillespy2`;
* model **text** (a ``str`` that starts with ``<`` or contains a line break): SBML when it starts
  with ``<``, else ``format=`` says which: ``"rxn"`` (distsim's text format) or ``"antimony"``;
* a **path**: read through the format registry (:mod:`distsim.models.formats.registry`): by
  ``format=``, else the extension (``.ant`` -> antimony, ``.xml`` -> SBML, ``.rxn`` -> text), else
  the content.

``reversible`` (the reversible-reaction policy), ``system_size`` (molecules per substance unit) and
``rounding`` are the SBML reader's options (:mod:`distsim.models.formats.sbml`); they also apply to
antimony, which goes through SBML, and are refused for other sources when not at their defaults.
``mass_action`` (``"stochastic"``: powers of reactants become falling factorials), ``fast``
(``"as_slow"``: fast reactions are ordinary ones) and ``guard`` (sign split and reactant guard of laws
that are no propensities as written) apply to SBML only.
"""

from __future__ import annotations

import os
from typing import Any

from .formats import registry
from .formats.antimony import parse_antimony
from .formats.reaction_text import parse_reactions
from .formats.sbml import read_sbml_string
from .gillespy2 import from_gillespy2, is_gillespy2_model
from .reactions import ReactionNetwork

__all__ = ["load_network"]


def load_network(source: Any, *, format: str | None = None, reversible: str = "split",
                 system_size: float | None = None, rounding: str = "error",
                 mass_action: str = "as_written", fast: str = "refuse", guard: bool = False) -> ReactionNetwork:
    """A :class:`ReactionNetwork` from a network, a GillesPy2 model, model text or a path (module docstring)."""
    sbml = {"reversible": reversible, "system_size": system_size, "rounding": rounding}
    only = {k: v for k, v, default in (("mass_action", mass_action, "as_written"), ("fast", fast, "refuse"),
                                                    ("guard", guard, False))
            if v != default}  # SBML-only options away from their defaults
    if only:  # (every other source refuses them below)
        if isinstance(source, str) and source.lstrip("\ufeff \t\r\n").startswith("<") and format in (None, "sbml"):
            return read_sbml_string(source, **only, **sbml)
        path = isinstance(source, (str, os.PathLike))
        fmt = (registry.get(format, kind="reaction") if format is not None else
               registry.detect(source, kind="reaction") if path and os.path.isfile(source) else None)
        name = next(iter(only))
        if (fmt is None and not path) or (fmt is not None and name not in fmt.options):
            raise ValueError(f"{name}= applies to SBML models only, not to "
                             f"{fmt.name + ' files' if fmt is not None else type(source).__name__}")
        return registry.load(source, kind="reaction", format=format, **only, **sbml)
    if isinstance(source, ReactionNetwork) or is_gillespy2_model(source):
        if system_size is not None or rounding != "error":
            raise ValueError("system_size= and rounding= apply to SBML and antimony models, not to a "
                             f"{type(source).__name__}")
        return source if isinstance(source, ReactionNetwork) else from_gillespy2(source)
    if isinstance(source, str) and (source.lstrip("\ufeff \t\r\n").startswith("<") or "\n" in source):
        kind = registry.get(format, kind="reaction", file="<text>").name if format is not None else None
        if source.lstrip("\ufeff \t\r\n").startswith("<") and kind in (None, "sbml"):
            return read_sbml_string(source, **sbml)
        if kind == "text":
            return parse_reactions(source)
        if kind == "antimony":
            return parse_antimony(source, **sbml)
        raise ValueError("model text that is not SBML needs format='rxn' or format='antimony'")
    if not isinstance(source, (str, os.PathLike)):
        raise TypeError(f"expected a path, model text, a ReactionNetwork or a gillespy2.Model, got "
                        f"{type(source).__name__}")
    if (system_size is not None or rounding != "error") and os.path.isfile(source):
        fmt = registry.get(format, kind="reaction") if format is not None else registry.detect(source, kind="reaction")
        if "system_size" not in fmt.options:
            raise ValueError(f"system_size= and rounding= apply to SBML and antimony models, not to {fmt.name} files")
    return registry.load(source, kind="reaction", format=format, **sbml)
