#!/usr/bin/env bash
# Sets up (packages + build) and runs the whole test suite with CTest. Labels: unit, mpi, slurm,
# validation, gpu (skipped without a GPU). Extra arguments go to ctest, e.g. `-L unit`.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$root/build}
# The suite includes the CUDA backend's build (when nvcc is found, as always) and the stages on the
# emulated GPU (bin/emulated, HEADROOM_EMULATED_DEVICE): a build configured without them (the
# quickstart's, on a machine without a GPU) is reconfigured with them.
if [[ -f $build/CMakeCache.txt ]]; then
  turn_on=()
  if grep -q '^HEADROOM_CUDA:BOOL=OFF' "$build/CMakeCache.txt" && [[ -z ${CMAKE_ARGS:-} ]]; then
    turn_on+=(-DHEADROOM_CUDA=ON)
  fi
  grep -q '^HEADROOM_EMULATED_DEVICE:BOOL=ON' "$build/CMakeCache.txt" || turn_on+=(-DHEADROOM_EMULATED_DEVICE=ON)
  if ((${#turn_on[@]})); then
    echo "run_tests: reconfiguring $build with ${turn_on[*]}"
    cmake "$build" "${turn_on[@]}" >/dev/null
  fi
else
  export CMAKE_ARGS="-DHEADROOM_EMULATED_DEVICE=ON ${CMAKE_ARGS:-}"
fi
"$root/jobs/setup.sh"
cd "$build"
ctest --output-on-failure -j "${HEADROOM_TEST_JOBS:-2}" "$@"
