#!/usr/bin/env bash
# Start a TLS Dask scheduler on this (head) node. Usage: start-scheduler.sh CERT_DIR [PORT]
# Writes the scheduler address to $CERT_DIR/../scheduler.json (a scheduler file workers and clients can use).
# The dashboard (plain HTTP, no authentication) listens on this node's loopback only, port
# ${DASHBOARD_PORT:-8787}: from your machine, `ssh -L 8787:127.0.0.1:8787 HEAD`, then open
# http://localhost:8787/status.
set -euo pipefail
CERTS=${1:?usage: start-scheduler.sh CERT_DIR [PORT]}
PORT=${2:-8786}
exec dask scheduler --protocol tls --port "$PORT" --dashboard-address "127.0.0.1:${DASHBOARD_PORT:-8787}" \
    --tls-ca-file "$CERTS/ca.pem" --tls-cert "$CERTS/scheduler.pem" --tls-key "$CERTS/scheduler-key.pem" \
    --scheduler-file "${SCHEDULER_FILE:-$CERTS/../scheduler.json}"
