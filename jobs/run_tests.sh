#!/usr/bin/env bash
# Sets up (packages + build) and runs the whole test suite with CTest. Labels: unit, mpi, slurm,
# validation, gpu (skipped without a GPU). Extra arguments go to ctest, e.g. `-L unit`.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$root/build}
# The suite includes the CUDA backend's build and emulated tests: a build the quickstart configured
# without it (no GPU there) is reconfigured with it (built when nvcc is found, as always).
if grep -q '^HEADROOM_CUDA:BOOL=OFF' "$build/CMakeCache.txt" 2>/dev/null && [[ -z ${CMAKE_ARGS:-} ]]; then
  echo "run_tests: reconfiguring $build with the CUDA backend"
  cmake "$build" -DHEADROOM_CUDA=ON >/dev/null
fi
"$root/jobs/setup.sh"
cd "$build"
ctest --output-on-failure -j "${HEADROOM_TEST_JOBS:-2}" "$@"
