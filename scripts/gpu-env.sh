# Source on a lent GPU machine (no network): installs the carried wheels from .whl/ into /tmp/site
# (once per machine: a warm machine keeps them) and puts them and this checkout on PYTHONPATH. Fill
# .whl/ first on a networked machine with
#   bash scripts/gpu-wheels.sh
if [ ! -f /tmp/site/.distsim-wheels ] || [ "$(ls .whl | sha256sum)" != "$(cat /tmp/site/.distsim-wheels)" ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl || return 1
    python3 -m compileall -q -j 0 /tmp/site > /dev/null  # .pyc as a user's pip install has them (cold starts)
    ls .whl | sha256sum > /tmp/site/.distsim-wheels
fi
export PYTHONPATH=/tmp/site:$PWD
export NUMBA_CACHE_DIR=${NUMBA_CACHE_DIR:-/tmp/numba-cache}
# The image sets PYTHONDONTWRITEBYTECODE=1 and its site-packages hold no .pyc: every new process compiled
# NumPy's, pandas', CuPy's and distsim's sources (0.7 s). A user's pip install writes .pyc, so bytecode goes to a
# cache here (a process's imports are compiled once per machine; new-process timings take a warm-up run first).
unset PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX=${PYTHONPYCACHEPREFIX:-/tmp/pyc}
