"""SBML reader for exact stochastic simulation (python-libsbml): files and strings, Levels 1-3.

:func:`read_sbml` (a file) and :func:`read_sbml_string` turn an SBML model (Level 3 Version 2 or 1,
Level 2, Level 1) into a :class:`~distsim.models.reactions.ReactionNetwork`.

**Stochastic convention.** SBML kinetic laws are written as deterministic rates (substance per
time). For SSA they are read the way the SBML discrete stochastic test suite (DSMTS, Evans,
Gillespie & Wilkinson 2008), GillesPy2 (``gillespy2.sbml.SBMLimport``: the law becomes the
reaction's ``propensity_function`` verbatim) and libRoadRunner's ``gillespie`` integrator (the law's
value is the reaction's propensity) read them: **the value of the kinetic law, with species
symbols standing for amounts in molecules, is the propensity** (firings per unit time). No factor
is added or removed, so a law ``k * A^2`` on ``2A -> B`` fires at ``k x^2``, not at the
combinatorial ``k x (x-1)/2``: for the stochastic mass-action rate constant of distsim's
convention (theta ``C(x, 2)``) write ``k * A * (A - 1) / 2`` (theta = ``k``); GillesPy2's own
mass action writes ``k * A * (A - 1) / vol`` (theta = ``2k/vol``). A species symbol stands for its
**amount** when ``hasOnlySubstanceUnits="true"`` (or its compartment has ``spatialDimensions=0``),
else for its **concentration**, ``amount / size``; a compartment symbol stands for its size. So
``cell * k1 * E * S`` with E, S concentrations in ``cell`` fires at ``k1 E S / cell``.

**Mass action.** A law whose value is exactly ``theta * prod_i C(x_i, r_i)`` for the reactant
stoichiometries ``r_i`` (see :mod:`distsim.models.mass_action`: one parameter times the falling
factorial of each reactant, times numbers and compartment sizes that multiply to 1) becomes a
mass-action reaction with ``rate=<that parameter>`` -- e.g. ``k1 * E * S``, or ``cell * k1 * E * S``
in a compartment of size 1 -- so rate inference (:func:`distsim.mcmc.infer_rates`) can use it; a
law of numbers and compartments only (``0.5 * A``) gets a numeric rate. Every other law is a
general law with the same propensity. Either way the propensity is the law's value.

**Reversible reactions** (``reversible=`` policy):

* ``"split"`` (default): a law ``F - B`` (possibly times common factors, ``cell * (kf*A*B - kr*C)``)
  whose terms are mass-action shaped for the two directions becomes two reactions ``<id>_f``
  (reactants -> products, propensity F) and ``<id>_r`` (products -> reactants, propensity B).
  A mass-action law of the forward direction alone is accepted as it is (GillesPy2 and antimony
  mark most reactions reversible). Any other law of a reversible reaction is used as the
  forward propensity, with one :class:`SBMLWarning` listing such reactions (a run stops with an
  error if a propensity becomes negative).
* ``"forward"``: never split; the law is the forward propensity (what GillesPy2 and
  libRoadRunner do).
* ``"error"``: split as ``"split"`` does, and refuse any other reversible reaction.

**Species** become counts. Initial count = ``initialAmount`` if set, else ``initialConcentration
* compartment size``; it must be a non-negative integer (within 1e-9, relative for large values).
Species with ``boundaryCondition="true"`` or ``constant="true"`` are *fixed* (read, never changed).
All species are kept, in document order.

**Parameters**: global parameters keep their ids; a reaction's local parameters are renamed
``<reaction id>__<parameter id>`` (``_2``, ``_3``, ... appended on a clash). Only parameters and
compartments that a general law, an event or a rule uses (or a mass-action rate) are kept;
``with_parameters(cell=...)`` changes a compartment size seen by general laws.

**Events and assignment rules** are read into ``net.events`` / ``net.rules``
(:mod:`distsim.models.events`): time- and state-triggered events (``initialValue``,
``persistent``, ``useValuesFromTriggerTime``, ``priority``, ``delay``: CPU only), assignments to species (as counts:
concentrations are multiplied by the compartment size) and to parameters; assignment rules for
species and parameters (sorted so that a rule follows the rules it reads; the initial count of a
rule's species is the rule's value at t = 0). :func:`distsim.ssa.simulate` simulates them exactly
(:mod:`distsim.models.events`); rate inference refuses them. **Rate rules** for parameters (with an
initial value) are read into ``net.rate_rules``, and kinetic laws may read ``time``, sin and cos:
the SSA's hybrid loop integrates them on CPUs (:mod:`distsim.ssa.hybrid_ops`); a rate rule for a
species is refused.

**Math**: ``+ - * /`` (n-ary plus/times), unary minus, power, integer/real/e-notation/rational
numbers, ``exponentiale``, ``pi``, ``avogadro``, exp, ln, log (base 10 unless a ``logbase`` is
given), root (square unless a ``degree`` is given), abs, floor, ceiling, min, max, calls of function
definitions (inlined); in triggers also ``time``, relations (lt, leq, gt, geq, eq, neq; n-ary ones
chained) and logic (and, or, xor, not, true, false); events, rules and kinetic laws may use ``time``,
and every expression sin, cos and ``piecewise`` (its conditions: relations, logic, true, false; only
the SSA's hybrid loop evaluates them, so a kinetic law using them makes the network hybrid).

**Leniency.** Problems that do not change the stochastic semantics are warnings
(:class:`SBMLWarning`), not errors: a missing ``fast`` attribute (false), a missing ``constant`` on
a compartment or parameter (constant unless a rule or event assigns it), a missing ``reversible``
(taken as true, the Level 2 default, then the policy above applies). libsbml's internal
``l3v2extendedmath`` package, which it reports as enabled and required on every L3V2 document,
is not a requirement of the model and is ignored.

**Not supported** (each raises :class:`~distsim.errors.ModelError` naming the element,
its id, the file and line): algebraic rules, rate rules for species or compartments, initial
assignments, ``delay()``, trigonometric functions other than sin and cos, ``stoichiometryMath`` or
non-integer stoichiometry, fast reactions, reactions without a kinetic law, conversion factors,
assignments to compartments, required SBML packages (``comp``, ``distrib``, ...). Constraints are
ignored.

**Untrusted input.** Before libsbml sees a document it is parsed with Python's expat (no
recursion): it must be well-formed XML without a DOCTYPE (so no entity expansion) and nest at most
:data:`MAX_XML_DEPTH` elements deep, with at most :data:`MAX_XML_MATH_ELEMENTS` elements in one
``<math>`` (libsbml recurses over them when it frees a document). Errors are checked before the model is touched, the
SBMLDocument stays referenced while its children are used, and math is converted without
recursion with limits on depth (:data:`MAX_MATH_DEPTH`) and size after inlining function
definitions (:data:`MAX_MATH_NODES`). libsbml is native code, so a worker should still parse
models in the client process (``ssa.load`` there) and receive the network, not the file.

libsbml is imported only when a reader runs; without it the call raises :class:`ModelError`
saying ``pip install python-libsbml``.
"""

from __future__ import annotations

import math
import os
import warnings
import xml.parsers.expat as expat
from pathlib import Path
from typing import Any

from ...errors import ModelError, SBMLWarning
from ..arith import BinOp, Call, Neg, Node, Num, Param, Piecewise, Relation, Species, Time, params_of, to_text
from ..events import (Assignment, AssignmentRule, Compare, Condition, Event, Logic, RateRule, RuleCycle, Truth,
                      apply_rules_at_start, condition_nodes, rule_order)
from ..mass_action import MassActionShape, mass_action_shape, split_difference
from ..reactions import MAX_STOICHIOMETRY, Reaction, ReactionNetwork

__all__ = ["read_sbml", "read_sbml_string", "REVERSIBLE_POLICIES", "SBMLWarning", "MAX_XML_DEPTH",
           "MAX_XML_MATH_ELEMENTS", "MAX_MATH_DEPTH", "MAX_MATH_NODES"]

REVERSIBLE_POLICIES = ("split", "forward", "error")
MAX_XML_DEPTH = 1000  # nested XML elements (libsbml reads MathML recursively)
MAX_XML_MATH_ELEMENTS = 50_000  # elements in one <math> (libsbml's destructor overflows the C stack near 200,000)
MAX_MATH_DEPTH = 256  # nesting of one converted expression (n-ary plus of k terms nests k deep)
MAX_MATH_NODES = 100_000  # nodes of one expression after inlining function definitions
_MAX_CONDITION_DEPTH = 64
_INT_TOL = 1e-9
_MAX_INLINE_DEPTH = 64
_IGNORED_PACKAGES = {"l3v2extendedmath"}  # libsbml-internal: enabled and "required" on every L3V2 document
# libsbml errors about a missing attribute whose default does not change the stochastic reading
_LENIENT = {21110: ("fast", "reversible"), 20517: ("constant",), 20706: ("constant",)}


def read_sbml(path: str | os.PathLike, *, reversible: str = "split") -> ReactionNetwork:
    """Read an SBML file as a reaction network for SSA (see the module docstring for semantics).

    ``reversible``: ``"split"`` (default), ``"forward"`` or ``"error"`` (module docstring). A missing
    file raises :class:`FileNotFoundError`; everything else raises :class:`ModelError`.
    """
    file = os.fspath(path)
    _check_policy(reversible)
    if not Path(file).exists():
        raise FileNotFoundError(f"model file not found: {file}")
    if not Path(file).is_file():
        raise IsADirectoryError(f"not a file: {file}")
    _prescan(Path(file).read_bytes(), file)
    libsbml = _libsbml(file)
    doc = libsbml.readSBMLFromFile(file)
    return _document(libsbml, doc, file, reversible, Path(file).stem)


def read_sbml_string(text: str | bytes, *, reversible: str = "split", file: str = "<string>",
                     name: str = "") -> ReactionNetwork:
    """Read an SBML document held in memory (``file`` names it in errors; ``name`` is the
    network's name when the model has neither name nor id)."""
    _check_policy(reversible)
    data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    _prescan(data, file)
    libsbml = _libsbml(file)
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError as e:
            raise ModelError(f"SBML bytes are not UTF-8 ({e.reason} at byte {e.start}); pass a str",
                             file=file) from None
    doc = libsbml.readSBMLFromString(text)
    return _document(libsbml, doc, file, reversible, name)


def _check_policy(reversible: str) -> None:
    if reversible not in REVERSIBLE_POLICIES:
        raise ValueError(f"unknown reversible policy {reversible!r}; expected one of {', '.join(REVERSIBLE_POLICIES)}")


def _libsbml(file: str) -> Any:
    try:
        import libsbml  # noqa: PLC0415 (optional dependency, imported lazily)
    except ImportError:
        raise ModelError("reading SBML needs python-libsbml; install it with 'pip install python-libsbml'",
                         file=file) from None
    return libsbml


class _Refused(Exception):
    def __init__(self, message: str, line: int, column: int):
        super().__init__(message)
        self.message, self.line, self.column = message, line, column


def _prescan(data: bytes, file: str) -> None:
    """Well-formed XML, no DOCTYPE, at most MAX_XML_DEPTH nested elements and MAX_XML_MATH_ELEMENTS
    elements in one <math> (expat is not recursive)."""
    if not data.strip():
        raise ModelError("the SBML document is empty", file=file)
    p = expat.ParserCreate()
    depth = in_math = math_elements = 0

    def start(name: str, attrs: Any) -> None:
        nonlocal depth, in_math, math_elements
        depth += 1
        if depth > MAX_XML_DEPTH:
            raise _Refused(f"XML elements nest more than {MAX_XML_DEPTH} deep", p.CurrentLineNumber,
                           p.CurrentColumnNumber + 1)
        if in_math:
            math_elements += 1
            if math_elements > MAX_XML_MATH_ELEMENTS:
                raise _Refused(f"a <math> element has more than {MAX_XML_MATH_ELEMENTS} elements", p.CurrentLineNumber,
                               p.CurrentColumnNumber + 1)
        if name.rpartition(":")[2] == "math":
            if not in_math:
                math_elements = 0
            in_math += 1

    def end(name: str) -> None:
        nonlocal depth, in_math
        depth -= 1
        if name.rpartition(":")[2] == "math":
            in_math -= 1

    def doctype(*args: Any) -> None:
        raise _Refused("a DOCTYPE declaration is not allowed in SBML", p.CurrentLineNumber, p.CurrentColumnNumber + 1)

    p.StartElementHandler = start
    p.EndElementHandler = end
    p.StartDoctypeDeclHandler = doctype
    p.EntityDeclHandler = doctype
    try:
        p.Parse(data, True)
    except _Refused as e:
        raise ModelError(f"invalid SBML ({e.message})", file=file, line=e.line, column=e.column) from None
    except expat.ExpatError as e:
        raise ModelError(f"invalid SBML (not well-formed XML: {expat.errors.messages[e.code]})", file=file,
                         line=e.lineno, column=e.offset + 1) from None
    except LookupError as e:  # an encoding that Python does not know, from the XML declaration
        raise ModelError(f"invalid SBML ({e})", file=file, line=1) from None


def _document(libsbml: Any, doc: Any, file: str, reversible: str, default_name: str) -> ReactionNetwork:
    """Check libsbml's errors before touching the model; ``doc`` stays referenced while the model is read."""
    if doc is None:
        raise ModelError("libsbml could not read the document", file=file)
    first = None
    for i in range(doc.getNumErrors()):
        e = doc.getError(i)
        if not (e.isError() or e.isFatal()):
            continue
        msg = _error_text(e)
        attrs = _LENIENT.get(e.getErrorId(), ())
        missing = [a for a in attrs if f"required attribute '{a}' is missing" in msg]
        if missing and not e.isFatal():
            warnings.warn(f"{file}:{e.getLine()}: {msg} (read as {_lenient_default(missing[0])})", SBMLWarning,
                          stacklevel=3)
            continue
        if first is None:
            first = (msg, e.getLine() or None, e.getColumn() or None)
    if first is not None:
        raise ModelError(f"invalid SBML ({first[0]})", file=file, line=first[1], column=first[2])
    model = doc.getModel()
    if model is None:
        raise ModelError("the SBML document has no <model>", file=file)
    return _Converter(libsbml, doc, model, file, reversible, default_name).network()


def _lenient_default(attr: str) -> str:
    return {"fast": "fast='false'", "reversible": "reversible='true'", "constant": "constant='true'"}[attr]


def _error_text(e: Any) -> str:
    lines = [ln.strip() for ln in e.getMessage().strip().splitlines() if ln.strip()]
    detail = lines[-1] if lines else ""
    short = e.getShortMessage().strip()
    if short and detail and short.rstrip(".") != detail.rstrip("."):
        return f"{short}: {detail}"
    return short or detail


class _Converter:
    def __init__(self, libsbml: Any, doc: Any, model: Any, file: str, reversible: str, default_name: str):
        self.L = libsbml
        self.doc = doc  # keeps the document (and so every element below) alive
        self.model = model
        self.file = file
        self.reversible = reversible
        self.default_name = default_name
        self.level = doc.getLevel()
        self.ast_names = {getattr(libsbml, n): n for n in dir(libsbml)
                          if n.startswith("AST_") and isinstance(getattr(libsbml, n), int)}
        self.forward_only: list[str] = []
        L = libsbml
        self.operators = {L.AST_PLUS, L.AST_TIMES, L.AST_MINUS, L.AST_DIVIDE, L.AST_POWER, L.AST_FUNCTION_POWER,
                          L.AST_FUNCTION_EXP, L.AST_FUNCTION_LN, L.AST_FUNCTION_ABS, L.AST_FUNCTION_FLOOR,
                          L.AST_FUNCTION_CEILING, L.AST_FUNCTION_LOG, L.AST_FUNCTION_ROOT, L.AST_FUNCTION,
                          getattr(L, "AST_FUNCTION_MAX", -1), getattr(L, "AST_FUNCTION_MIN", -1)}
        self.operators |= set(self._hybrid_math())

    def err(self, msg: str, element: Any = None) -> ModelError:
        line = element.getLine() if element is not None else 0
        col = element.getColumn() if element is not None else 0
        return ModelError(msg, file=self.file, line=line or None, column=col or None)

    # ---- whole model -----------------------------------------------------------------------------

    def network(self) -> ReactionNetwork:
        m = self.model
        self._check_unsupported()
        self._compartments()
        initial, fixed = self._species()
        self.global_value: dict[str, float | None] = {}
        for i in range(m.getNumParameters()):
            p = m.getParameter(i)
            self.global_value[p.getId()] = p.getValue() if p.isSetValue() else None
        self.reaction_ids = {m.getReaction(i).getId() for i in range(m.getNumReactions())}
        self.taken = set(self.index) | set(self.comp_size) | set(self.global_value) | self.reaction_ids
        self.taken |= {m.getFunctionDefinition(i).getId() for i in range(m.getNumFunctionDefinitions())}
        self.local_value: dict[str, float] = {}
        self.assigned = self._assigned_ids()
        rules = self._rules()
        rate_rules = self._rate_rules()
        events = self._events()
        reactions: list[Reaction] = []
        for i in range(m.getNumReactions()):
            reactions.extend(self._reaction(m.getReaction(i)))
        if not reactions:
            raise self.err("the model has no reactions", m)
        if self.forward_only:
            names = ", ".join(repr(n) for n in self.forward_only)
            warnings.warn(f"{self.file}: reversible reaction(s) {names}: the kinetic law is not a difference of "
                          "two mass-action terms; it is used as the propensity of the forward direction (a run "
                          "stops if it becomes negative)", SBMLWarning, stacklevel=4)
        params = self._parameters(reactions, [*rules, *rate_rules], events)
        initial = apply_rules_at_start(rules, initial, params, lambda v, what: self._count(v, what, None), self.err)
        name = m.getName() or m.getId() or self.default_name
        return ReactionNetwork.create(self.species, initial, reactions, params, fixed=fixed, name=name,
                                      source=self.file, events=events, rules=rules, rate_rules=rate_rules)

    def _check_unsupported(self) -> None:
        m, doc = self.model, self.doc
        if self.level >= 3:  # packages exist only in Level 3 (L2 layout is an annotation)
            for i in range(doc.getNumPlugins()):
                pkg = doc.getPlugin(i).getPackageName()
                if pkg and pkg not in _IGNORED_PACKAGES and doc.isPackageEnabled(pkg) and doc.getPackageRequired(pkg):
                    raise self.err(f"the model requires the SBML package {pkg!r}, which is not supported", m)
            for i in range(doc.getNumUnknownPackages()):
                uri = doc.getUnknownPackageURI(i)
                if doc.getPackageRequired(uri):
                    raise self.err(f"the model requires an unknown SBML package ({uri}), which is not supported", m)
        for i in range(m.getNumRules()):
            r = m.getRule(i)
            if not (r.isAssignment() or r.isRate()):
                target = f" for {r.getVariable()!r}" if r.getVariable() else ""
                raise self.err(f"algebraic rules are not supported (algebraic rule{target}); assignment and rate "
                               "rules are", r)
        if m.getNumInitialAssignments():
            ia = m.getInitialAssignment(0)
            raise self.err(f"initial assignments are not supported (initial assignment to {ia.getSymbol()!r})", ia)
        if self.level >= 3 and m.isSetConversionFactor():
            raise self.err("model conversion factors are not supported", m)

    def _compartments(self) -> None:
        m = self.model
        self.comp_size: dict[str, float | None] = {}
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
            self.comp_dims[c.getId()] = c.getSpatialDimensionsAsDouble() if self.level >= 2 else 3.0

    def _species(self) -> tuple[list[int], list[int]]:
        m = self.model
        self.species: list[str] = []
        self.index: dict[str, int] = {}
        self.amount_symbol: dict[str, bool] = {}  # True: symbol = amount; False: concentration
        self.species_comp: dict[str, str] = {}
        initial: list[int] = []
        fixed: list[int] = []
        for i in range(m.getNumSpecies()):
            s = m.getSpecies(i)
            sid = s.getId()
            if sid in self.index:
                raise self.err(f"duplicate species id {sid!r}", s)
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
        return initial, fixed

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
            if self._has_rule(sid):
                return 0  # set from the rule
            raise self.err(f"species {sid!r} has no initial amount or concentration", s)
        return self._count(value, f"species {sid!r}: {what}", s)

    def _count(self, value: float, what: str, element: Any) -> int:
        if not math.isfinite(value):
            raise self.err(f"{what} is not finite ({value!r})", element)
        r = round(value)
        if abs(value - r) > _INT_TOL * max(1.0, abs(value)):
            raise self.err(f"{what} {value!r} is not a whole number of molecules", element)
        if r < 0:
            raise self.err(f"{what} {value!r} is negative", element)
        return int(r)

    def _has_rule(self, sid: str) -> bool:
        m = self.model
        return any(m.getRule(i).isAssignment() and m.getRule(i).getVariable() == sid for i in range(m.getNumRules()))

    def _size(self, comp: str, why: str, element: Any) -> float:
        size = self.comp_size.get(comp)
        if size is None or not math.isfinite(size):
            raise self.err(f"{why} but compartment {comp!r} has no size", element)
        if size <= 0:
            raise self.err(f"{why} but compartment {comp!r} has size {size!r} (must be > 0)", element)
        return float(size)

    def _parameters(self, reactions: list[Reaction], rules: list[AssignmentRule], events: list[Event]
                    ) -> dict[str, float]:
        used: set[str] = set()
        for r in reactions:
            if r.law is not None:
                used.update(params_of(r.law))
            elif isinstance(r.rate, str):
                used.add(r.rate)
        exprs = [a.expr for e in events for a in e.assignments] + [r.expr for r in rules]
        for e in events:
            exprs.extend(condition_nodes(e.trigger))
            if e.priority is not None:
                exprs.append(e.priority)
        for x in exprs:
            used.update(params_of(x))
        used.update(a.target for e in events for a in e.assignments if a.species < 0)
        used.update(r.target for r in rules if r.species < 0)
        params: dict[str, float] = {}
        for cid, size in self.comp_size.items():
            if cid in used:
                params[cid] = float(size)  # type: ignore[arg-type]  (checked when used)
        for pid, v in self.global_value.items():
            if pid in used:
                if v is None or not math.isfinite(v):
                    if any(r.target == pid for r in rules):
                        v = 0.0  # set from its rule
                    else:
                        raise self.err(f"parameter {pid!r} has no (finite) value", self.model.getParameter(pid))
                params[pid] = float(v)
        for pid, v in self.local_value.items():
            if pid in used:
                params[pid] = v
        return params

    # ---- reactions -------------------------------------------------------------------------------

    def _reaction(self, r: Any) -> list[Reaction]:
        rid = r.getId()
        label = f"reaction {rid!r}"
        if r.isSetFast() and r.getFast():
            raise self.err(f"{label}: fast reactions are not supported", r)
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
        law = self._math(kl.getMath(), local, label, kl, allow_time=True)
        reversible = r.getReversible() if r.isSetReversible() else True
        if not reversible or self.reversible == "forward":
            return [self._direction(rid, reac, prod, law)]
        parts = split_difference(law)
        if parts is not None:
            fwd, bwd = self._shape(parts[0]), self._shape(parts[1])
            if fwd is not None and bwd is not None and fwd.orders == dict(reac) and bwd.orders == dict(prod):
                return [self._direction(f"{rid}_f", reac, prod, parts[0], fwd),
                        self._direction(f"{rid}_r", prod, reac, parts[1], bwd)]
        shape = self._shape(law)
        if shape is not None and shape.orders == dict(reac):
            return [self._direction(rid, reac, prod, law, shape)]  # one direction only: accepted
        if self.reversible == "error":
            raise self.err(f"{label} is reversible and its kinetic law ({to_text(law, self.species)}) is not a "
                           "difference of two mass-action terms, one per direction; split it into two "
                           "irreversible reactions, or read with reversible='forward' (or 'split') to use the law "
                           "as the forward propensity", r)
        self.forward_only.append(rid)
        return [Reaction(reac, prod, law=law, name=rid)]

    def _shape(self, law: Node) -> MassActionShape | None:
        consts = {c: float(v) for c, v in self.comp_size.items() if v is not None and math.isfinite(v) and v > 0}
        consts = {c: v for c, v in consts.items() if c not in self.assigned}
        rate = {p for p, v in self.global_value.items() if v is not None and p not in self.assigned}
        rate |= set(self.local_value)
        return mass_action_shape(law, consts, rate)

    def _direction(self, name: str, reac: tuple, prod: tuple, law: Node, shape: MassActionShape | None = None
                   ) -> Reaction:
        """A reaction whose propensity is ``law``: mass action when the law is exactly theta * h(x)."""
        shape = self._shape(law) if shape is None else shape
        if shape is not None and shape.orders == dict(reac):
            if shape.param is None:
                return Reaction(reac, prod, rate=shape.factor, name=name)
            if shape.is_unit():
                return Reaction(reac, prod, rate=shape.param, name=name)
        return Reaction(reac, prod, law=law, name=name)

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
            if out[i] > MAX_STOICHIOMETRY:
                raise self.err(f"{label}: stoichiometry of {what} {sid!r} must be at most {MAX_STOICHIOMETRY}, got "
                               f"{out[i]}", sr)
        return tuple(out.items())

    # ---- events and rules ------------------------------------------------------------------------

    def _assigned_ids(self) -> set[str]:
        m = self.model
        out = {m.getRule(i).getVariable() for i in range(m.getNumRules())}
        for i in range(m.getNumEvents()):
            ev = m.getEvent(i)
            out |= {ev.getEventAssignment(k).getVariable() for k in range(ev.getNumEventAssignments())}
        return out

    def _target(self, var: str, expr: Node, label: str, element: Any) -> tuple[int, Node]:
        """(species index or -1, value expression as a count for species) of an assignment to ``var``."""
        if var in self.index:
            if self.amount_symbol[var]:
                return self.index[var], expr
            comp = self.species_comp[var]
            self._size(comp, f"{label}: species {var!r} is a concentration", element)
            return self.index[var], BinOp("*", expr, Param(comp))
        if var in self.global_value:
            return -1, expr
        if var in self.comp_size:
            raise self.err(f"{label}: assignments to compartment {var!r} are not supported", element)
        raise self.err(f"{label}: {var!r} is not a species or parameter of the model (assignments to species "
                       "references are not supported)", element)

    def _rules(self) -> list[AssignmentRule]:
        m = self.model
        rules = []
        for i in range(m.getNumRules()):
            r = m.getRule(i)
            if not r.isAssignment():
                continue
            var = r.getVariable()
            rid = r.getIdAttribute() if hasattr(r, "getIdAttribute") and r.getIdAttribute() else var
            label = f"assignment rule for {var!r}"
            if not r.isSetMath():
                raise self.err(f"{label} has no math", r)
            expr = self._math(r.getMath(), {}, label, r, allow_time=True)
            sp, expr = self._target(var, expr, label, r)
            rules.append((AssignmentRule(rid, var, sp, expr), r))
        return self._sort_rules(rules)

    def _rate_rules(self) -> list[RateRule]:
        """Rate rules (for parameters with a value: distsim's continuous variables), in document order."""
        m = self.model
        out = []
        for i in range(m.getNumRules()):
            r = m.getRule(i)
            if not r.isRate():
                continue
            var = r.getVariable()
            rid = r.getIdAttribute() if hasattr(r, "getIdAttribute") and r.getIdAttribute() else var
            label = f"rate rule for {var!r}"
            if var in self.index:
                raise self.err(f"{label}: {var!r} is a species; distsim integrates rate rules for parameters only",
                               r)
            if var not in self.global_value:
                raise self.err(f"{label}: {var!r} is not a parameter of the model (rate rules for compartments "
                               "are not supported)", r)
            v = self.global_value[var]
            if v is None or not math.isfinite(v):
                raise self.err(f"{label}: parameter {var!r} has no (finite) initial value", r)
            if not r.isSetMath():
                raise self.err(f"{label} has no math", r)
            out.append(RateRule(rid, var, -1, self._math(r.getMath(), {}, label, r, allow_time=True)))
        return out

    def _sort_rules(self, rules: list[tuple[AssignmentRule, Any]]) -> list[AssignmentRule]:
        try:
            order = rule_order([r for r, _ in rules], self.species)
        except RuleCycle as c:
            raise self.err(f"assignment rules depend on each other in a cycle (rule for {rules[c.index][0].target!r})",
                           rules[c.index][1]) from None
        return [rules[k][0] for k in order]

    def _events(self) -> list[Event]:
        m = self.model
        out = []
        for i in range(m.getNumEvents()):
            ev = m.getEvent(i)
            eid = ev.getId() or f"event{i + 1}"
            label = f"event {eid!r}"
            delay = self._delay(ev, label)
            trig = ev.getTrigger()
            if trig is None or not trig.isSetMath():
                raise self.err(f"{label} has no trigger", ev)
            cond = self._condition(trig.getMath(), label, trig)
            if self.level >= 3:
                initial_value, persistent = bool(trig.getInitialValue()), bool(trig.getPersistent())
            else:
                initial_value, persistent = True, True
            uvft = bool(ev.getUseValuesFromTriggerTime()) if (self.level, self.doc.getVersion()) >= (2, 4) else True
            priority = None
            if self.level >= 3 and ev.isSetPriority() and ev.getPriority().isSetMath():
                priority = self._math(ev.getPriority().getMath(), {}, f"{label} priority", ev, allow_time=True)
            assignments = []
            for k in range(ev.getNumEventAssignments()):
                ea = ev.getEventAssignment(k)
                var = ea.getVariable()
                if not ea.isSetMath():
                    raise self.err(f"{label}: the assignment to {var!r} has no math", ea)
                expr = self._math(ea.getMath(), {}, f"{label}, assignment to {var!r}", ea, allow_time=True)
                sp, expr = self._target(var, expr, label, ea)
                assignments.append(Assignment(var, sp, expr))
            out.append(Event(eid, cond, tuple(assignments), initial_value, persistent, uvft, priority, delay))
        return out

    def _delay(self, ev: Any, label: str) -> Node | None:
        """An event's delay (evaluated at the trigger time; the SSA runs delays on CPUs), or None."""
        if not ev.isSetDelay():
            return None
        d = ev.getDelay()
        if not d.isSetMath():
            raise self.err(f"{label}: the delay has no math", d)
        return self._math(d.getMath(), {}, f"{label} delay", d, allow_time=True)

    def _condition(self, ast: Any, label: str, where: Any, depth: int = 0) -> Condition:
        L = self.L
        if depth > _MAX_CONDITION_DEPTH:
            raise self.err(f"{label}: the trigger nests more than {_MAX_CONDITION_DEPTH} logical operators", where)
        t = ast.getType()
        kids = [ast.getChild(i) for i in range(ast.getNumChildren())]
        if t == L.AST_CONSTANT_TRUE:
            return Truth(True)
        if t == L.AST_CONSTANT_FALSE:
            return Truth(False)
        rel = {L.AST_RELATIONAL_LT: "<", L.AST_RELATIONAL_LEQ: "<=", L.AST_RELATIONAL_GT: ">",
               L.AST_RELATIONAL_GEQ: ">=", L.AST_RELATIONAL_EQ: "==", L.AST_RELATIONAL_NEQ: "!="}
        if t in rel:
            if len(kids) < 2 or (t == L.AST_RELATIONAL_NEQ and len(kids) != 2):
                raise self.err(f"{label}: a relation needs two operands, got {len(kids)}", where)
            ops = [self._math(k, {}, label, where, allow_time=True) for k in kids]
            pairs = [Compare(rel[t], a, b) for a, b in zip(ops, ops[1:])]
            return pairs[0] if len(pairs) == 1 else Logic("and", tuple(pairs))
        logic = {L.AST_LOGICAL_AND: "and", L.AST_LOGICAL_OR: "or", L.AST_LOGICAL_XOR: "xor",
                 L.AST_LOGICAL_NOT: "not"}
        if t in logic:
            op = logic[t]
            if (op == "not" and len(kids) != 1) or (op != "not" and len(kids) < 1):
                raise self.err(f"{label}: '{op}' with {len(kids)} operand(s)", where)
            args = tuple(self._condition(k, label, where, depth + 1) for k in kids)
            return args[0] if len(args) == 1 and op != "not" else Logic(op, args)
        raise self.err(f"{label}: the trigger must be a relation or logical expression, got "
                       f"{self.ast_names.get(t, t)}", where)

    # ---- math ------------------------------------------------------------------------------------

    def _math(self, root: Any, local: dict[str, str], label: str, where: Any, *, allow_time: bool = False) -> Node:
        """libsbml AST -> arith tree without recursion (function definitions inlined), with limits on
        depth and size."""
        if root is None:
            raise self.err(f"{label}: the math is missing", where)
        L = self.L
        out: list[tuple[Node, int]] = []  # converted operands: (node, depth)
        todo: list[tuple] = [("visit", root, {}, local, label, 0)]
        count = 0
        while todo:
            item = todo.pop()
            if item[0] == "visit":
                _, ast, env, loc, lab, inline = item
                count += 1
                if count > MAX_MATH_NODES:
                    raise self.err(f"{label}: the expression has more than {MAX_MATH_NODES} nodes after inlining "
                                   "function definitions", where)
                t = ast.getType()
                leaf = self._leaf(ast, t, env, loc, lab, where, allow_time)
                if leaf is not None:
                    out.append(leaf)
                    continue
                if t not in self.operators:
                    self._combine(ast, t, [], lab, where)  # raises: says what is unsupported
                n = ast.getNumChildren()
                todo.append(("build", ast, t, n, env, loc, lab, inline))
                for i in reversed(range(n)):
                    child = ast.getChild(i)
                    if child is None:
                        raise self.err(f"{lab}: malformed math", where)
                    todo.append(("visit", child, env, loc, lab, inline))
                continue
            _, ast, t, n, env, loc, lab, inline = item
            kids = out[len(out) - n:] if n else []
            del out[len(out) - n:]
            if t == L.AST_FUNCTION:
                body, inner, flabel = self._inline(ast, [k for k in kids], lab, where, inline)
                todo.append(("visit", body, inner, {}, flabel, inline + 1))
                continue
            node = self._combine(ast, t, [k[0] for k in kids], lab, where)
            depth = 1 + max((k[1] for k in kids), default=0)
            if depth > MAX_MATH_DEPTH:
                raise self.err(f"{label}: the expression nests more than {MAX_MATH_DEPTH} deep", where)
            out.append((node, depth))
        return out[0][0]

    def _unsupported(self, ast: Any, what: str, label: str, where: Any) -> ModelError:
        try:
            text = self.L.formulaToL3String(ast)
        except Exception:  # pragma: no cover - formatting is best effort
            text = "?"
        return self.err(f"{label}: the math uses {what} ({text}), which is not supported", where)

    def _leaf(self, ast: Any, t: int, env: dict, local: dict[str, str], label: str, where: Any,
              allow_time: bool) -> tuple[Node, int] | None:
        L = self.L
        if t == L.AST_INTEGER:
            return Num(float(ast.getInteger())), 1
        if t in (L.AST_REAL, L.AST_REAL_E, L.AST_RATIONAL):
            v = ast.getReal()
            if not math.isfinite(v):
                raise self._unsupported(ast, f"the non-finite number {v!r}", label, where)
            return Num(float(v)), 1
        if t == L.AST_NAME:
            name = ast.getName()
            if name in env:
                return env[name]
            return self._name(name, local, label, where), 2
        if t == L.AST_NAME_AVOGADRO:
            return Num(float(ast.getReal())), 1
        if t == L.AST_CONSTANT_E:
            return Num(math.e), 1
        if t == L.AST_CONSTANT_PI:
            return Num(math.pi), 1
        if t == L.AST_NAME_TIME:
            if allow_time:
                return Time(), 1
            raise self._unsupported(ast, "the simulation time symbol", label, where)
        if t == L.AST_FUNCTION_DELAY:
            raise self._unsupported(ast, "delay()", label, where)
        return None

    def _combine(self, ast: Any, t: int, kids: list[Node], label: str, where: Any) -> Node:
        L = self.L

        def arity(*ok: int) -> None:
            if len(kids) not in ok:
                raise self._unsupported(ast, f"{self.ast_names.get(t, t)} with {len(kids)} argument(s)", label, where)

        if t in (L.AST_PLUS, L.AST_TIMES):
            if not kids:
                return Num(0.0 if t == L.AST_PLUS else 1.0)
            out = kids[0]
            for k in kids[1:]:
                out = BinOp("+" if t == L.AST_PLUS else "*", out, k)
            return out
        if t == L.AST_MINUS:
            arity(1, 2)
            return Neg(kids[0]) if len(kids) == 1 else BinOp("-", kids[0], kids[1])
        if t == L.AST_DIVIDE:
            arity(2)
            return BinOp("/", kids[0], kids[1])
        if t in (L.AST_POWER, L.AST_FUNCTION_POWER):
            arity(2)
            return BinOp("^", kids[0], kids[1])
        if t in self._hybrid_math():
            return self._hybrid_node(ast, t, kids, label, where)
        simple = {L.AST_FUNCTION_EXP: "exp", L.AST_FUNCTION_LN: "log", L.AST_FUNCTION_ABS: "abs",
                  L.AST_FUNCTION_FLOOR: "floor", L.AST_FUNCTION_CEILING: "ceil"}
        if t in simple:
            arity(1)
            return Call(simple[t], (kids[0],))
        if t == L.AST_FUNCTION_LOG:
            arity(1, 2)
            if len(kids) == 1:
                return Call("log10", (kids[0],))
            base, x = kids
            if isinstance(base, Num) and base.value == 10.0:
                return Call("log10", (x,))
            return BinOp("/", Call("log", (x,)), Call("log", (base,)))
        if t == L.AST_FUNCTION_ROOT:
            arity(1, 2)
            if len(kids) == 1:
                return Call("sqrt", (kids[0],))
            degree, x = kids
            if isinstance(degree, Num) and degree.value == 2.0:
                return Call("sqrt", (x,))
            return BinOp("^", x, BinOp("/", Num(1.0), degree))
        mm = {getattr(L, "AST_FUNCTION_MAX", -1): "max", getattr(L, "AST_FUNCTION_MIN", -1): "min"}
        if t in mm:
            if not kids:
                raise self._unsupported(ast, f"{mm[t]}() without arguments", label, where)
            out = kids[0]
            for k in kids[1:]:
                out = Call(mm[t], (out, k))
            return out
        name = self.ast_names.get(t, str(t))
        nice = ast.getName() or name.replace("AST_", "").replace("FUNCTION_", "").lower()
        raise self._unsupported(ast, f"{nice!r}", label, where)

    def _hybrid_math(self) -> dict[int, str]:
        """The math that only the SSA's hybrid loop evaluates (distsim.ssa.hybrid_ops): sin, cos,
        piecewise and its conditions (relations, logic, true/false), by libsbml AST type."""
        L = self.L
        return {L.AST_FUNCTION_SIN: "sin", L.AST_FUNCTION_COS: "cos", L.AST_FUNCTION_PIECEWISE: "piecewise",
                L.AST_RELATIONAL_LT: "<", L.AST_RELATIONAL_LEQ: "<=", L.AST_RELATIONAL_GT: ">",
                L.AST_RELATIONAL_GEQ: ">=", L.AST_RELATIONAL_EQ: "==", L.AST_RELATIONAL_NEQ: "!=",
                L.AST_LOGICAL_AND: "and", L.AST_LOGICAL_OR: "or", L.AST_LOGICAL_XOR: "xor", L.AST_LOGICAL_NOT: "not",
                L.AST_CONSTANT_TRUE: "true", L.AST_CONSTANT_FALSE: "false"}

    def _hybrid_node(self, ast: Any, t: int, kids: list[Node], label: str, where: Any) -> Node:
        """The arith node of a :meth:`_hybrid_math` element (n-ary relations chained with 'and';
        piecewise without otherwise: NaN where no piece holds, which stops a realization)."""
        op = self._hybrid_math()[t]
        n = len(kids)
        if op in ("true", "false"):
            return Num(1.0 if op == "true" else 0.0)
        if op in ("sin", "cos", "not") and n != 1 or op in ("<", "<=", ">", ">=", "==", "!=") and n < 2 \
                or op in ("and", "or", "xor") and n < 1 or op == "piecewise" and n < 1:
            raise self._unsupported(ast, f"{op} with {n} argument(s)", label, where)
        if op in ("sin", "cos"):
            return Call(op, (kids[0],))
        if op == "piecewise":
            pieces = tuple((kids[i], kids[i + 1]) for i in range(0, n - 1, 2))
            return Piecewise(pieces, kids[-1] if n % 2 else Num(math.nan))
        if op in ("and", "or", "xor"):
            return kids[0] if n == 1 else Relation(op, tuple(kids))
        if op == "not":
            return Relation("not", (kids[0],))
        pairs = [Relation(op, (a, b)) for a, b in zip(kids, kids[1:])]
        return pairs[0] if len(pairs) == 1 else Relation("and", tuple(pairs))

    def _inline(self, ast: Any, args: list[tuple[Node, int]], label: str, where: Any, depth: int
                ) -> tuple[Any, dict, str]:
        """(body, argument bindings, label) of a call of a function definition."""
        fname = ast.getName()
        fd = self.model.getFunctionDefinition(fname)
        if fd is None:
            raise self.err(f"{label}: the math calls {fname!r}, which is not a function definition", where)
        if depth >= _MAX_INLINE_DEPTH:
            raise self.err(f"{label}: function definitions nest more than {_MAX_INLINE_DEPTH} deep "
                           f"(recursive definition of {fname!r}?)", fd)
        body = fd.getBody()
        if body is None:
            raise self.err(f"function definition {fname!r} has no body", fd)
        nargs = fd.getNumArguments()
        if nargs != len(args):
            raise self.err(f"{label}: function {fname!r} takes {nargs} argument(s), called with {len(args)}", where)
        inner = {}
        for i in range(nargs):
            a = fd.getArgument(i)
            if a is None or not a.getName():
                raise self.err(f"function definition {fname!r}: argument {i + 1} has no name", fd)
            inner[a.getName()] = args[i]
        # a function body sees only its arguments and model-level (global) symbols
        return body, inner, f"{label} (via function {fname!r})"

    def _name(self, name: str, local: dict[str, str], label: str, where: Any) -> Node:
        if name in local:
            new = local[name]
            if new not in self.local_value:
                raise self.err(f"{label}: local parameter {name!r} has no (finite) value", where)
            return Param(new)
        if name in self.index:
            i = self.index[name]
            if self.amount_symbol[name]:
                return Species(i)
            comp = self.species_comp[name]
            self._size(comp, f"{label}: species {name!r} is a concentration (hasOnlySubstanceUnits=false)", where)
            return BinOp("/", Species(i), Param(comp))
        if name in self.comp_size:
            self._size(name, f"{label}: the math uses compartment {name!r}", where)
            return Param(name)
        if name in self.global_value:
            v = self.global_value[name]
            if (v is None or not math.isfinite(v)) and not self._has_rule(name):
                raise self.err(f"{label}: parameter {name!r} has no (finite) value", where)
            return Param(name)
        if name in self.reaction_ids:
            raise self.err(f"{label}: the math uses the rate of reaction {name!r}, which is not supported", where)
        raise self.err(f"{label}: the math uses {name!r}, which is not a species, compartment or "
                       "parameter of the model (species reference ids are not supported)", where)
