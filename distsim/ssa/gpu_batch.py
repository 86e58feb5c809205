"""The GPU path of :mod:`distsim.ssa.batch`: the realizations of many parameter points per launch.

The kernels are those of :mod:`distsim.ssa.gpu` compiled with ``DS_BATCHED`` (kernels/ssa_common.cuh):
thread (or warp) r finds its point and realization from its index, takes the point's seed and reads
the point's rows of the value tables (initial counts, rate constants, law constants), so the code
is shared by every point and each realization is the one a launch of its point alone gives. A
launch carries as many whole points as half the free device memory holds; grid states are reduced
per point on the device (exact sums, the histogram pilot, histograms, quantiles). Without
histograms, the generated register kernel of small 'direct' models reduces in the kernel (a thread
block then holds one point: threads past the point's realizations idle).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable

import numpy as np

from ..models.compile_reactions import CompiledNetwork, structure_digest
from . import gpu
from .batch_block import PointsBlock, concat_parts, event_reductions, pilot_bins, quantile_values

LAUNCH_BYTES_MAX = 16 << 30  # device memory one launch's grid states and work arrays may take
LAUNCH_MEMORY_SHARE = 0.5  # ... and at most this share of the free device memory
MAX_THREADS = 1 << 30  # realizations (threads, or warps) per launch
FUSED_BLOCKS = (128, 96, 64, 32)  # block sizes for the fused kernel (one point per block; at most 128)


@dataclass
class _Device:
    """A block's tables on the device."""

    grid: Any
    seeds: Any  # uint32 [P]
    x0: Any  # int64 [P, S]
    theta: Any  # float64 [P, M]
    law: Any  # float64 [P, L]
    firings: Any  # uint64 [P, M], accumulated over launches
    structure: dict  # the compiled network's other arrays
    n_law: int
    checked: CompiledNetwork  # the network with every rate at its largest value over the points


def _device(b: PointsBlock) -> _Device:
    import cupy as cp

    t, c = b.tables, b.compiled
    checked = replace(c, theta=t.theta.max(axis=0))  # a propensity is checked if any point's rate needs it
    return _Device(cp.asarray(np.asarray(b.grid, np.float64)), cp.asarray(b.seeds.astype(np.uint32)),
                   cp.asarray(t.x0), cp.asarray(t.theta), cp.asarray(t.law_arg),
                   cp.zeros((b.n_points, c.n_reactions), dtype=cp.uint64), gpu._tables(c), t.law_arg.shape[1], checked)


def simulate_points(b: PointsBlock, method: Any) -> dict:
    """Every point of ``b`` on this GPU: per-point reductions as :func:`distsim.ssa.batch._cpu_points`."""
    import cupy as cp

    if np.any(b.tables.x0 > np.iinfo(np.int32).max):
        raise RuntimeError("an initial count exceeds 2**31 - 1, the GPU kernels' limit; use backend='cpu'")
    d = _device(b)
    if _fusable(b, method):
        out = _fused(b, d)
    else:
        launcher = _LAUNCHERS.get(method.gpu)
        if launcher is None:
            raise ValueError(f"method {method.name!r} has no batched GPU path")
        launch, per_real = launcher(b, d, method)
        pilot = _pilot_pass(b, d, method) if b.quantiles is not None and not method.bit_identical else None
        G = _points_per_launch(b, per_real + _hist_bytes(b))
        parts = []
        for p0 in range(0, b.n_points, G):
            p1 = min(b.n_points, p0 + G)
            rec4, ev, er = launch(p0, p1, b.realizations, d.firings)
            parts.append(_reduce(b, rec4, ev, er, None if pilot is None else pilot.rows(p0, p1)))
        out = concat_parts(parts)
        if pilot is not None:
            out["first"].update(pilot.first)
    out["firings"] = cp.asnumpy(d.firings).astype(np.int64)
    return out


# ---- launches -------------------------------------------------------------------------------------

Launch = Callable[[int, int, int, Any], tuple[Any, Any, Any]]  # (p0, p1, realizations, firings) -> (rec4, ev, er)


def _direct_launcher(b: PointsBlock, d: _Device, method: Any) -> tuple[Launch, int]:
    """The generated register kernel (small 'direct' models), else the generic kernel."""
    import cupy as cp

    c = b.compiled
    if c.n_reactions > gpu.CODEGEN_MAX_REACTIONS:
        return _generic_launcher(b, d, method)
    S, K = c.n_species, len(b.grid)
    fn = _direct_module(d, fused=False)

    def launch(p0: int, p1: int, rp: int, fir: Any) -> tuple[Any, Any, Any]:
        G = p1 - p0
        n = G * rp
        rec, ev, er = cp.empty((K, S, n), dtype=cp.int32), cp.zeros(n, dtype=cp.uint64), cp.zeros(n, dtype=cp.int32)
        fn(((n + gpu.BLOCK - 1) // gpu.BLOCK,), (gpu.BLOCK,),
           (np.int32(n), np.uint64(0), np.uint32(0), np.int32(K), d.grid, np.int64(b.max_events), rec, fir[p0:p1], ev,
            er, fir, fir, np.int32(rp), np.int32(rp), d.seeds[p0:p1], np.int32(d.n_law), d.x0[p0:p1],
            d.theta[p0:p1], d.law[p0:p1]))
        return rec.reshape(K, S, G, rp), ev, er

    return launch, K * S * 4 + 12


def _generic_launcher(b: PointsBlock, d: _Device, method: Any) -> tuple[Launch, int]:
    """kernels/ssa_generic.cu with the method's selection code (one realization per thread)."""
    import cupy as cp

    c = b.compiled
    S, M, K = c.n_species, c.n_reactions, len(b.grid)
    n_aux = method.cpu.aux_size(M)
    fn = gpu._module(("generic-batch", method.cuda_header, method.needs_depgraph),
                     lambda: "#define DS_BATCHED\n" + gpu.generic_source(method)).get_function("ssa_generic")
    tb = d.structure

    def launch(p0: int, p1: int, rp: int, fir: Any) -> tuple[Any, Any, Any]:
        G = p1 - p0
        n = G * rp
        rec, ev, er = cp.empty((K, S, n), dtype=cp.int32), cp.zeros(n, dtype=cp.uint64), cp.zeros(n, dtype=cp.int32)
        xs, a = cp.empty(S * n, dtype=cp.int64), cp.empty(M * n, dtype=cp.float64)
        aux = cp.empty(max(n_aux, 1) * n, dtype=cp.float64)
        stack = cp.empty(max(1, c.max_stack) * n, dtype=cp.float64)
        fn(((n + gpu.BLOCK - 1) // gpu.BLOCK,), (gpu.BLOCK,),
           (np.int32(n), np.uint64(0), np.uint32(0), np.int32(S), np.int32(M), np.int32(K), np.int32(n_aux),
            *gpu.table_args(tb, x0=d.x0[p0:p1], theta=d.theta[p0:p1], law_arg=d.law[p0:p1]), d.grid,
            np.int64(b.max_events), xs, a, aux, stack, rec, fir[p0:p1], ev, er, np.int32(rp), np.int32(rp),
            d.seeds[p0:p1], np.int32(d.n_law)))
        return rec.reshape(K, S, G, rp), ev, er

    return launch, K * S * 4 + 12 + 8 * (S + M + max(n_aux, 1) + max(1, c.max_stack))


def _warp_launcher(b: PointsBlock, d: _Device, method: Any) -> tuple[Launch, int]:
    """kernels/ssa_warp.cu: one warp (or group of lanes) per realization."""
    import cupy as cp

    c = b.compiled
    S, M, K = c.n_species, c.n_reactions, len(b.grid)
    if c.max_stack > gpu.WARP_MAX_STACK:
        raise ValueError(f"method 'warp' evaluates kinetic laws with a stack of at most {gpu.WARP_MAX_STACK}; "
                         f"this model needs {c.max_stack}: use method='tree'")
    w = gpu.warp_setup(c, b.realizations, d.checked, batched=True)  # as each point's own run
    tb = d.structure

    def launch(p0: int, p1: int, rp: int, fir: Any) -> tuple[Any, Any, Any]:
        G = p1 - p0
        n = G * rp
        rec, ev, er = cp.empty((K, n, S), dtype=cp.int32), cp.zeros(n, dtype=cp.uint64), cp.zeros(n, dtype=cp.int32)
        xs, a, up = w.work_arrays(c, n)
        w.launch(n, (np.int32(n), np.uint64(0), np.uint32(0), np.int32(S), np.int32(M), np.int32(K), np.int32(w.L),
                     w.d_offs, w.d_sizes, np.int32(w.LV),
                     *gpu.table_args(tb, gpu.WARP_TABLES, x0=d.x0[p0:p1], theta=d.theta[p0:p1],
                                     law_arg=d.law[p0:p1]),
                     w.item_start, w.items, d.grid, np.int64(b.max_events), xs, a, up, rec, fir[p0:p1], ev, er,
                     np.int32(rp), np.int32(rp), d.seeds[p0:p1], np.int32(d.n_law)))
        return rec.reshape(K, G, rp, S).transpose(0, 3, 1, 2), ev, er

    return launch, 12 + w.per_realization_bytes(c, K)


_LAUNCHERS: dict[Any, Callable[[PointsBlock, _Device, Any], tuple[Launch, int]]] = {
    gpu.simulate_direct: _direct_launcher, gpu.simulate_generic: _generic_launcher, gpu.simulate_warp: _warp_launcher,
}


def _direct_module(d: _Device, fused: bool) -> Any:
    c = d.checked
    checks = bytes(gpu._needs_check(c, j) for j in range(c.n_reactions))
    key = ("direct-batch", structure_digest(c), checks, fused)
    return gpu._module(key, lambda: gpu.generate_direct(c, fused=fused, batched=True)).get_function("ssa_direct")


def _points_per_launch(b: PointsBlock, per_real: int) -> int:
    """Whole points per launch: as many as LAUNCH_MEMORY_SHARE of the free device memory holds."""
    import cupy as cp

    free = cp.cuda.Device().mem_info[0]
    budget = min(LAUNCH_BYTES_MAX, int(free * LAUNCH_MEMORY_SHARE))
    per_point = max(1, per_real * b.realizations)
    return int(max(1, min(b.n_points, budget // per_point, MAX_THREADS // b.realizations)))


def _hist_bytes(b: PointsBlock) -> int:
    """Device bytes per realization taken by a point's histograms and their cumulative sums."""
    if b.quantiles is None:
        return 0
    return -(-len(b.grid) * b.compiled.n_species * b.max_bins * 12 // b.realizations)


# ---- reductions -----------------------------------------------------------------------------------

_KERNELS: dict[str, Any] = {}


def _histogram(rec4: Any, lo: Any, width: Any, bins: Any) -> Any:
    """Counts per (point, time, species, bin) of the grid states rec4 (K, S, G, R), on the device."""
    import cupy as cp

    k = _KERNELS.get("hist")
    if k is None:
        k = _KERNELS["hist"] = cp.ElementwiseKernel(
            "int32 v, raw int64 lo, raw int64 width, raw int64 bins, int32 K, int32 S, int32 G, int32 rp, int32 B",
            "raw int32 hist",
            """
            const long long cell = i / rp;  // i = ((k * S + s) * G + g) * rp + r
            const int g = (int)(cell % G), s = (int)((cell / G) % S), k = (int)(cell / ((long long)G * S));
            long long b = ((long long)v - lo[g * S + s]) / width[g * S + s];  // clipped: C's and Python's
            if (b < 0) b = 0;                                                 // division agree from 0 up
            if (b >= bins[g]) b = bins[g] - 1;
            atomicAdd(&hist[(((long long)g * K + k) * S + s) * B + b], 1);
            """, "ds_batch_hist")
    K, S, G, rp = rec4.shape
    B = int(bins.max())
    hist = cp.zeros((G, K, S, B), dtype=cp.int32)
    k(rec4, lo, width, bins, np.int32(K), np.int32(S), np.int32(G), np.int32(rp), np.int32(B), hist)
    return hist


@dataclass
class _Pilot:
    """Histogram bins and pilot errors of every point, from the CPU method's kernel ('warp')."""

    lo: Any
    width: Any
    bins: Any
    fatal: Any
    first: dict

    def rows(self, a: int, b: int) -> _Pilot:
        return _Pilot(self.lo[a:b], self.width[a:b], self.bins[a:b], self.fatal[a:b], {})


def _pilot_pass(b: PointsBlock, d: _Device, method: Any) -> _Pilot:
    """The first min(R, 256) realizations of every point with the kernel that reproduces the CPU
    method's (for 'warp': the sum tree), as the per-point path's pilot on the CPU."""
    import cupy as cp

    from .methods import METHODS

    twin = METHODS[method.cpu.name]
    launch, per_real = _LAUNCHERS[twin.gpu](b, d, twin)
    scratch = cp.zeros_like(d.firings)
    pilot = replace(b, realizations=b.pilot)
    G = _points_per_launch(pilot, per_real)
    los, widths, bins, fatal, first = [], [], [], [], {}
    for p0 in range(0, b.n_points, G):
        p1 = min(b.n_points, p0 + G)
        rec4, ev, er = launch(p0, p1, b.pilot, scratch)
        lo, wd, bn = pilot_bins(rec4, b.pilot, b.max_bins, cp)
        ev_w, er_w, xp = gpu.reduction_words(ev.reshape(p1 - p0, b.pilot), er.reshape(p1 - p0, b.pilot))
        red = event_reductions(ev_w, er_w, b.pilot, xp)
        los.append(lo)
        widths.append(wd)
        bins.append(bn)
        fatal.append(cp.asnumpy(red["pilot_fatal"]))
        first.update({(p0 + p, "pilot"): v for (p, kind), v in red["first"].items() if kind == "pilot"})
    return _Pilot(cp.concatenate(los), cp.concatenate(widths), cp.concatenate(bins), np.concatenate(fatal), first)


def _reduce(b: PointsBlock, rec4: Any, ev: Any, er: Any, pilot: _Pilot | None) -> dict:
    """Per-point reductions of one launch's grid states rec4 (K, S, G, R), events and error words."""
    import cupy as cp

    G, rp = rec4.shape[2], rec4.shape[3]
    ev_w, er_w, xp = gpu.reduction_words(ev.reshape(G, rp), er.reshape(G, rp))
    red = event_reductions(ev_w, er_w, b.pilot if pilot is None else 0, xp)
    s1, s2 = gpu.row_moments(rec4)
    red["sum_x"], red["sum_x2"] = s1.transpose(2, 0, 1), s2.transpose(2, 0, 1)
    if b.quantiles is not None:
        lo, width, bins = pilot_bins(rec4, b.pilot, b.max_bins, cp) if pilot is None else (pilot.lo, pilot.width,
                                                                                             pilot.bins)
        lo, width = cp.ascontiguousarray(lo), cp.ascontiguousarray(width)
        hist = _histogram(rec4, lo, width, cp.ascontiguousarray(bins))
        red.update(hist_lo=lo, hist_width=width,
                   quantile_value=quantile_values(hist, lo, width, b.realizations, b.quantiles, cp))
        if pilot is not None:
            red["pilot_fatal"] = pilot.fatal
    return {k: v if k == "first" else cp.asnumpy(v) for k, v in red.items()}


def _fusable(b: PointsBlock, method: Any) -> bool:
    c, K = b.compiled, len(b.grid)
    return (method.gpu is gpu.simulate_direct and c.n_reactions <= gpu.CODEGEN_MAX_REACTIONS and b.quantiles is None
            and 20 * K * c.n_species <= gpu.FUSED_SHARED_BYTES)


def _fused_block(rp: int) -> tuple[int, int]:
    """(threads per block, threads per point): the block size that pads a point's realizations least."""
    best = min(FUSED_BLOCKS, key=lambda bs: (-(-rp // bs) * bs, -bs))
    return best, -(-rp // best) * best


def _fused(b: PointsBlock, d: _Device) -> dict:
    """The generated kernel with in-kernel sums (no histograms): one point per thread block."""
    import cupy as cp

    c = b.compiled
    S, K, R = c.n_species, len(b.grid), b.realizations
    bs, rs = _fused_block(R)
    fn = _direct_module(d, fused=True)
    G = max(1, MAX_THREADS // rs)
    parts = []
    for p0 in range(0, b.n_points, G):
        p1 = min(b.n_points, p0 + G)
        n = (p1 - p0) * rs
        sums, sumsq = cp.zeros((p1 - p0, K * S), dtype=cp.uint64), cp.zeros((p1 - p0, K * S), dtype=cp.uint64)
        final, ev, er = cp.empty((S, n), dtype=cp.int32), cp.zeros(n, dtype=cp.uint64), cp.zeros(n, dtype=cp.int32)
        fn((n // bs,), (bs,),
           (np.int32(n), np.uint64(0), np.uint32(0), np.int32(K), d.grid, np.int64(b.max_events), final,
            d.firings[p0:p1], ev, er, sums, sumsq, np.int32(R), np.int32(rs), d.seeds[p0:p1], np.int32(d.n_law),
            d.x0[p0:p1], d.theta[p0:p1], d.law[p0:p1]), shared_mem=20 * K * S)
        ev_w, er_w, xp = gpu.reduction_words(ev.reshape(p1 - p0, rs)[:, :R], er.reshape(p1 - p0, rs)[:, :R])
        red = event_reductions(ev_w, er_w, 0, xp)
        red["sum_x"], red["sum_x2"] = sums.reshape(p1 - p0, K, S), sumsq.reshape(p1 - p0, K, S)
        parts.append({k: v if k == "first" else cp.asnumpy(v) for k, v in red.items()})
    return concat_parts(parts)
