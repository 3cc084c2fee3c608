#!/usr/bin/env bash
# The CTest test regression_reference: run.sh, extract.py, then compare.py against
# validation/reference/regression.json. Exits nonzero naming every figure that moved.
#
# usage: validation/regression/check.sh BUILD_DIR [OUT_DIR]   (default: a temporary directory,
#        removed afterwards unless the check fails or REGRESSION_KEEP is set)
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${1:?usage: check.sh BUILD_DIR [OUT_DIR]}
OUT=${2:-}
if [[ -z $OUT ]]; then
  OUT=$(mktemp -d /tmp/headroom_regression.XXXXXX)
  [[ -n ${REGRESSION_KEEP:-} ]] || trap 'rm -rf "$OUT"' EXIT
fi
"$SRC/validation/regression/run.sh" "$BUILD" "$OUT"
/usr/bin/python3 "$SRC/validation/regression/extract.py" "$OUT" >"$OUT/figures.json"
if ! /usr/bin/python3 "$SRC/validation/regression/compare.py" \
    "$SRC/validation/reference/regression.json" "$OUT/figures.json"; then
  trap - EXIT
  echo "check.sh: the runs and figures are kept in $OUT"
  exit 1
fi
