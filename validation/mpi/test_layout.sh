#!/usr/bin/env bash
# Results must not depend on the process layout: the losses of 20 steps and the final weights at
# (tp, dp) = (2, 1), (1, 2) and (1, 2) with ZeRO-1 lie within noise_floor.DEFAULT_FACTOR times the
# noise floor of the (1, 1) run: its distance to itself under two other OpenBLAS kernel sets
# (common.sh floor_kernels). A learning rate 1% higher must land beyond that tolerance, so the test
# can tell a real change from rounding.
# usage: test_layout.sh BIN SRC PY NAME [model overrides...]
BIN=$1 SRC=$2 PY=$3 NAME=$4; shift 4
WORK=$(mktemp -d /tmp/headroom_layout.XXXXXX); trap 'rm -rf "$WORK"' EXIT
source "$(dirname "$0")/common.sh"
shards
args=($(tiny_args) "$@")
check "tp1 dp1 runs" run 1 "$WORK/a" "${args[@]}"
floor=($(run_floor 1 "$WORK/a" "${args[@]}"))
check "tp2 dp1 runs" run 2 "$WORK/b" "${args[@]}" --parallel.tp 2 --parallel.dp 1
check "tp1 dp2 runs" run 2 "$WORK/c" "${args[@]}" --parallel.tp 1 --parallel.dp 2
check "tp1 dp2 zero1 runs" run 2 "$WORK/z" "${args[@]}" --parallel.dp 2 --parallel.zero1 true
check "lr +1% runs" run 1 "$WORK/lr" "${args[@]}" --train.lr 3.03e-3
for f in "$WORK"/*.log; do grep -q "error" "$f" && { echo "--- $f"; tail -5 "$f"; }; done
cmp() { "$PY" "$SRC/validation/mpi/compare_runs.py" "$@" "${floor[@]}"; }
check "$NAME: tp=2 matches tp=1" cmp "$WORK/b" "$WORK/a" --name "$NAME tp=2"
check "$NAME: dp=2 matches dp=1" cmp "$WORK/c" "$WORK/a" --name "$NAME dp=2"
check "$NAME: dp=2 ZeRO-1 matches dp=1" cmp "$WORK/z" "$WORK/a" --name "$NAME dp=2 zero1"
check "$NAME: lr +1% is beyond the tolerance" cmp "$WORK/lr" "$WORK/a" --name "$NAME lr+1%" --power
finish
