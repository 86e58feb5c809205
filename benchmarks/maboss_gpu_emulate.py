"""MaBoSS.GPU's continuous-time semantics (commit bc3a320, ``benchmarks/maboss_gpu_peer.sh``) emulated on the
CPU, to tell its differences from distsim's where no GPU is at hand (issue 31).

    python benchmarks/maboss_gpu_emulate.py MODEL.bnd MODEL.cfg [-n 200000] [--distsim 100000 | --no-refill]

A Numba transcription of ``src/jit_kernels/simulation.cu`` and ``window_average_small.cu``: rates, their sum,
time and window ends in float32, dt = -log(u) / total with u in (0, 1], the flip chosen by a float32 running sum;
each trajectory's buffer holds 100 records per launch and when it fills the kernel stops after recording an
event's time but before its flip, so the next launch draws a new waiting time in the same state (one
transition in 99 becomes an extra holding time; ``--no-refill`` flips as Gillespie does). Window sums are kept
in float64 here (MaBoSS.GPU: float32 atomics). Initial states: independent per-node istate probabilities (the
shipped models'). The emulated window averages are compared with distsim's CPU backend (``--distsim N``) or
with an emulation without the refill (``--no-refill``): the largest z over the bound
sqrt(p (1 - p) (1/N1 + 1/N2)) of a window average's difference, beside the Bonferroni bound at 1e-3."""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numba as nb
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from distsim.maboss.model import compile_model, load  # noqa: E402


@nb.njit(cache=False)
def _run(n, seed, refill, nodes, par_start, par_index, tt_start, tt, val_start, vals, p1, vis_idx,
        max_time, tick, n_win, limit):
    np.random.seed(seed)
    nvis = vis_idx.size
    S = 1 << nvis
    acc = np.zeros((n_win, S))
    acc2 = np.zeros((n_win, S))
    cur = np.zeros(S)  # this trajectory's time per state in its current window
    touched = np.zeros(S, np.int64)
    rates = np.zeros(nodes, np.float32)
    st = np.zeros(nodes, np.uint8)
    mt = np.float32(max_time)
    tk = np.float32(tick)
    extra = 0
    for c in range(n):
        for i in range(nodes):
            u = np.float32(1.0 - np.random.random())
            st[i] = 1 if u <= p1[i] else 0
        t = np.float32(0.0)
        step = 1  # records in this launch's buffer (step 0: the start time)
        cw = 0
        nt = 0
        while True:
            total = np.float32(0.0)
            for i in range(nodes):
                r = 0
                for k in range(par_start[i], par_start[i + 1]):
                    r = (r << 1) | st[par_index[k]]
                rates[i] = np.float32(vals[val_start[i] + tt[tt_start[i] + r]])
                total = np.float32(total + rates[i])
            tb = t
            if total == np.float32(0.0):
                t = mt
                fixed = True
            else:
                u = np.float32(1.0 - np.random.random())
                t = np.float32(t + np.float32(-np.log(u)) / total)
                t = min(t, mt)
                fixed = False
            # window averaging of the slice [tb, t] in the current state
            s = 0
            for j in range(nvis):
                s |= st[vis_idx[j]] << j
            w = int(np.floor(np.float32(tb / tk)))
            b = tb
            while t > b:
                we = np.float32(np.float32(w + 1) * tk)
                sl = np.float32(min(t, we) - b)
                while w > cw:  # flush the current window
                    for q in range(nt):
                        x = cur[touched[q]] / tick
                        acc[cw, touched[q]] += x
                        acc2[cw, touched[q]] += x * x
                        cur[touched[q]] = 0.0
                    nt = 0
                    cw += 1
                if w < n_win:
                    if cur[s] == 0.0:
                        touched[nt] = s
                        nt += 1
                    cur[s] += sl
                w += 1
                b = min(t, we)
            step += 1
            if t >= mt:
                break
            if step >= limit:
                step = 1
                if refill:
                    extra += 1
                    continue  # next launch: a new waiting time in the same state, no flip
            r = np.float32(np.float32(1.0 - np.random.random()) * total)
            sm = np.float32(0.0)
            idx = 0
            for i in range(nodes):
                sm = np.float32(sm + rates[i])
                if sm < r:
                    idx += 1
            st[idx] ^= 1
        while cw < n_win:
            for q in range(nt):
                x = cur[touched[q]] / tick
                acc[cw, touched[q]] += x
                acc2[cw, touched[q]] += x * x
                cur[touched[q]] = 0.0
            nt = 0
            cw += 1
    return acc, acc2, extra


def emulate(bnd: Path, cfg: Path, n: int, seed: int, refill: bool = True) -> dict:
    """Window averages (window, visible state as MaBoSS.GPU indexes it), their labels, refills per trajectory."""
    m = load(bnd, cfg)
    c = compile_model(m, None)
    s = m.settings
    p1 = np.full(c.n, 0.5, np.float32)
    for g in range(len(c.grp_start) - 1):
        nd = c.grp_nodes[c.grp_node_start[g]:c.grp_node_start[g + 1]]
        if len(nd) != 1:
            raise SystemExit("joint [A, B].istate groups are not emulated")
        o0, o1 = c.grp_start[g], c.grp_start[g + 1]
        pr = np.diff(np.concatenate([[0.0], c.grp_cum[o0:o1]]))
        p1[nd[0]] = sum(pr[k] for k in range(o1 - o0) if c.opt_bits[o0 + k] & 1)
    if s.discrete_time:
        raise SystemExit("discrete_time = 1 is not emulated")
    vis = np.array(sorted(c.visible), np.int64)  # MaBoSS.GPU: bit j = the j-th visible node in .bnd order
    if len(vis) > 20:
        raise SystemExit("MaBoSS.GPU takes at most 20 visible nodes")
    n_win = int(np.ceil(np.float32(s.max_time) / np.float32(s.time_tick)))
    acc, _, extra = _run(n, seed, refill, c.n, c.par_start, c.par_index, c.tt_start, c.tt, c.val_start, c.vals, p1,
                         vis, s.max_time, s.time_tick, n_win, 100)
    labels = [" -- ".join(sorted(c.nodes[vis[j]] for j in range(len(vis)) if k >> j & 1)) or "<nil>"
              for k in range(1 << len(vis))]
    return {"p": acc / n, "labels": labels, "refills": extra / n, "n": n}


def max_z(a: dict[str, np.ndarray], na: int, b: dict[str, np.ndarray], nb_: int) -> tuple[float, float, str, int]:
    """Largest bound-z over states and windows of two {state: probabilities over windows}; max |dp|; where."""
    best = (0.0, 0.0, "-", -1)
    length = len(next(iter(a.values())))
    for s in set(a) | set(b):
        pa = a.get(s, np.zeros(length))
        pb = b.get(s, np.zeros(length))
        k = min(len(pa), len(pb))
        pa, pb = pa[:k], pb[:k]
        eps = 1 / (na + nb_)
        p = np.clip((pa * na + pb * nb_) * eps, eps, 1 - eps)
        z = np.abs(pa - pb) / np.sqrt(p * (1 - p) * (1 / na + 1 / nb_))
        i = int(z.argmax())
        if z[i] > best[0]:
            best = (float(z[i]), float(np.abs(pa - pb).max()), s, i)
    return best


def main() -> None:
    from scipy import stats

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bnd", type=Path)
    ap.add_argument("cfg", type=Path)
    ap.add_argument("-n", type=int, default=200000, help="emulated trajectories")
    ap.add_argument("--distsim", type=int, default=100000, metavar="N", help="distsim's trajectories")
    ap.add_argument("--no-refill", action="store_true", help="compare with an emulation without the refill")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    t = time.perf_counter()
    e = emulate(args.bnd, args.cfg, args.n, args.seed)
    print(f"emulated {args.n} trajectories in {time.perf_counter() - t:.1f} s; buffer refills (a flip replaced by "
          f"a new waiting time): {e['refills']:.3f} per trajectory")
    a = {lab: e["p"][:, k] for k, lab in enumerate(e["labels"]) if e["p"][:, k].any()}
    if args.no_refill:
        o = emulate(args.bnd, args.cfg, args.n, args.seed + 1, refill=False)
        b, nb_, what = {lab: o["p"][:, k] for k, lab in enumerate(o["labels"]) if o["p"][:, k].any()}, args.n, \
            "the emulation without the refill"
    else:
        from distsim.maboss import maboss

        ds = maboss(args.bnd, args.cfg, trajectories=args.distsim, seed=args.seed, backend="cpu", progress=False)
        b = {" -- ".join(sorted(str(s).split(" -- "))): ds.probability.values[:, j]
             for j, s in enumerate(ds.state.values)}
        nb_, what = args.distsim, "distsim (CPU)"
    z, dp, s, w = max_z(a, args.n, b, nb_)
    cells = sum(len(v) for v in a.values())
    print(f"against {what}: max z {z:.2f} (window {w}, {s}), max |dp| {dp:.4f}; Bonferroni bound at 1e-3 over "
          f"~{cells} cells {stats.norm.isf(1e-3 / (2 * max(cells, 1))):.2f}")


if __name__ == "__main__":
    main()
