#!/usr/bin/env bash
# Results must not depend on the process layout: the losses of 20 steps and the final weights at
# (tp, dp) = (2, 1), (1, 2) and (1, 2) with ZeRO-1 agree with (1, 1) to 1e-5 relative.
# usage: test_layout.sh BIN SRC PY NAME [model overrides...]
BIN=$1 SRC=$2 PY=$3 NAME=$4; shift 4
WORK=$(mktemp -d /tmp/headroom_layout.XXXXXX); trap 'rm -rf "$WORK"' EXIT
source "$(dirname "$0")/common.sh"
shards
args=($(tiny_args) "$@")
check "tp1 dp1 runs" run 1 "$WORK/a" "${args[@]}"
check "tp2 dp1 runs" run 2 "$WORK/b" "${args[@]}" --parallel.tp 2 --parallel.dp 1
check "tp1 dp2 runs" run 2 "$WORK/c" "${args[@]}" --parallel.tp 1 --parallel.dp 2
check "tp1 dp2 zero1 runs" run 2 "$WORK/z" "${args[@]}" --parallel.dp 2 --parallel.zero1 true
for f in "$WORK"/*.log; do grep -q "error" "$f" && { echo "--- $f"; tail -5 "$f"; }; done
check "$NAME: tp=2 matches tp=1" "$PY" "$SRC/validation/mpi/compare_runs.py" "$WORK/b" "$WORK/a" 1e-5
check "$NAME: dp=2 matches dp=1" "$PY" "$SRC/validation/mpi/compare_runs.py" "$WORK/c" "$WORK/a" 1e-5
check "$NAME: dp=2 ZeRO-1 matches dp=1" "$PY" "$SRC/validation/mpi/compare_runs.py" "$WORK/z" "$WORK/a" 1e-5
finish
