#!/usr/bin/env bash
# Start distsim workers on this node and connect them to a TLS scheduler.
# Usage: start-workers.sh CERT_DIR tls://HEAD:8786 [gpu|cpu] [N_CPU_WORKERS]
#   gpu: `dask cuda worker` = one worker per visible GPU, each with the resource GPU=1 (distsim's GPU tasks need it)
#   cpu: N single-threaded workers (default: one per core), resource CPU=1
# Each worker's dashboard (plain HTTP) listens on this node's loopback only, on a random port
# (`ssh -L PORT:127.0.0.1:PORT NODE` to look at one; the port is in the worker's log).
set -euo pipefail
CERTS=${1:?usage: start-workers.sh CERT_DIR ADDRESS [gpu|cpu] [N]}
ADDRESS=${2:?scheduler address, e.g. tls://head:8786}
KIND=${3:-gpu}
COMMON=(--nthreads 1 --dashboard-address 127.0.0.1:0
        --tls-ca-file "$CERTS/ca.pem" --tls-cert "$CERTS/worker.pem" --tls-key "$CERTS/worker-key.pem")
if [ "$KIND" = gpu ]; then
    exec dask cuda worker "$ADDRESS" --resources "GPU=1" "${COMMON[@]}"
else
    N=${4:-$(nproc)}
    exec env DASK_DISTSIM__BACKEND=cpu dask worker "$ADDRESS" --nworkers "$N" --resources "CPU=1" "${COMMON[@]}"
fi
