"""SBML-qual (SBML Level 3 ``qual`` package, Chaouiya et al. 2013) Boolean models, read with
python-libsbml.

* Every ``qualitativeSpecies`` is a node (document order, named by its id). Its ``maxLevel``
  must be 1 (absent counts as 1): a multi-valued model is refused.
* A ``transition`` gives the function of its output species (``transitionEffect``
  ``assignmentLevel``; ``production`` is refused): the ``resultLevel`` of the function term whose
  math is true, else that of the ``defaultTerm``. Terms with one level are joined by OR; terms
  with different levels must exclude each other (else the model is ambiguous and refused).
* Math: ``and or xor not``, ``eq neq lt leq gt geq``, ``true false``, numbers, ``plus minus
  times divide``, ``piecewise``; a ``ci`` names a species (its level, 0 or 1) or an ``input`` of
  the transition (its ``thresholdLevel``). It is compiled exactly (:mod:`distsim.models.logic`):
  ``X >= 1`` becomes ``X``, ``X == 0`` becomes ``!X``.
* A ``constant`` species is fixed (never perturbed): constant at its ``initialLevel``, or keeping
  its initial value when it has none. A species that no transition sets (or whose transition
  has no function term) is a free input, handled by the ``inputs`` policy of :mod:`.boolnet`.
* Other initial levels, layout, names and annotations are not used.

The document is checked first, as SBML core documents are (:mod:`.sbml`): parsed with expat (no
recursion) it must be well-formed, without a DOCTYPE, and nest at most ``MAX_XML_DEPTH`` elements
deep; its MathML is then converted with explicit stacks. Then a fatal libsbml error, an XML error, an identifier or MathML
error refuses it (with file and line). Schema errors that do not touch what is read (a missing
``qual:compartment``, an unknown attribute, an empty ``listOfInputs``, as in several public
exports) are reported in one :class:`UserWarning`. The :class:`SBMLDocument` stays alive while
its children are read.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

from ..arith import BinOp, Neg, Num
from ..boolean import Const, Expr, Var
from ...errors import ModelError
from .base import Format
from ..logic import Cmp, Cond, Logic, Term, TooComplex, mk_and, mk_not, mk_or, satisfiable, to_bool
from ..pbn import PBN, Predictor
from .boolnet import INPUT_POLICIES, input_predictors
from .sbml import check_sbml_file

__all__ = ["read_sbml_qual", "is_sbml_qual"]

QUAL_NS = "http://www.sbml.org/sbml/level3/version1/qual/version1"


def is_sbml_qual(path: str | os.PathLike) -> bool:
    """Whether the start of the file declares the SBML qual namespace (a cheap sniff, no parse)."""
    with open(path, "rb") as fh:
        head = fh.read(1 << 16)
    return b"<sbml" in head and QUAL_NS.encode() in head


def read_sbml_qual(path: str | os.PathLike, *, inputs: str = "keep") -> PBN:
    """Read a Boolean SBML-qual model (see the module docstring). ``inputs``: free-input policy
    (``keep``, ``zero``, ``one``, ``random``). A missing file raises :class:`FileNotFoundError`."""
    file = os.fspath(path)
    if inputs not in INPUT_POLICIES:
        raise ValueError(f"unknown free-input policy {inputs!r}; expected one of {', '.join(INPUT_POLICIES)}")
    if not Path(file).is_file():
        raise FileNotFoundError(f"model file not found: {file}")
    try:
        import libsbml  # noqa: PLC0415 (imported lazily)
    except ImportError:
        raise ModelError("reading SBML-qual needs python-libsbml; install it with 'pip install python-libsbml'",
                         file=file) from None
    check_sbml_file(file)  # size, attribute length, nesting: before libsbml sees the file
    doc = libsbml.readSBMLFromFile(file)
    _check(libsbml, doc, file)
    model = doc.getModel()
    if model is None:
        raise ModelError("the SBML document has no <model>", file=file, line=doc.getLine() or 1)
    qual = model.getPlugin("qual")
    if qual is None or qual.getNumQualitativeSpecies() == 0:
        raise ModelError("not an SBML-qual model (no qual:qualitativeSpecies); SBML reaction models are read by "
                         "distsim.ssa", file=file, line=model.getLine() or 1)
    return _Reader(libsbml, doc, qual, file, inputs).network()


def _check(L: Any, doc: Any, file: str) -> None:
    refuse = {L.LIBSBML_CAT_XML, L.LIBSBML_CAT_IDENTIFIER_CONSISTENCY, L.LIBSBML_CAT_MATHML_CONSISTENCY}
    tolerated: dict[str, int] = {}
    for i in range(doc.getNumErrors()):
        e = doc.getError(i)
        if not (e.isError() or e.isFatal()):
            continue
        if e.isFatal() or e.getCategory() in refuse:
            short = e.getShortMessage().strip().rstrip(".")
            lines = [ln.strip() for ln in e.getMessage().strip().splitlines() if ln.strip()]
            detail = lines[-1] if lines else ""
            msg = f"{short}: {detail}" if detail and detail.rstrip(".") != short else short
            raise ModelError(f"invalid SBML ({msg})", file=file, line=e.getLine() or None,
                             column=e.getColumn() or None)
        key = e.getShortMessage().strip().rstrip(".")
        tolerated[key] = tolerated.get(key, 0) + 1
    if tolerated:
        kinds = "; ".join(f"{k} ({n}x)" for k, n in tolerated.items())
        warnings.warn(f"{file}: libsbml reports schema errors that do not affect the logic, read anyway: {kinds}",
                      UserWarning, stacklevel=3)


class _Reader:
    def __init__(self, L: Any, doc: Any, qual: Any, file: str, inputs: str):
        self.L = L
        self.doc = doc  # keeps the document (and so every child object) alive
        self.qual = qual
        self.file = file
        self.inputs = inputs

    def err(self, msg: str, element: Any = None) -> ModelError:
        line = element.getLine() if element is not None else 0
        col = element.getColumn() if element is not None else 0
        return ModelError(msg, file=self.file, line=line or None, column=col or None)

    def network(self) -> PBN:
        q = self.qual
        names: list[str] = []
        species = []
        for k in range(q.getNumQualitativeSpecies()):
            s = q.getQualitativeSpecies(k)
            sid = s.getId()
            if not sid:
                raise self.err("a qualitativeSpecies has no id", s)
            if sid in names:
                raise self.err(f"qualitativeSpecies id {sid!r} is used twice", s)
            if s.isSetMaxLevel() and s.getMaxLevel() != 1:
                raise self.err(f"species {sid!r} has maxLevel {s.getMaxLevel()}: multi-valued models are not "
                               "supported (only Boolean, maxLevel 1)", s)
            if s.isSetInitialLevel() and s.getInitialLevel() not in (0, 1):
                raise self.err(f"species {sid!r} has initialLevel {s.getInitialLevel()}, not 0 or 1", s)
            names.append(sid)
            species.append(s)
        self.index = {nm: i for i, nm in enumerate(names)}
        functions: dict[int, Expr | None] = {}
        for k in range(q.getNumTransitions()):
            t = q.getTransition(k)
            out = self._outputs(t)
            f = self._function(t)
            for i in out:
                if i in functions:
                    raise self.err(f"species {names[i]!r} is the output of two transitions", t)
                functions[i] = f
        preds: list[list[Predictor]] = []
        fixed = []
        for i, s in enumerate(species):
            if s.getConstant():
                if functions.get(i) is not None:
                    raise self.err(f"species {names[i]!r} is constant but a transition sets it", s)
                e: Expr = Const(bool(s.getInitialLevel())) if s.isSetInitialLevel() else Var(i)
                preds.append([Predictor(e, 1.0)])
                fixed.append(i)
            elif functions.get(i) is None:
                preds.append(list(input_predictors(i, self.inputs)))
            else:
                preds.append([Predictor(functions[i], 1.0)])  # type: ignore[arg-type]
        model = self.doc.getModel()
        name = model.getName() or model.getId() or Path(self.file).stem
        return PBN.create(names, preds, fixed=fixed, name=name, source=self.file)

    def _outputs(self, t: Any) -> list[int]:
        out = []
        for k in range(t.getNumOutputs()):
            o = t.getOutput(k)
            sid = o.getQualitativeSpecies()
            if sid not in self.index:
                raise self.err(f"transition {t.getId()!r}: output species {sid!r} is not a qualitativeSpecies", o)
            effect = o.getTransitionEffect() if o.isSetTransitionEffect() else None
            if effect is not None and effect != self.L.OUTPUT_TRANSITION_EFFECT_ASSIGNMENT_LEVEL:
                raise self.err(f"transition {t.getId()!r}: only the output effect 'assignmentLevel' is supported", o)
            out.append(self.index[sid])
        if not out:
            raise self.err(f"transition {t.getId()!r} has no output", t)
        return out

    def _function(self, t: Any) -> Expr | None:
        """The Boolean function of transition ``t`` (None: it has no function term at all)."""
        n = t.getNumFunctionTerms()
        default = t.getDefaultTerm()
        if n == 0 and default is None:
            return None
        if default is None:
            raise self.err(f"transition {t.getId()!r} has function terms but no defaultTerm", t)
        level = self._level(default, t)
        thresholds = {}
        for k in range(t.getNumInputs()):
            inp = t.getInput(k)
            if inp.getId() and inp.isSetThresholdLevel():
                thresholds[inp.getId()] = inp.getThresholdLevel()
        terms = []
        for k in range(n):
            ft = t.getFunctionTerm(k)
            math = ft.getMath()
            if math is None:
                raise self.err(f"transition {t.getId()!r}: a functionTerm has no math", ft)
            try:
                cond = to_bool(self._term(math, thresholds, ft))
            except TooComplex as e:
                raise self.err(f"transition {t.getId()!r}: {e}", ft) from None
            terms.append((self._level(ft, t), cond))
        ones = mk_or(*[c for lv, c in terms if lv == 1])
        zeros = mk_or(*[c for lv, c in terms if lv == 0])
        if satisfiable(mk_and(ones, zeros)):
            raise self.err(f"transition {t.getId()!r}: function terms with result levels 0 and 1 hold in the same "
                           "state; the model is ambiguous", t)
        if level == 1:
            return mk_not(zeros)  # 1 unless a level-0 term holds
        return ones

    def _level(self, term: Any, t: Any) -> int:
        lv = term.getResultLevel()
        if lv not in (0, 1):
            raise self.err(f"transition {t.getId()!r}: resultLevel {lv} in a Boolean model (levels are 0 and 1)",
                           term)
        return int(lv)

    def _term(self, root: Any, thresholds: dict[str, int], where: Any) -> Term:
        """The term of the MathML ``root`` of a function term, converted with an explicit stack (the
        pre-check bounds the depth at MAX_XML_DEPTH; errors point at the element ``where``)."""
        L = self.L
        logic = {L.AST_LOGICAL_AND: "and", L.AST_LOGICAL_OR: "or", L.AST_LOGICAL_XOR: "xor", L.AST_LOGICAL_NOT: "not"}
        rel = {L.AST_RELATIONAL_EQ: "==", L.AST_RELATIONAL_NEQ: "!=", L.AST_RELATIONAL_LT: "<",
               L.AST_RELATIONAL_LEQ: "<=", L.AST_RELATIONAL_GT: ">", L.AST_RELATIONAL_GEQ: ">="}
        arith = {L.AST_PLUS: "+", L.AST_MINUS: "-", L.AST_TIMES: "*", L.AST_DIVIDE: "/"}
        numbers = (L.AST_INTEGER, L.AST_REAL, L.AST_REAL_E, L.AST_RATIONAL, L.AST_CONSTANT_TRUE, L.AST_CONSTANT_FALSE)
        out: list[Term] = []  # converted operands
        todo: list[tuple[Any, bool]] = [(root, False)]
        while todo:
            ast, built = todo.pop()
            kind = ast.getType()
            if not built:
                if kind == L.AST_NAME:
                    out.append(self._name(ast.getName(), thresholds, where))
                elif kind in numbers:
                    out.append(self._number(ast, kind))
                elif kind in logic or kind in rel or kind in arith or kind == L.AST_FUNCTION_PIECEWISE:
                    if kind in rel and ast.getNumChildren() < 2:
                        raise self.err("a relational operator needs two operands", where)
                    todo.append((ast, True))
                    for k in reversed(range(ast.getNumChildren())):
                        child = ast.getChild(k)
                        if child is None:
                            raise self.err("malformed math", where)
                        todo.append((child, False))
                else:
                    raise self.err(f"unsupported math element <{ast.getName() or L.formulaToL3String(ast)}> in a "
                                   "function term", where)
                continue
            n = ast.getNumChildren()
            kids = out[len(out) - n:] if n else []
            del out[len(out) - n:]
            if kind in logic:
                out.append(Logic(logic[kind], tuple(kids)) if kids else Num(1.0 if logic[kind] == "and" else 0.0))
            elif kind in rel:
                parts = [Cmp(rel[kind], a, b) for a, b in zip(kids, kids[1:])]
                out.append(parts[0] if len(parts) == 1 else Logic("and", tuple(parts)))
            elif kind in arith:
                out.append(_arithmetic(arith[kind], kids))
            else:
                out.append(_piecewise(kids))
        return out[0]

    def _name(self, nm: str, thresholds: dict[str, int], where: Any) -> Term:
        """A species (its variable) or an input's thresholdLevel (a number)."""
        if nm in self.index:
            return Var(self.index[nm])
        if nm in thresholds:
            return Num(float(thresholds[nm]))
        raise self.err(f"math names {nm!r}, which is neither a species nor an input with a thresholdLevel", where)

    def _number(self, ast: Any, kind: int) -> Num:
        """An integer, a real or a Boolean constant (true is 1, false 0)."""
        L = self.L
        if kind == L.AST_INTEGER:
            return Num(float(ast.getInteger()))
        if kind in (L.AST_REAL, L.AST_REAL_E, L.AST_RATIONAL):
            return Num(float(ast.getReal()))
        return Num(1.0 if kind == L.AST_CONSTANT_TRUE else 0.0)


def _arithmetic(op: str, kids: list[Term]) -> Term:
    """``+ - * /`` over any number of operands, left to right (one operand of ``-``: a negation)."""
    if op == "-" and len(kids) == 1:
        return Neg(kids[0])
    if not kids:
        return Num(0.0 if op == "+" else 1.0)
    acc = kids[0]
    for a in kids[1:]:
        acc = BinOp(op, acc, a)
    return acc


def _piecewise(kids: list[Term]) -> Term:
    """``piecewise``: value, condition pairs, then the optional otherwise value (default 0)."""
    pieces = [(kids[k], kids[k + 1]) for k in range(0, len(kids) - 1, 2)]
    acc: Term = kids[-1] if len(kids) % 2 else Num(0.0)
    for value, cond in reversed(pieces):
        acc = Cond(cond, value, acc)
    return acc


def sniff(path: str | os.PathLike, head: bytes) -> bool:
    """Any XML document: among Boolean-network formats only SBML-qual is XML, and its reader says
    clearly when a document is SBML without the qual package (a reaction model)."""
    return head.removeprefix(b"\xef\xbb\xbf").lstrip().startswith(b"<")


FORMAT = Format("sbml-qual", "boolean", (".sbml",), sniff, read_sbml_qual, "an SBML document with the qual package",
                aliases=("sbml_qual",), options=("inputs",))
