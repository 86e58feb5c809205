#!/usr/bin/env bash
# MaBoSS.GPU (github.com/sysbio-curie/MaBoSS.GPU) built on this machine and run beside distsim on the
# same GPU, the same .bnd/.cfg (the models MaBoSS.GPU ships) and the same trajectory counts (issue 31).
#
#   bash benchmarks/maboss_gpu_peer.sh [N ...]        # default N: 100000 1000000
#
# Run from the project root on a GPU machine with CUDA (nvcc), cmake and a python3 that imports
# distsim and cupy. No network is needed: everything comes from .peers/ (git-ignored), made on a
# machine with network access by
#   git --git-dir=<clone of sysbio-curie/MaBoSS.GPU> archive --format=tar.gz --prefix=MaBoSS.GPU/ \
#       -o .peers/MaBoSS.GPU-$PEER_COMMIT.tar.gz $PEER_COMMIT
#   (cd .peers/debs && apt-get download flex bison libfl2 libfl-dev m4)     # Debian 12 amd64
# flex, bison and m4 are unpacked (dpkg -x) into a private prefix put first on PATH; the source gets
# the small fixes it needs for CUDA 13 and an offline build (patches below, each one checked).
# Environment: PEER_WORK (build folder, default /tmp/maboss_gpu_peer), PEER_MODELS (default: sizek
# Montagud2022_Prostate_Cancer metastasis cellcycle), PEER_REPEATS (default 3), PEER_ARCH (compute
# capability as 90; default: nvidia-smi's), OUT (if set, the log and the table are copied there);
# PEER_TOOLS_ONLY=1 / PEER_BUILD_ONLY=1 stop after unpacking the tools / after the build.
set -euo pipefail

PEER_COMMIT=bc3a320075b43aae58210294087772277ead7d2d  # MaBoSS.GPU master, 2024-05-06
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PEERS=$ROOT/.peers
W=${PEER_WORK:-/tmp/maboss_gpu_peer}
LOG=$W/build.log
TARBALL=$PEERS/MaBoSS.GPU-$PEER_COMMIT.tar.gz
MODELS=${PEER_MODELS:-sizek Montagud2022_Prostate_Cancer metastasis cellcycle}
REPEATS=${PEER_REPEATS:-3}
PEER_CUDA_EXTRA=${PEER_CUDA_EXTRA:-}
if [ $# -gt 0 ]; then TRAJ=("$@"); else TRAJ=(100000 1000000); fi

say() { echo "[maboss_gpu_peer] $*" >&2; }
die() { say "ERROR: $*"; exit 1; }

[ -f "$TARBALL" ] || die "missing $TARBALL (see the header of this script)"
compgen -G "$PEERS/debs/flex_*.deb" >/dev/null || die "missing $PEERS/debs/flex_*.deb (see the header)"
# PEER_REUSE=1: keep a build that an earlier run of this script left in $W (e.g. built with PEER_BUILD_ONLY=1
# while other work used the GPU)
REUSE=0
if [ "${PEER_REUSE:-0}" = 1 ] && [ -x "$W/MaBoSS.GPU/build/MaBoSS.GPU" ]; then REUSE=1; else rm -rf "$W"; fi
mkdir -p "$W/prefix"
: >"$LOG"

# 1. flex, bison, m4 from their Debian packages, in a private prefix
for deb in "$PEERS"/debs/*.deb; do dpkg -x "$deb" "$W/prefix"; done
export PATH=$W/prefix/usr/bin:$PATH
export BISON_PKGDATADIR=$W/prefix/usr/share/bison
export M4=$W/prefix/usr/bin/m4
export LD_LIBRARY_PATH=$W/prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for tool in flex bison m4; do
  "$tool" --version 2>&1 | head -1 | sed "s/^/[maboss_gpu_peer] $tool: /" >&2 || die "$tool does not run"
done
if [ "${PEER_TOOLS_ONLY:-0}" = 1 ]; then say "tools ok (PEER_TOOLS_ONLY=1: stopping here)"; exit 0; fi

# 2. the source, patched
SRC=$W/MaBoSS.GPU
[ "$REUSE" = 1 ] || tar xzf "$TARBALL" -C "$W"
ARCH=${PEER_ARCH:-}
if [ -z "$ARCH" ] && command -v nvidia-smi >/dev/null; then
  ARCH=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')
fi
[ -n "$ARCH" ] || die "no GPU compute capability (set PEER_ARCH, e.g. 90)"
[ "$REUSE" = 1 ] || python3 "$ROOT/benchmarks/maboss_gpu_peer.py" --patch "$SRC" 2>&1 | tee -a "$LOG" >&2

# 3. configure and build (offline: the unit tests, which download googletest, are dropped by the patch)
PEER_BIN=""
NVCC=$(command -v nvcc || true)
[ -n "$NVCC" ] || die "nvcc not on PATH"
# the toolkit's root (nvcc may be a wrapper script), then every folder that may hold its headers and libraries:
# the toolkit's, the driver's, and NVIDIA's pip wheels (nvidia/cu13/{include,lib}) of python3
if [ -z "${CUDA_HOME:-}" ]; then
  for c in "$(dirname "$(dirname "$(readlink -f "$NVCC")")")" /usr/local/cuda /usr/local/cuda-*; do
    [ -f "$c/include/cuda_runtime.h" ] && { CUDA_HOME=$c; break; }
  done
fi
[ -n "${CUDA_HOME:-}" ] || CUDA_HOME=$(dirname "$("$NVCC" --dryrun -x cu /dev/null 2>&1 | sed -n 's/^#\$ _TOP_=//p' | head -1)")
ROOTS=("$CUDA_HOME" "$CUDA_HOME"/targets/x86_64-linux /usr/local/nvidia)
while IFS= read -r r; do [ -n "$r" ] && ROOTS+=("$r"); done < <(python3 - <<'PY' 2>/dev/null || true
import glob, os
try:
    import nvidia
    for p in nvidia.__path__:
        for d in sorted(glob.glob(os.path.join(p, "*"))):
            if os.path.isdir(os.path.join(d, "include")) or os.path.isdir(os.path.join(d, "lib")):
                print(d)
except ImportError:
    pass
PY
)
for r in ${PEER_CUDA_EXTRA//:/ }; do ROOTS+=("$r"); done  # extra roots, colon-separated
mkdir -p "$W/lib"
for r in "${ROOTS[@]}"; do
  for l in "$r/lib64" "$r/lib" "$r/lib64/stubs" "$r/lib/stubs"; do
    [ -d "$l" ] || continue
    for so in "$l"/lib*.so*; do  # unversioned names for the linker (pip wheels ship only libX.so.N)
      [ -e "$so" ] || continue
      base=$(basename "$so"); base=${base%%.so*}.so
      [ -e "$W/lib/$base" ] || ln -s "$so" "$W/lib/$base"
    done
    case "$l" in *stubs) ;; *) export LD_LIBRARY_PATH=$l:$LD_LIBRARY_PATH ;; esac
  done
done
if [ ! -e "$W/lib/libcuda.so" ]; then  # the driver's library (MaBoSS.GPU links -lcuda)
  drv=$( (ldconfig -p 2>/dev/null || true) | awk '/libcuda\.so(\.1)? /{print $NF; exit}')
  [ -n "$drv" ] && ln -s "$drv" "$W/lib/libcuda.so"
fi
[ -e "$W/lib/libcuda.so" ] || say "libcuda.so: NOT FOUND (the link will fail)"
export LIBRARY_PATH=$W/lib${LIBRARY_PATH:+:$LIBRARY_PATH}
INC=""  # the first root holding each header the build needs (the toolkit's own first)
for h in cuda_runtime.h curand_kernel.h nvrtc.h nvJitLink.h; do
  found=""
  for r in "${ROOTS[@]}"; do [ -f "$r/include/$h" ] && { found=$r/include; break; }; done
  say "$h: ${found:-NOT FOUND (the build will fail)}"
  case ":$INC:" in *":$found:"*) ;; *) [ -n "$found" ] && INC=$INC:$found ;; esac
done
# CUDA 13 keeps thrust/cub under include/cccl, which nvcc adds by itself but g++ (MaBoSS.GPU's .cpp files) does not
for r in "${ROOTS[@]}"; do [ -d "$r/include/cccl/thrust" ] && { INC=$INC:$r/include/cccl; break; }; done
export CPATH=${INC#:}${CPATH:+:$CPATH}
# g++ 13 no longer brings <cstdint> in through other headers (src/state_word.h uses uint32_t): force it
# for the host C++ files only (the same header is also stringified for NVRTC, so it is not patched)
# cmake builds only MaBoSS.GPU: make the folders its generator targets would have made
mkdir -p "$SRC/src/parser/generated" "$SRC/src/jit_kernels/include" "$SRC/src/jit_kernels/fatbin"
echo "[maboss_gpu_peer] $(cmake --version | head -1); $(gcc --version | head -1)" | tee -a "$LOG" >&2
say "CUDA: $CUDA_HOME ($("$NVCC" --version | tail -1)), arch sm_$ARCH; build log: $LOG"
LINK="-L$W/lib"
if [ "$REUSE" = 1 ]; then
  PEER_BIN=$SRC/build/MaBoSS.GPU
  say "reusing $PEER_BIN (PEER_REUSE=1)"
elif cmake -S "$SRC" -B "$SRC/build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER="$NVCC" \
       -DMABOSS_ARCH="$ARCH" -DCMAKE_CUDA_ARCHITECTURES="$ARCH" -DFLEX_EXECUTABLE="$W/prefix/usr/bin/flex" \
       -DBISON_EXECUTABLE="$W/prefix/usr/bin/bison" -DCMAKE_EXE_LINKER_FLAGS="$LINK" \
       -DCMAKE_CXX_FLAGS="-include cstdint" >>"$LOG" 2>&1 \
   && cmake --build "$SRC/build" --target MaBoSS.GPU -j "$(nproc)" >>"$LOG" 2>&1; then
  PEER_BIN=$SRC/build/MaBoSS.GPU
  say "built $PEER_BIN"
else
  say "MaBoSS.GPU did not build; the last lines of $LOG:"
  tail -40 "$LOG" >&2
  if [ -d "$SRC/build" ]; then  # the failing command in full, and the flags cmake generated
    say "again with -j1 VERBOSE=1 (the failing command), into $LOG:"
    cmake --build "$SRC/build" --target MaBoSS.GPU -j 1 -- VERBOSE=1 >>"$LOG" 2>&1 || true
    tail -25 "$LOG" >&2
    for f in "$SRC"/build/CMakeFiles/dumpbin.dir/flags.make "$SRC"/build/CMakeFiles/MaBoSSGCore.dir/flags.make; do
      [ -f "$f" ] && { say "$f:"; cat "$f" | tee -a "$LOG" >&2; }
    done
  fi
fi

if [ "${PEER_BUILD_ONLY:-0}" = 1 ]; then [ -n "$PEER_BIN" ] && exit 0 || die "build failed"; fi

# 4. both engines, same models and counts; the table on stdout
status=0
python3 "$ROOT/benchmarks/maboss_gpu_peer.py" --peer-bin "$PEER_BIN" --data "$SRC/data" --models $MODELS \
  --trajectories "${TRAJ[@]}" --repeats "$REPEATS" --out "$W/table.md" || status=$?
if [ -n "${OUT:-}" ]; then cp "$LOG" "$OUT/maboss_gpu_peer_build.log"; cp "$W/table.md" "$OUT/" 2>/dev/null || true; fi
[ -n "$PEER_BIN" ] || die "MaBoSS.GPU was not built (distsim's times above are alone)"
exit $status
