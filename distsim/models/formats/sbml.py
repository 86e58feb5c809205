"""SBML reader for exact stochastic simulation (python-libsbml).

:func:`read_sbml` turns an SBML model (any level/version libsbml reads) into a
:class:`~distsim.models.reactions.ReactionNetwork` with the standard discrete-stochastic reading
of SBML (as in DSMTS, Evans, Gillespie & Wilkinson 2008):

* **Species** become counts. Initial count = ``initialAmount`` if set, else
  ``initialConcentration * compartment size``; it must be a non-negative integer (within 1e-9,
  relative for large values). Species with ``boundaryCondition="true"`` or ``constant="true"``
  are *fixed* (reactions read them but do not change them). All species are kept, in document
  order, whether or not a reaction uses them.
* **Kinetic laws** give the propensity (substance per time: firings per unit time) directly;
  every reaction gets ``law=<its math>`` (no mass-action detection). The MathML tree is
  converted node by node into :mod:`distsim.models.arith` nodes (nothing is evaluated as code).
  A species symbol stands for its **amount** when ``hasOnlySubstanceUnits="true"`` (or its
  compartment has ``spatialDimensions=0``), else for its **concentration**, written
  ``Species / Compartment``. A compartment symbol stands for its size. Compartments used this
  way become parameters named by their id (so ``with_parameters(Cell=...)`` changes the volume
  seen by the laws, not the initial counts).
* **Parameters**: global parameters keep their ids; a reaction's local parameters are renamed
  ``<reaction id>__<parameter id>`` (with ``_2``, ``_3``, ... appended on a clash). Only
  parameters (and compartments) that some kinetic law uses are kept.
* **Stoichiometry** must be a positive integer constant (L1 ``denominator`` divides it).
  Modifiers need no handling: a law reads any species directly. A species listed twice on one
  side adds up.
* **Function definitions** are inlined (lambda bodies with their arguments substituted).
* Math supported: ``+ - * /`` (n-ary plus/times), unary minus, power, integer/real/e-notation/
  rational numbers, ``exponentiale``, ``pi``, ``avogadro``, exp, ln, log (base 10 unless a
  ``logbase`` is given), root (square unless a ``degree`` is given), abs, floor, ceiling, min,
  max, and calls of function definitions.

Not supported (each raises :class:`~distsim.errors.ModelError` naming the element and its
line): events, assignment / rate / algebraic rules, initial assignments, delays, ``time``,
piecewise / relational / logical / trigonometric math, ``stoichiometryMath`` or non-integer
stoichiometry, fast reactions, reactions without a kinetic law, conversion factors, required SBML
packages (``comp``, ``distrib``, ...), and, by default, reversible reactions (a single net rate law
cannot be an SSA propensity; pass ``reversible="forward"`` to take the law as the propensity of
the reactants -> products direction). Constraints are ignored.

libsbml is imported only when :func:`read_sbml` runs; without it the call raises
:class:`ModelError` saying ``pip install python-libsbml``.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

from ..arith import BinOp, Call, Neg, Node, Num, Param, Species
from ...errors import ModelError
from ..reactions import Reaction, ReactionNetwork

__all__ = ["read_sbml", "REVERSIBLE_POLICIES"]

REVERSIBLE_POLICIES = ("error", "forward")
_INT_TOL = 1e-9
_MAX_INLINE_DEPTH = 64


def read_sbml(path: str | os.PathLike, *, reversible: str = "error") -> ReactionNetwork:
    """Read an SBML file as a reaction network for SSA (see the module docstring for semantics).

    ``reversible``: ``"error"`` (default) rejects reactions marked reversible; ``"forward"``
    uses their kinetic law as the forward propensity. A missing file raises
    :class:`FileNotFoundError`; everything else raises :class:`ModelError`.
    """
    file = os.fspath(path)
    if reversible not in REVERSIBLE_POLICIES:
        raise ValueError(f"unknown reversible policy {reversible!r}; expected one of {', '.join(REVERSIBLE_POLICIES)}")
    if not Path(file).exists():
        raise FileNotFoundError(f"model file not found: {file}")
    if not Path(file).is_file():
        raise IsADirectoryError(f"not a file: {file}")
    try:
        import libsbml  # noqa: PLC0415 (optional dependency, imported lazily)
    except ImportError:
        raise ModelError("reading SBML needs python-libsbml; install it with 'pip install python-libsbml'",
                         file=file) from None
    doc = libsbml.readSBMLFromFile(file)
    for i in range(doc.getNumErrors()):
        e = doc.getError(i)
        if e.isError() or e.isFatal():
            lines = [ln.strip() for ln in e.getMessage().strip().splitlines() if ln.strip()]
            detail = lines[-1] if lines else ""
            short = e.getShortMessage().strip()
            if short and detail and short.rstrip(".") != detail.rstrip("."):
                msg = f"{short}: {detail}"
            else:
                msg = short or detail
            raise ModelError(f"invalid SBML ({msg})", file=file, line=e.getLine() or None,
                             column=e.getColumn() or None)
    model = doc.getModel()
    if model is None:
        raise ModelError("the SBML document has no <model>", file=file)
    return _Converter(libsbml, doc, model, file, reversible).network()


class _Converter:
    def __init__(self, libsbml: Any, doc: Any, model: Any, file: str, reversible: str):
        self.L = libsbml
        self.doc = doc
        self.model = model
        self.file = file
        self.reversible = reversible
        self.level = doc.getLevel()
        self.ast_names = {getattr(libsbml, n): n for n in dir(libsbml)
                          if n.startswith("AST_") and isinstance(getattr(libsbml, n), int)}
        self.used_params: set[str] = set()
        self.used_compartments: set[str] = set()

    # ---- helpers ---------------------------------------------------------------------------------

    def err(self, msg: str, element: Any = None) -> ModelError:
        line = element.getLine() if element is not None else 0
        col = element.getColumn() if element is not None else 0
        return ModelError(msg, file=self.file, line=line or None, column=col or None)

    # ---- whole model -----------------------------------------------------------------------------

    def network(self) -> ReactionNetwork:
        m = self.model
        self._check_unsupported()
        # compartments
        self.comp_size: dict[str, float | None] = {}
        self.comp_elem: dict[str, Any] = {}
        self.comp_dims: dict[str, float] = {}
        for i in range(m.getNumCompartments()):
            c = m.getCompartment(i)
            if c.isSetSize():
                size = c.getSize()
            elif self.level == 1:
                size = c.getVolume()
            else:
                size = None
            self.comp_size[c.getId()] = size
            self.comp_elem[c.getId()] = c
            self.comp_dims[c.getId()] = c.getSpatialDimensionsAsDouble() if self.level >= 2 else 3.0
        # species
        self.species: list[str] = []
        self.index: dict[str, int] = {}
        self.amount_symbol: dict[str, bool] = {}  # True: symbol = amount; False: concentration
        self.species_comp: dict[str, str] = {}
        initial: list[int] = []
        fixed: list[int] = []
        for i in range(m.getNumSpecies()):
            s = m.getSpecies(i)
            sid = s.getId()
            comp = s.getCompartment()
            if comp not in self.comp_size:
                raise self.err(f"species {sid!r} is in unknown compartment {comp!r}", s)
            if self.level >= 3 and s.isSetConversionFactor():
                raise self.err(f"species {sid!r}: conversion factors are not supported", s)
            self.index[sid] = len(self.species)
            self.species.append(sid)
            self.species_comp[sid] = comp
            self.amount_symbol[sid] = bool(s.getHasOnlySubstanceUnits()) or self.comp_dims[comp] == 0
            initial.append(self._initial_count(s, comp))
            if s.getBoundaryCondition() or s.getConstant():
                fixed.append(len(self.species) - 1)
        if not self.species:
            raise self.err("the model has no species", m)
        # global parameters
        self.global_value: dict[str, float | None] = {}
        self.global_elem: dict[str, Any] = {}
        for i in range(m.getNumParameters()):
            p = m.getParameter(i)
            self.global_value[p.getId()] = p.getValue() if p.isSetValue() else None
            self.global_elem[p.getId()] = p
        self.reaction_ids = {m.getReaction(i).getId() for i in range(m.getNumReactions())}
        self.taken = set(self.index) | set(self.comp_size) | set(self.global_value) | self.reaction_ids
        self.taken |= {m.getFunctionDefinition(i).getId() for i in range(m.getNumFunctionDefinitions())}
        self.local_value: dict[str, float] = {}
        # reactions
        reactions = [self._reaction(m.getReaction(i)) for i in range(m.getNumReactions())]
        if not reactions:
            raise self.err("the model has no reactions", m)
        params: dict[str, float] = {}
        for cid in self.comp_size:
            if cid in self.used_compartments:
                params[cid] = float(self.comp_size[cid])  # type: ignore[arg-type]
        for pid, v in self.global_value.items():
            if pid in self.used_params:
                params[pid] = float(v)  # type: ignore[arg-type]
        for pid, v in self.local_value.items():
            if pid in self.used_params:
                params[pid] = v
        name = m.getName() or m.getId() or Path(self.file).stem
        return ReactionNetwork.create(self.species, initial, reactions, params, fixed=fixed, name=name,
                                      source=self.file)

    def _check_unsupported(self) -> None:
        m, doc = self.model, self.doc
        if self.level < 3:  # packages exist only in Level 3 (L2 layout is an annotation)
            return self._check_elements()
        for i in range(doc.getNumPlugins()):
            pkg = doc.getPlugin(i).getPackageName()
            if pkg and doc.isPackageEnabled(pkg) and doc.getPackageRequired(pkg):
                raise self.err(f"the model requires the SBML package {pkg!r}, which is not supported", m)
        for i in range(doc.getNumUnknownPackages()):
            uri = doc.getUnknownPackageURI(i)
            if doc.getPackageRequired(uri):
                raise self.err(f"the model requires an unknown SBML package ({uri}), which is not supported", m)
        self._check_elements()

    def _check_elements(self) -> None:
        m = self.model
        if m.getNumEvents():
            ev = m.getEvent(0)
            what = f"event {ev.getId()!r}" if ev.getId() else "an event"
            raise self.err(f"events are not supported ({what}; {m.getNumEvents()} event(s) in the model)", ev)
        if m.getNumRules():
            r = m.getRule(0)
            if r.isAssignment():
                kind = "assignment rule"
            elif r.isRate():
                kind = "rate rule"
            else:
                kind = "algebraic rule"
            target = f" for {r.getVariable()!r}" if r.getVariable() else ""
            raise self.err(f"rules are not supported ({kind}{target})", r)
        if m.getNumInitialAssignments():
            ia = m.getInitialAssignment(0)
            raise self.err(f"initial assignments are not supported (initial assignment to {ia.getSymbol()!r})", ia)
        if self.level >= 3 and m.isSetConversionFactor():
            raise self.err("model conversion factors are not supported", m)

    def _initial_count(self, s: Any, comp: str) -> int:
        sid = s.getId()
        if s.isSetInitialAmount():
            value = s.getInitialAmount()
            what = "initial amount"
        elif s.isSetInitialConcentration():
            size = self._size(comp, f"species {sid!r} has an initial concentration", s)
            value = s.getInitialConcentration() * size
            what = f"initial amount (concentration {s.getInitialConcentration()!r} x size {size!r})"
        else:
            raise self.err(f"species {sid!r} has no initial amount or concentration", s)
        if not math.isfinite(value):
            raise self.err(f"species {sid!r}: {what} is not finite ({value!r})", s)
        r = round(value)
        if abs(value - r) > _INT_TOL * max(1.0, abs(value)):
            raise self.err(f"species {sid!r}: {what} {value!r} is not a whole number of molecules", s)
        if r < 0:
            raise self.err(f"species {sid!r}: {what} {value!r} is negative", s)
        return int(r)

    def _size(self, comp: str, why: str, element: Any) -> float:
        size = self.comp_size.get(comp)
        if size is None or not math.isfinite(size):
            raise self.err(f"{why} but compartment {comp!r} has no size", element)
        if size <= 0:
            raise self.err(f"{why} but compartment {comp!r} has size {size!r} (must be > 0)", element)
        return float(size)

    # ---- reactions -------------------------------------------------------------------------------

    def _reaction(self, r: Any) -> Reaction:
        rid = r.getId()
        label = f"reaction {rid!r}"
        if r.isSetFast() and r.getFast():
            raise self.err(f"{label}: fast reactions are not supported", r)
        if r.getReversible() and self.reversible == "error":
            raise self.err(f"{label} is reversible: an SSA needs one propensity per direction; split it into "
                           "two irreversible reactions, or read with reversible='forward' to use its kinetic "
                           "law as the forward propensity", r)
        if not r.isSetKineticLaw():
            raise self.err(f"{label} has no kinetic law", r)
        kl = r.getKineticLaw()
        if not kl.isSetMath():
            raise self.err(f"{label}: the kinetic law has no math", kl)
        local: dict[str, str] = {}
        if self.level >= 3:
            lps = [kl.getLocalParameter(i) for i in range(kl.getNumLocalParameters())]
        else:
            lps = [kl.getParameter(i) for i in range(kl.getNumParameters())]
        for p in lps:
            pid = p.getId()
            new = base = f"{rid}__{pid}"
            k = 2
            while new in self.taken:
                new, k = f"{base}_{k}", k + 1
            self.taken.add(new)
            local[pid] = new
            if p.isSetValue() and math.isfinite(p.getValue()):
                self.local_value[new] = p.getValue()
        reac = self._side(r, r.getListOfReactants(), label, "reactant")
        prod = self._side(r, r.getListOfProducts(), label, "product")
        law = self._convert(kl.getMath(), {}, local, label, kl, 0)
        return Reaction(reac, prod, law=law, name=rid)

    def _side(self, r: Any, refs: Any, label: str, what: str) -> tuple[tuple[int, int], ...]:
        out: dict[int, int] = {}
        for k in range(refs.size()):
            sr = refs.get(k)
            sid = sr.getSpecies()
            if sid not in self.index:
                raise self.err(f"{label}: {what} {sid!r} is not a species of the model", sr)
            if self.level == 2 and sr.isSetStoichiometryMath():
                raise self.err(f"{label}: stoichiometryMath for {what} {sid!r} is not supported", sr)
            if self.level >= 3 and not sr.isSetStoichiometry():
                raise self.err(f"{label}: {what} {sid!r} has no stoichiometry", sr)
            value = sr.getStoichiometry()
            if self.level == 1:
                value = value / sr.getDenominator()
            n = round(value) if math.isfinite(value) else 0
            if not math.isfinite(value) or n <= 0 or abs(value - n) > _INT_TOL * max(1.0, abs(value)):
                raise self.err(f"{label}: stoichiometry of {what} {sid!r} must be a positive integer, got {value!r}",
                               sr)
            i = self.index[sid]
            out[i] = out.get(i, 0) + int(n)
        return tuple(out.items())

    # ---- math ------------------------------------------------------------------------------------

    def _convert(self, node: Any, env: dict[str, Node], local: dict[str, str], label: str, where: Any,
                 depth: int) -> Node:
        L = self.L
        t = node.getType()
        kids = [node.getChild(i) for i in range(node.getNumChildren())]

        def sub(n: Any) -> Node:
            return self._convert(n, env, local, label, where, depth)

        def unsupported(what: str) -> ModelError:
            try:
                text = L.formulaToL3String(node)
            except Exception:  # pragma: no cover - formatting is best effort
                text = "?"
            return self.err(f"{label}: the kinetic law uses {what} ({text}), which is not supported", where)

        def arity(*ok: int) -> None:
            if len(kids) not in ok:
                raise unsupported(f"{self.ast_names.get(t, t)} with {len(kids)} argument(s)")

        if t == L.AST_INTEGER:
            return Num(float(node.getInteger()))
        if t in (L.AST_REAL, L.AST_REAL_E, L.AST_RATIONAL):
            v = node.getReal()
            if not math.isfinite(v):
                raise unsupported(f"the non-finite number {v!r}")
            return Num(float(v))
        if t == L.AST_NAME:
            return self._name(node.getName(), env, local, label, where)
        if t == L.AST_NAME_AVOGADRO:
            return Num(float(node.getReal()))
        if t == L.AST_CONSTANT_E:
            return Num(math.e)
        if t == L.AST_CONSTANT_PI:
            return Num(math.pi)
        if t == L.AST_NAME_TIME:
            raise unsupported("the simulation time symbol")
        if t == L.AST_FUNCTION_DELAY:
            raise unsupported("delay()")
        if t == L.AST_PLUS:
            if not kids:
                return Num(0.0)
            out = sub(kids[0])
            for k in kids[1:]:
                out = BinOp("+", out, sub(k))
            return out
        if t == L.AST_TIMES:
            if not kids:
                return Num(1.0)
            out = sub(kids[0])
            for k in kids[1:]:
                out = BinOp("*", out, sub(k))
            return out
        if t == L.AST_MINUS:
            arity(1, 2)
            return Neg(sub(kids[0])) if len(kids) == 1 else BinOp("-", sub(kids[0]), sub(kids[1]))
        if t == L.AST_DIVIDE:
            arity(2)
            return BinOp("/", sub(kids[0]), sub(kids[1]))
        if t in (L.AST_POWER, L.AST_FUNCTION_POWER):
            arity(2)
            return BinOp("^", sub(kids[0]), sub(kids[1]))
        simple = {L.AST_FUNCTION_EXP: "exp", L.AST_FUNCTION_LN: "log", L.AST_FUNCTION_ABS: "abs",
                  L.AST_FUNCTION_FLOOR: "floor", L.AST_FUNCTION_CEILING: "ceil"}
        if t in simple:
            arity(1)
            return Call(simple[t], (sub(kids[0]),))
        if t == L.AST_FUNCTION_LOG:
            arity(1, 2)
            if len(kids) == 1:
                return Call("log10", (sub(kids[0]),))
            base, x = sub(kids[0]), sub(kids[1])
            if isinstance(base, Num) and base.value == 10.0:
                return Call("log10", (x,))
            return BinOp("/", Call("log", (x,)), Call("log", (base,)))
        if t == L.AST_FUNCTION_ROOT:
            arity(1, 2)
            if len(kids) == 1:
                return Call("sqrt", (sub(kids[0]),))
            degree, x = sub(kids[0]), sub(kids[1])
            if isinstance(degree, Num) and degree.value == 2.0:
                return Call("sqrt", (x,))
            return BinOp("^", x, BinOp("/", Num(1.0), degree))
        mm = {getattr(L, "AST_FUNCTION_MAX", -1): "max", getattr(L, "AST_FUNCTION_MIN", -1): "min"}
        if t in mm:
            if not kids:
                raise unsupported(f"{mm[t]}() without arguments")
            out = sub(kids[0])
            for k in kids[1:]:
                out = Call(mm[t], (out, sub(k)))
            return out
        if t == L.AST_FUNCTION:
            return self._call(node, kids, env, local, label, where, depth, unsupported)
        name = self.ast_names.get(t, str(t))
        nice = node.getName() or name.replace("AST_", "").replace("FUNCTION_", "").lower()
        raise unsupported(f"{nice!r}")

    def _call(self, node: Any, kids: list, env: dict[str, Node], local: dict[str, str], label: str, where: Any,
              depth: int, unsupported: Any) -> Node:
        fname = node.getName()
        fd = self.model.getFunctionDefinition(fname)
        if fd is None:
            raise self.err(f"{label}: the kinetic law calls {fname!r}, which is not a function definition", where)
        if depth >= _MAX_INLINE_DEPTH:
            raise self.err(f"{label}: function definitions nest more than {_MAX_INLINE_DEPTH} deep "
                           f"(recursive definition of {fname!r}?)", fd)
        body = fd.getBody()
        if body is None:
            raise self.err(f"function definition {fname!r} has no body", fd)
        nargs = fd.getNumArguments()
        if nargs != len(kids):
            raise self.err(f"{label}: function {fname!r} takes {nargs} argument(s), called with {len(kids)}", where)
        args = [self._convert(k, env, local, label, where, depth) for k in kids]
        inner = {fd.getArgument(i).getName(): args[i] for i in range(nargs)}
        # a function body sees only its arguments and model-level (global) symbols
        return self._convert(body, inner, {}, f"{label} (via function {fname!r})", where, depth + 1)

    def _name(self, name: str, env: dict[str, Node], local: dict[str, str], label: str, where: Any) -> Node:
        if name in env:
            return env[name]
        if name in local:
            new = local[name]
            if new not in self.local_value:
                raise self.err(f"{label}: local parameter {name!r} has no (finite) value", where)
            self.used_params.add(new)
            return Param(new)
        if name in self.index:
            i = self.index[name]
            if self.amount_symbol[name]:
                return Species(i)
            comp = self.species_comp[name]
            self._size(comp, f"{label}: species {name!r} is a concentration (hasOnlySubstanceUnits=false)", where)
            self.used_compartments.add(comp)
            return BinOp("/", Species(i), Param(comp))
        if name in self.comp_size:
            self._size(name, f"{label}: the kinetic law uses compartment {name!r}", where)
            self.used_compartments.add(name)
            return Param(name)
        if name in self.global_value:
            v = self.global_value[name]
            if v is None or not math.isfinite(v):
                raise self.err(f"{label}: parameter {name!r} has no (finite) value", where)
            self.used_params.add(name)
            return Param(name)
        if name in self.reaction_ids:
            raise self.err(f"{label}: the kinetic law uses the rate of reaction {name!r}, which is not supported",
                           where)
        raise self.err(f"{label}: the kinetic law uses {name!r}, which is not a species, compartment or "
                       "parameter of the model (species reference ids are not supported)", where)
