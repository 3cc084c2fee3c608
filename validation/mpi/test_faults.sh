#!/usr/bin/env bash
# Faults: an error on one rank stops every rank promptly with that rank's message (no hang); a
# non-finite gradient is reported with the step and the parameter, then stops or is skipped as
# configured.
# usage: test_faults.sh BIN SRC PY
BIN=$1 SRC=$2 PY=$3
WORK=$(mktemp -d /tmp/headroom_faults.XXXXXX); trap 'rm -rf "$WORK"' EXIT
source "$(dirname "$0")/common.sh"
shards
args=($(tiny_args) --train.steps 50)

start=$(date +%s)
HEADROOM_INJECT_FAULT="error,rank=1,step=3" timeout 120 mpirun -np 2 "$BIN/pretrain" --run-dir "$WORK/a" \
  "${args[@]}" --parallel.dp 2 >"$WORK/a.log" 2>&1
rc=$?
check "a failing rank fails the job" test $rc -ne 0 -a $rc -ne 124
check "  ...promptly (no hang)" test $(( $(date +%s) - start )) -lt 60
check "  ...with that rank's message" grep -q "pretrain: error (rank 1 of 2): injected fault at step 3" "$WORK/a.log"

HEADROOM_INJECT_FAULT="nan,rank=0,step=4" mpirun -np 2 "$BIN/pretrain" --run-dir "$WORK/b" "${args[@]}" \
  --parallel.tp 2 >"$WORK/b.log" 2>&1
check "NaN gradient stops the run" test $? -eq 2
check "  ...naming step and parameter" grep -q "step 4: non-finite gradient.*layers.0.mlp.w_up" "$WORK/b.log"

HEADROOM_INJECT_FAULT="nan,rank=0,step=4" mpirun -np 1 "$BIN/pretrain" --run-dir "$WORK/c" "${args[@]}" \
  --train.nonfinite skip >"$WORK/c.log" 2>&1
check "nonfinite = skip continues" test $? -eq 0
check "  ...and logs the skipped update" grep -q "step 4: non-finite gradient.*update skipped" "$WORK/c.log"
finish
