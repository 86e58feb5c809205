#!/usr/bin/env bash
# A plain install works: build the wheel, install it with NO extras in a fresh venv, and from outside
# the repository run every command's --help, `distsim info`, a tiny job of each workload, and then
# every README command and Python snippet as written (tests/unit/test_readme.py, run by a pytest
# installed beside the wheel: the package itself gets no extras).
#   bash scripts/check-plain-install.sh        (CI runs it after the test suite; needs the package index)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/venv"
bin="$work/venv/bin"
"$bin/python" -m pip install -q --upgrade pip
"$bin/python" -m pip wheel -q --no-deps -w "$work/dist" "$root"
"$bin/python" -m pip install -q "$work"/dist/distsim_bio-*.whl
cd "$work"
# one dask/distributed in every profile: the versions the gpu extra (dask-cuda) forces
"$bin/python" - <<'PY'
import dask, distributed
assert dask.__version__ == distributed.__version__ == "2026.7.1", (dask.__version__, distributed.__version__)
PY
ex="$root/examples"
run() { echo "+ distsim $*"; "$bin/distsim" "$@" > "$work/out.txt" 2>&1 || { cat "$work/out.txt"; exit 1; }; }
run --help
for c in "pbn simulate" "pbn steady-state" "pbn influence" "pbn convert" "ssa simulate" "grn infer" \
         "mcmc rates" "sweep" "export" "info"; do
  run $c --help
done
run info
run --in-process -q pbn simulate "$ex/pbn/bnmpy_shmulevich2002_examplePBN_3n.txt" -p 0.01 --steps 50 \
    --trajectories 128 --target x1=1 -o pbn.nc
run --cpu --workers 2 -q pbn steady-state "$ex/pbn/bnmpy_shmulevich2002_examplePBN_3n.txt" -p 0.01 \
    --target x1=1 -r 1e-2 -o ss.nc
run --in-process -q ssa simulate "$ex/ssa/michaelis_menten.rxn" --t-end 10 --points 3 -n 100 -o ssa.nc
run export ssa.nc -o ssa.csv
run --in-process -q grn infer "$ex/grn/mouse_eye.toml" -g 16 --population 32 -o grn.nc
run --in-process -q mcmc rates "$ex/mcmc/michaelis_menten.rxn" --data "$ex/mcmc/mm_observations.csv" \
    --iterations 6 --burn-in 2 --chains 2 --prior k1=gamma:2,1000 --prior k2=gamma:2,10 --prior k3=gamma:2,10 \
    -o mcmc.nc
run --in-process -q sweep "$ex/sweeps/mm_grid.yaml" --check
# the example models ship in the wheel
shipped=$("$bin/python" -c "import distsim; print(distsim.examples_dir())")
case "$shipped" in "$work"/venv/*) ;; *) echo "examples_dir() is $shipped, not inside the venv"; exit 1;; esac
run --in-process -q sweep "$shipped/sweeps/mm_grid.yaml" --check
"$bin/python" - "$ex" <<'PY'
import sys

import distsim

ex = sys.argv[1]
net = distsim.pbn.load(f"{ex}/pbn/bnmpy_shmulevich2002_examplePBN_3n.txt", perturbation=0.01)
ds = distsim.pbn.simulate(net, steps=10, trajectories=64, seed=1)
assert ds.sizes["node"] == 3 and ((ds["final_frequency"] >= 0) & (ds["final_frequency"] <= 1)).all()
ens = distsim.ssa.simulate(distsim.ssa.load(f"{ex}/ssa/michaelis_menten.rxn"), t_end=5, points=3, realizations=50)
assert float(ens["mean"].sel(species="P").isel(time=-1)) > 0
print("python API ok")
PY
# every tutorial, against this plain install
for t in "$root"/docs/tutorials/*.py; do (cd "$work" && "$bin/python" "$t" >/dev/null) || { echo "tutorial $t failed"; exit 1; }; done
echo "tutorials ok"
# every README command and snippet, against this plain install (pytest is the harness, not an extra)
"$bin/python" -m pip install -q pytest
"$bin/pytest" -q -p no:cacheprovider "$root/tests/unit/test_readme.py"
echo "plain install: ok"
