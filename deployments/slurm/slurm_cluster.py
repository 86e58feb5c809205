"""A TLS-secured distsim Dask cluster on SLURM through dask-jobqueue.

    python deployments/slurm/slurm_cluster.py --kind gpu --certs ~/.dask-tls --print-job-script
    python deployments/slurm/slurm_cluster.py --kind gpu --certs ~/.dask-tls --jobs 4 --sweep examples/sweeps/mm_grid.yaml

The scheduler runs in this process (on the login node or, better, inside a small SLURM job: see
``sweep.sbatch``); each SLURM job started by ``--jobs`` runs one node of workers that connect back
over TLS. ``--config`` defaults to the ``jobqueue.yaml`` next to this file.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent


def security(certs: str | Path) -> Any:
    from distributed.security import Security

    c = Path(certs).expanduser()
    return Security(tls_ca_file=str(c / "ca.pem"), tls_scheduler_cert=str(c / "node.pem"),
                    tls_scheduler_key=str(c / "node-key.pem"), tls_worker_cert=str(c / "node.pem"),
                    tls_worker_key=str(c / "node-key.pem"), tls_client_cert=str(c / "node.pem"),
                    tls_client_key=str(c / "node-key.pem"), require_encryption=True)


def make_cluster(kind: str = "gpu", certs: str | Path | None = None, config: str | Path = HERE / "jobqueue.yaml",
                 **overrides: Any) -> Any:
    """A ``SLURMCluster`` from the ``cpu`` (jobqueue.slurm) or ``gpu`` (distsim-gpu) profile of ``config``."""
    from dask_jobqueue import SLURMCluster

    cfg = yaml.safe_load(Path(config).read_text())
    profile = cfg["jobqueue"]["slurm"] if kind == "cpu" else cfg["distsim-gpu"]
    kwargs = {k.replace("-", "_"): v for k, v in profile.items() if v is not None}
    kwargs.update(overrides)
    if certs is not None:
        kwargs["security"] = security(certs)
        kwargs["protocol"] = "tls://"
    return SLURMCluster(**kwargs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kind", choices=["gpu", "cpu"], default="gpu")
    ap.add_argument("--certs", default=None, help="folder with ca.pem, node.pem, node-key.pem (deployments/tls)")
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
        print(f"scheduler {cluster.scheduler_address}; waiting for workers ...", file=sys.stderr)
        client.wait_for_workers(1)
        if args.sweep:
            from distsim.cli import main as distsim_main

            return distsim_main(["--scheduler", cluster.scheduler_address, *(["--cpu"] if args.kind == "cpu" else []),
                                 "sweep", args.sweep])
        input("cluster running; press Enter to stop ")
    cluster.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
