# Source on a lent GPU machine (no network): installs the carried wheels from .whl/ into /tmp/site
# and puts them and this checkout on PYTHONPATH. Fill .whl/ first on a networked machine with
#   bash scripts/gpu-wheels.sh
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || return 1
export PYTHONPATH=/tmp/site:$PWD
export NUMBA_CACHE_DIR=${NUMBA_CACHE_DIR:-/tmp/numba-cache}
