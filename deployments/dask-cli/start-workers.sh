#!/usr/bin/env bash
# Start distsim workers on this node and connect them to a TLS scheduler.
# Usage: start-workers.sh CERT_DIR tls://HEAD:8786 [gpu|cpu] [N_CPU_WORKERS]
#   gpu: `dask cuda worker` = one worker per visible GPU, each with the resource GPU=1 (distsim's GPU tasks need it)
#   cpu: N single-threaded workers (default: one per core), resource CPU=1
set -euo pipefail
CERTS=${1:?usage: start-workers.sh CERT_DIR ADDRESS [gpu|cpu] [N]}
ADDRESS=${2:?scheduler address, e.g. tls://head:8786}
KIND=${3:-gpu}
TLS=(--tls-ca-file "$CERTS/ca.pem" --tls-cert "$CERTS/node.pem" --tls-key "$CERTS/node-key.pem")
if [ "$KIND" = gpu ]; then
    exec dask cuda worker "$ADDRESS" --resources "GPU=1" --nthreads 1 "${TLS[@]}"
else
    N=${4:-$(nproc)}
    exec env DASK_DISTSIM__BACKEND=cpu dask worker "$ADDRESS" --nworkers "$N" --nthreads 1 --resources "CPU=1" "${TLS[@]}"
fi
