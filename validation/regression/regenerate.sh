#!/usr/bin/env bash
# Re-run the regression runs and rewrite validation/reference/regression.json with their figures
# and the check of each figure from extract.py's RULES. Review the change with `git diff` before
# committing it: a figure that moved is a change of what the build computes.
#
# usage: validation/regression/regenerate.sh [BUILD_DIR]   (default: build)
#        REGRESSION_KEEP=DIR keeps the runs in DIR instead of a temporary directory.
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${1:-$SRC/build}
if [[ -n ${REGRESSION_KEEP:-} ]]; then
  OUT=$REGRESSION_KEEP
else
  OUT=$(mktemp -d -t headroom_regression.XXXXXX)
  trap 'rm -rf "$OUT"' EXIT
fi
"$SRC/validation/regression/run.sh" "$BUILD" "$OUT"
tmp=$SRC/validation/reference/regression.json.tmp
REGRESSION_COMMAND="validation/regression/regenerate.sh [BUILD_DIR]" \
  /usr/bin/python3 "$SRC/validation/regression/extract.py" --reference "$OUT" >"$tmp"
mv "$tmp" "$SRC/validation/reference/regression.json"
echo "regenerate.sh: wrote validation/reference/regression.json" \
     "($(grep -c '"value"' "$SRC/validation/reference/regression.json") figures); see git diff"
