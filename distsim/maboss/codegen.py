"""The generated GPU kernel of one MaBoSS model: ``kernels/ctbn.cu``'s regions filled with code for its
flip rates (see the head of that file).

Per event the table kernel reads, for every node, its rate index from the interleaved scratch and its value
from the node's table (the sums over all nodes, the entropy over the visible ones, the choice of the flip:
some 3n dependent loads per event from per-thread scratch too large for the caches, plus the parents' bits
of the rates it recomputes); the generated kernel keeps the state in ``ceil(n / 32)`` registers (xw0, ...),
recomputes every rate index from it by straight-line logic (the same instructions for every thread of a
warp, where the table kernel's recomputation diverges by the node that flipped), packs the indices into
registers (a0, ...) and writes the rates as literals: no memory traffic per event but the Philox draw.

Node i's rate index is a function of its parents' bits (``model.tt``); each bit of it becomes a reduced
ordered decision diagram over the parents (the first parent on top, as the table's most significant bit),
emitted as one 0/1 expression per diagram node. The rates and the sums are those of the table kernel:
``vals[val_start[i] + index]`` added in node order, so the same bits. A mutant model runs its unmutated
model's kernel with the mutant nodes' index fields cleared from ``fix_mask`` (one kernel for a knock-out
screen); other rate changes (``$variables``) give another kernel (NVRTC, a few seconds, cached on disk).

Unit-rate models (:func:`unit_rate`: every rate 0 or one power of two v, as in most published MaBoSS models)
keep node i's rate bit at bit i of the words a0, ...: the sums are ``popc`` counts times v and the flip is
the floor(rr / v)-th enabled node (``ctbn_select32``, its word picked by selects); every step of the sums and
of the scan is exact there, so these are the same bits. Their transition entropy is a function of the number
k of enabled visible nodes alone (``tni = k v`` exactly), tabulated per block at the kernel's start with the
per-event arithmetic. Other models' entropy (a division and a log per visible node) is recomputed only when
the visible nodes' rate indices or ``tni`` change (flips of internal nodes mostly change neither).
"""

from __future__ import annotations

import math
import os
import struct

import numpy as np

from ..backends import cuda
from .model import CompiledModel

MAX_DIAGRAM_NODES = 20000  # beyond (over all nodes of a model): the table kernel (code size, NVRTC time)
GENERATED_MARK = "ctbn_picked"  # a label only generated kernels have
KERNEL_ENV = "DISTSIM_MABOSS_KERNEL"  # "table" or "generated" (default: generated where it fits)


def diagram(table: np.ndarray) -> tuple[list[tuple[int, int, int]], int]:
    """A reduced ordered decision diagram of the 0/1 ``table`` over K variables (row r gives variable k the bit
    ``(r >> (K-1-k)) & 1``): ``(nodes, root)``; node j (id ``j + 2``) is ``(k, lo, hi)``: ``hi`` where
    variable k is 1, else ``lo``; ids 0 and 1 are the constants. Children come before their parents."""
    size = table.size
    K = size.bit_length() - 1
    if size != 1 << K:
        raise ValueError("a truth table has 2**K rows")
    ids = np.asarray(table, np.int64) != 0
    ids = ids.astype(np.int64)
    nodes: list[tuple[int, int, int]] = []
    for k in range(K - 1, -1, -1):  # the sub-functions of the first k variables' prefixes
        lo, hi = ids[0::2], ids[1::2]
        need = lo != hi
        new = lo.copy()
        if need.any():
            pairs, inv = np.unique(np.stack([lo[need], hi[need]], axis=1), axis=0, return_inverse=True)
            new[need] = 2 + len(nodes) + inv.reshape(-1)
            nodes.extend((k, int(a), int(b)) for a, b in pairs)
        ids = new
    return nodes, int(ids[0])


def _bits(m: CompiledModel, i: int) -> tuple[np.ndarray, tuple[int, ...], list[float]]:
    """Node i's table of rate indices, its parents and its rate values."""
    ps = tuple(int(p) for p in m.par_index[m.par_start[i]:m.par_start[i + 1]])
    t = m.tt[m.tt_start[i]:m.tt_start[i] + (1 << len(ps))]
    end = m.val_start[i + 1] if i + 1 < m.n else m.vals.size
    return t, ps, [float(v) for v in m.vals[m.val_start[i]:end]]


def _bit(p: int) -> str:
    return f"((xw{p >> 5} >> {p & 31}) & 1u)"


def _node_expr(k: int, lo: str, hi: str, v: str) -> str:
    if lo == "0u" and hi == "1u":
        return v
    if lo == "1u" and hi == "0u":
        return f"({v} ^ 1u)"
    if lo == "0u":
        return f"({v} & {hi})"
    if hi == "0u":
        return f"(({v} ^ 1u) & {lo})"
    if lo == "1u":
        return f"(({v} ^ 1u) | {hi})"
    if hi == "1u":
        return f"({v} | {lo})"
    return f"(({v} & {hi}) | (({v} ^ 1u) & {lo}))"


def _rate(idx: str, vals: list[float]) -> str:
    """The double of rate index ``idx`` (0: rate 0). With one value, its bits masked by -idx: no constant to
    keep in a register across events (a select of a literal makes the compiler hoist it out of the loop)."""
    if len(vals) == 2:
        bits = struct.unpack("<q", struct.pack("<d", vals[1]))[0]
        return f"__longlong_as_double((long long)(0ULL - (unsigned long long)({idx})) & {bits}LL)"
    out = "0.0"
    for k in range(len(vals) - 1, 0, -1):
        out = f"({idx} == {k}u ? {vals[k].hex()} : {out})" if len(vals) > 2 else f"({idx} ? {vals[k].hex()} : 0.0)"
    return out


def unit_rate(m: CompiledModel) -> float | None:
    """v where every flip rate of ``m`` is 0 or one common v = 2**e (most MaBoSS models: 1.0), else None.
    Every sum of such rates in node order is then exact (k v for k < 2**53 nodes), and so is each step of
    the choice of the flip (rr - v, rr < total): the generated kernel counts enabled nodes (popc) and picks
    the floor(rr / v)-th of them, the same bits as the sums and the scan of the table kernel and the CPU."""
    vs = set()
    for i in range(m.n):
        t, _, vals = _bits(m, i)
        if len(vals) > 2:
            return None
        if len(vals) == 2 and t.any():
            vs.add(vals[1])
    if len(vs) != 1:
        return None
    v = vs.pop()
    mant, e = math.frexp(v)
    return v if mant == 0.5 and -900 < e < 900 else None


class _Plan:
    """Where each node's rate index lives (a bit field of a packed register) and the code that computes it.
    ``unit``: every index is one bit and node i's is bit i & 31 of word i >> 5 (as the state's)."""

    def __init__(self, m: CompiledModel, unit: bool = False):
        self.m = m
        self.size = 0  # decision-diagram nodes
        self.code: list[str] = []  # the rates region after the packed words' declaration
        self.field: dict[int, tuple[int, int, int]] = {}  # node -> (word, shift, width)
        self.vals: dict[int, list[float]] = {}
        word, shift = 0, 0
        for i in range(m.n):
            t, ps, vals = _bits(m, i)
            width = (len(vals) - 1).bit_length()
            if width == 0 or not t.any():
                continue  # rate 0 in every state (a mutant, an input)
            planes = []
            self.code.append(f"{{  // node {i}: its rate index")
            # the state words look changed to the compiler here: no parent bit is extracted once and kept in
            # a register for later nodes (ptxas then held ~255 registers for Montagud's 133 nodes), each node's
            # logic is evaluated in turn from the words
            self.code += [f"CTBN_OPAQUE(xw{w});" for w in sorted({p >> 5 for p in ps})]
            for b in range(width):
                nodes, root = diagram((t >> b) & 1)
                self.size += len(nodes)
                name = {0: "0u", 1: "1u"}
                for j, (k, lo, hi) in enumerate(nodes):
                    name[j + 2] = f"d{i}_{b}_{j}"
                    self.code.append(f"const unsigned {name[j + 2]} = "
                                     f"{_node_expr(k, name[lo], name[hi], _bit(ps[k]))};")
                planes.append(name[root] if b == 0 else f"({name[root]} << {b})")
            if unit:
                word, shift = i >> 5, i & 31
            elif shift + width > 32:
                word, shift = word + 1, 0
            self.field[i] = (word, shift, width)
            self.vals[i] = vals
            k = " | ".join(planes)
            self.code.append(f"a{word} |= ({k}) << {shift};" if shift else f"a{word} |= {k};")
            self.code.append("}")
            shift += width
        self.words = (m.n + 31) // 32 if unit else word + 1

    def index(self, i: int) -> str:
        w, s, width = self.field[i]
        return f"((a{w} >> {s}) & {(1 << width) - 1}u)"


def _entropy_key(plan: _Plan) -> str | None:
    """The visible nodes' rate indices packed into one 64-bit expression ("0ULL": none vary), or None
    (more than 64 bits)."""
    parts, shift = [], 0
    for i, (_w, _s, width) in plan.field.items():
        if plan.m.internal[i]:
            continue
        parts.append(f"((unsigned long long){plan.index(i)} << {shift})" if shift else
                     f"(unsigned long long){plan.index(i)}")
        shift += width
    if shift > 64:
        return None
    return " | ".join(parts) or "0ULL"


def regions(m: CompiledModel) -> dict[str, str] | None:
    """The template's regions for ``m`` (None: too large a model for generated code); a mutant model gets the
    code of its unmutated model, the mutant nodes' rate indices masked by the kernel's ``fix_mask``."""
    m = m.unmutated or m
    v = unit_rate(m)
    plan = _Plan(m, unit=v is not None)
    if plan.size > MAX_DIAGRAM_NODES:
        return None
    sw = (m.n + 31) // 32
    load = [f"unsigned int {', '.join(f'xw{w} = 0u' for w in range(sw))};",
            f"unsigned int {', '.join(f'am{w} = ~0u' for w in range(plan.words))};  // mutants' fields cleared"]
    for i, (w, s, width) in plan.field.items():
        load.append(f"if (fix_mask[{i}]) am{w} &= ~{((1 << width) - 1) << s}u;")
    store = []
    for w in range(sw):
        hi = min(32, m.n - 32 * w)
        load.append(f"for (int b = 0; b < {hi}; ++b) xw{w} |= (unsigned int)x[(long long)({32 * w} + b) * N + c] << b;")
        store.append(f"for (int b = 0; b < {hi}; ++b) x[(long long)({32 * w} + b) * N + c] = "
                     f"(unsigned char)((xw{w} >> b) & 1u);")
    # the sums in node order; the nodes whose rate is always 0 add nothing (a sum of rates >= +0.0 is unchanged)
    rates = [f"unsigned int {', '.join(f'a{w} = 0u' for w in range(plan.words))};", *plan.code,
             *(f"a{w} &= am{w};" for w in range(plan.words))]
    if v is not None:
        return _unit_regions(m, plan, v, load, rates, store)
    for i in plan.field:
        rates.append(f"{{ const unsigned k = {plan.index(i)}; const double ri = {_rate('k', plan.vals[i])}; "
                     "total += ri;" + (" if (k) rate_internal += ri; }" if m.internal[i] else " }"))
    # a rate is > 0 exactly where its index is not 0 (the values are > 0): integer tests
    entropy = [f"CTBN_OPAQUE(a{w});" for w in range(plan.words)]
    terms = [f"{{ const unsigned k = {plan.index(i)}; if (k) {{ const double p = "
             f"{_rate('k', plan.vals[i])} / tni; th -= (ds_log(p) * DS_INV_LN2) * p; }} }}"
             for i in plan.field if not m.internal[i]]
    key = _entropy_key(plan)
    if key is None:  # more than 64 bits of visible rate indices: computed at every event
        entropy += terms
    else:  # th is a function of (the visible nodes' rate indices, tni): recomputed only when they change
        entropy += [f"const unsigned long long vkey = {key};",
                    "if (vkey == th_key && tni == th_tni) { th = th_val; } else {", *terms,
                    "th_key = vkey; th_tni = tni; th_val = th; }"]
    select = [f"CTBN_OPAQUE(a{w});" for w in range(plan.words)]
    select += [f"{{ const unsigned k = {plan.index(i)}; if (k) {{ node = {i}; rr -= {_rate('k', plan.vals[i])}; "
              "if (rr < 0.0) goto ctbn_picked; } }" for i in plan.field]
    select.append("ctbn_picked:")
    select += [f"if ((node >> 5) == {w}) xw{w} ^= 1u << (node & 31);" for w in range(sw)]
    return {"defs": f"#define CTBN_VW_OF(a) {m.vis_words}\n#define CTBN_NW_OF(a) {m.n_words}", "setup": "",
            "state_load": "\n".join(load), "rates": "\n".join(rates),
            "entropy": "\n".join(entropy), "select": "\n".join(select), "state_store": "\n".join(store)}


def _unit_regions(m: CompiledModel, plan: _Plan, v: float, load: list[str], rates: list[str],
                  store: list[str]) -> dict[str, str]:
    """The regions of a model whose rates are all 0 or v (:func:`unit_rate`): bit i of the words a0, ... is
    node i's rate index."""
    sw = plan.words
    imask = [sum(1 << (i & 31) for i in plan.field if m.internal[i] and i >> 5 == w) for w in range(sw)]
    count = " + ".join(f"__popc(a{w})" for w in range(sw))
    count_int = " + ".join(f"__popc(a{w} & {k}u)" for w, k in enumerate(imask) if k) or "0"
    rates.append(f"total = (double)({count}) * {v.hex()}; rate_internal = (double)({count_int}) * {v.hex()};")
    # the entropy is a function of k, the enabled visible nodes: tni = k v exactly (integer multiples of a power
    # of two) and every term is the same -(log2(v / tni)) (v / tni), subtracted k times; each block tabulates
    # it for k = 0 .. NV with this arithmetic (the same bits) and an event reads its entry (no division or log
    # per event, no branch)
    vis = [i for i in plan.field if not m.internal[i]]
    vmask = [sum(1 << (i & 31) for i in vis if i >> 5 == w) for w in range(sw)]
    setup, entropy = [], []
    if vis:
        setup = [f"__shared__ double ctbn_th_tab[{len(vis) + 1}];",
                 f"for (int k = threadIdx.x; k <= {len(vis)}; k += blockDim.x) {{",
                 "double th = 0.0;",
                 f"if (k) {{ const double tni = (double)k * {v.hex()}; const double p = {v.hex()} / tni; "
                 "const double e = (ds_log(p) * DS_INV_LN2) * p; for (int q = 0; q < k; ++q) th -= e; }",
                 "ctbn_th_tab[k] = th; }"]
        entropy = [f"CTBN_OPAQUE(a{w});" for w in range(sw)]
        entropy.append("th = ctbn_th_tab[" + " + ".join(f"__popc(a{w} & {k}u)" for w, k in enumerate(vmask) if k)
                       + "];")
    # the scan's node: the j-th enabled node (node order), j = floor(rr / v) (exact), the last one if j >= count;
    # the word that holds it picked by selects (no branch), then its bit (ctbn_select32)
    select = [f"CTBN_OPAQUE(a{w});" for w in range(sw)]
    select.append(f"{{ const int cnt = {count}; const double jd = floor(rr * {(1.0 / v).hex()}); "
                  "unsigned j = jd < (double)cnt ? (unsigned)jd : (unsigned)(cnt - 1);")
    select.append(f"unsigned ws = a{sw - 1}; int base = {32 * (sw - 1)}; bool found = false;")
    for w in range(sw - 1):
        select.append(f"{{ const unsigned cw = __popc(a{w}); const bool h = !found && j < cw; "
                      f"ws = h ? a{w} : ws; base = h ? {32 * w} : base; found = found || h; j = found ? j : j - cw; }}")
    select.append("node = base + ctbn_select32(ws, j); }")
    select.append("ctbn_picked:")  # unused here: the mark of generated kernels (GENERATED_MARK)
    select += [f"if ((node >> 5) == {w}) xw{w} ^= 1u << (node & 31);" for w in range(sw)]
    return {"defs": f"#define CTBN_VW_OF(a) {m.vis_words}\n#define CTBN_NW_OF(a) {m.n_words}",
            "setup": "\n".join(setup), "state_load": "\n".join(load),
            "rates": "\n".join(rates), "entropy": "\n".join(entropy), "select": "\n".join(select),
            "state_store": "\n".join(store)}


def use_generated() -> bool:
    """The A/B switch: ``DISTSIM_MABOSS_KERNEL=table`` runs the table kernel (default: generated)."""
    v = os.environ.get(KERNEL_ENV, "generated").strip().lower()
    if v not in ("generated", "table"):
        from ..errors import ConfigError

        raise ConfigError(f"{KERNEL_ENV} must be 'generated' or 'table', got {v!r}")
    return v == "generated"


MAXREG_ENV = "DISTSIM_MABOSS_MAXREG"  # registers per thread of a generated kernel (0: ptxas's choice)
MAXREG = 128  # 16 warps per SM at 128 threads a block, as the table kernel; ptxas alone takes 130-220 for
# sizek and Montagud (8-12 warps), holding constants it could rematerialize, for a few spilled words at 128


def options(src: str) -> tuple[str, ...]:
    """NVRTC options of a generated kernel's source (none for the table kernel)."""
    if GENERATED_MARK not in src:
        return ()
    v = os.environ.get(MAXREG_ENV, str(MAXREG)).strip()
    if not v.isdigit() or (int(v) and not 32 <= int(v) <= 255):
        from ..errors import ConfigError

        raise ConfigError(f"{MAXREG_ENV} must be 0 (no cap) or a number of registers in 32..255, got {v!r}")
    return (f"--maxrregcount={int(v)}",) if int(v) else ()


def fill(template: str, m: CompiledModel) -> str | None:
    """``template`` (``kernels/ctbn.cu``) with ``m``'s generated regions, or None (the table kernel)."""
    r = regions(m)
    return None if r is None else cuda.fill_template(template, r)
