#!/usr/bin/env bash
# Start a TLS Dask scheduler on this (head) node. Usage: start-scheduler.sh CERT_DIR [PORT]
# Writes the scheduler address to $CERT_DIR/../scheduler.json (a scheduler file workers and clients can use).
set -euo pipefail
CERTS=${1:?usage: start-scheduler.sh CERT_DIR [PORT]}
PORT=${2:-8786}
exec dask scheduler --protocol tls --port "$PORT" --dashboard-address :8787 \
    --tls-ca-file "$CERTS/ca.pem" --tls-cert "$CERTS/node.pem" --tls-key "$CERTS/node-key.pem" \
    --scheduler-file "${SCHEDULER_FILE:-$CERTS/../scheduler.json}"
