"""Shared fixtures: GPU detection (tests marked ``gpu`` are skipped without one) and a Dask cluster."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "pbn"


@pytest.fixture(autouse=True)
def _locale_kept():
    """A test (or a library it imports: COPASI sets LC_ALL to "C") must not change the locale under the
    tests after it: open() without an encoding would then read UTF-8 files as ASCII."""
    import locale

    before = locale.setlocale(locale.LC_ALL)
    yield
    if locale.setlocale(locale.LC_ALL) != before:
        locale.setlocale(locale.LC_ALL, before)


def _gpu() -> bool:
    from distsim.backends import gpu_available

    return gpu_available()


def pytest_collection_modifyitems(config, items):
    if _gpu():
        return
    skip = pytest.mark.skip(reason="no usable CUDA GPU (CuPy) here")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def dask_client():
    """A 2-worker local CPU cluster (processes, one thread each), shared by the session."""
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0",
                           resources={"CPU": 1})
    client = Client(cluster, set_as_default=False)  # tests pass it explicitly
    yield client
    client.close()
    cluster.close()


@pytest.fixture(scope="session")
def examples() -> Path:
    return EXAMPLES
