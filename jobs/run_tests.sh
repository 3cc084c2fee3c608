#!/usr/bin/env bash
# Sets up (packages + build) and runs the whole test suite with CTest. Labels: unit, mpi, slurm,
# validation, gpu (skipped without a GPU). Extra arguments go to ctest, e.g. `-L unit`.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/jobs/setup.sh"
cd "${BUILD_DIR:-$root/build}"
ctest --output-on-failure -j "${HEADROOM_TEST_JOBS:-2}" "$@"
