#!/usr/bin/env bash
# Installs what Headroom needs from Debian's archive (only what is missing), then configures and
# builds into build/. Idempotent: on a machine that has everything it prints two lines and runs an
# incremental build.
#   jobs/setup.sh            # packages + Release build
#   BUILD_DIR=b CMAKE_ARGS="-DHEADROOM_CUDA=OFF" jobs/setup.sh
#   HEADROOM_BUILD_TARGETS="prepare pretrain" jobs/setup.sh   # only these programs
#   SETUP_PACKAGES_ONLY=1 jobs/setup.sh                       # only the packages
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$root/build}

packages=(
  build-essential cmake git clang-format
  libopenmpi-dev openmpi-bin libhdf5-openmpi-dev hdf5-tools
  libboost-program-options-dev libopenblas-openmp-dev libgtest-dev nlohmann-json3-dev libicu-dev
  zlib1g-dev libzstd-dev
  python3-torch python3-h5py python3-numpy python3-matplotlib
  slurmctld slurmd slurm-client munge
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${#missing[@]} Debian packages: ${missing[*]}"
  sudo=""; [[ $(id -u) -eq 0 ]] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" \
    >/tmp/headroom-apt.log 2>&1 || { tail -30 /tmp/headroom-apt.log; echo "setup: apt-get failed (log: /tmp/headroom-apt.log)"; exit 1; }
else
  echo "setup: all ${#packages[@]} Debian packages present"
fi
# SETUP_PACKAGES_ONLY=1: stop here (the quickstart gathers its corpus beside the build).
[[ ${SETUP_PACKAGES_ONLY:-0} == 1 ]] && exit 0

jobs=${HEADROOM_BUILD_JOBS:-$(nproc)}
if [[ ! -f $build/CMakeCache.txt ]]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release ${CMAKE_ARGS:-} >"$root/.cmake-configure.log" 2>&1 \
    || { cat "$root/.cmake-configure.log"; echo "setup: cmake configure failed"; exit 1; }
  grep -E "Headroom:" "$root/.cmake-configure.log" || true
fi
# HEADROOM_BUILD_TARGETS="prepare pretrain ...": build only those (the ones that exist) instead of all.
targets=() names=()
if [[ -n ${HEADROOM_BUILD_TARGETS:-} ]]; then
  cmake "$build" >/dev/null 2>&1 || true  # re-glob, so programs added since the last configure count
  available=$(cmake --build "$build" --target help 2>/dev/null || true)
  for t in $HEADROOM_BUILD_TARGETS; do
    if grep -qE "^(\.\.\. )?$t(:| |$)" <<<"$available"; then targets+=(--target "$t") names+=("$t"); fi
  done
fi
echo "setup: building in $build with $jobs jobs${names[*]:+ (only ${names[*]})}"
# Under pipefail the pipeline fails exactly when the build does (the filter's own status is masked:
# `... | grep || true` would also mask the build's, and did).
cmake --build "$build" -j "$jobs" "${targets[@]}" 2>&1 | { grep -vE '^\[ *[0-9]+%\]|^-- ' || true; } \
  || { echo "setup: build failed"; exit 1; }
echo "setup: done; executables in $build/bin"
