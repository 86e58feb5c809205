"""GPU path of networks with SBML events or assignment rules: ``kernels/ssa_events.cu``, one
realization per thread, the loop of :func:`distsim.ssa.cpu.run_realization_events` with the
method's selection header compiled in, so every method gives the CPU's realizations bit for bit.

Every method takes this path when the network has events or rules: 'direct' (the generated
register kernel folds parameters into its code, so it does not serve them), 'tree' and 'ar' (their
headers), and 'warp', which runs the tree's selection here as it does on CPUs (one realization per
thread; the warp kernel's layout is for large event-free networks). The grid states are reduced on
the device by :func:`distsim.ssa.gpu._reduce_chunks`, as for the other kernels.
"""

from __future__ import annotations

from typing import Any, Iterator

import numpy as np

from ..backends import cuda, dsmath
from ..errors import ModelError
from ..models.compile_reactions import CompiledNetwork
from ..models.reactions import ReactionNetwork
from ..models.events import MAX_CASCADE
from . import gpu
from .event_ops import work_shape

TREE_HEADER = "ssa_method_tree.cuh"  # what 'warp' (no header of its own) runs with events
_EVENT_TABLES = ("p0", "prog_start", "prog_op", "prog_arg", "ev_trigger", "ev_priority", "ev_flags", "ev_delay",
                 "asg_start", "asg_target", "asg_prog", "rule_target", "rule_prog", "tc_op", "tc_prog",
                 "par_theta_start", "par_theta", "par_law_start", "par_law")
_HYBRID_TABLES = ("hz_of", "rr_param", "rr_prog")


def header(method: Any) -> str:
    return method.cuda_header or TREE_HEADER


def events_source(method: Any) -> str:
    """kernels/ssa_events.cu with ``method``'s selection code compiled in (compile-time defines)."""
    return (dsmath.neglog_table_cuda() + f'#define DS_METHOD_HEADER "{header(method)}"\n'
            f"#define DS_NEEDS_DEPGRAPH {int(method.needs_depgraph)}\n#define DS_MAX_CASCADE {MAX_CASCADE}\n"
            + cuda.kernel_source("ssa_events.cu"))


# The hybrid kernel (kernels/ssa_hybrid.cu) is the twin of cpu.run_realization_hybrid; until its bit-identity
# tests (tests/gpu/test_ssa_hybrid_gpu.py) have passed on a GPU, False keeps such networks on CPUs.
GPU_HYBRID = True


def check_gpu(net: ReactionNetwork, c: CompiledNetwork) -> None:
    """Refuse what the CUDA kernels do not run (:data:`GPU_HYBRID` False: hybrid networks, sin/cos)."""
    if c.events is not None and len(c.events.loc_ev):
        raise ModelError("the GPU backend cannot locate event triggers on rate-rule variables yet; the CPU backend "
                         "does (backend='cpu')", file=net.source or None)
    if c.events is not None and (c.n_species == 0 or c.n_reactions == 0):
        raise ModelError("the GPU backend does not run models without species or reactions (ODE models of rate "
                         "rules); the CPU backend does (backend='cpu')", file=net.source or None)
    if not GPU_HYBRID and c.events is not None and c.events.cpu_only:
        why = ("its propensities change between firings (kinetic laws reading time or sin/cos, or rate rules)"
               if c.events.hybrid else "an event or rule uses sin/cos")
        raise ModelError(f"the GPU backend cannot simulate this network yet: {why}; the CPU backend does "
                         "(backend='cpu')", file=net.source or None)


def hybrid_source() -> str:
    return (dsmath.neglog_table_cuda() + f"#define DS_MAX_CASCADE {MAX_CASCADE}\n"
            + cuda.kernel_source("ssa_hybrid.cu"))


def simulate(b: Any, method: Any) -> dict:
    """Simulate SSABlock ``b`` of a network with events or rules; the reductions of the other GPU paths
    (hybrid networks: kernels/ssa_hybrid.cu, whatever the method)."""
    import cupy as cp

    if not GPU_HYBRID and b.compiled.events.cpu_only:
        raise ModelError("the GPU backend cannot simulate networks with time-dependent propensities, rate rules or "
                         "sin/cos while GPU_HYBRID is off; use backend='cpu'")
    gpu._check_counts(b.compiled)
    firings = cp.zeros(b.compiled.n_reactions, dtype=cp.uint64)
    cont: list[np.ndarray] = []
    chunks = _hybrid_chunks(b, firings, cont) if b.compiled.events.hybrid else _chunks(b, method, firings)
    out = gpu._reduce_chunks(b, chunks, firings)
    if cont:  # the reported rate-rule variables on the grid, per realization (as cpu.simulate_block)
        out["continuous"] = np.concatenate(cont)[:, :, b.compiled.events.reported]
    return out


def _queue_shape(c: CompiledNetwork) -> tuple[int, int]:
    """(QN, QV): the scheduled executions of delayed events a realization holds (as on CPUs,
    :func:`distsim.ssa.event_ops.work_shape`) and the stored values of each."""
    return work_shape(c.events, c.n_reactions, len(c.law_arg))[-1], max(c.events.max_assignments, 1)


def _queue_work(c: CompiledNetwork, n: int) -> list:
    """The kernels' queue arguments for n realizations: QN, QV and the columns q_time, q_len, q_event, q_vals."""
    import cupy as cp

    QN, QV = _queue_shape(c)
    return [np.int32(QN), np.int32(QV), cp.empty(QN * n, dtype=cp.float64), cp.zeros(n, dtype=cp.int64),
            cp.empty(QN * n, dtype=cp.int64), cp.empty(QN * QV * n, dtype=cp.float64)]


def _hybrid_chunks(b: Any, firings: Any, cont: list) -> Iterator[tuple[Any, Any, Any]]:
    """Launches of kernels/ssa_hybrid.cu over chunks of realizations: yields (grid states, events, errors);
    appends to ``cont`` each chunk's rate-rule values on the grid [n, K, C] when the network reports some."""
    import cupy as cp

    c: CompiledNetwork = b.compiled
    ce = c.events
    S, M, K, R, L = c.n_species, c.n_reactions, len(b.grid), b.realizations, len(c.law_arg)
    E, P, C = ce.n_events, len(ce.p0), len(ce.rr_param)
    n = C + 1
    record = bool(ce.reported.any())
    QN, QV = _queue_shape(c)
    per_real = K * S * 4 + 8 * (S + M + c.max_stack + M + L + P + 2 * E + ce.max_assignments + ce.max_stack
                                + 12 * n + 2 + (K * C if record else 0) + QN * (2 + QV) + 1)
    chunk = max(gpu.BLOCK, min(R, gpu.REC_BYTES_PER_LAUNCH // per_real))
    grid = cp.asarray(np.asarray(b.grid, np.float64))
    tb = gpu._tables(c)
    et = [cp.asarray(getattr(ce, name)) if len(getattr(ce, name)) else cp.zeros(1, getattr(ce, name).dtype)
          for name in _EVENT_TABLES + _HYBRID_TABLES]
    fn = gpu._module(("hybrid",), hybrid_source).get_function("ssa_hybrid")
    for start in range(0, R, chunk):
        m = min(chunk, R - start)
        rec = cp.empty((K, S, m), dtype=cp.int32)
        ev = cp.zeros(m, dtype=cp.uint64)
        er = cp.zeros(m, dtype=cp.int32)
        work = [cp.empty(max(size, 1) * m, dtype=dt) for size, dt in (
            (S, cp.int64), (M, cp.float64), (c.max_stack, cp.float64), (M, cp.float64), (L, cp.float64),
            (P, cp.float64), (E, cp.int32), (E, cp.int64), (ce.max_assignments, cp.float64), (ce.max_stack, cp.float64),
            (n, cp.float64), (n, cp.float64), (n, cp.float64), (n, cp.float64), (7 * n, cp.float64), (1, cp.float64),
            (n, cp.float64), (1, cp.int32))]
        work[10:10] = _queue_work(c, m)  # after the event work, before the integrator's
        crec = cp.full((K * C, m) if record else (1,), np.nan, dtype=cp.float64)
        fn(((m + gpu.BLOCK - 1) // gpu.BLOCK,), (gpu.BLOCK,),
           (np.int32(m), np.uint64(b.real0 + start), np.uint32(b.seed), np.int32(S), np.int32(M), np.int32(K),
            np.int32(L), *gpu.table_args(tb), *et, np.int32(E), np.int32(len(ce.rule_prog)), np.int32(len(ce.tc_op)),
            np.int32(P), np.int32(C), grid, np.int64(b.max_events), *work, np.int32(record), crec, rec, firings, ev,
            er))
        if record:
            cont.append(cp.asnumpy(crec).reshape(K, C, m).transpose(2, 0, 1))
        yield rec, ev, er


def _chunks(b: Any, method: Any, firings: Any) -> Iterator[tuple[Any, Any, Any]]:
    """Launches over chunks of realizations: yields (grid states (K, S, n), events, error words)."""
    import cupy as cp

    c: CompiledNetwork = b.compiled
    ce = c.events
    S, M, K, R, L = c.n_species, c.n_reactions, len(b.grid), b.realizations, len(c.law_arg)
    E, P = ce.n_events, len(ce.p0)
    n_aux = method.cpu.aux_size(M)
    QN, QV = _queue_shape(c)
    per_real = K * S * 4 + 8 * (S + 2 * M + n_aux + c.max_stack + L + P + 2 * E + ce.max_assignments + ce.max_stack
                                + QN * (2 + QV) + 1)
    chunk = max(gpu.BLOCK, min(R, gpu.REC_BYTES_PER_LAUNCH // per_real))
    grid = cp.asarray(np.asarray(b.grid, np.float64))
    tb = gpu._tables(c)
    et = [cp.asarray(getattr(ce, name)) if len(getattr(ce, name)) else cp.zeros(1, getattr(ce, name).dtype)
          for name in _EVENT_TABLES]
    fn = gpu._module(("events", header(method), method.needs_depgraph), lambda: events_source(method)).get_function(
        "ssa_events")
    for start in range(0, R, chunk):
        n = min(chunk, R - start)
        rec = cp.empty((K, S, n), dtype=cp.int32)
        ev = cp.zeros(n, dtype=cp.uint64)
        er = cp.zeros(n, dtype=cp.int32)
        work = [cp.empty(max(size, 1) * n, dtype=dt) for size, dt in (
            (S, cp.int64), (M, cp.float64), (n_aux, cp.float64), (c.max_stack, cp.float64), (M, cp.float64),
            (L, cp.float64), (P, cp.float64), (E, cp.int32), (E, cp.int64), (ce.max_assignments, cp.float64),
            (ce.max_stack, cp.float64))] + _queue_work(c, n)
        fn(((n + gpu.BLOCK - 1) // gpu.BLOCK,), (gpu.BLOCK,),
           (np.int32(n), np.uint64(b.real0 + start), np.uint32(b.seed), np.int32(S), np.int32(M), np.int32(K),
            np.int32(n_aux), np.int32(L), *gpu.table_args(tb), *et, np.int32(E), np.int32(len(ce.rule_prog)),
            np.int32(len(ce.tc_op)), np.int32(P), grid, np.int64(b.max_events), *work, rec, firings, ev, er))
        yield rec, ev, er
