"""A TLS-secured distsim Dask cluster on SLURM through dask-jobqueue.

    python deployments/slurm/slurm_cluster.py --kind gpu --certs ~/.dask-tls --print-job-script
    python deployments/slurm/slurm_cluster.py --kind gpu --certs ~/.dask-tls --jobs 4 --sweep examples/sweeps/mm_grid.yaml

The scheduler runs in this process (on the login node or, better, inside a small SLURM job: see
``sweep.sbatch``); each SLURM job started by ``--jobs`` runs one node of workers that connect back
over TLS. ``--config`` defaults to the ``jobqueue.yaml`` next to this file. The dashboards listen on
loopback only (the scheduler's here, on port 8787; see ``jobqueue.yaml``).
"""

from __future__ import annotations

import argparse
import socket
import sys
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent


def _certs(certs: str | Path) -> dict[str, str]:
    """The files of ``deployments/tls/make_certs.py`` in ``certs``, by ``Security`` argument name."""
    c = Path(certs).expanduser()
    files = {"tls_ca_file": c / "ca.pem"}
    for role in ("scheduler", "worker", "client"):
        files[f"tls_{role}_cert"], files[f"tls_{role}_key"] = c / f"{role}.pem", c / f"{role}-key.pem"
    return {k: str(v) for k, v in files.items()}


def security(certs: str | Path) -> Any:
    """TLS for the scheduler (this process), the workers (their job scripts name ``worker.pem``) and the client."""
    from distributed.security import Security

    return Security(**_certs(certs), require_encryption=True)


def client_config(certs: str | Path) -> dict[str, Any]:
    """Dask configuration for a client of the cluster (e.g. the ``distsim`` CLI) holding the client certificate."""
    files = _certs(certs)
    return {"distributed.comm.require-encryption": True, "distributed.comm.tls.ca-file": files["tls_ca_file"],
            "distributed.comm.tls.client.cert": files["tls_client_cert"],
            "distributed.comm.tls.client.key": files["tls_client_key"]}


def make_cluster(kind: str = "gpu", certs: str | Path | None = None, config: str | Path = HERE / "jobqueue.yaml",
                 **overrides: Any) -> Any:
    """A ``SLURMCluster`` from the ``cpu`` (jobqueue.slurm) or ``gpu`` (distsim-gpu) profile of ``config``.

    ``overrides`` replace the profile's keys, except ``scheduler_options``, which is merged into the
    profile's (so the dashboard stays on loopback unless an override names ``dashboard_address``)."""
    from dask_jobqueue import SLURMCluster

    cfg = yaml.safe_load(Path(config).read_text())
    profile = cfg["jobqueue"]["slurm"] if kind == "cpu" else cfg["distsim-gpu"]
    kwargs = {k.replace("-", "_"): v for k, v in profile.items() if v is not None}
    scheduler_options = {**kwargs.get("scheduler_options", {}), **overrides.pop("scheduler_options", {})}
    kwargs.update(overrides, scheduler_options=scheduler_options)
    if certs is not None:
        kwargs["security"] = security(certs)
        kwargs["protocol"] = "tls://"
    return SLURMCluster(**kwargs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kind", choices=["gpu", "cpu"], default="gpu")
    ap.add_argument("--certs", default=None, help="folder of the files made by deployments/tls/make_certs.py")
    ap.add_argument("--config", default=str(HERE / "jobqueue.yaml"))
    ap.add_argument("--jobs", type=int, default=1, help="SLURM jobs (nodes) to start")
    ap.add_argument("--print-job-script", action="store_true", help="print the worker job script and exit")
    ap.add_argument("--sweep", default=None, help="a sweep YAML to run on the cluster")
    args = ap.parse_args()
    cluster = make_cluster(args.kind, args.certs, args.config)
    if args.print_job_script:
        print(cluster.job_script())
        cluster.close()
        return 0
    from distributed import Client

    cluster.scale(jobs=args.jobs)
    with Client(cluster) as client:
        port, host = client.scheduler_info()["services"]["dashboard"], socket.gethostname()
        print(f"scheduler {cluster.scheduler_address}; dashboard on this host's loopback: "
              f"`ssh -L {port}:127.0.0.1:{port} {host}`, then http://localhost:{port}/status; waiting for workers ...",
              file=sys.stderr)
        client.wait_for_workers(1)
        if args.sweep:
            import dask

            from distsim.cli import main as distsim_main

            with dask.config.set(client_config(args.certs) if args.certs else {}):  # the CLI's client: TLS
                return distsim_main(["--scheduler", cluster.scheduler_address,
                                     *(["--cpu"] if args.kind == "cpu" else []), "sweep", args.sweep])
        input("cluster running; press Enter to stop ")
    cluster.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
