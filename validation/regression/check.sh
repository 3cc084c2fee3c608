#!/usr/bin/env bash
# The CTest test regression_reference: run.sh, extract.py, then compare.py against
# validation/reference/regression.json. The runs are made once more under each of two other
# OpenBLAS kernel sets (validation/floor_kernels.sh): what they move is the noise floor that
# compare.py measures every figure's difference against. Exits nonzero naming every figure that moved.
#
# usage: validation/regression/check.sh BUILD_DIR [OUT_DIR]   (default: a temporary directory,
#        removed afterwards unless the check fails or REGRESSION_KEEP is set)
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${1:?usage: check.sh BUILD_DIR [OUT_DIR]}
OUT=${2:-}
if [[ -z $OUT ]]; then
  OUT=$(mktemp -d -t headroom_regression.XXXXXX)
  [[ -n ${REGRESSION_KEEP:-} ]] || trap 'rm -rf "$OUT"' EXIT
fi
source "$SRC/validation/floor_kernels.sh"
"$SRC/validation/regression/run.sh" "$BUILD" "$OUT"
/usr/bin/python3 "$SRC/validation/regression/extract.py" "$OUT" >"$OUT/figures.json"
floors=()
for k in $(floor_kernels); do
  OPENBLAS_CORETYPE=$k "$SRC/validation/regression/run.sh" "$BUILD" "$OUT/floor.$k"
  /usr/bin/python3 "$SRC/validation/regression/extract.py" "$OUT/floor.$k" >"$OUT/figures.$k.json"
  floors+=(--floor "$OUT/figures.$k.json")
done
if ! /usr/bin/python3 "$SRC/validation/regression/compare.py" \
    "$SRC/validation/reference/regression.json" "$OUT/figures.json" "${floors[@]}"; then
  trap - EXIT
  echo "check.sh: the runs and figures are kept in $OUT"
  exit 1
fi
