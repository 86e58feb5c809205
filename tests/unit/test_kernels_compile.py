"""Every CUDA source compiles with nvcc (no GPU needed); skipped where nvcc is not installed."""

import shutil
import subprocess

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
