"""Plumbing shared by the command modules: the Dask client of a command, parsing helpers, the end of a run."""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from typing import Any, Iterator


@contextlib.contextmanager
def client(args: argparse.Namespace) -> Iterator[Any]:
    if args.in_process:
        yield None
        return
    from ..cluster import connect

    if args.scheduler:
        client = connect(args.scheduler)
    else:
        client = connect(gpus=not args.cpu and "auto", n_workers=args.workers)
    try:
        if not args.quiet:
            print(f"[distsim] cluster: {describe(client)}", file=sys.stderr)
        yield client
    finally:
        client.close()
        cluster = getattr(client, "cluster", None)
        if cluster is not None and not args.scheduler:
            cluster.close()


def describe(client: Any) -> str:
    workers = client.scheduler_info(n_workers=-1)["workers"]
    gpus = sum(1 for w in workers.values() if w.get("resources", {}).get("GPU"))
    kind = f"{gpus} GPU worker(s)" if gpus else f"{len(workers)} CPU worker(s)"
    return f"{kind} at {client.scheduler.address}"


def parse_initial(text: str) -> Any:
    if text in ("random", "zeros", "ones"):
        return text
    out = {}
    for part in text.split(","):
        if "=" not in part:
            raise ValueError(f"--initial: expected random, zeros, ones or A=1,B=0; got {text!r}")
        k, v = part.split("=", 1)
        out[k.strip()] = int(v)
    return out


def finish(ds: Any, output: str | None, t0: float, **figures: str | None) -> int:
    """End of a command: write the result, name the figures already drawn, print the total time."""
    from .. import results

    if output:
        results.write(ds, output)
        print(f"written: {output}")
    for kind, path in figures.items():
        if path:
            print(f"{kind}: {path}")
    print(f"total {time.perf_counter() - t0:.2f} s")
    return 0
