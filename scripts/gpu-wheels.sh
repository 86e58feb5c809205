#!/usr/bin/env bash
# Download the wheels that the lent GPU machines lack (Python 3.12 there; no network there).
# Run from the project root on a machine with network access:  bash scripts/gpu-wheels.sh
# It fills ./.whl (git-ignored). Then name ".whl" in the device call's
# `carry` and begin the command with:
#   python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl \
#     && export PYTHONPATH=/tmp/site:$PWD || exit 1;
# The GPU image already has cupy-cuda13x 14.2, numpy 2.5, numba, xarray, pandas, scipy, pytest,
# click, cloudpickle, fsspec, toolz, pyyaml, jinja2, msgpack, psutil, nvidia-ml-py, cuda-core.
set -euo pipefail
dest=${1:-.whl}
mkdir -p "$dest"
plat=(--platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64
      --platform manylinux1_x86_64 --platform manylinux_2_5_x86_64)
pins=(tqdm==4.70.1 h5py==3.16.0 python-libsbml==5.21.2 dask==2026.7.1 distributed==2026.7.1 dask-cuda==26.10.0 rapids-dask-dependency==26.10.0
      partd==1.4.2 locket==1.0.0 tblib==3.2.2 zict==3.0.0 tornado==6.6.1 bokeh==3.9.2 xyzservices==2026.9.1
      zarr==3.1.6 numcodecs==0.16.6 donfig==0.8.1.post1 google-crc32c==1.9.0 h5netcdf==1.8.2
      arviz-stats==0.8.0 xarray-einstats==0.9.1 cryptography==50.0.2 cffi==2.1.1 pycparser==3.12
      smfsb==1.2.2 sbmlsh==0.0.4)
for p in "${pins[@]}" "$@"; do
  [[ $p == "$dest" ]] && continue
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    "${plat[@]}" -d "$dest" "$p"
done
ls -1 "$dest"; du -sh "$dest"
