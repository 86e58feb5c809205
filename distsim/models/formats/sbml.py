"""SBML reader for exact stochastic simulation (python-libsbml): files and strings, Levels 1-3.

:func:`read_sbml` (a file) and :func:`read_sbml_string` turn an SBML model (Level 3 Version 2 or 1,
Level 2, Level 1) into a :class:`~distsim.models.reactions.ReactionNetwork`.

**Amounts from units.** Every species becomes a count of molecules. Omega, the number of
molecules per substance unit, is one number for the whole model:

* ``system_size=`` (``--system-size``) when the user gives it (every species' amount x Omega);
* else from the substance units: a species' ``substanceUnits`` (Level 1: ``units``), else the
  model's ``substanceUnits`` (Level 3), else -- Levels 1 and 2 -- the built-in ``substance``, the
  **mole** unless the model redefines it. A unit definition of one ``mole`` (or ``avogadro``) or
  ``item`` unit of exponent 1, times dimensionless ones, gives Omega = the product over its units of
  (multiplier x 10^scale)^exponent, times 6.02214076e23 (:data:`AVOGADRO`) for a mole (``mmol``:
  6.02214076e20). Species with units of different sizes, a Level 3 ``extentUnits`` of another
  size, or a unit of another kind (gram) are refused (pass ``system_size=``);
* Omega = 1 when a Level 3 model declares no substance units (amounts are molecules, as before).

A count is amount x Omega (``initialConcentration`` x size x Omega). It must be a whole number
(within 1e-9, relative); otherwise the species, its value and its conversion are named in a
:class:`ModelError` -- also for a non-zero amount that would become 0 molecules (BIOMD0000000001's
``B`` = 1.66e-21 mol used to become 0). ``rounding="nearest"`` (``--rounding nearest``) rounds
instead; each rounding is recorded in the network's ``metadata`` (``rounded``) and so in the SSA
result's attrs (``model_rounded``), and a non-zero amount rounded to 0 warns; a negative amount within
half a molecule of 0 (round-off of the model's own ODE solution, BIOMD0000000534's -1.2e-26) is
refused, or with ``rounding="nearest"`` rounded to 0 like any other. Counts above 2**53,
and -- when Omega comes from the units (Avogadro) -- an initial state whose propensities sum to
more than :data:`MAX_UNITS_FIRING_RATE` firings per unit of model time, are refused with that
number and the option that helps (``system_size=``; ``system_size=1`` reads each amount as a number
of molecules, the convention of GillesPy2 -- whose SBML export says ``substanceUnits="mole"`` --
and of libRoadRunner's ``gillespie``). The metadata also records ``system_size`` (Omega), where it
came from (``system_size_source``) and the ``substance_unit``.

**Stochastic convention.** SBML kinetic laws are written as deterministic rates (substance per
time); species symbols stand for amounts (in substance units) or concentrations (below). With
counts x, a symbol stands for x / Omega (amount) or x / (Omega x size) (concentration), and the
propensity (firings per unit time) is **Omega x the law's value**. With Omega = 1 this is how the
SBML discrete stochastic test suite (DSMTS, Evans, Gillespie & Wilkinson 2008), GillesPy2
(``gillespy2.sbml.SBMLimport``: the law becomes the reaction's ``propensity_function`` verbatim) and
libRoadRunner's ``gillespie`` integrator (the law's value is the reaction's propensity) read them:
**the value of the kinetic law, with species symbols standing for amounts in molecules, is the
propensity**. No other factor is added or removed, so a law ``k * A^2`` on ``2A -> B`` fires at
``k x^2``, not at the combinatorial ``k x (x-1)/2``: for the stochastic mass-action rate constant of distsim's
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
general law with the same propensity. Either way the propensity is the law's value. With Omega != 1
a mass-action law ``c * k * prod_i s_i`` (s_i the reactants' symbols, c numbers and compartment
sizes) stays mass action: Omega c k prod_i x_i / (Omega V_i) (V_i = 1 for an amount, its size for a
concentration) is theta' prod_i x_i with theta' = k c Omega^(1 - order) / prod_i V_i (order: the
number of reactant molecules; ``k * A * B`` in mmol: theta' = k / 6.02214076e20; first order with
c = V: theta' = k).
theta' becomes its own parameter ``<parameter>__stochastic`` (recorded in the metadata's
``derived_rates``) where nothing else (another law, an event, a rule) reads the model parameter,
which is then no longer a parameter of the network (``with_parameters`` of it is an error, never a
stale copy); elsewhere the reaction keeps its general law (same propensity).

**Concentration laws as stochastic mass action** (``mass_action=`` option, ``--mass-action``):
``"as_written"`` (default) keeps the convention above (``k * A^2`` on ``2A -> B`` fires at Omega k
(x/(Omega V))^2, also at x = 1, where a firing makes A negative and the run stops). ``"stochastic"``
applies the textbook conversion of a deterministic mass-action rate (Gillespie 1977; Wilkinson,
*Stochastic Modelling for Systems Biology*, ch. 6; COPASI's mass action in stochastic runs): each power
x^r of a reactant is replaced by the falling factorial x (x - 1) ... (x - r + 1), so ``V * k * A^2`` (A a
concentration in V) fires at Omega V k x (x - 1) / (Omega V)^2 = k x (x - 1) / (Omega V), and the
mean-field limit is the law. Only laws of exact mass-action shape in the reactants of their channel
(:func:`~distsim.models.mass_action.falling_powers`: numbers, compartment sizes, one parameter and the
bare reactant symbols, each to the power of its stoichiometry) with some power r > 1 change -- after
the net-rate split each channel on its own (the forward channel's reactants, the backward channel's
products); every other law (Michaelis-Menten, a law already written ``k * A * (A - 1)``, first-order
laws) is untouched. The channels read so are listed in the metadata's ``mass_action_stochastic``
(``none`` when none), and so in the SSA result's attrs.

**Fast reactions** (``fast=`` option, ``--fast``): ``"refuse"`` (default) refuses a reaction with
``fast="true"``, whose SBML meaning (Level 2, Level 3 Version 1: it reaches equilibrium
instantaneously) has no exact stochastic reading. ``"as_slow"`` reads it as an ordinary reaction with
its kinetic law: an exact simulation of the model with the flag ignored (not of the rapid-equilibrium
model), which is what COPASI does (its SBML import warns and sets the flag to false; libRoadRunner
2.10 refuses the model) and what the model is in SBML Level 3 Version 2, which removed the attribute.
The reactions read so are listed in the metadata's ``fast_as_slow``, with one :class:`SBMLWarning`.

**Guarded reading** (``guard=True``, ``--guard``; default off: such laws stop a run with an error that
names them). Some laws as written are no propensities: a constant flux ``Fleak`` on ``CaER -> ...`` (or
any law that does not vanish when a species it consumes is absent, or ``k*A^2`` consuming two of A) can
fire with nothing left to consume, and a net rate whose sign changes in a way the reader cannot split
(``-fer*vcytver*jer*cell``, ``(1 - ste9)/(J3 + 1 - ste9)``, ``-k_mal`` with k_mal set by events) goes
negative. With ``guard=True``, after every other step of reading (net-rate split, ``mass_action``):

1. **sign split**: a channel whose law v is not >= 0 by its form
   (:func:`~distsim.models.mass_action.nonnegative`: every operation keeps its operands' known signs;
   counts, time and parameters that keep one value >= 0 for the run are >= 0; a subtraction, a unary
   minus, a log, or a parameter that is negative or that rules or events set may give either sign)
   becomes a forward channel, its id, with propensity ``max(0, v)`` (reactants -> products) and a
   backward channel ``<id>_reverse`` with ``max(0, -v)`` (products -> reactants). A channel of
   mass-action shape in its reactants with a rate >= 0 fixed for the run, or provably >= 0, is never split.
2. **reactant guard**: a channel (after 1) that consumes a species (net change < 0, not a boundary
   species) and whose law does not vanish without it
   (:func:`~distsim.models.mass_action.vanishes_without`), or that consumes n > 1 of it, has its
   propensity multiplied by the indicator that each such species count is >= its reactant
   stoichiometry n (:func:`~distsim.models.mass_action.at_least`, ``min(max(x - n + 1, 0), 1)``).
   Laws that already vanish are untouched.

Only law trees change (``min``/``max``, which every kernel evaluates): no kernel changes, and CPU and
GPU give the same bits. The guarded model's CTMC equals the written model's on every path until the
first time the written law would give a negative propensity or make a count negative; from then on a
reaction cannot fire without what it consumes, and a negative net rate runs the reaction backwards.
A law that is NaN or infinite stays so (the run stops). Signs are judged from the values at load: a
parameter changed later (``with_parameters``) to a value of the other sign is not re-judged. The
channels split and guarded are listed in the metadata's ``guard`` (and so the SSA result's attrs) and
in a warning at load. A model where nothing needs it reads exactly as without ``guard``.

**Reversible reactions** (``reversible=`` policy):

* ``"split"`` (default): a law ``F - B`` (possibly times common factors, ``cell * (kf*A*B - kr*C)``)
  whose terms are mass-action shaped for the two directions becomes two reactions ``<id>_f``
  (reactants -> products, propensity F) and ``<id>_r`` (products -> reactants, propensity B); a rate
  that events or rules change counts as a rate here (the two laws then stay general laws).
  A mass-action law of the forward direction alone is accepted as it is (GillesPy2 and antimony
  mark most reactions reversible). **Net rates**: any other law with negative terms -- Michaelis-Menten
  denominators, modifiers, a parameter divisor (BIOMD0000000332 ``konIX*IX_f*LIPID/nva -
  koffIX*IX_l``), ``-Vmax * (F - B) / D`` -- is split by sign (:func:`~distsim.models.mass_action.signed_parts`:
  products and quotients distributed over sums and differences; falling factorials ``x - k``,
  calls, powers and denominators of both signs stay whole; a factor of constants only -- numbers,
  parameters nothing changes, rules of those: BIOMD0000000321's ``1 - F_b`` -- is one factor of its
  sign, never split; a factor that reads a species and divides and multiplies one product
  cancels (:func:`~distsim.models.mass_action.cancel_species`: the Haldane form
  ``S/K * (1 - P/(S*Keq))`` gives the backward channel ``P/(K*Keq)``, not 0 * inf at S = 0); a law
  that is an assignment-rule parameter alone, times numbers and compartment sizes -- a flux written
  in a rule, BIOMD0000000408's ``j_ck_mm`` -- is split with that rule inlined where the backward
  channel is well defined, as below): its positive terms are the propensity of
  ``<id>_f`` (reactants -> products), its negative terms, negated, that of ``<id>_r`` (products ->
  reactants), each a general law (or mass action where it has that shape). The CME then has the
  ODE's drift exactly; each channel's propensity is still checked at run time (a run stops, naming
  the channel and its law, if one becomes negative). This is SBMLToolkit.jl's reading of reversible
  laws (its ``get_unidirectional_components`` separates the terms by sign for stochastic
  simulation) and COPASI's "convert to irreversible" (a law ``F - B`` becomes two reactions);
  GillesPy2 and libRoadRunner's gillespie use the law as one propensity (``"forward"``). The
  metadata's ``net_rate_split`` lists the reactions split, with one :class:`SBMLWarning`. A
  reversible law without negative terms is used as the forward propensity, with one
  :class:`SBMLWarning` listing such reactions.
  **Irreversible reactions** whose law has negative terms (a net rate, as BIOMD0000000058's
  ``diffusion``, ``D * (c2 - c1)``) are split the same way only where the backward channel is a
  well-defined propensity: it consumes at most one molecule of each (non-fixed) species, and that
  species is a factor of every negative term, so the channel cannot fire without it, and only one
  factor of the law has terms of both signs (DSMTS 00034's ``0.5 * k1 * (100 - 2 * P2) * (99 - 2 * P2)``
  is a falling factorial, never negative); otherwise the law stays the forward propensity (metadata
  ``net_rate_not_split``, with the reason).
* ``"forward"``: never split (reversible or not); the law is the forward propensity (what GillesPy2 and
  libRoadRunner do).
* ``"error"``: split as ``"split"`` does, and refuse any other reversible reaction.

**Species** become counts (above). Species with ``boundaryCondition="true"`` or ``constant="true"``
are *fixed* (read, never changed). All species are kept, in document order.

**Parameters**: global parameters keep their ids; a reaction's local parameters are renamed
``<reaction id>__<parameter id>`` (``_2``, ``_3``, ... appended on a clash). Only parameters and
compartments that a general law, an event or a rule uses (or a mass-action rate) are kept;
``with_parameters(cell=...)`` changes a compartment size seen by general laws.

**Initial assignments** (any math a kinetic law may use) to species and parameters are evaluated
at load, in SBML order except that one follows the assignments whose targets it reads (a cycle is an
error); a species' value is converted to molecules like an initial amount (or concentration) and
must then be whole (above). Compartment sizes at t = 0 from initial assignments and assignment rules
are evaluated first (from numbers, sizes, parameters of known value and time = 0, in dependency order),
so amounts and concentrations convert with that size. **A size that assignment rules, rate rules or
events change** is a parameter of the run (rate rules: a continuous variable of the hybrid loop),
listed in the metadata's ``changing_compartments``: species counts (amounts) stay when it changes, and
laws, rules and events that read a concentration (count / (Omega x size)) see the current size, as
libRoadRunner and COPASI keep amounts as the state. A species or parameter that no value, initial
assignment or rule gives a value is refused (SBML leaves it undefined).

**Events and assignment rules** are read into ``net.events`` / ``net.rules``
(:mod:`distsim.models.events`): time- and state-triggered events (``initialValue``,
``persistent``, ``useValuesFromTriggerTime``, ``priority``, ``delay``: CPU only), assignments to species
(as counts: the value x Omega, concentrations also x the compartment size) and to parameters; assignment rules for
species and parameters (sorted so that a rule follows the rules it reads; the initial count of a
rule's species is the rule's value at t = 0; a parameter's rule that is not finite at t = 0 -- 0/0 where
amounts are 0, as libRoadRunner also gives -- loads, listed in the metadata's
``rules_nonfinite_at_start`` with an :class:`SBMLWarning`: the run evaluates the rules again and stops
where a propensity reads the value). A species set by an assignment rule is never changed by
reactions, so its value need not be whole: unless the rule is, by its form, whole for whole counts
(a sum of species with whole coefficients, ``Pt = P0 + P1``; round-off within 1e-9 is accepted), the
species becomes a **real-valued parameter** of the same id holding the rule's value in the model's
units (BIOMD0000000056's ``BCK2`` = b0 x MASS = 21.708), read as a real by laws, rules and events; it
leaves the species (and reaction sides, for a boundary species), is listed in the metadata's
``real_valued_species`` and in one :class:`SBMLWarning`. A trigger comparison linear in ``time``
(``a * time + b OP c``, a a nonzero constant, as BIOMD0000000096's ``T - time <= 0``) becomes the
time comparison ``time OP' (c - b) / a`` that the SSA locates exactly; any other use of time in a
trigger is refused at load. :func:`distsim.ssa.simulate` simulates them exactly
(:mod:`distsim.models.events`); rate inference refuses them. **Rate rules** for parameters (with an
initial value) are read into ``net.rate_rules``, and kinetic laws may read ``time``, sin and cos:
the SSA's hybrid loop integrates them (:mod:`distsim.ssa.hybrid_ops`). A species with a rate rule is
no count but such a continuous variable, valued as its SBML symbol (amount or concentration),
reported in the SSA result (``continuous_mean``; CPU only yet); a reaction may change it only as a
boundary species (then it does not). A model of rate rules alone (no species, no reactions) loads as
a deterministic ODE (``deterministic`` in the metadata). Assignment rules may read ``time`` and
rate-rule variables (``distsim.models.compile_events.moving_rules``).

**Math**: ``+ - * /`` (n-ary plus/times), unary minus, power, integer/real/e-notation/rational
numbers, ``exponentiale``, ``pi``, ``avogadro``, exp, ln, log (base 10 unless a ``logbase`` is
given), root (square unless a ``degree`` is given), abs, floor, ceiling, min, max, the hyperbolic
functions and their inverses (sinh, ..., arccoth; :func:`distsim.models.arith.elementary`: trees of exp,
log and sqrt, the same bits on CPU and GPU), calls of function definitions (inlined), and a reaction's
id, which stands for its rate: the value of its kinetic law (inlined, its local parameters renamed as
in the reaction); in triggers also ``time``, relations (lt, leq, gt, geq, eq, neq; n-ary ones
chained) and logic (and, or, xor, not, true, false); events, rules and kinetic laws may use ``time``,
and every expression sin, cos, tan, sec, csc, cot and ``piecewise`` (its conditions: relations, logic,
true, false; only the SSA's hybrid loop evaluates them, so a kinetic law using them makes the network
hybrid).

**Stoichiometry**: a whole number up to :data:`~distsim.models.reactions.MAX_CHANGE`; 0 means the
reaction does not change the species (a modifier); fractions with denominators up to 1000 make a
firing the fraction q of an extent of which each is a whole multiple (propensity x q, stoichiometries
/ q; ``fractional_stoichiometry`` in the metadata); a Level 2 ``stoichiometryMath`` that is constant
(numbers, sizes, parameters that keep one value) is evaluated at load, one reading time or changing
values is refused.

**Leniency.** Problems that do not change the stochastic semantics are warnings
(:class:`SBMLWarning`), not errors: a missing ``fast`` attribute (false), a missing ``constant`` on
a compartment or parameter (constant unless a rule or event assigns it), a missing ``reversible``
(taken as true, the Level 2 default, then the policy above applies). libsbml's internal
``l3v2extendedmath`` package, which it reports as enabled and required on every L3V2 document,
is not a requirement of the model and is ignored. The drawing packages ``layout`` and ``render``
never change the model: they are ignored, even when marked required, and libsbml's errors about
their content are warnings.

**Not supported** (each raises :class:`~distsim.errors.ModelError` naming the element,
its id, the file and line): algebraic rules, ``delay()``,
inverse trigonometric functions, factorial, rem and quotient, ``stoichiometryMath`` that is not
constant or non-integer stoichiometry without a common fraction (genome-scale models' biomass
coefficients, 0.000223), fast reactions (unless ``fast="as_slow"``), reactions without a kinetic law, conversion factors,
compartment sizes at t = 0 that depend on species, required SBML packages (``comp``, ``distrib``, ...;
an SBML-qual document is refused first, before libsbml's errors, with the Boolean command that reads it,
``distsim pbn``).
Constraints are ignored.

**Untrusted input.** A document has at most :data:`MAX_SBML_BYTES` bytes. Before libsbml sees it, it
is parsed with Python's expat (no recursion): it must be well-formed XML without a DOCTYPE (so no
entity expansion), no attribute value may exceed :data:`MAX_ATTRIBUTE_CHARS` characters (libsbml
spends minutes, uninterruptibly, on a 10 MB one), and elements must nest at most
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
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import ModelError, SBMLWarning
from ..arith import (ELEMENTARY, BinOp, Call, Neg, Node, Num, Param, Piecewise, Relation, Species, Time, children,
                     evaluate, params_of, species_of, to_text, tree_depth, tree_size)
from ..compile_events import inline
from ..events import (Assignment, AssignmentRule, Compare, Condition, Event, Logic, RateRule, RuleCycle, Truth,
                      apply_rules_at_start, condition_nodes, has_time, rule_order)
from ..mass_action import (MassActionShape, at_least, falling_powers, mass_action_shape, mixed_factors, nonnegative,
                           parameter_signs, positive_part, signed_parts, split_difference, vanishes_without)
from ..reactions import MAX_CHANGE, MAX_COUNT, Reaction, ReactionNetwork

__all__ = ["read_sbml", "read_sbml_string", "check_sbml_file", "REVERSIBLE_POLICIES", "ROUNDING_POLICIES",
           "MASS_ACTION_POLICIES", "FAST_POLICIES", "GUARD_SUFFIX", "AVOGADRO", "SBMLWarning",
           "MAX_XML_DEPTH", "MAX_XML_MATH_ELEMENTS", "MAX_MATH_DEPTH", "MAX_MATH_NODES", "MAX_SBML_BYTES",
           "MAX_ATTRIBUTE_CHARS", "MAX_UNITS_FIRING_RATE"]

REVERSIBLE_POLICIES = ("split", "forward", "error")
ROUNDING_POLICIES = ("error", "nearest")
MASS_ACTION_POLICIES = ("as_written", "stochastic")
FAST_POLICIES = ("refuse", "as_slow")
GUARD_SUFFIX = "_reverse"  # the backward channel of a guard=True sign split
AVOGADRO = 6.02214076e23  # molecules per mole (SI 2019, exact)
MAX_UNITS_FIRING_RATE = 1e9  # initial firings per unit of model time above which units-derived counts are refused
MAX_SBML_BYTES = 256 * 2**20  # a document's size
MAX_ATTRIBUTE_CHARS = 100_000  # one XML attribute value (libsbml takes > 75 s over a 10 MB one)
MAX_XML_DEPTH = 1000  # nested XML elements (libsbml reads MathML recursively)
MAX_XML_MATH_ELEMENTS = 50_000  # elements in one <math> (libsbml's destructor overflows the C stack near 200,000)
MAX_MATH_DEPTH = 256  # nesting of one converted expression (n-ary plus of k terms nests k deep)
MAX_MATH_NODES = 100_000  # nodes of one expression after inlining function definitions
_MAX_CONDITION_DEPTH = 64
_INT_TOL = 1e-9
_MAX_DENOMINATOR = 1000  # of a fractional stoichiometry
_MAX_INLINE_DEPTH = 64
_IGNORED_PACKAGES = {"l3v2extendedmath"}  # libsbml-internal: enabled and "required" on every L3V2 document
_NON_SEMANTIC_PACKAGES = {"layout", "render"}  # drawings: their errors are warnings, the packages are ignored
# libsbml errors about a missing attribute whose default does not change the stochastic reading
# MathML functions without a form in distsim's deterministic math (the same bits on CPU and GPU)
_INVERSE_TRIG = " (inverse trigonometric functions have no form in distsim's math, which gives the same bits on CPU " \
                "and GPU from exp, log, sin and cos)"
_NO_DETERMINISTIC_FORM = {**{f: _INVERSE_TRIG for f in ("arcsin", "arccos", "arctan", "arcsec", "arccsc", "arccot")},
                          "factorial": " (the gamma function has no form in distsim's math)",
                          "rem": " (SBML Level 3 Version 2's rem is not supported yet)",
                          "quotient": " (SBML Level 3 Version 2's quotient is not supported yet)"}
_UNDEFINED = (" (no initial assignment or assignment rule gives it one: SBML leaves it undefined, and libRoadRunner "
              "refuses such a parameter too)")
_LENIENT = {21110: ("fast", "reversible"), 20517: ("constant",), 20706: ("constant",)}


def read_sbml(path: str | os.PathLike, *, reversible: str = "split", system_size: float | None = None,
              rounding: str = "error", mass_action: str = "as_written", fast: str = "refuse",
              guard: bool = False) -> ReactionNetwork:
    """Read an SBML file as a reaction network for SSA (see the module docstring for semantics).

    ``reversible``: ``"split"`` (default), ``"forward"`` or ``"error"``; ``system_size``: molecules
    per substance unit (default: from the model's units); ``rounding``: ``"error"`` (default) or
    ``"nearest"`` for amounts that are not whole numbers of molecules; ``mass_action``: ``"as_written"``
    (default) or ``"stochastic"`` (powers of reactants become falling factorials); ``fast``: ``"refuse"``
    (default) or ``"as_slow"`` (fast reactions are ordinary reactions with their kinetic laws); ``guard``: sign
    split and reactant guard of laws that are no propensities as written (module docstring). A missing
    file raises :class:`FileNotFoundError`; everything else raises :class:`ModelError`.
    """
    file = os.fspath(path)
    _check_options(reversible, system_size, rounding, mass_action, fast, guard)
    if not Path(file).exists():
        raise FileNotFoundError(f"model file not found: {file}")
    if not Path(file).is_file():
        raise IsADirectoryError(f"not a file: {file}")
    check_sbml_file(file)
    libsbml = _libsbml(file)
    doc = libsbml.readSBMLFromFile(file)
    return _document(libsbml, doc, file, reversible, Path(file).stem, system_size, rounding, mass_action, fast, guard)


def read_sbml_string(text: str | bytes, *, reversible: str = "split", file: str = "<string>",
                     name: str = "", system_size: float | None = None, rounding: str = "error",
                     mass_action: str = "as_written", fast: str = "refuse",
                     guard: bool = False) -> ReactionNetwork:
    """Read an SBML document held in memory (``file`` names it in errors; ``name`` is the
    network's name when the model has neither name nor id; the options are :func:`read_sbml`'s)."""
    _check_options(reversible, system_size, rounding, mass_action, fast, guard)
    data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    if len(data) > MAX_SBML_BYTES:
        raise ModelError(f"the document has {len(data)} bytes, more than the {MAX_SBML_BYTES} an SBML document "
                         "may have", file=file)
    _prescan(data, file)
    libsbml = _libsbml(file)
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError as e:
            raise ModelError(f"SBML bytes are not UTF-8 ({e.reason} at byte {e.start}); pass a str",
                             file=file) from None
    doc = libsbml.readSBMLFromString(text)
    return _document(libsbml, doc, file, reversible, name, system_size, rounding, mass_action, fast, guard)


def check_sbml_file(file: str) -> None:
    """The bounds an SBML file (reactions or SBML-qual) must meet before libsbml reads it: at most
    :data:`MAX_SBML_BYTES` bytes, well-formed XML without a DOCTYPE, attributes of at most
    :data:`MAX_ATTRIBUTE_CHARS` characters, bounded nesting (module docstring); else :class:`ModelError`."""
    size = Path(file).stat().st_size
    if size > MAX_SBML_BYTES:
        raise ModelError(f"the file has {size} bytes, more than the {MAX_SBML_BYTES} an SBML document may have",
                         file=file)
    _prescan(Path(file).read_bytes(), file)


def _check_options(reversible: str, system_size: float | None, rounding: str, mass_action: str = "as_written",
                   fast: str = "refuse", guard: bool = False) -> None:
    if reversible not in REVERSIBLE_POLICIES:
        raise ValueError(f"unknown reversible policy {reversible!r}; expected one of {', '.join(REVERSIBLE_POLICIES)}")
    if rounding not in ROUNDING_POLICIES:
        raise ValueError(f"unknown rounding {rounding!r}; expected one of {', '.join(ROUNDING_POLICIES)}")
    if mass_action not in MASS_ACTION_POLICIES:
        raise ValueError(f"unknown mass_action {mass_action!r}; expected one of {', '.join(MASS_ACTION_POLICIES)}")
    if fast not in FAST_POLICIES:
        raise ValueError(f"unknown fast {fast!r}; expected one of {', '.join(FAST_POLICIES)}")
    if not isinstance(guard, bool):
        raise ValueError(f"guard must be True or False, got {guard!r}")
    if system_size is not None and (isinstance(system_size, bool) or not isinstance(system_size, (int, float))
                                    or not (0 < system_size < math.inf)):
        raise ValueError(f"system_size must be a positive number of molecules per substance unit, got {system_size!r}")


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
        raise ModelError("the SBML document is empty", file=file, line=1)
    p = expat.ParserCreate()
    depth = in_math = math_elements = 0

    def start(name: str, attrs: Any) -> None:
        nonlocal depth, in_math, math_elements
        for key, value in attrs.items():
            if len(value) > MAX_ATTRIBUTE_CHARS:
                raise _Refused(f"attribute {key!r} of <{name}> has {len(value)} characters, more than "
                               f"{MAX_ATTRIBUTE_CHARS}", p.CurrentLineNumber, p.CurrentColumnNumber + 1)
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


def _document(libsbml: Any, doc: Any, file: str, reversible: str, default_name: str, system_size: float | None,
              rounding: str, mass_action: str = "as_written", fast: str = "refuse", guard: bool = False
              ) -> ReactionNetwork:
    """Check libsbml's errors before touching the model; ``doc`` stays referenced while the model is read."""
    if doc is None:
        raise ModelError("libsbml could not read the document", file=file)
    if doc.getLevel() >= 3 and doc.isPackageEnabled("qual") and doc.getPackageRequired("qual"):
        # before libsbml's errors: public SBML-qual exports have schema errors that the qual reader forgives
        raise ModelError("the model requires the SBML package 'qual', which is not supported by the reaction-network "
                         "reader: it is a qualitative (Boolean) model; simulate it with 'distsim pbn simulate MODEL' "
                         "(or 'distsim pbn steady-state'; in Python distsim.pbn.load)", file=file,
                         line=doc.getLine() or None, column=doc.getColumn() or None)
    first = None
    for i in range(doc.getNumErrors()):
        e = doc.getError(i)
        if not (e.isError() or e.isFatal()):
            continue
        msg = _error_text(e)
        if e.getPackage() in _NON_SEMANTIC_PACKAGES and not e.isFatal():
            warnings.warn(f"{file}:{e.getLine()}: {msg} (the {e.getPackage()} package does not change the model; "
                          "it is ignored)", SBMLWarning, stacklevel=3)
            continue
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
    return _Converter(libsbml, doc, model, file, reversible, default_name, system_size, rounding,
                      mass_action, fast, guard).network()


def _lenient_default(attr: str) -> str:
    return {"fast": "fast='false'", "reversible": "reversible='true'", "constant": "constant='true'"}[attr]


def _error_text(e: Any) -> str:
    lines = [ln.strip() for ln in e.getMessage().strip().splitlines() if ln.strip()]
    detail = lines[-1] if lines else ""
    short = e.getShortMessage().strip()
    if short and detail and short.rstrip(".") != detail.rstrip("."):
        return f"{short}: {detail}"
    return short or detail


def _whole(form: tuple[dict[int, float], float] | None) -> bool:
    """Whether an affine form has whole coefficients and constant (within _INT_TOL, relative)."""
    return form is not None and all(abs(v - round(v)) <= _INT_TOL * max(1.0, abs(v))
                                    for v in [*form[0].values(), form[1]])


def _affine_step(n: Node, forms: dict, consts: dict[str, float], real: set[int], params: dict
                 ) -> tuple[dict[int, float], float] | None:
    """The affine form ({species: coefficient}, constant) of node ``n`` from its operands' (in
    ``forms``), or None when it is not affine in the counts (see ``_Converter._affine``)."""
    if isinstance(n, Num):
        return {}, n.value
    if isinstance(n, Species):
        return None if n.index in real else ({n.index: 1.0}, 0.0)
    if isinstance(n, Param):
        return ({}, float(consts[n.name])) if n.name in consts else params.get(n.name)
    if isinstance(n, Neg):
        f = forms[id(n.arg)]
        return None if f is None else ({i: -c for i, c in f[0].items()}, -f[1])
    if not isinstance(n, BinOp):
        return None
    a, b = forms[id(n.left)], forms[id(n.right)]
    if a is None or b is None:
        return None
    if n.op in "+-":
        sign = 1.0 if n.op == "+" else -1.0
        out = dict(a[0])
        for i, c in b[0].items():
            out[i] = out.get(i, 0.0) + sign * c
        return out, a[1] + sign * b[1]
    if n.op == "*" and (not a[0] or not b[0]):
        (lin, c0), k = (b, a[1]) if not a[0] else (a, b[1])
        return {i: k * c for i, c in lin.items()}, k * c0
    if n.op == "/" and not b[0] and b[1] != 0:
        return {i: c / b[1] for i, c in a[0].items()}, a[1] / b[1]
    if n.op == "^" and not a[0] and not b[0]:
        try:
            v = float(a[1] ** b[1])
        except (OverflowError, ZeroDivisionError, TypeError):  # (TypeError: a complex power)
            return None
        return ({}, v) if math.isfinite(v) else None
    return None


_MIRRORED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}


def _linear_step(n: Node, out: dict, consts: dict[str, float]) -> tuple[float, Node] | None:
    """(a, b) of ``n = a * time + b`` from its operands' (in ``out``; see ``_Converter._linear_in_time``)."""
    if isinstance(n, Time):
        return 1.0, Num(0.0)
    if isinstance(n, Neg):
        f = out[id(n.arg)]
        return None if f is None else (-f[0], Neg(f[1]))
    if not isinstance(n, BinOp):
        return None
    a, b = out[id(n.left)], out[id(n.right)]
    if a is None or b is None:
        return None
    zero = Num(0.0)
    if n.op in "+-":
        rest = a[1] if b[1] == zero else (b[1] if n.op == "+" else Neg(b[1])) if a[1] == zero \
            else BinOp(n.op, a[1], b[1])
        return a[0] + (b[0] if n.op == "+" else -b[0]), rest
    if n.op == "*" and (a[0] == 0.0 or b[0] == 0.0):
        const, lin = (n.left, b) if a[0] == 0.0 else (n.right, a)
        k = _constant(const, consts)
        if k is None:
            return None
        rest = zero if lin[1] == zero else BinOp("*", const, lin[1]) if const is n.left else BinOp("*", lin[1], const)
        return k * lin[0], rest
    if n.op == "/" and b[0] == 0.0:
        k = _constant(n.right, consts)
        if not k:
            return None
        return a[0] / k, zero if a[1] == zero else BinOp("/", a[1], n.right)
    return None


def _at_time_zero(n: Node) -> Node:
    """``n`` with ``time`` replaced by 0 (explicit stack)."""
    if not has_time(n):
        return n
    out: dict[int, Node] = {}
    stack: list[tuple[Node, bool]] = [(n, False)]
    while stack:
        x, ready = stack.pop()
        kids = children(x)
        if not ready and kids:
            stack.append((x, True))
            stack.extend((k, False) for k in kids)
            continue
        if isinstance(x, Time):
            out[id(x)] = Num(0.0)
        elif isinstance(x, BinOp):
            out[id(x)] = BinOp(x.op, out[id(x.left)], out[id(x.right)])
        elif isinstance(x, Neg):
            out[id(x)] = Neg(out[id(x.arg)])
        elif isinstance(x, Call):
            out[id(x)] = Call(x.func, tuple(out[id(k)] for k in x.args))
        elif isinstance(x, Relation):
            out[id(x)] = Relation(x.op, tuple(out[id(k)] for k in x.args))
        elif isinstance(x, Piecewise):
            pieces = tuple((out[id(v)], out[id(c)]) for v, c in x.pieces)
            out[id(x)] = Piecewise(pieces, out[id(x.otherwise)])
        else:
            out[id(x)] = x
    return out[id(n)]


def _constant(n: Node, consts: dict[str, float]) -> float | None:
    """The value of an expression of numbers and constants (no species, time or assigned parameter)."""
    if species_of(n) or has_time(n) or any(p not in consts for p in params_of(n)):
        return None
    with np.errstate(all="ignore"):
        v = float(evaluate(n, np.zeros((1, 0)), consts, 0.0)[0])
    return v if math.isfinite(v) else None


def _mass_action_law(r: Reaction) -> Node:
    """The law of mass-action reaction ``r``, theta * prod_i x_i (x_i - 1) ... (x_i - n_i + 1) / n_i!."""
    law: Node = Param(r.rate) if isinstance(r.rate, str) else Num(float(r.rate))
    for i, n in r.reactants:
        for k in range(n):
            law = BinOp("*", law, Species(i) if k == 0 else BinOp("-", Species(i), Num(float(k))))
        if n > 1:
            law = BinOp("/", law, Num(float(math.factorial(n))))
    return law


class _Converter:
    def __init__(self, libsbml: Any, doc: Any, model: Any, file: str, reversible: str, default_name: str,
                 system_size: float | None, rounding: str, mass_action: str = "as_written", fast: str = "refuse",
                 guard: bool = False):
        self.L = libsbml
        self.mass_action = mass_action
        self.fast = fast
        self.fast_read: list[str] = []  # fast reactions read as ordinary ones (fast="as_slow")
        self.guard = guard
        self.guard_split: list[str] = []  # reactions split by sign (guard=True)
        self.guard_guarded: list[str] = []  # channels multiplied by the indicator of their reactants (guard=True)
        self.stochastic: list[str] = []  # channels whose powers became falling factorials (mass_action="stochastic")
        self.system_size = None if system_size is None else float(system_size)
        self.rounding = rounding
        self.rounded: list[str] = []  # "species: value -> count" for each rounding done
        self.rescaled: list[str] = []  # reactions with fractional stoichiometries
        self.derived: dict[str, tuple[str, float]] = {}  # mass-action rate in molecules: name -> (parameter, factor)
        self.fallback: dict[int, tuple[Reaction, Reaction]] = {}  # id(mass-action reaction) -> (it, its general law)
        self.doc = doc  # keeps the document (and so every element below) alive
        self.model = model
        self.file = file
        self.reversible = reversible
        self.default_name = default_name
        self.level = doc.getLevel()
        self.ast_names = {getattr(libsbml, n): n for n in dir(libsbml)
                          if n.startswith("AST_") and isinstance(getattr(libsbml, n), int)}
        self.forward_only: list[str] = []
        self.real_species: list[str] = []  # assignment-rule species simulated as real-valued parameters
        self.net_rate_split: list[str] = []  # reactions split by the signs of their law's terms
        self.net_rate_kept: list[str] = []  # irreversible net-rate laws left whole, and why
        L = libsbml
        self.operators = {L.AST_PLUS, L.AST_TIMES, L.AST_MINUS, L.AST_DIVIDE, L.AST_POWER, L.AST_FUNCTION_POWER,
                          L.AST_FUNCTION_EXP, L.AST_FUNCTION_LN, L.AST_FUNCTION_ABS, L.AST_FUNCTION_FLOOR,
                          L.AST_FUNCTION_CEILING, L.AST_FUNCTION_LOG, L.AST_FUNCTION_ROOT, L.AST_FUNCTION,
                          getattr(L, "AST_FUNCTION_MAX", -1), getattr(L, "AST_FUNCTION_MIN", -1)}
        self.operators |= set(self._hybrid_math()) | set(self._elementary())

    def err(self, msg: str, element: Any = None) -> ModelError:
        line = element.getLine() if element is not None else 0
        col = element.getColumn() if element is not None else 0
        return ModelError(msg, file=self.file, line=line or None, column=col or None)

    # ---- whole model -----------------------------------------------------------------------------

    def network(self) -> ReactionNetwork:
        m = self.model
        self._check_unsupported()
        self._compartments()
        self.initial_assigned = {m.getInitialAssignment(i).getSymbol() for i in range(m.getNumInitialAssignments())}
        fixed = self._species()
        self._units()
        self.global_value: dict[str, float | None] = {}
        for i in range(m.getNumParameters()):
            p = m.getParameter(i)
            self.global_value[p.getId()] = p.getValue() if p.isSetValue() else None
        self.global_value.update(getattr(self, "continuous", {}))  # species with a rate rule
        self.reaction_ids = {m.getReaction(i).getId() for i in range(m.getNumReactions())}
        self.taken = set(self.index) | set(self.comp_size) | set(self.global_value) | self.reaction_ids
        self.taken |= {m.getFunctionDefinition(i).getId() for i in range(m.getNumFunctionDefinitions())}
        self.local_value: dict[str, float] = {}
        self.assigned = self._assigned_ids()
        fixed = self._real_valued_rule_species(fixed)
        self.fixed = set(fixed)
        self._compartment_assignments()
        values = self._initial_values()
        initial = [self._count(v, what, el) for v, (what, el) in zip(values, self.value_of)]
        rules = self._rules()
        self.rule_exprs = self._parameter_rule_exprs(rules)
        rate_rules = self._rate_rules()
        events = self._events()
        reactions: list[Reaction] = []
        for i in range(m.getNumReactions()):
            reactions.extend(self._reaction(m.getReaction(i)))
        if not reactions and not rate_rules:
            raise self.err("the model has no reactions", m)
        if self.forward_only:
            names = ", ".join(repr(n) for n in self.forward_only)
            warnings.warn(f"{self.file}: reversible reaction(s) {names}: the kinetic law has no negative terms (or too many "
                          "to split); it is used as the propensity of the forward direction (a run stops if it becomes "
                          "negative)", SBMLWarning, stacklevel=4)
        if self.real_species:
            warnings.warn(f"{self.file}: species set by assignment rules to values that need not be whole numbers "
                          f"of molecules are real-valued parameters (not in the results' species): "
                          f"{', '.join(self.real_species)}", SBMLWarning, stacklevel=4)
        if self.net_rate_split:
            warnings.warn(f"{self.file}: net-rate kinetic laws split by sign into forward (_f) and backward (_r) "
                          f"channels with the law's drift: {', '.join(self.net_rate_split)}", SBMLWarning,
                          stacklevel=4)
        if self.fast_read:
            warnings.warn(f"{self.file}: fast reactions read as ordinary reactions with their kinetic laws "
                          f"(fast='as_slow'): {', '.join(self.fast_read)}", SBMLWarning, stacklevel=4)
        if self.rescaled:
            warnings.warn(f"{self.file}: fractional stoichiometries: " + "; ".join(self.rescaled), SBMLWarning,
                          stacklevel=4)
        reactions = self._keep_derived_rates(reactions, [*rules, *rate_rules], events)
        if self.guard:
            reactions = self._guarded(reactions, rules, rate_rules, events)
        params = self._parameters(reactions, [*rules, *rate_rules], events)
        nonfinite: list[tuple[str, float]] = []
        initial = apply_rules_at_start(rules, initial, params, lambda v, what: self._count(v, what, None), self.err,
                                       nonfinite)
        if nonfinite:  # (libRoadRunner gives these too for the same amounts: 0/0 where amounts are 0)
            self.nonfinite_at_start = "; ".join(f"{p} = {v!r}" for p, v in nonfinite)
            warnings.warn(f"{self.file}: assignment rules give non-finite values at t = 0 (a division by an amount "
                          f"that is 0?): {self.nonfinite_at_start}; a run stops where a propensity reads one",
                          SBMLWarning, stacklevel=4)
        name = m.getName() or m.getId() or self.default_name
        metadata = self._metadata()
        if not reactions:  # rate rules alone: an ODE model
            metadata["deterministic"] = "no reactions: every realization is the same solution of the rate rules"
        if getattr(self, "continuous_how", None):  # species that are no counts (_continuous_species)
            metadata["continuous_species"] = "; ".join(f"{k} ({v})" for k, v in self.continuous_how.items())
        net = ReactionNetwork.create(self.species, initial, reactions, params, fixed=fixed, name=name,
                                     source=self.file, events=events, rules=rules, rate_rules=rate_rules,
                                     metadata=metadata)
        self._check_firing_rate(net)
        return net

    def _check_unsupported(self) -> None:
        m, doc = self.model, self.doc
        if self.level >= 3:  # packages exist only in Level 3 (L2 layout is an annotation)
            for i in range(doc.getNumPlugins()):
                pkg = doc.getPlugin(i).getPackageName()
                if (pkg and pkg not in _IGNORED_PACKAGES | _NON_SEMANTIC_PACKAGES and doc.isPackageEnabled(pkg)
                        and doc.getPackageRequired(pkg)):
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

    def _species(self) -> list[int]:
        """Species ids, compartments and symbol meanings; the indices of fixed species."""
        m = self.model
        self.species: list[str] = []
        self.index: dict[str, int] = {}
        self.amount_symbol: dict[str, bool] = {}  # True: symbol = amount; False: concentration
        self.species_comp: dict[str, str] = {}
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
            if self._continuous_species(s, comp):
                continue
            self.index[sid] = len(self.species)
            self.species.append(sid)
            self.species_comp[sid] = comp
            self.amount_symbol[sid] = bool(s.getHasOnlySubstanceUnits()) or self.comp_dims[comp] == 0
            if s.getBoundaryCondition() or s.getConstant():
                fixed.append(len(self.species) - 1)
        if not self.species and not self._rate_ruled():
            raise self.err("the model has no species", m)
        return fixed

    # ---- species with a rate rule: continuous variables ---------------------------------------------

    def _rate_ruled(self) -> set[str]:
        m = self.model
        return {m.getRule(i).getVariable() for i in range(m.getNumRules()) if m.getRule(i).isRate()}

    def _continuous_species(self, s: Any, comp: str) -> bool:
        """Whether species ``s`` has a rate rule; then it is no count but a continuous variable of the hybrid
        loop (a parameter with a rate rule, reported in the result), valued as its SBML symbol: its amount (in
        substance units) when the symbol is an amount, else its concentration. Laws, rules and events read the
        symbol, so it needs no conversion: Omega (molecules per substance unit) enters only where a count x
        is read (as x / Omega, or x / (Omega size)) and in the propensity (Omega x the law), as for every law.
        ``self.continuous`` maps it to its initial value (None: set by an initial assignment)."""
        if not hasattr(self, "continuous"):
            self.continuous: dict[str, float | None] = {}
            self.continuous_boundary: set[str] = set()
            self.continuous_how: dict[str, str] = {}
        sid = s.getId()
        if sid in self._rate_ruled():
            how = "rate rule"
        elif self._moving_rule(sid):
            how = "assignment rule reading time or a rate-rule variable"
        else:
            return False
        amount = bool(s.getHasOnlySubstanceUnits()) or self.comp_dims[comp] == 0
        self.continuous_how[sid] = f"{how}, {'amount' if amount else 'concentration in ' + repr(comp)}"
        value: float | None = None
        if s.isSetInitialAmount():
            value = s.getInitialAmount()
            if not amount:
                value /= self._size(comp, f"species {sid!r} (a concentration) has an initial amount", s)
        elif s.isSetInitialConcentration():
            value = s.getInitialConcentration()
            if amount:
                value *= self._size(comp, f"species {sid!r} (an amount) has an initial concentration", s)
        self.continuous[sid] = value
        if s.getBoundaryCondition() or s.getConstant():
            self.continuous_boundary.add(sid)
        return True

    def _moving_rule(self, sid: str) -> bool:
        """Whether ``sid`` has an assignment rule whose math reads ``time`` or a rate-rule variable (then the
        species is no count but a continuous variable, :meth:`_continuous_species`; a rule reading such a
        species only through another rule stays a count rule, refused when compiled)."""
        m, L = self.model, self.L
        ruled = self._rate_ruled()
        for i in range(m.getNumRules()):
            r = m.getRule(i)
            if not (r.isAssignment() and r.getVariable() == sid and r.isSetMath()):
                continue
            stack = [r.getMath()]
            seen = 0
            while stack and seen < MAX_MATH_NODES:  # explicit stack: no recursion on the nesting
                ast = stack.pop()
                seen += 1
                if ast.getType() == L.AST_NAME_TIME or (ast.isName() and ast.getName() in ruled):
                    return True
                stack.extend(ast.getChild(k) for k in range(ast.getNumChildren()))
        return False

    # ---- units and amounts -----------------------------------------------------------------------

    def _units(self) -> None:
        """``self.omega``, the molecules per substance unit: ``system_size`` when given, else from the
        species' substance units (one value for the whole model), else 1 when no units are declared."""
        m = self.model
        self.unit_text = "given"
        if self.system_size is not None:
            self.omega, self.omega_source = self.system_size, "system_size"
            return
        found: dict[float, tuple[str, str]] = {}  # omega -> (species, unit text)
        for i in range(m.getNumSpecies()):
            s = m.getSpecies(i)
            if self.level >= 3:
                uid = s.getSubstanceUnits() or m.getSubstanceUnits()
            else:
                uid = (s.getUnits() if self.level == 1 else s.getSubstanceUnits()) or "substance"
            omega, text = self._molecules_per_unit(uid, f"species {s.getId()!r}", s)
            found.setdefault(omega, (s.getId(), text))
        if not found:  # no species (an ODE model of rate rules): no counts to convert
            self.omega, self.omega_source = 1.0, "no species"
            return
        if len(found) > 1:
            parts = "; ".join(f"{sid!r} in {text} ({om:.6g} molecules each)" for om, (sid, text) in found.items())
            raise self.err(f"the species use substance units of different sizes ({parts}); distsim needs one "
                           "number of molecules per substance unit: pass system_size= (--system-size)", m)
        self.omega, (_, self.unit_text) = next(iter(found.items()))
        self.omega_source = "undeclared units (amounts are molecules)" if self.unit_text == "" else "units"
        if self.level >= 3 and m.isSetExtentUnits():
            extent, text = self._molecules_per_unit(m.getExtentUnits(), "the model's extentUnits", m)
            if extent != self.omega:
                raise self.err(f"the model's extent unit ({text}) differs from the species' substance unit "
                               f"({self.unit_text or 'undeclared'}); kinetic laws would need a conversion, which is "
                               "not supported: pass system_size= (--system-size)", m)

    def _molecules_per_unit(self, uid: str, who: str, element: Any) -> tuple[float, str]:
        """(molecules per unit, the unit in words) of a substance unit id ("" undeclared: 1 molecule)."""
        L = self.L
        if not uid:
            return 1.0, ""
        ud = self.model.getUnitDefinition(uid)
        if ud is None:
            builtin = {"item": 1.0, "dimensionless": 1.0, "mole": AVOGADRO, "avogadro": AVOGADRO}
            if uid == "substance" and self.level < 3:
                return AVOGADRO, "mole (the Level 1/2 default substance unit)"
            if uid in builtin:
                return builtin[uid], uid
            raise self.err(f"{who}: substance unit {uid!r} is not an amount of mole or item; pass system_size= "
                           "(--system-size) to give the molecules per substance unit", element)
        factor, base, parts = 1.0, None, []
        for k in range(ud.getNumUnits()):
            u = ud.getUnit(k)
            kind = L.UnitKind_toString(u.getKind())
            exponent = u.getExponentAsDouble() if self.level >= 3 else float(u.getExponent())
            mult = u.getMultiplier() if self.level >= 2 else 1.0
            scale = (mult * 10.0 ** u.getScale()) ** exponent
            parts.append(f"{kind}" + (f" x {scale:g}" if scale != 1.0 else "") +
                         (f"^{exponent:g}" if exponent != 1.0 else ""))
            if kind in ("mole", "item", "avogadro") and exponent == 1.0 and base is None:
                base = AVOGADRO if kind in ("mole", "avogadro") else 1.0
            elif kind != "dimensionless":
                raise self.err(f"{who}: substance unit {uid!r} ({', '.join(parts)}) is not an amount of mole or "
                               "item; pass system_size= (--system-size) to give the molecules per substance unit",
                               element)
            factor *= scale
        omega = factor * (1.0 if base is None else base)
        if not (math.isfinite(omega) and omega > 0):
            raise self.err(f"{who}: substance unit {uid!r} is {omega!r} molecules", element)
        return omega, f"{uid!r} ({' '.join(parts) or 'dimensionless'})"

    def _initial_values(self) -> list[float]:
        """Each species' initial value in molecules (not yet checked to be whole), with the initial
        assignments applied (in SBML order, except that one follows those whose targets it reads; to
        species and parameters); ``self.value_of``: what each value is, for messages."""
        m = self.model
        om = self.omega
        values: list[float] = []
        self.value_of: list[tuple[str, Any]] = []
        per = "" if om == 1.0 else f" x {om:.10g} molecules per substance unit"
        for sid in self.species:
            s = m.getSpecies(sid)
            comp = self.species_comp[sid]
            if s.isSetInitialAmount():
                value, what = s.getInitialAmount() * om, f"initial amount {s.getInitialAmount()!r}{per}"
            elif s.isSetInitialConcentration():
                size = self._size(comp, f"species {sid!r} has an initial concentration", s)
                value = s.getInitialConcentration() * size * om
                what = f"initial concentration {s.getInitialConcentration()!r} x size {size!r}{per}"
            elif self._has_rule(sid) or sid in self.initial_assigned:
                value, what = 0.0, "value"  # set below or by its rule
            else:
                raise self.err(f"species {sid!r} has no initial amount or concentration, and no initial assignment "
                               "or assignment rule gives it one: SBML leaves its value undefined (libRoadRunner reads "
                               "0, a guess distsim does not make)", s)
            values.append(value)
            self.value_of.append((f"species {sid!r}: {what}", s))
        assignments = []
        for i in range(m.getNumInitialAssignments()):
            ia = m.getInitialAssignment(i)
            var = ia.getSymbol()
            label = f"initial assignment to {var!r}"
            if var in self.comp_size:
                continue  # (a size: _compartment_assignments)
            if not ia.isSetMath():
                raise self.err(f"{label} has no math", ia)
            if self._has_rule(var):
                raise self.err(f"{label}: {var!r} also has an assignment rule", ia)
            expr = self._math(ia.getMath(), {}, label, ia)
            sp, target = self._target(var, expr, label, ia)
            assignments.append((AssignmentRule(var, var, sp, target), expr, label, ia))
        # parameters' assignment rules, which SBML evaluates at t = 0 together with the initial assignments
        # (BIOMD0000000302's h_post = alpha_h_post / (...), alpha_h_post from a rule): values for those only
        n_ias = len(assignments)
        assigned_first = {a[0].target for a in assignments}
        for i in range(m.getNumRules()):
            r = m.getRule(i)
            var = r.getVariable()
            if r.isAssignment() and r.isSetMath() and var in self.global_value and var not in assigned_first:
                label = f"assignment rule for {var!r}"
                expr = self._math(r.getMath(), {}, label, r, allow_time=True)
                assignments.append((AssignmentRule(var, var, -1, expr), expr, label, r))
        try:  # SBML order, except that an assignment follows those whose targets it reads
            order = rule_order([a[0] for a in assignments], self.species)
        except RuleCycle as c:
            raise self.err(f"initial assignments depend on each other in a cycle ({assignments[c.index][2]}; the "
                           "assignment rules they read count too)", assignments[c.index][3]) from None
        ruled: dict[str, float] = {}  # rules' values at t = 0, for the initial assignments that read them
        for k in order:
            rule, expr, label, ia = assignments[k]
            sp, target, var = rule.species, rule.expr, rule.target
            env = {c: v for c, v in self.comp_size.items() if v is not None}
            env.update({p: v for p, v in self.global_value.items() if v is not None})
            env.update(ruled)
            x = np.array([values], dtype=np.float64)
            unset = sorted(set(params_of(target)) - set(env))
            if k >= n_ias:  # a rule: its value if it reads known values only
                if not unset:
                    with np.errstate(all="ignore"):
                        ruled[var] = float(evaluate(target, x, env, 0.0)[0])
                continue
            if unset:  # (a parameter whose value only a rule gives)
                raise self.err(f"{label} reads {unset[0]!r}, which has no value at t = 0 (its assignment rule reads "
                               "values that nothing gives)", ia)
            with np.errstate(all="ignore"):
                value = float(evaluate(target, x, env, 0.0)[0])
            if sp >= 0:
                values[sp] = value
                self.value_of[sp] = (f"species {var!r}: {label} ({to_text(expr, self.species)})", ia)
            elif not math.isfinite(value):
                raise self.err(f"{label}: the value is not finite ({value!r})", ia)
            else:
                self.global_value[var] = value
        return values

    def _compartment_assignments(self) -> None:
        """Compartment sizes at t = 0 from initial assignments and assignment rules, evaluated at load (before
        any amount is converted): each reads numbers, sizes and parameters of known value (a rule also time,
        at 0) -- parameters whose own initial assignments read only such values are evaluated first (again,
        identically, with the others). A size that rules or events change is a parameter of the run
        (:meth:`_target`)."""
        m = self.model
        self.changing_sizes: set[str] = set()
        todo: dict[str, tuple[Node, Any, str]] = {}
        for i in range(m.getNumRules()):
            r = m.getRule(i)
            var = r.getVariable()
            if r.isAssignment() and var in self.comp_size and r.isSetMath():
                label = f"assignment rule for {var!r}"
                expr = self._math(r.getMath(), {}, label, r, allow_time=True)
                todo[var] = (_at_time_zero(expr), r, label)
        for i in range(m.getNumInitialAssignments()):
            ia = m.getInitialAssignment(i)
            var = ia.getSymbol()
            is_comp = var in self.comp_size
            if not (is_comp or var in self.global_value) or not ia.isSetMath():
                continue
            label = f"initial assignment to {var!r}"
            try:
                expr = self._math(ia.getMath(), {}, label, ia)
            except ModelError:
                if is_comp:
                    raise
                continue  # (a parameter's: _initial_values reports it)
            if is_comp or not species_of(expr):
                todo[var] = (expr, ia, label)
        if not any(v in self.comp_size for v in todo):
            return
        known = {c: v for c, v in self.comp_size.items() if v is not None and c not in todo}
        known.update({p: v for p, v in self.global_value.items() if v is not None and p not in todo
                      and p not in self.assigned})
        for _ in range(len(todo)):  # each pass settles at least one, or none can be
            done = {v: val for v, (e, _, _) in todo.items() if v not in known
                    and (val := _constant(e, known)) is not None}
            if not done:
                break
            known.update(done)
        for var, (expr, ia, label) in todo.items():
            if var not in self.comp_size:
                continue
            size = known.get(var)
            if size is None:
                raise self.err(f"{label}: the size at t = 0 ({to_text(expr, self.species)}) must be a finite constant "
                               "at load (numbers, sizes and parameters of known value); it reads species or values "
                               "that rules set, which is not supported for a compartment", ia)
            if not size > 0:
                raise self.err(f"{label}: the size is {size!r} (must be > 0)", ia)
            self.comp_size[var] = size

    def _real_valued_rule_species(self, fixed: list[int]) -> list[int]:
        """Species whose assignment rule's value need not be a whole number of molecules become real-valued
        quantities: parameters (of the same id, holding the rule's value in the model's units) that laws,
        rules and events read; they leave the species (so the results). A rule keeps its species a count
        when its value is, by its form, a whole number for whole counts (a sum of species with whole
        coefficients, as ``Pt = P0 + P1``, up to round-off) or when it is a
        non-boundary reactant or product (which SBML forbids). A boundary species listed by reactions leaves
        their sides too (reactions never change it; laws read its value). Returns the new fixed indices."""
        m = self.model
        rules = {}
        for i in range(m.getNumRules()):
            r = m.getRule(i)
            if r.isAssignment() and r.getVariable() in self.index and r.isSetMath():
                rules[r.getVariable()] = r
        fixed_ids = {self.species[i] for i in fixed}
        for i in range(m.getNumReactions()):
            rx = m.getReaction(i)
            for refs in (rx.getListOfReactants(), rx.getListOfProducts()):
                for k in range(refs.size()):
                    if refs.get(k).getSpecies() not in fixed_ids:  # (SBML forbids it; libsbml may not say)
                        rules.pop(refs.get(k).getSpecies(), None)
        exprs = {}
        for sid, r in rules.items():
            label = f"assignment rule for {sid!r}"
            exprs[sid] = self._target(sid, self._math(r.getMath(), {}, label, r, allow_time=True), label, r)[1]
        by_param = {}  # parameters' rules, whose affine forms a species' rule may read
        for i in range(m.getNumRules()):
            r = m.getRule(i)
            if r.isAssignment() and r.getVariable() in self.global_value and r.isSetMath():
                by_param[r.getVariable()] = self._math(r.getMath(), {}, f"assignment rule for {r.getVariable()!r}", r,
                                                       allow_time=True)
        real: set[int] = set()
        while True:  # a rule reading a real-valued species is real-valued too
            forms: dict[str, tuple[dict[int, float], float] | None] = {}
            for _ in range(len(by_param)):  # (rules are acyclic: this many passes reach every form)
                forms = {p: self._affine(e, real, forms) for p, e in by_param.items()}
            more = {self.index[sid] for sid, e in exprs.items() if self.index[sid] not in real and
                    not _whole(self._affine(e, real, forms))}
            if not more:
                break
            real |= more
        if not real:
            return fixed
        self.real_species = [self.species[i] for i in sorted(real)]
        kept = [s for s in self.species if self.index[s] not in real]
        self.species = kept
        self.index = {s: i for i, s in enumerate(kept)}
        for sid in self.real_species:
            self.global_value[sid] = None  # set from its rule
        return [self.index[s] for s in kept if s in fixed_ids]

    def _affine(self, expr: Node, real: set[int], forms: dict) -> tuple[dict[int, float], float] | None:
        """``expr`` as c0 + sum_i c_i x_i ({i: c_i}, c0) over counts x_i (not in ``real``), or None.
        Constants: numbers, compartment sizes and parameters that nothing assigns; a parameter with an
        assignment rule stands for its rule's form (``forms``)."""
        consts = {c: v for c, v in self.comp_size.items() if v is not None and c not in self.assigned}
        consts.update({p: v for p, v in self.global_value.items() if v is not None and p not in self.assigned
                       and p not in self.initial_assigned})
        out: dict[int, tuple[dict[int, float], float] | None] = {}
        stack: list[tuple[Node, bool]] = [(expr, False)]
        while stack:
            n, ready = stack.pop()
            kids = (n.left, n.right) if isinstance(n, BinOp) else (n.arg,) if isinstance(n, Neg) else ()
            if not ready and kids:
                stack.append((n, True))
                stack.extend((k, False) for k in kids)
                continue
            out[id(n)] = _affine_step(n, out, consts, real, forms)
        return out[id(expr)]

    def _count(self, value: float, what: str, element: Any) -> int:
        """A whole number of molecules; an amount that is not one is refused, or rounded with
        ``rounding="nearest"`` (recorded; a non-zero amount that becomes 0 also warns)."""
        if not math.isfinite(value):
            raise self.err(f"{what} is not finite ({value!r})", element)
        r = round(value)
        if r < 0:
            raise self.err(f"{what} = {value!r} molecules is negative", element)
        if value < 0 and self.rounding != "nearest":  # within half a molecule of 0: round-off (BIOMD0000000534)
            raise self.err(f"{what} = {value!r} molecules is negative; it is within half a molecule of 0: pass "
                           "rounding='nearest' (--rounding nearest) to round it to 0 (recorded in the result's "
                           f"attrs). {self._size_hint()}", element)
        if r > MAX_COUNT:
            raise self.err(f"{what} = {value:.4g} molecules is more than exact simulation can count (2**53); exact "
                           f"simulation fires one reaction at a time, so changing it by 1% alone takes "
                           f"{value / 100:.3g} firings. {self._size_hint()}", element)
        if abs(value - r) <= _INT_TOL * max(1.0, abs(value)) and not (r == 0 and value != 0):
            return int(r)
        if self.rounding != "nearest":
            zero = " (it would become 0 molecules)" if r == 0 else ""
            raise self.err(f"{what} = {value!r} molecules is not a whole number{zero}; pass rounding='nearest' "
                           f"(--rounding nearest) to round counts (recorded in the result's attrs). "
                           f"{self._size_hint()}", element)
        self.rounded.append(f"{what.split(':')[0]}: {value!r} -> {r}")
        if r == 0:
            warnings.warn(f"{self.file}: {what} = {value!r} molecules, rounded to 0", SBMLWarning, stacklevel=5)
        return int(r)

    def _size_hint(self) -> str:
        if self.omega_source == "system_size":
            return f"(system_size={self.omega:g} molecules per substance unit was given.)"
        if self.omega_source == "units":
            return (f"The model's substance unit is {self.unit_text}, {self.omega:.10g} molecules each; pass "
                    "system_size= (--system-size) to choose the molecules per substance unit (system_size=1 reads "
                    "each amount as a number of molecules, as GillesPy2 and libRoadRunner's gillespie do).")
        return ("The model declares no substance units, so amounts are read as molecules; pass system_size= "
                "(--system-size) to give the molecules per substance unit.")

    def _check_firing_rate(self, net: ReactionNetwork) -> None:
        """Refuse units-derived counts (Avogadro) that fire more than MAX_UNITS_FIRING_RATE reactions per
        unit of model time at t = 0: far more firings than an exact simulation can do."""
        if self.omega_source != "units" or self.omega == 1.0 or not net.reactions:
            return
        with np.errstate(all="ignore"):
            rate = float(np.sum(net.propensities(np.asarray(net.initial, dtype=np.float64))))
        if math.isfinite(rate) and rate > MAX_UNITS_FIRING_RATE:
            big = max(range(net.n_species), key=lambda i: net.initial[i])
            raise self.err(f"at t = 0 the reactions fire about {rate:.3g} times per unit of model time "
                           f"({net.species[big]!r} starts with {net.initial[big]:.3g} molecules): far too many for "
                           f"exact simulation. {self._size_hint()}", self.model)

    def _metadata(self) -> dict[str, str]:
        out = {"system_size": repr(self.omega), "system_size_source": self.omega_source}
        if self.unit_text and self.omega_source == "units":
            out["substance_unit"] = self.unit_text
        if self.derived:
            out["derived_rates"] = "; ".join(f"{k} = {p} x {f!r}" for k, (p, f) in self.derived.items())
        if self.rounded:
            out["rounded"] = "; ".join(self.rounded)
        if self.rescaled:
            out["fractional_stoichiometry"] = "; ".join(self.rescaled)
        if self.real_species:
            out["real_valued_species"] = ", ".join(self.real_species)
        if self.net_rate_split:
            out["net_rate_split"] = ", ".join(self.net_rate_split)
        if self.net_rate_kept:
            out["net_rate_not_split"] = "; ".join(self.net_rate_kept)
        if self.fast_read:
            out["fast_as_slow"] = ", ".join(self.fast_read)
        if self.mass_action == "stochastic":
            out["mass_action_stochastic"] = ", ".join(self.stochastic) or "none"
        if self.guard:
            out["guard"] = (f"split: {', '.join(self.guard_split) or 'none'}; "
                            f"guarded: {', '.join(self.guard_guarded) or 'none'}")
        if self.changing_sizes:
            out["changing_compartments"] = ", ".join(sorted(self.changing_sizes))
        if getattr(self, "nonfinite_at_start", ""):
            out["rules_nonfinite_at_start"] = self.nonfinite_at_start
        return out

    def _has_rule(self, sid: str) -> bool:
        m = self.model
        return any(m.getRule(i).isAssignment() and m.getRule(i).getVariable() == sid for i in range(m.getNumRules()))

    def _size(self, comp: str, why: str, element: Any) -> float:
        size = self.comp_size.get(comp)
        if size is None or not math.isfinite(size):
            raise self.err(f"{why} but compartment {comp!r} has no size (no size attribute, initial assignment or "
                           "rule gives it one: SBML leaves it undefined; libRoadRunner reads 1, a guess distsim does "
                           "not make)", element)
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
                        raise self.err(f"parameter {pid!r} has no (finite) value" + _UNDEFINED,
                                       self.model.getParameter(pid))
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
            if self.fast != "as_slow":
                raise self.err(f"{label}: fast reactions are not supported; fast='as_slow' (--fast as_slow) reads "
                               "them as ordinary reactions with their kinetic laws (as COPASI does; SBML Level 3 "
                               "Version 2 removed the attribute)", r)
            self.fast_read.append(rid)
        if not r.isSetKineticLaw():
            raise self.err(f"{label} has no kinetic law", r)
        kl = r.getKineticLaw()
        if not kl.isSetMath():
            raise self.err(f"{label}: the kinetic law has no math", kl)
        local = self._locals(r)
        reac, prod, q = self._sides(r, label)
        law = self._math(kl.getMath(), local, label, kl, allow_time=True)
        if q != 1:  # a firing is q extents: n_i = s_i / q molecules
            law = BinOp("*", Num(float(q)), law)
            self.rescaled.append(f"{rid}: a firing is {q} of the law's extent (stoichiometries x {1 / q})")
        if self.omega != 1.0:  # substance per time -> firings per time
            law = BinOp("*", Num(self.omega), law)
        reversible = r.getReversible() if r.isSetReversible() else True
        if self.reversible == "forward":
            return [self._direction(rid, reac, prod, law)]
        if not reversible:
            return self._net_rate(rid, reac, prod, law, irreversible=True) or [self._direction(rid, reac, prod, law)]
        parts = split_difference(law)
        if parts is not None:  # (a rate that events or rules change: the split's laws stay general laws)
            fwd, bwd = self._shape(parts[0], lenient=True), self._shape(parts[1], lenient=True)
            if fwd is not None and bwd is not None and fwd.orders == dict(reac) and bwd.orders == dict(prod):
                return [self._direction(f"{rid}_f", reac, prod, parts[0]),
                        self._direction(f"{rid}_r", prod, reac, parts[1])]
        shape = self._shape(law, lenient=True)
        if shape is not None and shape.orders == dict(reac) and self._rule_flux(law) is None:
            return [self._direction(rid, reac, prod, law)]  # one direction only: accepted
        split = self._net_rate(rid, reac, prod, law, irreversible=False)
        if split:
            return split
        if self.reversible == "error":
            raise self.err(f"{label} is reversible and its kinetic law ({to_text(law, self.species)}) has no "
                           "negative terms (terms of the backward direction); split it into two "
                           "irreversible reactions, or read with reversible='forward' (or 'split') to use the law "
                           "as the forward propensity", r)
        self.forward_only.append(rid)
        return [Reaction(reac, prod, law=self._stochastic_law(rid, reac, law), name=rid)]

    def _locals(self, r: Any) -> dict[str, str]:
        """The new names of reaction ``r``'s local parameters, ``<reaction id>__<parameter id>`` (``_2``, ...
        on a clash), their values in ``self.local_value``; made once per reaction (a rule reading the
        reaction's rate inlines its law with the same names)."""
        memo = self.__dict__.setdefault("_local_names", {})
        if r.getId() in memo:
            return memo[r.getId()]
        kl = r.getKineticLaw()
        local: dict[str, str] = {}
        if kl is None:
            lps = []
        elif self.level >= 3:
            lps = [kl.getLocalParameter(i) for i in range(kl.getNumLocalParameters())]
        else:
            lps = [kl.getParameter(i) for i in range(kl.getNumParameters())]
        for p in lps:
            pid = p.getId()
            new = base = f"{r.getId()}__{pid}"
            k = 2
            while new in self.taken:
                new, k = f"{base}_{k}", k + 1
            self.taken.add(new)
            local[pid] = new
            if p.isSetValue() and math.isfinite(p.getValue()):
                self.local_value[new] = p.getValue()
        memo[r.getId()] = local
        return local

    def _reaction_rate(self, rid: str, label: str, where: Any) -> Node:
        """A reaction id in math: the value of its kinetic law (SBML: the reaction's rate, extent per time),
        inlined with its local parameters."""
        r = self.model.getReaction(rid)
        kl = r.getKineticLaw()
        if kl is None or not kl.isSetMath():
            raise self.err(f"{label}: the math uses the rate of reaction {rid!r}, which has no kinetic law", where)
        busy = self.__dict__.setdefault("_rates_inlining", set())
        if rid in busy:
            raise self.err(f"{label}: the rate of reaction {rid!r} reads itself (through other reactions' rates)",
                           where)
        busy.add(rid)
        try:
            return self._math(kl.getMath(), self._locals(r), f"{label} (the rate of reaction {rid!r})", where,
                              allow_time=True)
        finally:
            busy.discard(rid)

    def _net_rate(self, rid: str, reac: tuple, prod: tuple, law: Node, irreversible: bool) -> list[Reaction] | None:
        """The general net-rate split (module docstring): a law with negative terms becomes a forward
        channel ``<id>_f`` (reactants -> products; its positive terms) and a backward channel ``<id>_r``
        (products -> reactants; its negative terms, negated), so the drift is the law's. An irreversible
        reaction is split only where the backward channel is a well-defined propensity (zero when a
        species it consumes is absent); else None (as when the law has no negative terms)."""
        # The field's convention: SBMLToolkit.jl (src/reactions.jl, get_unidirectional_components) splits a
        # reversible law's terms by sign for stochastic simulation; COPASI's "convert to irreversible"
        # turns F - B into two reactions. GillesPy2 keeps the law whole (reversible="forward" here).
        shape = self._shape(law, lenient=True)
        if shape is not None and shape.orders == dict(reac) and self._rule_flux(law) is None:
            return None  # mass action (its falling factorials have minus signs)
        negative = {p for p, v in self.global_value.items() if v is not None and v < 0 and p not in self.assigned}
        negative |= {p for p, v in self.local_value.items() if v < 0}
        static = {**self._static_values(), **self.local_value}
        # A law that is an assignment-rule parameter alone (times numbers and compartment sizes: BIOMD0000000408's
        # j_ck_mm) is a flux written in a rule: it is read as if written in the law (a rule holds at every
        # instant), split with the rule inlined where the law as written is not, and only where the backward
        # channel is well defined, as for irreversible laws. A rule that is a factor beside a rate parameter
        # (k2 * cyclin with k2 = V'(T - U) + V''U; k * S2 with S2 = h (St - S2a)) or a species (a free moiety
        # Nt - NADPH) is an amount or a coefficient, never split: its sign is the model's.
        laws = [law]
        flux = self._rule_flux(law)
        if flux is not None:
            try:
                laws.append(inline(law, {flux: self.rule_exprs[flux]}))
            except ModelError:
                pass
        why = ""
        for k, form in enumerate(laws):
            parts = signed_parts(form, negative, static)
            if parts is None or parts[1] is None:
                continue
            fwd, bwd = parts
            why = self._backward_undefined(bwd, reac, prod) if irreversible or k else ""
            if (irreversible or k) and not why and mixed_factors(form, negative) > 1:
                why = "a product of several factors with negative terms, as a falling factorial: one propensity"
            if why:
                continue
            out = [] if fwd is None else [self._direction(f"{rid}_f", reac, prod, fwd)]
            out.append(self._direction(f"{rid}_r", prod, reac, bwd))
            self.net_rate_split.append(rid + (" (irreversible)" if irreversible else "")
                                       + (" (assignment rules inlined)" if k else ""))
            return out
        if why:
            self.net_rate_kept.append(f"{rid} ({why})")
        return None

    def _rule_flux(self, law: Node) -> str | None:
        """The assignment-rule parameter (not a real-valued species) that ``law`` is, times numbers and
        compartment sizes, when its rule reads the state and not time; else None."""
        found: list[str] = []
        sizes = {c for c, v in self.comp_size.items() if v is not None and c not in self.assigned}
        stack: list[tuple[Node, bool]] = [(law, True)]
        while stack:
            n, up = stack.pop()
            if isinstance(n, BinOp) and n.op in "*/":
                stack.extend(((n.left, up), (n.right, up if n.op == "*" else not up)))
            elif isinstance(n, Neg):
                stack.append((n.arg, up))
            elif isinstance(n, Param) and n.name in sizes or isinstance(n, Num):
                continue
            elif (isinstance(n, Param) and up and n.name in self.rule_exprs and n.name not in self.real_species
                  and not has_time(self.rule_exprs[n.name])):
                found.append(n.name)
            else:
                return None
        return found[0] if len(found) == 1 else None

    def _parameter_rule_exprs(self, rules: list[AssignmentRule]) -> dict[str, Node]:
        """The expressions of the assignment rules of parameters, each with the rules it reads inlined
        (``rules`` are sorted so that a rule follows those it reads); one too large to inline is left out."""
        out: dict[str, Node] = {}
        for r in rules:
            if r.species < 0:
                try:
                    out[r.target] = inline(r.expr, out)
                except ModelError:
                    continue
        return out

    def _static_values(self) -> dict[str, float]:
        """Compartment sizes and parameters that keep one value for the whole run: those nothing assigns,
        and those whose assignment rules read only such values (no species, no time; no event assigns
        them). A factor made of them has one sign (BIOMD0000000321's ``ka_b*A_dopa*(1 - F_b)``, F_b from
        rules: positive, so the law has no backward channel)."""
        if getattr(self, "_static", None) is not None:
            return self._static
        m = self.model
        out = {c: v for c, v in self.comp_size.items() if v is not None and c not in self.assigned}
        out.update({p: v for p, v in self.global_value.items() if v is not None and p not in self.assigned
                    and p not in self.initial_assigned})
        by_event = {m.getEvent(i).getEventAssignment(k).getVariable() for i in range(m.getNumEvents())
                    for k in range(m.getEvent(i).getNumEventAssignments())}
        rules = {}
        for i in range(m.getNumRules()):
            r = m.getRule(i)
            v = r.getVariable()
            if r.isAssignment() and r.isSetMath() and v in self.global_value and v not in by_event:
                rules[v] = self._math(r.getMath(), {}, f"assignment rule for {v!r}", r, allow_time=True)
        for _ in range(len(rules)):  # rules are acyclic: this many passes reach every value
            more = {v: e for v, e in rules.items() if v not in out and not species_of(e) and not has_time(e)
                    and set(params_of(e)) <= out.keys()}
            if not more:
                break
            for v, e in more.items():
                val = float(evaluate(e, np.zeros(0), out))
                if math.isfinite(val):
                    out[v] = val
        self._static = out
        return out

    def _backward_undefined(self, bwd: Node, reac: tuple, prod: tuple) -> str:
        """Why the backward channel of an irreversible reaction is not a well-defined propensity ("" when
        it is): it must consume at most one molecule of each species, and its law must vanish when one
        of them is absent (a factor of every term)."""
        change = dict(prod)
        for i, n in reac:
            change[i] = change.get(i, 0) - n
        for i, d in sorted(change.items()):
            if d <= 0 or i in self.fixed:
                continue
            if d > 1:
                return f"its backward channel would consume {d} molecules of {self.species[i]!r}"
            if not vanishes_without(bwd, i):
                return f"its negative terms do not vanish when {self.species[i]!r} is absent"
        return ""

    def _shape(self, law: Node, lenient: bool = False) -> MassActionShape | None:
        """The law's mass-action shape; ``lenient``: a parameter that events or rules assign may be the
        rate (the shape of each direction of a reversible law)."""
        consts = {c: float(v) for c, v in self.comp_size.items() if v is not None and math.isfinite(v) and v > 0}
        consts = {c: v for c, v in consts.items() if c not in self.assigned}
        rate = {p for p, v in self.global_value.items() if (v is not None or lenient) and
                (lenient or p not in self.assigned)}
        rate |= set(self.local_value)
        return mass_action_shape(law, consts, rate)

    def _direction(self, name: str, reac: tuple, prod: tuple, law: Node, shape: MassActionShape | None = None
                   ) -> Reaction:
        """A reaction whose propensity is ``law``: mass action when the law is exactly theta * h(x)."""
        new = self._stochastic_law(name, reac, law)
        if new is not law:
            law, shape = new, None
        shape = self._shape(law) if shape is None else shape
        general = Reaction(reac, prod, law=law, name=name)
        if shape is not None and shape.orders == dict(reac):
            if shape.param is None:
                return Reaction(reac, prod, rate=shape.factor, name=name)
            if shape.is_unit():
                return Reaction(reac, prod, rate=shape.param, name=name)
            if self.omega != 1.0:  # theta = factor x parameter, a parameter of its own (see _keep_derived_rates)
                key = next((k for k, v in self.derived.items() if v == (shape.param, shape.factor)), None)
                if key is None:
                    key = base = f"{shape.param}__stochastic"
                    n = 2
                    while key in self.taken:
                        key, n = f"{base}_{n}", n + 1
                    self.taken.add(key)
                    value = self.local_value.get(shape.param, self.global_value.get(shape.param))
                    self.derived[key] = (shape.param, shape.factor)
                    self.local_value[key] = shape.factor * float(value)  # type: ignore[arg-type]
                mass = Reaction(reac, prod, rate=key, name=name)
                self.fallback[id(mass)] = (mass, general)
                return mass
        return general

    def _stochastic_law(self, name: str, reac: tuple, law: Node) -> Node:
        """With ``mass_action="stochastic"``, a law of exact mass-action shape in powers of its reactants
        (``k * A^2`` on ``2A -> ...``) with falling factorials (``k * A * (A - 1)``), recorded; else ``law``."""
        if self.mass_action != "stochastic":
            return law
        consts = {c: float(v) for c, v in self.comp_size.items() if v is not None and math.isfinite(v) and v > 0}
        consts = {c: v for c, v in consts.items() if c not in self.assigned}
        rate = {p for p in self.global_value} | set(self.local_value)
        new = falling_powers(law, dict(reac), consts, rate)
        if new is None:
            return law
        self.stochastic.append(name)
        return new

    def _guarded(self, reactions: list[Reaction], rules: list[AssignmentRule], rate_rules: list[RateRule],
                 events: list[Event]) -> list[Reaction]:
        """``guard=True`` (module docstring): each channel whose law is not >= 0 by its form split into
        ``max(0, v)`` forward and ``max(0, -v)`` backward (``<id>_reverse``); each channel whose law does
        not vanish without a species it consumes, or that consumes n > 1 of one, multiplied by the
        indicator that every consumed count is >= its stoichiometry. Other reactions stay as they are."""
        values = {c: float(v) for c, v in self.comp_size.items() if v is not None and c not in self.assigned}
        values.update({p: float(v) for p, v in self.global_value.items() if v is not None and p not in self.assigned})
        values.update(self._static_values())
        values.update(self.local_value)
        assigned: dict[str, list[Node]] = {}
        for a in [*rules, *(a for e in events for a in e.assignments)]:
            if a.species < 0:
                assigned.setdefault(a.target, []).append(a.expr)
        ruled = {r.target for r in rules} | {r.target for r in rate_rules}
        initial = {p: float(v) for p, v in [*self.comp_size.items(), *self.global_value.items()]
                   if p in assigned and p not in ruled and v is not None and math.isfinite(v)}
        for p in [*(r.target for r in rate_rules), *self._static_values()]:  # an ODE's solution: either sign;
            assigned.pop(p, None)  # a rule of constants: its one value (in values)
        fixed = {p: v for p, v in values.items() if p not in assigned}
        signs = parameter_signs(fixed, assigned, initial)
        sizes = {c: v for c, v in values.items() if c in self.comp_size and math.isfinite(v) and v > 0}
        rates = {p for p, v in values.items() if p not in self.comp_size and v >= 0}
        taken = {r.name for r in reactions}
        out: list[Reaction] = []
        for r in reactions:
            law = r.law
            if law is None:  # mass action: theta h(x), h = 0 below the reactants' stoichiometries
                theta = float(r.rate) if not isinstance(r.rate, str) else values.get(r.rate, -1.0)
                if theta >= 0:
                    out.append(r)
                    continue
                law = _mass_action_law(r)
            shape = mass_action_shape(law, sizes, rates)
            if shape is not None and shape.orders == dict(r.reactants):  # >= 0, and 0 without its reactants
                out.append(r)
                continue
            if nonnegative(law, signs, fixed):
                channels = [(r.reactants, r.products, law, r.name)]
            else:
                back = base = f"{r.name}{GUARD_SUFFIX}"
                k = 2
                while back in taken:
                    back, k = f"{base}_{k}", k + 1
                taken.add(back)
                channels = [(r.reactants, r.products, positive_part(law), r.name),
                            (r.products, r.reactants, positive_part(Neg(law)), back)]
                self.guard_split.append(r.name)
            for reac, prod, v, name in channels:
                change = dict(prod)
                for i, n in reac:
                    change[i] = change.get(i, 0) - n
                need = [(i, n) for i, n in reac if change[i] < 0 and i not in self.fixed
                        and (n > 1 or not vanishes_without(law, i))]
                for i, n in need:
                    v = BinOp("*", v, at_least(i, n))
                if need:
                    self.guard_guarded.append(name)
                if v is law and name == r.name:
                    out.append(r)
                else:
                    out.append(Reaction(reac, prod, law=v, name=name))
        if self.guard_split or self.guard_guarded:
            warnings.warn(f"{self.file}: guard=True: laws that are no propensities as written are read guarded "
                          f"(a negative net rate runs the reaction backwards; no firing without what it consumes): "
                          f"split by sign: {', '.join(self.guard_split) or 'none'}; guarded by their reactants: "
                          f"{', '.join(self.guard_guarded) or 'none'}", SBMLWarning, stacklevel=5)
        return out

    def _keep_derived_rates(self, reactions: list[Reaction], rules: list[AssignmentRule], events: list[Event]
                            ) -> list[Reaction]:
        """Mass-action reactions whose rate constant is a model parameter times a factor (omega != 1)
        keep their own rate parameter only where nothing else reads the model parameter (so that
        changing it can never leave a stale copy); elsewhere they go back to their general law."""
        exprs = [r.law for r in reactions if r.law is not None] + [r.expr for r in rules]
        exprs += [a.expr for e in events for a in e.assignments]
        exprs += [n for e in events for n in condition_nodes(e.trigger)]
        exprs += [e.priority for e in events if e.priority is not None]
        read = {p for x in exprs for p in params_of(x)} | self.assigned
        out = []
        for r in reactions:
            mass, general = self.fallback.get(id(r), (None, None))
            if mass is r and self.derived[r.rate][0] in read:  # type: ignore[index]
                r = general
            out.append(r)
        used = {r.rate for r in out if r.law is None}
        self.derived = {k: v for k, v in self.derived.items() if k in used}
        return out

    def _sides(self, r: Any, label: str) -> tuple[tuple, tuple, Fraction]:
        """(reactants, products, q): whole stoichiometries n_i = s_i / q. q = 1 when every s_i is whole;
        else q is the largest fraction (denominator <= _MAX_DENOMINATOR) of which every s_i is a whole
        multiple: a firing is then q extents of the reaction (propensity x q, changes n_i)."""
        sides = [self._side(r, r.getListOfReactants(), label, "reactant"),
                 self._side(r, r.getListOfProducts(), label, "product")]
        values = [v for side in sides for v, _, _ in side.values()]
        q = Fraction(1)
        if any(v.denominator != 1 for v in values):
            q = Fraction(math.gcd(*(v.numerator for v in values)), math.lcm(*(v.denominator for v in values)))
        out = []
        for side, what in zip(sides, ("reactant", "product")):
            for i, (v, sr, sid) in side.items():
                n = v / q
                if n > MAX_CHANGE:
                    extra = f" ({v} / {q}: a firing is {q} extents of the reaction)" if q != 1 else ""
                    raise self.err(f"{label}: stoichiometry of {what} {sid!r} must be at most {MAX_CHANGE}, got "
                                   f"{n}{extra}", sr)
            out.append(tuple((i, int(v / q)) for i, (v, _, _) in side.items()))
        return out[0], out[1], q

    def _side(self, r: Any, refs: Any, label: str, what: str) -> dict[int, tuple[Fraction, Any, str]]:
        """Species index -> (stoichiometry, as an exact fraction; its element; species id)."""
        out: dict[int, tuple[Fraction, Any, str]] = {}
        for k in range(refs.size()):
            sr = refs.get(k)
            sid = sr.getSpecies()
            if sid in self.real_species:
                continue  # a boundary species made real-valued: reactions never change it
            if sid in getattr(self, "continuous", {}):
                if sid in self.continuous_boundary:
                    continue  # a boundary species: the reaction does not change it (its rate rule does)
                raise self.err(f"{label}: {what} {sid!r} has a {self.continuous_how[sid].split(',')[0]} but no "
                               "boundaryCondition=\"true\"; SBML forbids a reaction to change a species that a rule "
                               "determines", sr)
            if sid not in self.index:
                raise self.err(f"{label}: {what} {sid!r} is not a species of the model", sr)
            if self.level == 2 and sr.isSetStoichiometryMath():
                value = self._stoichiometry_math(sr, f"{label}: stoichiometryMath for {what} {sid!r}")
            else:
                if self.level >= 3 and not sr.isSetStoichiometry():
                    raise self.err(f"{label}: {what} {sid!r} has no stoichiometry", sr)
                value = sr.getStoichiometry()
                if self.level == 1:
                    value = value / sr.getDenominator()
            if value == 0:
                continue  # the reaction does not change it (a modifier: its law may still read it)
            if not (math.isfinite(value) and value > 0):
                raise self.err(f"{label}: stoichiometry of {what} {sid!r} must be positive, got {value!r}", sr)
            f = Fraction(round(value)) if abs(value - round(value)) <= _INT_TOL * max(1.0, value) else \
                Fraction(value).limit_denominator(_MAX_DENOMINATOR)
            if f == 0 or abs(float(f) - value) > _INT_TOL * max(1.0, value):
                raise self.err(f"{label}: stoichiometry of {what} {sid!r} is {value!r}, neither a whole number nor a "
                               f"fraction p/q with q <= {_MAX_DENOMINATOR}; a firing moves whole molecules, so it has "
                               "no exact stochastic meaning", sr)
            i = self.index[sid]
            out[i] = (out[i][0] + f if i in out else f, sr, sid)
        return out

    def _stoichiometry_math(self, sr: Any, label: str) -> float:
        """The value of a (Level 2) stoichiometryMath that is constant: numbers, compartment sizes and
        parameters that keep one value for the run (:meth:`_static_values`); else refused."""
        sm = sr.getStoichiometryMath()
        expr = self._math(sm.getMath() if sm.isSetMath() else None, {}, label, sr, allow_time=True)
        if has_time(expr):
            raise self.err(f"{label} ({to_text(expr, self.species)}) reads time: the molecules a firing moves would "
                           "change with time, which has no exact stochastic meaning (not supported)", sr)
        value = _constant(expr, self._static_values())
        if value is None:
            raise self.err(f"{label} ({to_text(expr, self.species)}) is not a constant (it reads species or values "
                           "that rules or events change): the molecules a firing moves would change during a run, "
                           "which is not supported", sr)
        return value

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
            if not self.amount_symbol[var]:
                comp = self.species_comp[var]
                self._size(comp, f"{label}: species {var!r} is a concentration", element)
                expr = BinOp("*", expr, Param(comp))
            return self.index[var], expr if self.omega == 1.0 else BinOp("*", expr, Num(self.omega))
        if var in self.global_value:
            return -1, expr
        if var in self.comp_size:  # a size that changes: a parameter; counts (amounts) stay, concentrations follow
            self.changing_sizes.add(var)
            return -1, expr
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
            if var in self.comp_size:  # a size that changes (see _target)
                self.changing_sizes.add(var)
            elif var not in self.global_value:
                raise self.err(f"{label}: {var!r} is not a parameter or species of the model", r)
            v = self.comp_size[var] if var in self.comp_size else self.global_value[var]
            if v is None or not math.isfinite(v):
                what = "species" if var in getattr(self, "continuous", {}) else \
                    "compartment" if var in self.comp_size else "parameter"
                raise self.err(f"{label}: {what} {var!r} has no (finite) initial value" + _UNDEFINED, r)
            if not r.isSetMath():
                raise self.err(f"{label} has no math", r)
            reported = var in getattr(self, "continuous", {}) or not self.species  # species, or an ODE model
            out.append(RateRule(rid, var, -1, self._math(r.getMath(), {}, label, r, allow_time=True), reported))
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
            pairs = [self._time_alone(Compare(rel[t], a, b), label, where) for a, b in zip(ops, ops[1:])]
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

    def _time_alone(self, c: Compare, label: str, where: Any) -> Compare:
        """A trigger's comparison with ``time`` alone on one side (what the SSA locates exactly): one
        linear in time, ``a * time + b OP c`` (a a nonzero constant; b, c free of time, as
        BIOMD0000000096's ``T - time <= 0``), becomes ``time OP' (c - b) / a`` (OP mirrored for a < 0;
        the same instant up to rounding, exactly for a = +-1); any other use of time is refused."""
        if not (has_time(c.left) or has_time(c.right)):
            return c
        if (isinstance(c.left, Time) and not has_time(c.right)) or (isinstance(c.right, Time) and not has_time(c.left)):
            return c
        lin = self._linear_in_time(BinOp("-", c.left, c.right))
        if lin is None or lin[0] == 0.0 or not math.isfinite(lin[0]):
            raise self.err(f"{label}: the trigger compares {to_text(c.left, self.species)} {c.op} "
                           f"{to_text(c.right, self.species)}; distsim locates time in a trigger only in a comparison "
                           "linear in time with a constant coefficient (as 'time >= 25' or 'T - time <= 0')", where)
        a, b = lin  # a * time + b OP 0
        minus_b = b.arg if isinstance(b, Neg) else Neg(b)
        threshold = minus_b if a == 1.0 else b if a == -1.0 else BinOp("/", minus_b, Num(a))
        return Compare(c.op if a > 0 else _MIRRORED[c.op], Time(), threshold)

    def _linear_in_time(self, root: Node) -> tuple[float, Node] | None:
        """(a, b) with ``root = a * time + b`` (a a number, b free of time), or None (explicit stack)."""
        consts = {c: v for c, v in self.comp_size.items() if v is not None and c not in self.assigned}
        consts.update({p: v for p, v in self.global_value.items() if v is not None and p not in self.assigned})
        out: dict[int, tuple[float, Node] | None] = {}
        stack: list[tuple[Node, bool]] = [(root, False)]
        while stack:
            n, ready = stack.pop()
            if not has_time(n):
                out[id(n)] = (0.0, n)
                continue
            kids = (n.left, n.right) if isinstance(n, BinOp) else (n.arg,) if isinstance(n, Neg) else ()
            if not ready and kids:
                stack.append((n, True))
                stack.extend((k, False) for k in kids)
                continue
            out[id(n)] = _linear_step(n, out, consts)
        return out[id(root)]

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
            depth = tree_depth(node) if t in self._elementary() else 1 + max((k[1] for k in kids), default=0)
            if depth > MAX_MATH_DEPTH:
                raise self.err(f"{label}: the expression nests more than {MAX_MATH_DEPTH} deep", where)
            out.append((node, depth))
        if tree_size(out[0][0], MAX_MATH_NODES) > MAX_MATH_NODES:  # (arguments used more than once: a DAG)
            raise self.err(f"{label}: the expression has more than {MAX_MATH_NODES} nodes after inlining "
                           "function definitions", where)
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
            if name in self.reaction_ids and name not in local:  # its rate: the law inlined, as deep as it is
                node = self._reaction_rate(name, label, where)
                return node, tree_depth(node)
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
        if t in self._elementary():
            arity(1)
            return Call(self._elementary()[t], (kids[0],))
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
        why = _NO_DETERMINISTIC_FORM.get(name.replace("AST_FUNCTION_", "").lower(), "")
        raise self._unsupported(ast, f"{nice!r}{why}", label, where)

    def _elementary(self) -> dict[int, str]:
        """MathML functions rewritten as trees of exp, log, sqrt, sin and cos (:func:`arith.elementary`)."""
        return {getattr(self.L, f"AST_FUNCTION_{f.upper()}"): f for f in ELEMENTARY}

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
        if name in self.index:  # amount = count / omega; concentration = amount / size
            i = self.index[name]
            node: Node = Species(i) if self.omega == 1.0 else BinOp("/", Species(i), Num(self.omega))
            if self.amount_symbol[name]:
                return node
            comp = self.species_comp[name]
            self._size(comp, f"{label}: species {name!r} is a concentration (hasOnlySubstanceUnits=false)", where)
            return BinOp("/", node, Param(comp))
        if name in self.comp_size:
            self._size(name, f"{label}: the math uses compartment {name!r}", where)
            return Param(name)
        if name in self.global_value:
            v = self.global_value[name]
            if (v is None or not math.isfinite(v)) and not self._has_rule(name) and name not in self.initial_assigned:
                raise self.err(f"{label}: parameter {name!r} has no (finite) value" + _UNDEFINED, where)
            return Param(name)
        if name in self.reaction_ids:
            return self._reaction_rate(name, label, where)
        raise self.err(f"{label}: the math uses {name!r}, which is not a species, compartment or "
                       "parameter of the model (species reference ids are not supported)", where)
