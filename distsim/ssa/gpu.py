"""GPU kernels for SSA ensembles (CuPy, NVRTC with --fmad=false) and on-device reductions.

* small models (``direct`` with at most ``CODEGEN_MAX_REACTIONS`` reactions): a kernel generated
  from the network (``kernels/ssa_direct.cu``), counts and propensities in registers
  (:func:`simulate_direct`);
* any model, any method with a ``cuda_header``: ``kernels/ssa_generic.cu``, the CPU loop with its
  work arrays in global memory and the method's selection code compiled in (bit-identical to the
  CPU; :func:`simulate_generic`);
* large models (``warp``): ``kernels/ssa_warp.cu``, one warp (or 16, 8 or 4 of its lanes) per
  realization with 32-way block sums (seed 004); the same random numbers, sums in another order, so
  equal to the CPU in distribution (:func:`simulate_warp`).
Which method uses which is declared in :mod:`distsim.ssa.methods`.
All record grid states into a device array that is reduced on the device (sum x, sum x^2,
histograms, firing counts); only these small results are copied to the host.
"""

from __future__ import annotations

from dataclasses import dataclass

import math
import threading
from typing import Any, Callable, Iterator

import numpy as np

from ..backends import cuda, dsmath
from ..models import arith
from ..models.compile_reactions import KIND_MASS_ACTION, CompiledNetwork
from ..models.kinetics import ReactionArrays
from . import errors
from .block import event_summary, join

BLOCK = 128  # threads per block; the fused kernel's limb sums need <= 128 (kernels/ssa_direct.cu)
CODEGEN_MAX_REACTIONS = 64
WARPS_PER_BLOCK = 4  # method 'warp': warps per thread block (32 / lanes realizations each)
WARP_LAUNCH_BYTES = 16 << 30  # method 'warp': device memory of one launch (at most a quarter of the free memory)
WARP_MAX_STACK = 16  # kinetic-law stack depth of kernels/ssa_warp.cu (DS_MAX_STACK)
BRANCHLESS_MAX_REACTIONS = 8  # measured: 1.12x on Michaelis-Menten (benchmarks/ssa_kernel_variants.py)
REC_BYTES_PER_LAUNCH = 2 << 30  # grid states kept on the device per launch (int32)
OPTIONS = ("--fmad=false",)


def _lit(v: float) -> str:
    if v != v:
        return "__longlong_as_double(0x7ff8000000000000LL)"
    if v in (float("inf"), float("-inf")):
        return ("-" if v < 0 else "") + "__longlong_as_double(0x7ff0000000000000LL)"
    return repr(float(v))


_OP_NAMES = {arith.OP_ADD: "OP_ADD", arith.OP_SUB: "OP_SUB", arith.OP_MUL: "OP_MUL", arith.OP_DIV: "OP_DIV",
             arith.OP_POW: "OP_POW"}


def _propensity_code(c: CompiledNetwork, d: int, tables: bool = False) -> str:
    """A C statement computing p{d} with the functions of kernels/kinetics.cuh, in the operation order
    of their interpreters (ds_mass_action, ds_law) and of the CPU (distsim/models/kinetics.py).
    ``tables``: rate constants and law constants come from the batched kernel's per-point tables
    (``th{d}``, loaded once; ``batch_law[pc]``) instead of literals."""
    if c.kind[d] == KIND_MASS_ACTION:
        factors = [f"th{d}" if tables else _lit(c.theta[d])]
        factors += [f"ds_choose((double)x{int(c.rct_species[q])}, {int(c.rct_stoich[q])})"
                    for q in range(c.rct_start[d], c.rct_start[d + 1])]
        return f"p{d} = {' * '.join(factors)};"  # left to right: ((theta * C1) * C2) ...
    stack: list[str] = []
    for pc in range(c.law_start[d], c.law_start[d + 1]):
        op, arg = int(c.law_op[pc]), float(c.law_arg[pc])
        if op == arith.OP_PUSH_CONST:
            stack.append(f"batch_law[{pc}]" if tables else _lit(arg))
        elif op == arith.OP_PUSH_SPECIES:
            stack.append(f"(double)x{int(arg)}")
        elif op == arith.OP_NEG:
            stack.append(f"(-{stack.pop()})")
        elif op >= arith.OP_FUNC_BASE and op - arith.OP_FUNC_BASE <= 6:
            stack.append(f"ds_unary({op - arith.OP_FUNC_BASE}, {stack.pop()})")
        else:
            b, a = stack.pop(), stack.pop()
            name = _OP_NAMES.get(op, f"OP_FUNC_BASE + {op - arith.OP_FUNC_BASE}")
            stack.append(f"ds_binary({name}, {a}, {b})")
    return f"p{d} = {stack[0]};"


def _needs_check(c: CompiledNetwork, d: int) -> bool:
    """Whether propensity d can be negative, NaN or infinite: general laws can; a mass-action term
    theta h(x) with finite theta >= 0 cannot while the int32 counts are >= 0 (h(x) <= 2^(31 order))."""
    if c.kind[d] != KIND_MASS_ACTION:
        return True
    theta = float(c.theta[d])
    order = sum(int(c.rct_stoich[q]) for q in range(c.rct_start[d], c.rct_start[d + 1]))
    return not (math.isfinite(theta) and theta >= 0.0 and math.isfinite(theta * 2.0 ** (31 * order)))


def _deltas(c: CompiledNetwork) -> np.ndarray:
    S, M = c.n_species, c.n_reactions
    delta = np.zeros((M, S), dtype=np.int64)
    for j in range(M):
        for q in range(c.chg_start[j], c.chg_start[j + 1]):
            delta[j, int(c.chg_species[q])] = int(c.chg_delta[q])
    return delta


def _by_reaction(values: list[int]) -> str:
    """A C expression equal to values[j] (nested selects over the nonzero entries)."""
    expr = "0"
    for j in reversed(range(len(values))):
        if values[j]:
            expr = f"(j == {j} ? {values[j]} : {expr})"
    return expr


def _propensities(c: CompiledNetwork, ds: Any, tables: bool = False) -> list[str]:
    check = lambda d: (f" if (ds_bad_propensity(p{d}) && !err) err = DS_ERROR_WORD(ERR_PROPENSITY, {d});"  # noqa: E731
                       if _needs_check(c, d) else "")
    return [_propensity_code(c, d, tables) + check(d) for d in ds]


def _branchless_fire(c: CompiledNetwork, delta: np.ndarray, tables: bool = False) -> list[str]:
    """Fire without divergent branches (small models): species s moves by delta[0, s] plus, for each
    i, b_i (delta[i+1, s] - delta[i, s]); then every propensity is recomputed (the same values as the
    dependency-graph update, since propensities depend on the state only). The firing counts are
    kept as g_i = number of events with j > i."""
    M, S = delta.shape
    lines, moved = [], []
    for s in range(S):
        if not delta[:, s].any():
            continue
        terms = [str(int(delta[0, s]))] if delta[0, s] else []
        terms += [f"(b{i} ? {int(delta[i + 1, s] - delta[i, s])} : 0)" for i in range(M - 1)
                  if delta[i + 1, s] != delta[i, s]]
        lines.append(f"x{s} = ds_add(x{s}, {' + '.join(terms)});")
        moved.append(f"x{s}")
    if moved:
        lines.append(f"bad |= {' | '.join(moved)};")
    lines += [f"g{i} += b{i};" for i in range(M - 1)]
    return lines + _propensities(c, range(M), tables)


def _switch_fire(c: CompiledNetwork, tables: bool = False) -> list[str]:
    lines = ["switch (j) {"]
    for j in range(c.n_reactions):
        body = [f"case {j}:"]
        for q in range(c.chg_start[j], c.chg_start[j + 1]):
            s, dlt = int(c.chg_species[q]), int(c.chg_delta[q])
            body.append(f"x{s} = ds_add(x{s}, {dlt}); bad |= x{s};")
        body.append(f"f{j} += 1u;")
        body += _propensities(c, (int(c.dep_list[q]) for q in range(c.dep_start[j], c.dep_start[j + 1])), tables)
        body.append("break;")
        lines.append(" ".join(body))
    return lines + ["default: break;", "}"]


def _direct_state(c: CompiledNetwork, branchless: bool, tables: bool) -> list[str]:
    """Counts, propensities and firing counters in registers (batched: counts and rate constants
    loaded from the point's rows)."""
    S, M = c.n_species, c.n_reactions
    if tables:
        state = [f"int x{s} = (int)batch_x0[{s}];" for s in range(S)]
        state += [f"const double th{d} = batch_theta[{d}];" for d in range(M) if c.kind[d] == KIND_MASS_ACTION]
    else:
        state = [f"int x{s} = {int(c.x0[s])};" for s in range(S)]
    state += [f"double p{j};" for j in range(M)]
    state += ([f"unsigned int g{i} = 0u;" for i in range(M - 1)] if branchless
              else [f"unsigned int f{j} = 0u;" for j in range(M)])
    return state + _propensities(c, range(M), tables)


def _direct_select(M: int) -> list[str]:
    """j = #{i < M-1 : c_i <= target}; u2 * a0 rounded up to a0: the last reaction with a positive
    propensity (as the CPU)."""
    select = [f"int b{i} = c{i} <= target;" for i in range(M - 1)]
    if M > 1:
        select.append("if (a0 <= target) { int L = 0; " + " ".join(f"if (p{j} > 0.0) L = {j};" for j in range(1, M))
                      + " " + " ".join(f"b{i} = {i} < L;" for i in range(M - 1)) + " }")
    select.append(f"const int j = {' + '.join(f'b{i}' for i in range(M - 1)) or '0'};")
    return select


def _direct_flush(M: int, branchless: bool) -> list[str]:
    if branchless:  # reaction j fired (events with j' >= j) - (events with j' > j) times: e - g0, g0 - g1, ..., g_{M-2}
        at_least = ["e"] + [f"g{i}" for i in range(M - 1)]
        counts = [f"{hi} - {lo}" for hi, lo in zip(at_least, at_least[1:])] + [at_least[-1]]
        return [f"atomicAdd(&firings[{j}], (unsigned long long)({n}));" for j, n in enumerate(counts)]
    return [f"atomicAdd(&firings[{j}], (unsigned long long)f{j});" for j in range(M)]


def generate_direct(c: CompiledNetwork, fused: bool = False, branchless: bool | None = None,
                    batched: bool = False) -> str:
    """CUDA source of the register-resident direct-method kernel for this network (``branchless``:
    fire without a switch; the default for models with at most ``BRANCHLESS_MAX_REACTIONS``).
    ``batched``: many parameter points per launch, their initial counts, rate constants and law
    constants read from per-point tables (``DS_BATCHED``; the kernel's code does not depend on their
    values, except that a propensity is checked when ``c``'s rate constant needs it)."""
    S, M = c.n_species, c.n_reactions
    if branchless is None:
        branchless = M <= BRANCHLESS_MAX_REACTIONS
    delta = _deltas(c)
    prefix = ["const double c0 = 0.0 + p0;"] + [f"const double c{j} = c{j - 1} + p{j};" for j in range(1, M)]
    prefix.append(f"const double a0 = c{M - 1};")
    classify = [f"if (x{s} < 0) err = DS_ERROR_WORD({_by_reaction([int(d) for d in delta[:, s]])} > 0 ? ERR_OVERFLOW "
                f": ERR_NEGATIVE, j);" for s in range(S) if delta[:, s].any()]
    record = "\n".join(f"DS_RECORD(k, {s}, x{s});" for s in range(S))
    regions = {
        "defs": f"#define DS_S {S}" + (f"\n#define DS_M {M}" if batched else ""),
        "state": "\n".join(_direct_state(c, branchless, batched)),
        "sum": " ".join(prefix),
        "record": record,
        "fill": record,
        "select": "\n".join(_direct_select(M)),
        "fire": "\n".join(_branchless_fire(c, delta, batched) if branchless else _switch_fire(c, batched)),
        "classify": "\n".join(classify),
        "flush": "\n".join(_direct_flush(M, branchless)),
        "final": "\n".join(f"rec[{s} * RR + r] = (int)x{s};" for s in range(S)),
    }
    src = cuda.fill_template(cuda.kernel_source("ssa_direct.cu"), regions)
    src = ("#define DS_BATCHED\n" + src) if batched else src
    return dsmath.neglog_table_cuda() + ("#define DS_FUSED\n" + src if fused else src)


_MODULES: dict[tuple, Any] = {}
_LOCK = threading.Lock()


def _module(key: tuple, source: Callable[[], str], options: tuple[str, ...] = ()) -> Any:
    """The compiled module of ``source()`` for ``key`` on the current device (built once per process)."""
    import cupy as cp

    key = key + (cp.cuda.Device().id,)
    with _LOCK:
        mod = _MODULES.get(key)
        if mod is None:
            mod = cuda.load_module(source(), OPTIONS + options)
            _MODULES[key] = mod
    return mod


def _check_counts(c: CompiledNetwork) -> None:
    if np.any(np.asarray(c.x0) > np.iinfo(np.int32).max):
        raise RuntimeError("an initial count exceeds 2**31 - 1, the GPU kernels' limit; use backend='cpu'")


def simulate_direct(b: Any, method: Any) -> dict:
    """Method 'direct': the generated register kernel for small models (in-kernel reductions when the
    outputs allow), else the generic kernel."""
    import cupy as cp

    c: CompiledNetwork = b.compiled
    S, M, K = c.n_species, c.n_reactions, len(b.grid)
    if M > CODEGEN_MAX_REACTIONS:
        return simulate_generic(b, method)
    _check_counts(c)
    if not b.keep_trajectories and not b.bins and 20 * K * S <= FUSED_SHARED_BYTES:
        return _simulate_fused(b)
    firings = cp.zeros(M, dtype=cp.uint64)
    return _reduce_chunks(b, _thread_chunks(b, None, firings), firings)


def simulate_generic(b: Any, method: Any) -> dict:
    """Any method with a ``cuda_header``: kernels/ssa_generic.cu with that selection code compiled in."""
    import cupy as cp

    _check_counts(b.compiled)
    firings = cp.zeros(b.compiled.n_reactions, dtype=cp.uint64)
    return _reduce_chunks(b, _thread_chunks(b, method, firings), firings)


def simulate_warp(b: Any, method: Any) -> dict:
    """Method 'warp': one warp (or group of lanes) per realization (kernels/ssa_warp.cu)."""
    import cupy as cp

    c: CompiledNetwork = b.compiled
    _check_counts(c)
    if c.max_stack > WARP_MAX_STACK:
        raise ValueError(f"method 'warp' evaluates kinetic laws with a stack of at most {WARP_MAX_STACK}; "
                         f"this model needs {c.max_stack}: use method='tree'")
    firings = cp.zeros(c.n_reactions, dtype=cp.uint64)
    return _reduce_chunks(b, _warp_chunks(b, firings), firings)


REACTION_TABLES = ReactionArrays._fields  # the network tables in the kernels' argument order
WARP_TABLES = tuple(n for n in REACTION_TABLES if n[:4] not in ("chg_", "dep_"))  # ssa_warp.cu: firing table instead


def _tables(c: CompiledNetwork) -> dict[str, Any]:
    import cupy as cp

    return {name: cp.asarray(getattr(c, name)) for name in REACTION_TABLES}


def table_args(tb: dict[str, Any], names: tuple[str, ...] = REACTION_TABLES, **rows: Any) -> tuple:
    """The network tables ``tb`` (:func:`_tables`) as a launch's arguments, in the kernels' order;
    ``rows`` replaces some (a batch's per-point initial counts, rate and law constants)."""
    return tuple(rows[n] if n in rows else tb[n] for n in names)


def generic_source(method: Any) -> str:
    """kernels/ssa_generic.cu with ``method``'s selection code compiled in (compile-time defines)."""
    return (dsmath.neglog_table_cuda() + f'#define DS_METHOD_HEADER "{method.cuda_header}"\n'
            f"#define DS_NEEDS_DEPGRAPH {int(method.needs_depgraph)}\n" + cuda.kernel_source("ssa_generic.cu"))


def _thread_chunks(b: Any, method: Any, firings: Any) -> Iterator[tuple[Any, Any, Any]]:
    """One realization per thread, the generated kernel (``method`` None) or the generic kernel with
    ``method``'s selection code: yields (grid states (K, S, n), events, error words)."""
    import cupy as cp

    c: CompiledNetwork = b.compiled
    S, M, K, R = c.n_species, c.n_reactions, len(b.grid), b.realizations
    n_aux = 0 if method is None else method.cpu.aux_size(M)
    per_real = K * S * 4 + (0 if method is None else (S * 8 + M * 8 + 8 * n_aux + 8 * c.max_stack))
    chunk = max(BLOCK, min(R, REC_BYTES_PER_LAUNCH // max(per_real, 1)))
    grid = cp.asarray(np.asarray(b.grid, np.float64))
    tb = None if method is None else _tables(c)
    for start in range(0, R, chunk):
        n = min(chunk, R - start)
        rec = cp.empty((K, S, n), dtype=cp.int32)
        ev = cp.zeros(n, dtype=cp.uint64)
        er = cp.zeros(n, dtype=cp.int32)
        blocks = (n + BLOCK - 1) // BLOCK
        if method is None:
            _module(("direct", c.digest), lambda: generate_direct(c)).get_function("ssa_direct")(
                (blocks,), (BLOCK,), (np.int32(n), np.uint64(b.real0 + start), np.uint32(b.seed), np.int32(K), grid,
                                      np.int64(b.max_events), rec, firings, ev, er, firings, firings))
        else:
            xs = cp.empty(S * n, dtype=cp.int64)
            a = cp.empty(M * n, dtype=cp.float64)
            aux = cp.empty(max(n_aux, 1) * n, dtype=cp.float64)
            stack = cp.empty(max(1, c.max_stack) * n, dtype=cp.float64)
            _module(("generic", method.cuda_header, method.needs_depgraph), lambda: generic_source(method)).get_function(
                "ssa_generic")(
                (blocks,), (BLOCK,),
                (np.int32(n), np.uint64(b.real0 + start), np.uint32(b.seed), np.int32(S), np.int32(M), np.int32(K),
                 np.int32(n_aux), *table_args(tb), grid, np.int64(b.max_events), xs, a, aux, stack, rec, firings, ev,
                 er))
        yield rec, ev, er


def warp_padded(n: int) -> int:
    """n entries of a warp-kernel level padded to whole blocks of 32 (kernels/ssa_warp.cu reads pairs)."""
    return -(-n // 32) * 32


def warp_levels(m: int) -> tuple[np.ndarray, np.ndarray]:
    """Sizes of the warp kernel's sum levels (the m propensities, then sums of 32 entries of the level
    below, until a level has at most 32 entries: the top) and the offsets of levels 1..L-1, each padded
    to whole blocks, in one realization's array of upper levels (level 0 and the top have their own
    places); the last offset is that array's length (LV)."""
    sizes = [m]
    while sizes[-1] > 32:
        sizes.append(-(-sizes[-1] // 32))
    offs = [0] * len(sizes)
    for level in range(2, len(sizes)):
        offs[level] = offs[level - 1] + warp_padded(sizes[level - 1])
    return np.asarray(sizes, np.int32), np.asarray(offs, np.int32)


ITEM_CHANGE, ITEM_MASS, ITEM_GENERAL, ITEM_NONE = 0, 1, 2, 3  # kernels/ssa_warp.cu DS_ITEM_*
RCT_SHIFT = 26  # kernels/ssa_warp.cu DS_RCT_SHIFT: a reactant is species | stoichiometry << RCT_SHIFT


def warp_items(c: CompiledNetwork) -> tuple[np.ndarray, np.ndarray]:
    """The warp kernel's firing table: for reaction j, rows item_start[j]..item_start[j+1] of ``items``
    (int32 x 4) are its net changes (species, delta, 0, ITEM_CHANGE), then its dependents in order:
    (d, reactant 1, reactant 2, ITEM_MASS) for a mass-action propensity of at most two reactants
    (reactant = species | stoichiometry << RCT_SHIFT, -1 if none), else (d, 0, 0, ITEM_GENERAL)."""
    M = c.n_reactions
    n_chg, n_dep = np.diff(c.chg_start), np.diff(c.dep_start)
    item_start = np.concatenate([[0], np.cumsum(n_chg + n_dep)]).astype(np.int32)
    items = np.zeros((int(item_start[-1]), 4), np.int32)
    first = np.repeat(item_start[:-1], n_chg)  # changes: rows item_start[j] + (q - chg_start[j])
    rows = first + np.arange(len(first)) - np.repeat(c.chg_start[:-1], n_chg)
    items[rows, 0] = c.chg_species[:len(rows)]
    items[rows, 1] = c.chg_delta[:len(rows)]
    items[rows, 3] = ITEM_CHANGE
    # each reaction's propensity as one item: its (up to two) reactants packed, or general
    n_rct = np.diff(c.rct_start)
    owner = np.repeat(np.arange(M), n_rct)
    too_big = (c.rct_stoich >= 1 << (31 - RCT_SHIFT)) | (c.rct_species >= 1 << RCT_SHIFT)
    simple = (c.kind == KIND_MASS_ACTION) & (n_rct <= 2) & (np.bincount(owner, too_big, minlength=M) == 0)
    packed = np.r_[c.rct_species.astype(np.int64) | (c.rct_stoich.astype(np.int64) << RCT_SHIFT), -1, -1]
    r1 = np.where(n_rct >= 1, packed[np.minimum(c.rct_start[:-1], len(packed) - 1)], -1)
    r2 = np.where(n_rct >= 2, packed[np.minimum(c.rct_start[:-1] + 1, len(packed) - 1)], -1)
    deps = c.dep_list[:int(c.dep_start[-1])]
    first = np.repeat(item_start[:-1] + n_chg, n_dep)
    rows = first + np.arange(len(deps)) - np.repeat(c.dep_start[:-1], n_dep)
    items[rows, 0] = deps
    items[rows, 1] = np.where(simple[deps], r1[deps], 0)
    items[rows, 2] = np.where(simple[deps], r2[deps], 0)
    items[rows, 3] = np.where(simple[deps], ITEM_MASS, ITEM_GENERAL)
    return item_start, items


WARP_LANES = (4, 8, 16, 32)  # DS_LANES of kernels/ssa_warp.cu
WARP_MIN_BLOCKS = 8  # DS_MIN_BLOCKS: thread blocks of WARPS_PER_BLOCK warps resident per SM (<= 64 registers)
WARP_REFERENCE_SMS = 132  # the device warp_lanes sizes groups for (H100 / H200), whatever device is present


def warp_resident(lanes: int, sms: int = WARP_REFERENCE_SMS) -> int:
    """Realizations of ``lanes`` lanes resident at once on a device of ``sms`` SMs."""
    return sms * WARP_MIN_BLOCKS * warp_groups(lanes)


def warp_lanes(item_start: np.ndarray, ensemble: int) -> int:
    """Lanes per realization for firing tables starting at ``item_start`` and ``ensemble`` realizations
    in the whole run: the fewest whose resident realizations (:func:`warp_resident`) the
    ensemble fills to within 25%, else 32; at least 8 where a table is longer than 4 items. Fewer lanes
    spend fewer instructions per event but need more realizations to fill the GPU; a table longer than
    the group is fired G items at a time, which 8 lanes do faster than 16 or 32 and 4 lanes slower
    (H200, firings/s at 65,536 realizations, 4 / 8 / 32 lanes: chain N = 1e3 4.37e9 / 3.27e9 / -,
    random N = 1e3 4.34e8 / 4.71e8 / 4.04e8, aggregation 40 4.22e8 / 5.44e8 / 5.04e8;
    benchmarks/ssa_warp_variants.py). A fixed reference device, not the one present, so that a run's
    realizations do not depend on where it ran."""
    longest = int(np.diff(item_start).max(initial=0))
    least = 4 if longest <= 4 else 8
    fit = [g for g in WARP_LANES if g >= least and warp_resident(g) <= 1.25 * ensemble]
    return fit[0] if fit else 32


def warp_stride(item_start: np.ndarray, general: int) -> int:
    """Items per reaction of the padded firing table (DS_STRIDE): the longest table rounded up to a power
    of two, when no table needs the general path (else 0: tables addressed through item_start)."""
    longest = int(np.diff(item_start).max(initial=1))
    return 0 if general else 1 << max(longest - 1, 0).bit_length()


WARP_SHARED_BYTES = 22 * 1024  # warp kernel: dynamic shared memory per block (+ 5 KiB static: 8 blocks per SM)


def warp_top_shared(lanes: int) -> int:
    """Whether the top level lives in shared memory (DS_TOP_SHARED): for 8 or 4 lanes, whose rows of 4 or
    8 entries per lane would otherwise spill registers (H200, chain N = 1e4 at 65,536 realizations and 4
    lanes: 2.10e9 -> 2.38e9 firings/s)."""
    return int(lanes <= 8)


def warp_groups(lanes: int, warps: int = WARPS_PER_BLOCK) -> int:
    """Realizations per thread block of ``warps`` warps."""
    return 32 * warps // lanes


def warp_shared_bytes(S: int, LV: int, xs_sh: int, up_sh: int, groups: int) -> int:
    """Dynamic shared memory of a block of ``groups`` realizations: the upper levels and counts placed there."""
    return (LV * up_sh + _x_doubles(S) * xs_sh) * 8 * groups


def _x_doubles(S: int) -> int:
    """Doubles of shared memory that hold a realization's S int32 counts (padded to 16 bytes)."""
    return (S + 3) // 4 * 2


def warp_placement(S: int, LV: int, lanes: int = 32, warps: int = WARPS_PER_BLOCK,
                   top: int | None = None) -> tuple[int, int]:
    """(counts in shared memory, upper levels in shared memory) for the warp kernel: what fits in
    ``WARP_SHARED_BYTES`` per block of ``warps`` warps (:func:`warp_groups` realizations) beside the top
    levels kept there (``top``, default :func:`warp_top_shared`), the levels (LV doubles) first."""
    groups = warp_groups(lanes, warps)
    top = warp_top_shared(lanes) if top is None else top
    budget = WARP_SHARED_BYTES - top * 32 * 8 * groups
    up = LV * 8 * groups <= budget
    xs = up and (LV + _x_doubles(S)) * 8 * groups <= budget
    return int(xs), int(up)


def warp_strided(item_start: np.ndarray, items: np.ndarray, stride: int) -> np.ndarray:
    """The firing table padded to ``stride`` items per reaction (rows j*stride.., ITEM_NONE beyond the end)."""
    n = np.diff(item_start)
    out = np.zeros((len(n) * stride, 4), np.int32)
    out[:, 3] = ITEM_NONE
    rows = np.repeat(np.arange(len(n)) * stride - item_start[:-1], n) + np.arange(int(item_start[-1]))
    out[rows] = items
    return out


def warp_general(item_start: np.ndarray, items: np.ndarray, lanes: int = 32) -> int:
    """Whether the warp kernel needs its path for long firing tables (more than ``lanes`` items) and
    general dependents (kinetic laws, more than two reactants): 0 compiles it out."""
    return int(bool(np.diff(item_start).max(initial=0) > lanes or np.any(items[:, 3] == ITEM_GENERAL)))


def warp_check(c: CompiledNetwork) -> int:
    """Whether any propensity needs the bad-propensity check (``_needs_check``, vectorised)."""
    order = np.bincount(np.repeat(np.arange(c.n_reactions), np.diff(c.rct_start)), c.rct_stoich,
                        minlength=c.n_reactions)
    with np.errstate(over="ignore", invalid="ignore"):
        safe = ((c.kind == KIND_MASS_ACTION) & np.isfinite(c.theta) & (c.theta >= 0)
                & np.isfinite(c.theta * np.exp2(31.0 * order)))
    return int(not safe.all())


def warp_source(x_shared: int = 0, up_shared: int = 0, general: int = 1, check: int = 1,
                batched: bool = False, levels: int | None = None, lanes: int = 32, stride: int = 0,
                top_shared: int = 0) -> str:
    """kernels/ssa_warp.cu with its placement compiled in, and whether it needs its general path and
    the checks of mass-action propensities (``_needs_check``); ``batched``: many points per launch
    (``DS_BATCHED``, see kernels/ssa_common.cuh); ``levels``: the number of levels above the
    propensities, fixed so that the level loops unroll (2 to 5% faster; None: a kernel argument);
    ``lanes``: lanes per realization (DS_LANES); ``stride``: firing tables padded to this many items
    (DS_STRIDE, :func:`warp_strided`; 0: addressed through item_start); ``top_shared``: the top level in
    shared memory (DS_TOP_SHARED)."""
    return (("#define DS_BATCHED\n" if batched else "") + dsmath.neglog_table_cuda()
            + f"#define DS_LANES {lanes}\n#define DS_STRIDE {stride}\n#define DS_TOP_SHARED {top_shared}\n"
            + ("" if levels is None else f"#define DS_LEVELS {levels}\n")
            + f"#define DS_X_SHARED {x_shared}\n#define DS_UP_SHARED {up_shared}\n"
            f"#define DS_GENERAL {general}\n#define DS_CHECK_PROPENSITY {check}\n"
            f"#define DS_WARPS_PER_BLOCK {WARPS_PER_BLOCK}\n#define DS_MIN_BLOCKS {WARP_MIN_BLOCKS}\n"
            f"#define DS_MAX_STACK {WARP_MAX_STACK}\n"
            + cuda.kernel_source("ssa_warp.cu"))


@dataclass(frozen=True)
class WarpSetup:
    """What one network needs from the warp kernel: its levels, placement, firing table (on the
    device), compiled function and dynamic shared memory; shared by the per-point and batched paths."""

    lanes: int
    L: int
    LV: int
    d_sizes: Any
    d_offs: Any
    xs_sh: int
    up_sh: int
    item_start: Any
    items: Any
    fn: Any
    shared: int

    @property
    def groups(self) -> int:
        """Realizations per thread block."""
        return warp_groups(self.lanes)

    def launch(self, n: int, args: tuple) -> None:
        """Run the kernel for n realizations."""
        self.fn((-(-n // self.groups),), (32 * WARPS_PER_BLOCK,), args, shared_mem=self.shared)

    def per_realization_bytes(self, c: CompiledNetwork, K: int) -> int:
        """Device bytes of one realization's work arrays and grid records."""
        S, M = c.n_species, c.n_reactions
        return K * S * 4 + warp_padded(M) * 8 + (0 if self.xs_sh else S * 4) + (0 if self.up_sh else self.LV * 8)

    def work_arrays(self, c: CompiledNetwork, n: int) -> tuple[Any, Any, Any]:
        """(counts, level 0, upper levels) for n realizations (1-entry stand-ins where shared memory holds them)."""
        import cupy as cp

        S, M = c.n_species, c.n_reactions
        return (cp.empty(1 if self.xs_sh else S * n, dtype=cp.int32), cp.empty(warp_padded(M) * n, dtype=cp.float64),
                cp.empty(1 if self.up_sh else max(self.LV, 1) * n, dtype=cp.float64))


def warp_setup(c: CompiledNetwork, ensemble: int, checked: CompiledNetwork | None = None,
               batched: bool = False) -> WarpSetup:
    """The warp kernel for network ``c`` in a run of ``ensemble`` realizations (``checked``: the network
    whose rates decide the propensity checks, e.g. the largest rates over the points of a batch)."""
    import cupy as cp

    S, M = c.n_species, c.n_reactions
    h_start, h_items = warp_items(c)
    lanes = warp_lanes(h_start, ensemble)
    sizes, offs = warp_levels(M)
    L, LV = len(sizes) - 1, int(offs[-1])
    xs_sh, up_sh = warp_placement(S, LV, lanes)
    general, check = warp_general(h_start, h_items, lanes), warp_check(checked if checked is not None else c)
    stride = warp_stride(h_start, general)
    top = warp_top_shared(lanes)
    fn = _module(("warp", xs_sh, up_sh, general, check, WARPS_PER_BLOCK, batched, L, lanes, stride, top),
                 lambda: warp_source(xs_sh, up_sh, general, check, batched, L, lanes, stride, top)
                 ).get_function("ssa_warp")
    shared = warp_shared_bytes(S, LV, xs_sh, up_sh, warp_groups(lanes))
    items = warp_strided(h_start, h_items, stride) if stride else h_items
    return WarpSetup(lanes, L, LV, cp.asarray(sizes), cp.asarray(offs), xs_sh, up_sh, cp.asarray(h_start),
                     cp.asarray(items), fn, shared)


def warp_chunk(R: int, fits: int, resident: int) -> int:
    """Realizations per launch of the warp kernel: at most ``fits`` (device memory), in whole waves of the
    ``resident`` realizations the device runs at once where more than one wave fits, then balanced. The
    realizations of a run take about equal times, so a launch of 1.3 waves takes as long as 2 (H200, random
    N = 1e4, 65,536 realizations of 8 lanes in launches of 21,846: 2.34e8 firings/s; in 16,384: see
    benchmarks/RESULTS.md). Results do not depend on it: a realization is keyed by its index."""
    if fits >= resident:
        fits -= fits % resident
    n_chunks = -(-R // max(fits, 1))
    return -(-R // n_chunks)


def _warp_chunks(b: Any, firings: Any) -> Iterator[tuple[Any, Any, Any]]:
    """One warp per realization (kernels/ssa_warp.cu): yields (grid states (K, S, n), events, errors)."""
    import cupy as cp

    c: CompiledNetwork = b.compiled
    S, M, K, R = c.n_species, c.n_reactions, len(b.grid), b.realizations
    w = warp_setup(c, b.ensemble or b.realizations)
    budget = min(WARP_LAUNCH_BYTES, cp.cuda.Device().mem_info[0] // 4)  # the reductions need room too
    fits = max(w.groups, budget // max(w.per_realization_bytes(c, K), 1))
    chunk = warp_chunk(R, fits, warp_resident(w.lanes, int(cp.cuda.Device().attributes["MultiProcessorCount"])))
    grid = cp.asarray(np.asarray(b.grid, np.float64))
    tb = _tables(c)
    for start in range(0, R, chunk):
        n = min(chunk, R - start)
        rec = cp.empty((K, n, S), dtype=cp.int32)
        ev = cp.zeros(n, dtype=cp.uint64)
        er = cp.zeros(n, dtype=cp.int32)
        xs, a, up = w.work_arrays(c, n)
        w.launch(n, (np.int32(n), np.uint64(b.real0 + start), np.uint32(b.seed), np.int32(S), np.int32(M),
                     np.int32(K), np.int32(w.L), w.d_offs, w.d_sizes, np.int32(w.LV), *table_args(tb, WARP_TABLES),
                     w.item_start, w.items, grid, np.int64(b.max_events), xs, a, up, rec, firings, ev, er))
        yield rec.transpose(0, 2, 1), ev, er


def _reduce_chunks(b: Any, chunks: Iterator[tuple[Any, Any, Any]], firings: Any) -> dict:
    """Exact reductions on the device of every chunk's grid states (K, S, n): sums, histograms, finals."""
    import cupy as cp

    c: CompiledNetwork = b.compiled
    S, K = c.n_species, len(b.grid)
    sum_x = np.zeros((K, S), dtype=object)
    sum_x2 = np.zeros((K, S), dtype=object)
    hist = cp.zeros((K, S, b.bins), dtype=cp.int64) if b.bins else None
    events, errors, finals, trajs = [], [], [], []
    for rec, ev, er in chunks:
        s1, s2 = row_moments(rec)
        sum_x += cp.asnumpy(s1).astype(object)
        sum_x2 += cp.asnumpy(s2).astype(object)
        if hist is not None:
            rec64 = rec.astype(cp.int64)
            lo = cp.asarray(b.hist_lo)[None, :, None]
            wd = cp.asarray(b.hist_width)[None, :, None]
            binidx = cp.clip((rec64 - lo) // wd, 0, b.bins - 1)
            flat = (cp.arange(K * S, dtype=cp.int64).reshape(K, S, 1) * b.bins + binidx).ravel()
            hist += cp.bincount(flat, minlength=K * S * b.bins).reshape(K, S, b.bins)
        if b.keep_final:
            finals.append(cp.asnumpy(rec[K - 1].T.astype(cp.int64)))  # one host copy
        if b.keep_trajectories:
            trajs.append(cp.asnumpy(rec.transpose(2, 0, 1)).astype(np.int64))
        events.append(ev)
        errors.append(er)
    out = {"sum_x": sum_x, "sum_x2": sum_x2, "firings": cp.asnumpy(firings).astype(np.int64),
           **_events_out(b, cp.concatenate(events), cp.concatenate(errors))}
    if b.keep_final:
        out["final"] = join(finals)
    if b.keep_trajectories:
        out["trajectories"] = join(trajs)
    if hist is not None:
        out["histogram"] = cp.asnumpy(hist)
    return out


MOMENT_THREADS, MOMENT_SEGMENT = 256, 256 * 16  # kernels/ssa_moments.cu: DS_MOM_THREADS, x DS_MOM_ITEMS values


def row_moments(x: Any) -> tuple[Any, Any]:
    """Sums and sums of squares (int64, exact) of an int32 device array over its last axis, in one pass
    (``kernels/ssa_moments.cu``: compiled once, where a CuPy reduction is compiled for each size class)."""
    import cupy as cp

    x = cp.ascontiguousarray(x, dtype=cp.int32)
    n = x.shape[-1]
    s1, s2 = cp.zeros(x.shape[:-1], dtype=cp.uint64), cp.zeros(x.shape[:-1], dtype=cp.uint64)
    if s1.size and n:
        segs = -(-n // MOMENT_SEGMENT)
        fn = _module(("row_moments",), lambda: cuda.kernel_source("ssa_moments.cu")).get_function("ds_row_moments")
        fn((s1.size * segs,), (MOMENT_THREADS,), (x, np.int64(n), np.int64(segs), s1, s2))
    return s1.view(cp.int64), s2.view(cp.int64)


FUSED_SHARED_BYTES = 48 * 1024


def _simulate_fused(b: Any) -> dict:
    """Generated kernel with the grid reductions fused in (no grid-state array): sums and final states."""
    import cupy as cp

    c: CompiledNetwork = b.compiled
    S, M, K, R = c.n_species, c.n_reactions, len(b.grid), b.realizations
    fn = _module(("fused", c.digest), lambda: generate_direct(c, fused=True)).get_function("ssa_direct")
    grid = cp.asarray(np.asarray(b.grid, np.float64))
    firings = cp.zeros(M, dtype=cp.uint64)
    sums = cp.zeros(K * S, dtype=cp.uint64)
    sumsq = cp.zeros(K * S, dtype=cp.uint64)
    final = cp.empty((S, R), dtype=cp.int32)
    ev = cp.zeros(R, dtype=cp.uint64)
    er = cp.zeros(R, dtype=cp.int32)
    fn(((R + BLOCK - 1) // BLOCK,), (BLOCK,),
       (np.int32(R), np.uint64(b.real0), np.uint32(b.seed), np.int32(K), grid, np.int64(b.max_events), final, firings,
        ev, er, sums, sumsq), shared_mem=20 * K * S)
    to_int = np.vectorize(int, otypes=[object])
    out = {"sum_x": to_int(cp.asnumpy(sums).reshape(K, S)), "sum_x2": to_int(cp.asnumpy(sumsq).reshape(K, S)),
           "firings": cp.asnumpy(firings).astype(np.int64), **_events_out(b, ev, er)}
    if b.keep_final:
        out["final"] = cp.asnumpy(final.T.astype(cp.int64, order="C"))
    return out


# Per-realization words are reduced on the host up to this many realizations: CuPy compiles a reduction
# kernel per size class on first use (two took 5.9 s through NVRTC on a fresh H200 machine, 2026-11-26),
# far more than copying a million words.
HOST_REDUCE_MAX = 1 << 20


def reduction_words(ev: Any, er: Any) -> tuple[Any, Any, Any]:
    """(events, error words, array module) to reduce them with: NumPy copies up to ``HOST_REDUCE_MAX``
    words, else the device arrays and CuPy. Raises if a count passed the kernels' int32 limit."""
    import cupy as cp

    xp = np if er.size <= HOST_REDUCE_MAX else cp
    if xp is np:
        ev, er = cp.asnumpy(ev), cp.asnumpy(er)
    if bool(((er & errors.ERR_MASK) == errors.ERR_OVERFLOW).any()):
        raise RuntimeError("a species count exceeded 2**31 - 1, the GPU kernels' limit; use backend='cpu'")
    return ev, er, xp


def _events_out(b: Any, ev: Any, er: Any) -> dict:
    """Per-realization events/error words copied to the host, or only their summary."""
    import cupy as cp

    ev, er, xp = reduction_words(ev, er)
    if b.keep_events:
        return {"events": cp.asnumpy(ev), "errors": cp.asnumpy(er)}
    return event_summary(ev, er, b.real0, xp)
