"""pyboolnet prime implicants in memory: ``{"X": [zeros, ones], ...}``.

``ones`` lists the prime implicants of ``X = 1`` (each a dict ``{node: 0 or 1}``), ``zeros``
those of ``X = 0``. ``[{}]`` is a tautology and ``[]`` is unsatisfiable, so a constant 1 is
``[[], [{}]]`` and a constant 0 ``[[{}], []]`` (pyboolnet's ``CONSTANT_ON``/``CONSTANT_OFF``).
The function of X is the OR of its ``ones``; the ``zeros`` must be its complement (checked by
truth table when the function has at most 20 variables). Node order is the dict's order; every
node an implicant names must be a key. The result is a Boolean network with perturbation 0.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..boolean import Expr, Not, Var
from ...errors import ModelError
from ..logic import equivalent, mk_and, mk_not, mk_or
from ..pbn import PBN, Predictor
from .assa import check_name

__all__ = ["from_primes"]


def from_primes(primes: Mapping[str, Any], *, name: str = "") -> PBN:
    """A Boolean network from a pyboolnet primes dict (see the module docstring)."""
    if not isinstance(primes, Mapping) or not primes:
        raise ModelError("primes must be a non-empty dict {node: [zero implicants, one implicants]}", file="<primes>")
    names = [str(k) for k in primes]
    for nm in names:
        check_name(nm, file="<primes>", line=None)
    index = {nm: i for i, nm in enumerate(names)}

    def dnf(node: str, which: int, implicants: Any) -> Expr:
        if not isinstance(implicants, (list, tuple)):
            raise ModelError(f"primes[{node!r}][{which}] must be a list of dicts", file="<primes>")
        terms = []
        for imp in implicants:
            if not isinstance(imp, Mapping):
                raise ModelError(f"primes[{node!r}][{which}]: an implicant must be a dict {{node: 0 or 1}}, "
                                 f"got {imp!r}", file="<primes>")
            lits = []
            for v, b in imp.items():
                if v not in index:
                    raise ModelError(f"primes[{node!r}][{which}] names {v!r}, which is not a node (not a key of "
                                     "primes)", file="<primes>")
                if b not in (0, 1) or isinstance(b, float):
                    raise ModelError(f"primes[{node!r}][{which}]: the value of {v!r} must be 0 or 1, got {b!r}",
                                     file="<primes>")
                lits.append(Var(index[v]) if b else Not(Var(index[v])))
            terms.append(mk_and(*lits))
        return mk_or(*terms)

    preds = []
    for nm in names:
        entry = primes[nm]
        if not isinstance(entry, (list, tuple)) or len(entry) != 2:
            raise ModelError(f"primes[{nm!r}] must be [zero implicants, one implicants]", file="<primes>")
        ones = dnf(nm, 1, entry[1])
        zeros = dnf(nm, 0, entry[0])
        if equivalent(zeros, mk_not(ones)) is False:
            raise ModelError(f"primes[{nm!r}]: the zero implicants are not the complement of the one implicants",
                             file="<primes>")
        preds.append([Predictor(ones, 1.0)])
    return PBN.create(names, preds, name=name, source="<primes>")
