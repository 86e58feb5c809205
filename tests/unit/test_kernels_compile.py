"""Every CUDA source compiles with nvcc (no GPU needed); skipped where nvcc is not installed."""

import shutil
import subprocess
from pathlib import Path

import pytest

from distsim.backends import cuda

nvcc = shutil.which("nvcc")


@pytest.mark.skipif(nvcc is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("source", sorted(p.name for p in cuda.kernels_dir().glob("*.cu")))
def test_nvcc_ptx(source, tmp_path):
    kdir = cuda.kernels_dir()
    r = subprocess.run([nvcc, "-std=c++17", "-arch=sm_90", "--ptx", "-I", str(kdir), "-o", str(tmp_path / "k.ptx"),
                        str(kdir / source)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr


@pytest.mark.skipif(nvcc is None, reason="nvcc not on PATH")
def test_generated_pbn_kernel_compiles(tmp_path):
    from distsim.models.pbn import random_pbn
    from distsim.pbn.compile import compile_pbn
    from distsim.pbn.gpu import generate_source

    from distsim.pbn.reduce import ancestors

    sparse = random_pbn(16, seed=4, max_parents=1, multi_fraction=0.5)  # ancestors of node 0: a few nodes
    keep = ancestors(sparse, [0])
    assert len(keep) < sparse.n
    cases = [(0, random_pbn(20, seed=1), None), (1, random_pbn(20, seed=2, contexts=3), None),
             (0, random_pbn(9, seed=3, contexts=2), None), (1, sparse, keep), (0, sparse, keep)]
    for mode, net, kept in cases:
        src = tmp_path / "gen.cu"
        c = compile_pbn(net, kept)
        src.write_text(generate_source(c, mode, [((0, 1),)]))
        r = subprocess.run([nvcc, "-std=c++17", "-arch=sm_90", "--ptx", "-I", str(cuda.kernels_dir()), "-o",
                            str(tmp_path / "g.ptx"), str(src)], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr


def _nvcc(src: str, tmp_path, *defines: str) -> subprocess.CompletedProcess:
    f = tmp_path / "k.cu"
    f.write_text(src)
    return subprocess.run([nvcc, "-std=c++17", "-arch=sm_90", "--ptx", "-I", str(cuda.kernels_dir()), *defines, "-o",
                           str(tmp_path / "k.ptx"), str(f)], capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(nvcc is None, reason="nvcc not on PATH")
def test_generic_ssa_kernel_compiles_for_every_method(tmp_path):
    """kernels/ssa_generic.cu with each method's selection header, as distsim.ssa.gpu builds it."""
    from dataclasses import replace

    from distsim.ssa.gpu import generic_source
    from distsim.ssa.methods import METHODS

    for m in METHODS.values():
        if m.cuda_header is not None:
            for every in (m, replace(m, cpu=replace(m.cpu, name=f"{m.name}-every", needs_depgraph=False))):
                r = _nvcc(generic_source(every), tmp_path)
                assert r.returncode == 0, (m.name, r.stderr)


@pytest.mark.skipif(nvcc is None, reason="nvcc not on PATH")
def test_events_ssa_kernel_compiles_for_every_method(tmp_path):
    """kernels/ssa_events.cu (SBML events and rules) with each method's header, as distsim.ssa.gpu_events builds it."""
    from distsim.ssa.gpu_events import events_source
    from distsim.ssa.methods import METHODS

    for m in METHODS.values():
        r = _nvcc(events_source(m), tmp_path, "--fmad=false")
        assert r.returncode == 0, (m.name, r.stderr)


@pytest.mark.skipif(nvcc is None, reason="nvcc not on PATH")
def test_generated_ssa_kernel_compiles(tmp_path):
    """The register kernel generated for mass-action and kinetic-law models (switch and branchless
    firing, with and without fused reductions)."""
    from distsim.models.compile_reactions import compile_network
    from distsim.models.formats.reaction_text import parse_reactions
    from distsim.ssa import load
    from distsim.ssa.gpu import generate_direct

    laws = parse_reactions("0 -> X; law: 1/(X-X) + exp(-X) + max(X, 2)^2 - log10(X+1) + -X\nX -> 0; 0.1\n"
                           "2 X -> Y; 0.01\nY -> 0; law: sqrt(Y)*floor(Y/2)\ninit: X = 3", name="laws")
    for net in (load(Path(__file__).resolve().parents[2] / "examples" / "ssa" / "michaelis_menten.rxn"), laws):
        c = compile_network(net)
        for fused in (False, True):
            for branchless in (False, True):
                for batched in (False, True):
                    r = _nvcc(generate_direct(c, fused=fused, branchless=branchless, batched=batched), tmp_path)
                    assert r.returncode == 0, (net.name, fused, branchless, batched, r.stderr)


@pytest.mark.skipif(nvcc is None, reason="nvcc not on PATH")
def test_generated_mcmc_kernel_compiles(tmp_path):
    """The persistent Gibbs kernel generated for Michaelis-Menten and for a network with a reaction
    without reactants and one species that only grows (early stop)."""
    import pandas as pd

    import distsim.mcmc as mcmc
    from distsim.mcmc.gpu import generate
    from distsim.mcmc.priors import rate_model
    from distsim.mcmc.sampler import build_problem
    from distsim.models.formats.reaction_text import parse_reactions
    from distsim.ssa import load

    root = Path(__file__).resolve().parents[2] / "examples" / "mcmc"
    mm = load(root / "michaelis_menten.rxn")
    grow = parse_reactions("0 -> A ; kb = 3\nA -> B ; kc = 0.5\n2 B -> C ; kd = 0.1\ninit: A = 4, B = 2", file="g.rxn")
    mm_prior = {"k1": (2, 1000), "k2": (2, 10), "k3": (2, 10)}
    cases = [(mm, mcmc.as_observations(mm, root / "mm_observations.csv"), mm_prior),
             (grow, pd.DataFrame({"time": [0.0, 1.0], "A": [4, 5], "B": [2, 3], "C": [0, 1]}),
              {"kb": (1, 1), "kc": (1, 1), "kd": (1, 1)})]
    for net, data, prior in cases:
        pr = build_problem(net, mcmc.as_observations(net, data), rate_model(net, prior))
        r = _nvcc(generate(pr), tmp_path, "--fmad=false")
        assert r.returncode == 0, r.stderr


@pytest.mark.skipif(nvcc is None, reason="nvcc not on PATH")
def test_batched_ssa_kernels_compile(tmp_path):
    """The generic kernel (every method) and the warp kernel as distsim.ssa.gpu_batch builds them."""
    from distsim.ssa.gpu import generic_source, warp_source
    from distsim.ssa.methods import METHODS

    for m in METHODS.values():
        if m.cuda_header is not None:
            r = _nvcc("#define DS_BATCHED\n" + generic_source(m), tmp_path)
            assert r.returncode == 0, (m.name, r.stderr)
    for choice in ((0, 1, 0, 0), (1, 1, 1, 1)):
        r = _nvcc(warp_source(*choice, batched=True), tmp_path)
        assert r.returncode == 0, (choice, r.stderr)


@pytest.mark.skipif(nvcc is None, reason="nvcc not on PATH")
def test_warp_ssa_kernel_compiles_for_every_choice(tmp_path):
    """kernels/ssa_warp.cu with each value of its compile-time choices (placement, general path, checks)."""
    from distsim.ssa.gpu import warp_source

    for choice in ((0, 1, 0, 0), (1, 1, 1, 1), (0, 0, 1, 0), (1, 0, 0, 1)):
        r = _nvcc(warp_source(*choice), tmp_path)
        assert r.returncode == 0, (choice, r.stderr)
    for levels in (0, 1, 2, 3):  # the level count fixed at compile time (the shipped kernels)
        r = _nvcc(warp_source(0, 1, 0, 0, levels=levels), tmp_path)
        assert r.returncode == 0, (levels, r.stderr)
    for lanes in (16, 8, 4):  # several realizations per warp, with and without padded firing tables
        for choice, stride in (((0, 1, 0, 0), 4), ((1, 1, 1, 1), 0)):
            for top in (0, 1):  # the top level in registers or shared memory
                r = _nvcc(warp_source(*choice, levels=2, lanes=lanes, stride=stride, top_shared=top), tmp_path)
                assert r.returncode == 0, (lanes, choice, top, r.stderr)
        r = _nvcc(warp_source(1, 0, 1, 1, batched=True, lanes=lanes), tmp_path)
        assert r.returncode == 0, (lanes, r.stderr)
