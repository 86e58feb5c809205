"""GPU kernel for PBN trajectories: CUDA generated from the compiled bit program (CuPy, NVRTC).

The generic parts (Philox, perturbation decisions, counters) live in ``kernels/pbn_sliced.cu``;
the network-specific parts (loading/storing node words, the Boolean functions as straight-line
word operations, function selection, target tests) are generated into its marked regions. Each
thread advances 32 trajectories. Nothing here runs at import time; CuPy is imported lazily.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ..backends import cuda
from .compile import OP_AND, OP_ANDN, OP_NOT, OP_OR, OP_XOR, CompiledPBN
from .launch import BLOCK, TILE_CHAINS, Runs, plan_launch, split_steps, tiles_for

TEMPLATE = "pbn_sliced.cu"
MAX_STEPS_PER_LAUNCH = 1 << 20
# Data placement, measured on an H200 (benchmarks/RESULTS.md, 2026-11-21): keeping the ~72% most-read
# nodes in registers and the rest in global memory ran 1.21x faster for the 87- and 133-node networks
# (fewer registers, more warps); for 247/321 nodes the compiler's own spilling was faster.
SPLIT_NODES = (65, 200)
SPLIT_FRACTION = 0.72

Targets = Sequence[Sequence[tuple[int, int]]]  # per target: (node, value) literals


def hot_nodes(c: CompiledPBN, budget: int | None) -> set[int]:
    """Reorder-and-split (seed 000, section 3.4, adapted): the ``budget`` nodes the bit program reads
    most stay in registers; the others live in global memory. None keeps every node in registers."""
    if budget is None or budget >= c.n:
        return set(range(c.n))
    reads = np.zeros(c.n, dtype=np.int64)
    code = c.program.code
    for col in (2, 3):
        ops = code[:, col]
        np.add.at(reads, ops[ops < c.n], 1)
    outs = c.program.outputs
    np.add.at(reads, outs[outs < c.n], 1)
    order = sorted(range(c.n), key=lambda i: (-reads[i], i))
    return set(order[:budget])


def generate_source(c: CompiledPBN, mode: int, targets: Targets, hot: set[int] | None = None) -> str:
    """CUDA source for this network, mode (0 sync, 1 async), target sets and register placement."""
    return cuda.fill_template(cuda.kernel_source(TEMPLATE), kernel_regions(c, mode, targets, hot))


def kernel_regions(c: CompiledPBN, mode: int, targets: Targets, hot: set[int] | None = None) -> dict[str, str]:
    """The generated code of each ``//@@`` region of the template."""
    g = _Codegen(c, hot)
    if mode == 0 and not c.dependent:
        decl, lane, merge = _select_sync_independent(g)
    elif mode == 0:
        decl, lane, merge = _select_sync_dependent(g)
    else:
        decl, lane, merge = _select_async(g)
    n, hot_sorted = c.n, sorted(g.hot)
    return {
        "defs": g.defs(mode, targets), "load": "\n".join(f"uint32_t s{i} = Sb[{i} * DS_BLOCK];" for i in hot_sorted),
        "targets": g.targets(targets), "select_decl": "\n".join(decl), "select_lane": "\n".join(lane),
        "logic": "\n".join(g.logic(merge)), "merge": "", "fixset": "\n".join(g.fixset(mode)),
        "flip": "\n".join(f"case {i}: n{i} ^= lb; break;" if i in g.hot else
                          f"case {i}: out[{i} * DS_BLOCK] ^= lb; break;" for i in range(n)),
        "store_step": " ".join(f"s{i} = n{i};" for i in hot_sorted),
        "node_counts": "\n".join(
            f"{{ uint32_t c = __reduce_add_sync(0xFFFFFFFFu, __popc({g.node(i, 'out')} & valid)); "
            f"if ((threadIdx.x & 31) == 0) atomicAdd(&ds_node_acc[{i}], (unsigned long long)c); }}" for i in range(n)),
        "store": " ".join(f"Sb[{i} * DS_BLOCK] = s{i};" for i in hot_sorted),
        "finish": "\n".join(f"Sb[{i} * DS_BLOCK] = Tb[{i} * DS_BLOCK];" for i in range(n) if i not in g.hot),
    }


class _Codegen:
    """Names and shared pieces of the generated code for one compiled network and placement."""

    def __init__(self, c: CompiledPBN, hot: set[int] | None):
        self.c = c
        self.n = n = c.n
        self.hot = set(range(n)) if hot is None else set(hot)
        self.out = [self.reg(int(r)) for r in c.program.outputs]  # each function's value
        self.fs = c.func_start
        self.nf = [int(self.fs[i + 1] - self.fs[i]) for i in range(n)]
        # async draw: over the full network's nodes; a removed node's turn is the code n ("none")
        self.reduced = not np.array_equal(c.draw_node, np.arange(n))
        self.nbits = max(1, int(np.ceil(np.log2(max(n + self.reduced, 2)))))

    def node(self, i: int, buf: str = "in") -> str:
        return f"s{i}" if i in self.hot else f"DS_COLD({buf}, {4 * i * BLOCK})"

    def reg(self, r: int) -> str:
        if r < self.n:
            return self.node(r)
        if r == self.n:
            return "0u"
        if r == self.n + 1:
            return "0xFFFFFFFFu"
        return f"r{r}"

    def defs(self, mode: int, targets: Targets) -> str:
        c = self.c
        defs = [f"#define DS_N {self.n}", f"#define DS_ASYNC {mode}", f"#define DS_NBITS {self.nbits}",
                f"#define DS_MAXF {max(self.nf)}", f"#define DS_T {max(1, len(targets))}"]
        if mode == 1 and self.reduced:
            draw = ", ".join(str(int(d)) if d >= 0 else str(self.n) for d in c.draw_node)
            defs.append(f"__constant__ uint32_t ds_draw[{len(c.draw_node)}] = {{{draw}}};")
        return "\n".join(defs)

    def targets(self, targets: Targets) -> str:
        tlines = []
        for t, lits in enumerate(targets or [[]]):
            terms = [(self.node(int(a), "buf") if v else "~" + self.node(int(a), "buf")) for a, v in lits] + ["valid"]
            tlines.append(f"m[{t}] = {' & '.join(terms)};")
        return "#define DS_TARGETS(m, buf) { " + " ".join(tlines) + " }"

    def finish_node(self, i: int, value: str, body: list[str], async_sel: str | None = None) -> list[str]:
        """Lines that merge the new value of node i (event lanes keep the old value) and store it."""
        old = self.node(i)
        if i in self.hot:
            head = [f"uint32_t n{i} = {value};"] + [b.replace("@", f"n{i}") for b in body]
            if async_sel is None:
                return head + [f"n{i} = (n{i} & ~ev) | (s{i} & ev);"]
            return head + [f"n{i} = s{i} ^ ((n{i} ^ s{i}) & {async_sel} & ~ev);"]
        lines = [f"{{ uint32_t v = {value};"] + [b.replace("@", "v") for b in body]
        if async_sel is None:
            lines.append(f"v = (v & ~ev) | ({old} & ev);")
        else:
            lines.append(f"v = {old} ^ ((v ^ {old}) & {async_sel} & ~ev);")
        lines.append(f"out[{i} * DS_BLOCK] = v; }}")
        return lines

    def async_sel(self, i: int) -> str:
        """Lanes whose asynchronous update drew node i."""
        return " & ".join(f"cb_{b}" if (i >> b) & 1 else f"~cb_{b}" for b in range(self.nbits))

    def fixset(self, mode: int) -> list[str]:
        """Switch cases giving a knocked-out node its value ``fv`` on the lanes that update it."""
        lines = []
        for i in range(self.n):
            mask = "~ev" if mode == 0 else f"({self.async_sel(i)}) & ~ev"
            var = f"n{i}" if i in self.hot else f"out[{i} * DS_BLOCK]"
            lines.append(f"case {i}: {{ const uint32_t m = {mask}; {var} = ({var} & ~m) | (fv & m); }} break;")
        return lines

    def logic(self, merge: dict[int, list[str]]) -> list[str]:
        """The program, with each node's merge right after the last instruction its functions need,
        so temporaries die early and cold nodes leave registers at once."""
        prog, fs, n = self.c.program, self.fs, self.n
        ops = {OP_AND: "{a} & {b}", OP_OR: "{a} | {b}", OP_XOR: "{a} ^ {b}", OP_ANDN: "{a} & ~{b}", OP_NOT: "~{a}"}
        first_temp = n + 2
        ready = [max([int(prog.outputs[f]) - first_temp for f in range(fs[i], fs[i + 1])] + [-1]) for i in range(n)]
        after: dict[int, list[int]] = {}
        for i in range(n):
            after.setdefault(ready[i], []).append(i)
        lines = [ln for i in after.get(-1, []) for ln in merge[i]]
        for k, (op, d, a, b) in enumerate(prog.code):
            lines.append(f"const uint32_t r{int(d)} = " + ops[int(op)].format(a=self.reg(int(a)), b=self.reg(int(b)))
                         + ";")
            lines += [ln for i in after.get(k, []) for ln in merge[i]]
        return lines


Selection = tuple[list[str], list[str], dict[int, list[str]]]  # declarations, per-lane code, node -> merge lines


def _select_sync_independent(g: _Codegen) -> Selection:
    """Synchronous, independent PBN: word ``multi_word[k]`` chooses the function of multi-node k."""
    c, fs, nf = g.c, g.fs, g.nf
    decl, lane = [], []
    blocks_needed = set()
    for k, nd in enumerate(c.multi_nodes):
        nd = int(nd)
        for f in range(1, nf[nd]):
            decl.append(f"uint32_t ge_{nd}_{f} = 0u;")
        w = int(c.multi_word[k])
        blk = w >> 2
        if blk and blk not in blocks_needed:
            blocks_needed.add(blk)
            lane.append(f"const ds_u32x4 b{blk} = ds_philox4x32_10(ds_u32x4{{{blk}u, slo, shi, 0u}}, seed, chain);")
        comp = "xyzw"[w & 3]
        conds = " ".join(f"if (u >= {int(c.func_thresh[fs[nd] + f - 1])}u) ge_{nd}_{f} |= bit;"
                         for f in range(1, nf[nd]))
        lane.append(f"{{ const uint32_t u = b{blk}.{comp}; {conds} }}")
    merge = {i: g.finish_node(i, g.out[fs[i]], [f"@ ^= (@ ^ {g.out[fs[i] + f]}) & ge_{i}_{f};"
                                                for f in range(1, nf[i])]) for i in range(g.n)}
    return decl, lane, merge


def _select_sync_dependent(g: _Codegen) -> Selection:
    """Synchronous, dependent PBN: word 1 chooses the context."""
    c, fs, nf = g.c, g.fs, g.nf
    K = len(c.ctx_thresh)
    decl = [f"uint32_t cge_{k} = 0u;" for k in range(1, K)]
    lane = []
    if K > 1:
        conds = " ".join(f"if (u >= {int(c.ctx_thresh[k - 1])}u) cge_{k} |= bit;" for k in range(1, K))
        lane.append(f"{{ const uint32_t u = b0.y; {conds} }}")
    merge = {}
    for i in range(g.n):
        f_prev = int(c.ctx_func[0, i])
        body = []
        if nf[i] > 1:
            for k in range(1, K):
                f = int(c.ctx_func[k, i])
                if f != f_prev:
                    body.append(f"@ ^= (@ ^ {g.out[fs[i] + f]}) & cge_{k};")
                f_prev = f
        merge[i] = g.finish_node(i, g.out[fs[i] + int(c.ctx_func[0, i])], body)
    return decl, lane, merge


def _select_async(g: _Codegen) -> Selection:
    """Asynchronous: word 1 chooses the node, word 2 its function (or the context)."""
    c, fs, nf, n = g.c, g.fs, g.nf, g.n
    maxf = max(nf)
    decl = [f"uint32_t cb_{b} = 0u;" for b in range(g.nbits)] + [f"uint32_t fge_{f} = 0u;" for f in range(1, maxf)]
    draw = f"ds_draw[__umulhi(b0.y, {len(c.draw_node)}u)]" if g.reduced else f"__umulhi(b0.y, {n}u)"
    body = [f"const uint32_t node = {draw};"]
    body += [f"cb_{b} |= ((node >> {b}) & 1u) << lane;" for b in range(g.nbits)]
    if maxf > 1:
        pick = ("ctx_func[ds_choose(b0.z, ctx_thresh, n_ctx) * DS_N + node]" if c.dependent
                else "ds_choose(b0.z, func_thresh + f0, nf)")
        body.append(("if (node < DS_N) { " if g.reduced else "{ ")
                    + "const int f0 = func_start[node]; const int nf = func_start[node + 1] - f0;")
        body.append(f"if (nf > 1) {{ const int f = {pick}; "
                    + " ".join(f"if (f >= {f}) fge_{f} |= bit;" for f in range(1, maxf)) + " } }")
    merge = {}
    for i in range(n):
        sel = g.async_sel(i)
        fbody = [f"@ ^= (@ ^ {g.out[fs[i] + f]}) & fge_{f};" for f in range(1, nf[i])]
        merge[i] = g.finish_node(i, g.out[fs[i]], fbody, async_sel=sel)
    return decl, ["{ " + " ".join(body) + " }"], merge


@dataclass
class GPUKernel:
    """A compiled kernel for one (network, mode, targets), with its tables on the current device."""

    compiled: CompiledPBN
    mode: int
    n_targets: int
    module: Any
    tables: dict
    split: bool  # some nodes live in global memory (needs a scratch buffer)
    blocks_per_sm: int  # resident blocks of pbn_sliced per SM (occupancy)
    sms: int
    run_cache: dict = field(default_factory=dict)  # device copies of recent runs' tables (run_tables)

    @classmethod
    def build(cls, c: CompiledPBN, mode: int, targets: Targets, registers: int | None = None) -> "GPUKernel":
        import cupy as cp

        hot = hot_nodes(c, registers)
        mod, per_sm = _compile_for_occupancy(generate_source(c, mode, targets, hot))
        tables = {
            "func_start": cp.asarray(c.func_start, dtype=cp.int32),
            "func_thresh": cp.asarray(c.func_thresh, dtype=cp.uint32),
            "ctx_thresh": cp.asarray(c.ctx_thresh, dtype=cp.uint32),
            "ctx_func": cp.asarray(c.ctx_func.ravel(), dtype=cp.int32),
            "init_index": cp.asarray(c.init_index, dtype=cp.int32),
        }
        sms = int(cp.cuda.Device().attributes["MultiProcessorCount"])
        return cls(c, mode, max(1, len(targets)), mod, tables, len(hot) < c.n, per_sm, sms)

    @property
    def capacity(self) -> int:
        """Thread blocks (tiles) the device runs at once."""
        return self.blocks_per_sm * self.sms

    def single(self, chain0: int, n_chains: int, seed: int) -> Runs:
        """The one run of a shard: its chains and the network's perturbation table."""
        c = self.compiled
        return Runs.stack([n_chains], [chain0], [seed], [(c.pert_nodes[:c.n_pert], c.pert_G[:c.n_pert])])

    def init_state(self, chain0: int, n_chains: int, seed: int, fix_mask: np.ndarray, fix_val: np.ndarray) -> Any:
        return self.init_runs(self.single(chain0, n_chains, seed), fix_mask, fix_val)

    def init_runs(self, runs: Runs, fix_mask: np.ndarray, fix_val: np.ndarray) -> Any:
        """The initial state of every run, tiled: ``S[tile, node, thread]``."""
        import cupy as cp

        n = self.compiled.n
        S = cp.zeros((runs.n_tiles, n, BLOCK), dtype=cp.uint32)
        fn = self.module.get_function("pbn_init")
        fixed = np.flatnonzero(fix_mask)
        for r in range(runs.n_runs):
            n_chains, t0 = int(runs.n_chains[r]), int(runs.tile0[r])
            tiles = tiles_for(n_chains)
            view = S[t0:t0 + tiles]
            fn((tiles,), (BLOCK,), (view, np.int32(tiles * BLOCK), np.int32(n_chains), np.int32(n),
                                    np.uint64(runs.chain0[r]), np.uint32(runs.seed[r]), self.tables["init_index"]))
            if len(fixed):
                lanes = np.zeros(tiles * BLOCK, dtype=np.uint32)
                full, rest = divmod(n_chains, 32)
                lanes[:full] = 0xFFFFFFFF
                if rest:
                    lanes[full] = (1 << rest) - 1
                lanes = cp.asarray(lanes.reshape(tiles, BLOCK))
                for i in fixed:
                    view[:, int(i), :] = lanes if fix_val[i] else 0
        return S

    @staticmethod
    def states_of(S: Any, n_chains: int, tile0: int = 0) -> np.ndarray:
        """bool [n_chains, n] from the tiled device state (the run starting at tile ``tile0``)."""
        return unslice32(GPUKernel.node_major(S[tile0:tile0 + tiles_for(n_chains)]), n_chains)

    def node_ones(self, S: Any, n_chains: int, tile0: int = 0) -> np.ndarray:
        """uint64 [n]: chains with each node at 1 in the run starting at tile ``tile0``, counted on the
        device (n words come back instead of the states)."""
        import cupy as cp

        n, tiles = self.compiled.n, tiles_for(n_chains)
        out = cp.zeros(n, dtype=cp.uint64)
        self.module.get_function("pbn_node_ones")((tiles,), (BLOCK,),
                                                  (S[tile0:tile0 + tiles], np.int32(n), np.int32(n_chains), out))
        return cp.asnumpy(out)

    def run_tables(self, runs: Runs) -> tuple[Any, Any, Any]:
        """The device copies of a stack's perturbation and knockout tables, kept for the next round of
        the same tables (a round copies only its task table to the device)."""
        import cupy as cp

        key = (runs.pert_list.tobytes(), runs.pert_thresh.tobytes(), runs.fix_list.tobytes())
        cache = self.run_cache
        got = cache.get(key)
        if got is None:
            if len(cache) >= 16:
                cache.clear()
            got = cache[key] = (cp.asarray(runs.pert_list), cp.asarray(runs.pert_thresh), cp.asarray(runs.fix_list))
        return got

    @staticmethod
    def node_major(S: Any) -> np.ndarray:
        """Host copy of the tiled state as ``[node, group]`` (group = block * BLOCK + thread)."""
        import cupy as cp

        blocks, n, block = S.shape
        return cp.asnumpy(S.transpose(1, 0, 2).reshape(n, blocks * block))

    def advance(self, S: Any, *, chain0: int, n_chains: int, step0: int, nsteps: int, seed: int,
                want_chain: bool = False, want_nodes: bool = False) -> dict[str, np.ndarray]:
        """Advance the chains of one run by ``nsteps``: pooled counts [T, 4] (ones, n01, n10, occupancy
        at the end), and per chain / per node counts when asked."""
        return self.advance_runs(S, self.single(chain0, n_chains, seed), [step0], [nsteps], want_chain, want_nodes)[0]

    def advance_runs(self, S: Any, runs: Runs, step0: Sequence[int], nsteps: Sequence[int], want_chain: bool = False,
                     want_nodes: bool = False, active: Sequence[int] | None = None) -> list[dict[str, np.ndarray]]:
        """Advance run r from ``step0[r]`` by ``nsteps[r]``, all runs (or those in ``active``) at once:
        one result per run advanced."""
        import cupy as cp

        n, T, R = self.compiled.n, self.n_targets, runs.n_runs
        tiles = runs.n_tiles
        counts = cp.zeros(R * T * 4 + (R * n if want_nodes else 1), dtype=cp.uint64)  # one copy back per round
        pooled, node_ones = counts[:R * T * 4], counts[R * T * 4:]
        chain_ones = cp.zeros(T * tiles * TILE_CHAINS if want_chain else 1, dtype=cp.uint32)
        fn = self.module.get_function("pbn_sliced")
        tb = self.tables
        shared = 8 * n if want_nodes else 0
        scratch = cp.empty_like(S) if self.split else S
        per_run = self.run_tables(runs)
        for part in split_steps(runs.tasks(step0, nsteps, active), MAX_STEPS_PER_LAUNCH):
            tasks = plan_launch(part, self.capacity)
            queue = cp.zeros(1 + tiles, dtype=cp.uint32)
            fn((len(tasks),), (BLOCK,),
               (S, scratch, cp.asarray(tasks.view(np.uint8)), np.int32(tiles), tb["func_start"], tb["func_thresh"],
                tb["ctx_thresh"], np.int32(len(self.compiled.ctx_thresh)), tb["ctx_func"], *per_run,
                np.int32(want_chain), chain_ones, np.int32(want_nodes), node_ones, pooled, queue), shared_mem=shared)
        host = cp.asnumpy(counts)
        out = _results(runs, T, n, host[:R * T * 4], cp.asnumpy(chain_ones) if want_chain else None,
                       host[R * T * 4:] if want_nodes else None)
        return out if active is None else [out[r] for r in active]


def _results(runs: Runs, T: int, n: int, pooled: np.ndarray, chain_ones: np.ndarray | None,
             node_ones: np.ndarray | None) -> list[dict[str, np.ndarray]]:
    """Each run's counts from the device buffers (chain counts are laid out by tile)."""
    pooled = pooled.reshape(runs.n_runs, T, 4)
    out = []
    for r in range(runs.n_runs):
        res = {"pooled": pooled[r]}
        if chain_ones is not None:
            c0, nc = int(runs.tile0[r]) * TILE_CHAINS, int(runs.n_chains[r])
            res["chain_ones"] = chain_ones.reshape(T, -1)[:, c0:c0 + nc]
        if node_ones is not None:
            res["node_ones"] = node_ones.reshape(runs.n_runs, n)[r]
        out.append(res)
    return out


REG_FILE = 65536  # 32-bit registers per SM (sm_70 .. sm_90)
MAX_BLOCKS_PER_SM = 2048 // BLOCK
DENSEST = 8  # resident blocks per SM the search below stops at (64 registers a thread)
SPILL_OK = 256  # bytes of local memory a thread may spill in a denser build (L1-resident)


def _compile_for_occupancy(src: str) -> tuple[Any, int]:
    """The module and its resident blocks per SM. The register allocation of these long generated
    kernels jumps between occupancy levels with small code changes; more resident blocks hide the
    latency of the Philox and logic chains (the kernel is latency-bound: Nsight Compute on Sizek at 3
    blocks/SM, 36% of issue slots used). From the compiler's own build, builds asking for one more
    resident block (``__launch_bounds__`` minimum) are taken while they do add one and spill at most
    SPILL_OK bytes: on an H200 (benchmarks/RESULTS.md, fifteenth session) Sizek 3 -> 5 blocks ran 1.27x,
    Montagud 3 -> 4 1.13x (224 B spilled; 5 blocks spill 448 B and ran slower); networks whose first
    build already spills more (247, 321 nodes) keep it."""
    mod = cuda.load_module(src)
    per_sm = _blocks_per_sm(mod.get_function("pbn_sliced"))
    while per_sm < min(DENSEST, MAX_BLOCKS_PER_SM):
        denser = cuda.load_module(f"#define DS_MINB {per_sm + 1}\n" + src)
        fn = denser.get_function("pbn_sliced")
        blocks = _blocks_per_sm(fn)
        if fn.local_size_bytes > SPILL_OK or blocks <= per_sm:
            break
        mod, per_sm = denser, blocks
    return mod, per_sm


def _blocks_per_sm(fn: Any) -> int:
    """Resident blocks of ``fn`` per SM (the driver's occupancy calculator; by registers if absent)."""
    try:
        from cupy.cuda import driver

        return max(1, int(driver.occupancyMaxActiveBlocksPerMultiprocessor(fn.kernel.ptr, BLOCK, 0)))
    except (ImportError, AttributeError, RuntimeError):  # no occupancy API in this CuPy/driver
        per_warp = -(-max(1, int(fn.num_regs)) * 32 // 256) * 256
        return max(1, min(MAX_BLOCKS_PER_SM, REG_FILE // per_warp // (BLOCK // 32)))


def unslice32(S_host: np.ndarray, n_chains: int) -> np.ndarray:
    """Bit-sliced uint32 ``S[node, group]`` (host array) -> bool ``[n_chains, n]``."""
    n = S_host.shape[0]
    bits = np.unpackbits(np.ascontiguousarray(S_host, dtype="<u4").view(np.uint8).reshape(n, -1, 4), axis=2,
                         bitorder="little")
    return bits.reshape(n, -1)[:, :n_chains].T.astype(bool)


_KERNELS: dict[tuple, GPUKernel] = {}
_LOCK = threading.Lock()


def get_kernel(c: CompiledPBN, mode: int, targets: Targets, registers: int | None | str = "auto") -> GPUKernel:
    """Process-wide cache of built kernels (per device). ``registers``: how many nodes stay in
    registers ("auto": see :func:`auto_registers`; None: all)."""
    import cupy as cp

    if registers == "auto":
        registers = auto_registers(c)
    key = (c.digest, mode, tuple(tuple(map(tuple, t)) for t in targets), registers, cp.cuda.Device().id)
    with _LOCK:
        k = _KERNELS.get(key)
        if k is None:
            k = GPUKernel.build(c, mode, targets, registers)
            _KERNELS[key] = k
    return k


def auto_registers(c: CompiledPBN) -> int | None:
    """Register budget for the node state (None: all nodes), from the measurements noted at SPLIT_NODES."""
    lo, hi = SPLIT_NODES
    return int(SPLIT_FRACTION * c.n) if lo <= c.n <= hi else None
