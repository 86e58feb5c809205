"""The deployment recipes name what the package is: its distribution name, its version (image tags)
and its dask/distributed pins; the Kubernetes worker's threads and memory fit its pod."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

import distsim

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deployments"
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _texts() -> dict[str, str]:
    return {str(p.relative_to(ROOT)): p.read_text() for p in sorted(DEPLOY.rglob("*")) if p.is_file()
            and p.suffix in (".md", ".yaml", ".yml", ".sh", ".sbatch", ".py", "")}


def test_image_tags_are_the_package_version():
    tags = [(f, m) for f, t in _texts().items() for m in re.findall(r"/distsim:([\w.\-]+)", t)]
    assert tags, "no image tag found in deployments/"
    assert all(tag == distsim.__version__ for _, tag in tags), tags


def test_installs_name_the_distribution():
    name = PROJECT["name"]
    assert name == "distsim-bio"
    wrong = [(f, m.group(0)) for f, t in _texts().items()
             for m in re.finditer(r"pip install [\"']?distsim(?![-\w])", t)]
    assert not wrong, f"`pip install distsim` installs another project; use {name}: {wrong}"
    assert any(f"pip install {name}" in t or f'pip install "{name}[' in t for t in _texts().values())


def test_dask_pins_match_pyproject():
    pins = dict(re.match(r"([a-z]+)(?:\[\w+\])?==(.+)", d).groups() for d in PROJECT["dependencies"]
                if re.match(r"(dask|distributed)(\[\w+\])?==", d))
    assert set(pins) == {"dask", "distributed"}
    found = [(f, pkg, v) for f, t in _texts().items() for pkg, v in re.findall(r"\b(dask|distributed)==([\w.]+)", t)]
    assert found
    assert all(v == pins[pkg] for _, pkg, v in found), found


def _bytes(text: str) -> float:
    from dask.utils import parse_bytes

    return parse_bytes(text.replace("Gi", "GiB").replace("Mi", "MiB") if text.endswith("i") else text)


def test_kubernetes_worker_fits_its_pod():
    (doc,) = [d for d in yaml.safe_load_all((DEPLOY / "kubernetes" / "daskcluster.yaml").read_text())
              if d["kind"] == "DaskCluster"]
    (w,) = doc["spec"]["worker"]["spec"]["containers"]
    args, limits = w["args"], w["resources"]["limits"]
    threads = int(args[args.index("--nthreads") + 1])
    assert threads == 1 and threads <= float(limits["cpu"])  # one task per GPU at a time
    memory, pod = _bytes(args[args.index("--memory-limit") + 1]), _bytes(limits["memory"])
    assert 0.8 * pod <= memory < pod  # Dask pauses and spills before the kubelet kills the pod
    assert limits["nvidia.com/gpu"] == 1 and "GPU=1" in args
