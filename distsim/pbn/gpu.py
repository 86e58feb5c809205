"""GPU kernel for PBN trajectories: CUDA generated from the compiled bit program (CuPy, NVRTC).

The generic parts (Philox, perturbation decisions, counters) live in ``kernels/pbn_sliced.cu``;
the network-specific parts (loading/storing node words, the Boolean functions as straight-line
word operations, function selection, target tests) are generated into its marked regions. Each
thread advances 32 trajectories. Nothing here runs at import time; CuPy is imported lazily.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .. import backends
from .compile import OP_AND, OP_ANDN, OP_NOT, OP_OR, OP_XOR, CompiledPBN

TEMPLATE = "pbn_sliced.cu"
BLOCK = 128
MAX_STEPS_PER_LAUNCH = 1 << 20

Targets = Sequence[Sequence[tuple[int, int]]]  # per target: (node, value) literals


def _reg(r: int, n: int) -> str:
    if r < n:
        return f"s{r}"
    if r == n:
        return "0u"
    if r == n + 1:
        return "0xFFFFFFFFu"
    return f"r{r}"


def generate_source(c: CompiledPBN, mode: int, targets: Targets) -> str:
    """CUDA source for this network, mode (0 sync, 1 async) and target sets."""
    n = c.n
    template = backends.kernel_source(TEMPLATE)
    prog = c.program
    out = [_reg(int(r), n) for r in prog.outputs]
    fs = c.func_start
    nf = [int(fs[i + 1] - fs[i]) for i in range(n)]
    maxf = max(nf)
    nbits = max(1, int(np.ceil(np.log2(max(n, 2)))))
    T = max(1, len(targets))
    R: dict[str, str] = {}

    R["defs"] = "\n".join([f"#define DS_N {n}", f"#define DS_ASYNC {mode}", f"#define DS_NBITS {nbits}",
                           f"#define DS_MAXF {maxf}", f"#define DS_T {T}"])
    R["load"] = "\n".join(f"uint32_t s{i} = S[(unsigned long long){i} * G + gi];" for i in range(n))

    def literal(node: int, val: int) -> str:
        return f"s{node}" if val else f"~s{node}"

    tlines = []
    for t, lits in enumerate(targets or [[]]):
        terms = [literal(int(a), int(v)) for a, v in lits] + ["valid"]
        tlines.append(f"m[{t}] = {' & '.join(terms)};")
    R["targets"] = "#define DS_TARGETS(m) { " + " ".join(tlines) + " }"

    decl, lane, merge = [], [], []
    if mode == 0 and not c.dependent:
        blocks_needed = set()
        for k, node in enumerate(c.multi_nodes):
            node = int(node)
            for f in range(1, nf[node]):
                decl.append(f"uint32_t ge_{node}_{f} = 0u;")
            w = k + 1
            blk = w >> 2
            if blk and blk not in blocks_needed:
                blocks_needed.add(blk)
                lane.append(f"const ds_u32x4 b{blk} = ds_philox4x32_10(ds_u32x4{{{blk}u, slo, shi, 0u}}, seed, chain);")
            comp = "xyzw"[w & 3]
            conds = " ".join(f"if (u >= {int(c.func_thresh[fs[node] + f - 1])}u) ge_{node}_{f} |= bit;"
                             for f in range(1, nf[node]))
            lane.append(f"{{ const uint32_t u = b{blk}.{comp}; {conds} }}")
        for i in range(n):
            merge.append(f"uint32_t n{i} = {out[fs[i]]};")
            for f in range(1, nf[i]):
                merge.append(f"n{i} ^= (n{i} ^ {out[fs[i] + f]}) & ge_{i}_{f};")
            merge.append(f"n{i} = (n{i} & ~ev) | (s{i} & ev);")
    elif mode == 0:  # synchronous, dependent PBN: word 1 chooses the context
        K = len(c.ctx_thresh)
        for k in range(1, K):
            decl.append(f"uint32_t cge_{k} = 0u;")
        if K > 1:
            conds = " ".join(f"if (u >= {int(c.ctx_thresh[k - 1])}u) cge_{k} |= bit;" for k in range(1, K))
            lane.append(f"{{ const uint32_t u = b0.y; {conds} }}")
        for i in range(n):
            f_prev = int(c.ctx_func[0, i])
            merge.append(f"uint32_t n{i} = {out[fs[i] + f_prev]};")
            if nf[i] > 1:
                for k in range(1, K):
                    f = int(c.ctx_func[k, i])
                    if f != f_prev:
                        merge.append(f"n{i} ^= (n{i} ^ {out[fs[i] + f]}) & cge_{k};")
                    f_prev = f
            merge.append(f"n{i} = (n{i} & ~ev) | (s{i} & ev);")
    else:  # asynchronous: word 1 chooses the node, word 2 its function (or the context)
        for b in range(nbits):
            decl.append(f"uint32_t cb_{b} = 0u;")
        for f in range(1, maxf):
            decl.append(f"uint32_t fge_{f} = 0u;")
        body = [f"const uint32_t node = __umulhi(b0.y, {n}u);"]
        body += [f"cb_{b} |= ((node >> {b}) & 1u) << lane;" for b in range(nbits)]
        if maxf > 1:
            pick = ("ctx_func[ds_choose(b0.z, ctx_thresh, n_ctx) * DS_N + node]" if c.dependent
                    else "ds_choose(b0.z, func_thresh + f0, nf)")
            body.append("const int f0 = func_start[node]; const int nf = func_start[node + 1] - f0;")
            body.append(f"if (nf > 1) {{ const int f = {pick}; "
                        + " ".join(f"if (f >= {f}) fge_{f} |= bit;" for f in range(1, maxf)) + " }")
        lane.append("{ " + " ".join(body) + " }")
        for i in range(n):
            sel = " & ".join(f"cb_{b}" if (i >> b) & 1 else f"~cb_{b}" for b in range(nbits))
            merge.append(f"uint32_t v{i} = {out[fs[i]]};")
            for f in range(1, nf[i]):
                merge.append(f"v{i} ^= (v{i} ^ {out[fs[i] + f]}) & fge_{f};")
            merge.append(f"uint32_t n{i} = s{i} ^ ((v{i} ^ s{i}) & {sel} & ~ev);")
    R["select_decl"] = "\n".join(decl)
    R["select_lane"] = "\n".join(lane)
    R["merge"] = "\n".join(merge)

    ops = {OP_AND: "{a} & {b}", OP_OR: "{a} | {b}", OP_XOR: "{a} ^ {b}", OP_ANDN: "{a} & ~{b}", OP_NOT: "~{a}"}
    R["logic"] = "\n".join(
        f"const uint32_t r{int(d)} = " + ops[int(op)].format(a=_reg(int(a), n), b=_reg(int(b), n)) + ";"
        for op, d, a, b in prog.code)
    R["flip"] = "\n".join(f"case {i}: n{i} ^= lb; break;" for i in range(n))
    R["store_step"] = " ".join(f"s{i} = n{i};" for i in range(n))
    R["node_counts"] = "\n".join(
        f"{{ uint32_t c = __reduce_add_sync(0xFFFFFFFFu, __popc(s{i} & valid)); "
        f"if ((threadIdx.x & 31) == 0) atomicAdd(&ds_node_acc[{i}], (unsigned long long)c); }}" for i in range(n))
    R["store"] = " ".join(f"S[(unsigned long long){i} * G + g] = s{i};" for i in range(n))
    return fill_template(template, R)


_REGION = re.compile(r"^([ \t]*)//@@ (\w+)\n.*?^[ \t]*//@@ end\n", re.S | re.M)


def fill_template(template: str, regions: dict[str, str]) -> str:
    """Replace each ``//@@ name`` ... ``//@@ end`` region with ``regions[name]`` (all must be given)."""
    seen = set()

    def sub(m: re.Match) -> str:
        name = m.group(2)
        seen.add(name)
        indent = m.group(1)
        body = regions[name]
        return "".join(indent + line + "\n" for line in body.splitlines()) if body else ""

    src = _REGION.sub(sub, template)
    missing = set(regions) - seen
    if missing:
        raise ValueError(f"template has no region(s) {sorted(missing)}")
    return src


@dataclass
class GPUKernel:
    """A compiled kernel for one (network, mode, targets), with its tables on the current device."""

    compiled: CompiledPBN
    mode: int
    n_targets: int
    module: Any
    tables: dict

    @classmethod
    def build(cls, c: CompiledPBN, mode: int, targets: Targets) -> "GPUKernel":
        import cupy as cp

        src = generate_source(c, mode, targets)
        mod = backends.load_module(src)
        tables = {
            "func_start": cp.asarray(c.func_start, dtype=cp.int32),
            "func_thresh": cp.asarray(c.func_thresh, dtype=cp.uint32),
            "ctx_thresh": cp.asarray(c.ctx_thresh, dtype=cp.uint32),
            "ctx_func": cp.asarray(c.ctx_func.ravel(), dtype=cp.int32),
            "pert_nodes": cp.asarray(c.pert_nodes, dtype=cp.int32),
            "pertG": cp.asarray(c.pert_G, dtype=cp.uint32),
        }
        return cls(c, mode, max(1, len(targets)), mod, tables)

    def init_state(self, chain0: int, n_chains: int, seed: int, fix_mask: np.ndarray, fix_val: np.ndarray) -> Any:
        import cupy as cp

        n = self.compiled.n
        G = max(1, -(-n_chains // 32))
        S = cp.zeros((n, G), dtype=cp.uint32)
        fn = self.module.get_function("pbn_init")
        fn(((G + BLOCK - 1) // BLOCK,), (BLOCK,), (S, np.int32(G), np.int32(n_chains), np.int32(n),
                                                   np.uint64(chain0), np.uint32(seed)))
        fixed = np.flatnonzero(fix_mask)
        if len(fixed):
            lanes = np.full(G, 0xFFFFFFFF, dtype=np.uint32)
            if n_chains % 32:
                lanes[-1] = (1 << (n_chains % 32)) - 1
            for i in fixed:
                S[int(i)] = cp.asarray(lanes if fix_val[i] else np.zeros(G, np.uint32))
        return S

    def advance(self, S: Any, *, chain0: int, n_chains: int, step0: int, nsteps: int, seed: int,
                want_chain: bool = False, want_nodes: bool = False) -> dict[str, np.ndarray]:
        import cupy as cp

        c = self.compiled
        n, G = S.shape
        T = self.n_targets
        pooled = np.zeros((T, 4), dtype=np.uint64)
        launch_pooled = cp.zeros(4 * T, dtype=cp.uint64)
        chain_ones = cp.zeros(T * n_chains if want_chain else 1, dtype=cp.uint32)
        node_ones = cp.zeros(n if want_nodes else 1, dtype=cp.uint64)
        fn = self.module.get_function("pbn_sliced")
        tb = self.tables
        shared = 8 * n if want_nodes else 0
        done = 0
        while True:  # at least one launch, so nsteps == 0 still reports the occupancy at the end
            k = min(MAX_STEPS_PER_LAUNCH, nsteps - done)
            launch_pooled.fill(0)
            fn(((G + BLOCK - 1) // BLOCK,), (BLOCK,),
               (S, np.int32(G), np.int32(n_chains), np.uint64(chain0), np.uint64(step0 + done), np.int32(k),
                np.uint32(seed), tb["func_start"], tb["func_thresh"], tb["ctx_thresh"], np.int32(len(c.ctx_thresh)),
                tb["ctx_func"], tb["pert_nodes"], tb["pertG"], np.int32(c.n_pert), np.int32(want_chain), chain_ones,
                np.int32(want_nodes), node_ones, launch_pooled), shared_mem=shared)
            lp = cp.asnumpy(launch_pooled).reshape(T, 4)
            pooled[:, :3] += lp[:, :3]
            pooled[:, 3] = lp[:, 3]  # occupancy after the last launch
            done += k
            if done >= nsteps:
                break
        out = {"pooled": pooled}
        if want_chain:
            out["chain_ones"] = cp.asnumpy(chain_ones).reshape(T, n_chains)
        if want_nodes:
            out["node_ones"] = cp.asnumpy(node_ones)
        return out


def unslice32(S_host: np.ndarray, n_chains: int) -> np.ndarray:
    """Bit-sliced uint32 ``S[node, group]`` (host array) -> bool ``[n_chains, n]``."""
    n = S_host.shape[0]
    bits = np.unpackbits(np.ascontiguousarray(S_host, dtype="<u4").view(np.uint8).reshape(n, -1, 4), axis=2,
                         bitorder="little")
    return bits.reshape(n, -1)[:, :n_chains].T.astype(bool)


_KERNELS: dict[tuple, GPUKernel] = {}
_LOCK = threading.Lock()


def get_kernel(c: CompiledPBN, mode: int, targets: Targets) -> GPUKernel:
    """Process-wide cache of built kernels (per device)."""
    import cupy as cp

    key = (c.digest, mode, tuple(tuple(map(tuple, t)) for t in targets), cp.cuda.Device().id)
    with _LOCK:
        k = _KERNELS.get(key)
        if k is None:
            k = GPUKernel.build(c, mode, targets)
            _KERNELS[key] = k
    return k
