#!/usr/bin/env bash
# Run the GPU test suite on a machine with a CUDA GPU and CuPy (e.g. a lent H100/H200):
#   bash scripts/gpu-test.sh            # gpu-marked tests + the CPU suite's kernel tests
#   bash scripts/gpu-test.sh -k steady  # extra pytest arguments pass through
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -d .whl ]; then source scripts/gpu-env.sh; fi
python3 -c "import cupy; assert cupy.cuda.is_available(), 'no usable GPU'" 
python3 -m pytest -m gpu -q -p no:cacheprovider "$@" tests
