#!/usr/bin/env bash
# Results must not depend on the process layout: the losses of 20 steps and the final weights at
# (tp, dp) = (2, 1), (1, 2) and (1, 2) with ZeRO-1, at context-parallel cp = 2 and cp = 4, at tp = 2
# with sequence parallelism, and at compositions of them (tp × cp with sequence parallelism, cp × dp
# with ZeRO-1) lie within noise_floor.DEFAULT_FACTOR times the noise floor of the (1, 1) run: its
# distance to itself under two other OpenBLAS kernel sets (common.sh floor_kernels). Activation
# recomputation (full, selective) must not change a bit on one rank: the same products of the same
# inputs. A learning rate 1% higher must land beyond that tolerance, so the test can tell a real
# change from rounding. A case that masks documents (--data.document_mask true among its overrides)
# must also land beyond it without the mask: the sample corpus's short documents cut its windows.
# usage: test_layout.sh BIN SRC PY NAME [model overrides...]
BIN=$1 SRC=$2 PY=$3 NAME=$4; shift 4
WORK=$(mktemp -d -t headroom_layout.XXXXXX); trap 'rm -rf "$WORK"' EXIT
source "$(dirname "$0")/common.sh"
shards
args=($(tiny_args) "$@")
check "tp1 dp1 runs" run 1 "$WORK/a" "${args[@]}"
floor=($(run_floor 1 "$WORK/a" "${args[@]}"))
check "tp2 dp1 runs" run 2 "$WORK/b" "${args[@]}" --parallel.tp 2 --parallel.dp 1
check "tp1 dp2 runs" run 2 "$WORK/c" "${args[@]}" --parallel.tp 1 --parallel.dp 2
check "tp1 dp2 zero1 runs" run 2 "$WORK/z" "${args[@]}" --parallel.dp 2 --parallel.zero1 true
check "cp2 runs" run 2 "$WORK/cp2" "${args[@]}" --parallel.cp 2
check "cp4 runs" run 4 "$WORK/cp4" "${args[@]}" --parallel.cp 4
check "tp2 sequence-parallel runs" run 2 "$WORK/sp" "${args[@]}" --parallel.tp 2 --parallel.sequence_parallel true
check "tp2 cp2 sequence-parallel recompute full runs" run 4 "$WORK/tcs" "${args[@]}" --parallel.tp 2 --parallel.cp 2 \
  --parallel.sequence_parallel true --train.recompute full
check "cp2 dp2 zero1 recompute selective runs" run 4 "$WORK/cdz" "${args[@]}" --parallel.cp 2 --parallel.dp 2 \
  --parallel.zero1 true --train.recompute selective
check "recompute full runs" run 1 "$WORK/rf" "${args[@]}" --train.recompute full
check "recompute selective runs" run 1 "$WORK/rs" "${args[@]}" --train.recompute selective
check "lr +1% runs" run 1 "$WORK/lr" "${args[@]}" --train.lr 3.03e-3
masked=false; [[ " $* " == *" --data.document_mask true "* ]] && masked=true
$masked && check "unmasked runs" run 1 "$WORK/nomask" "${args[@]}" --data.document_mask false
for f in "$WORK"/*.log; do grep -q "error" "$f" && { echo "--- $f"; tail -5 "$f"; }; done
cmp() { "$PY" "$SRC/validation/mpi/compare_runs.py" "$@" "${floor[@]}"; }
check "$NAME: tp=2 matches tp=1" cmp "$WORK/b" "$WORK/a" --name "$NAME tp=2"
check "$NAME: dp=2 matches dp=1" cmp "$WORK/c" "$WORK/a" --name "$NAME dp=2"
check "$NAME: dp=2 ZeRO-1 matches dp=1" cmp "$WORK/z" "$WORK/a" --name "$NAME dp=2 zero1"
check "$NAME: cp=2 matches cp=1" cmp "$WORK/cp2" "$WORK/a" --name "$NAME cp=2"
check "$NAME: cp=4 matches cp=1" cmp "$WORK/cp4" "$WORK/a" --name "$NAME cp=4"
check "$NAME: tp=2 sequence-parallel matches tp=1" cmp "$WORK/sp" "$WORK/a" --name "$NAME tp=2 sp"
check "$NAME: tp=2 cp=2 sp, recompute full matches" cmp "$WORK/tcs" "$WORK/a" --name "$NAME tp=2 cp=2 sp full"
check "$NAME: cp=2 dp=2 ZeRO-1, recompute selective matches" cmp "$WORK/cdz" "$WORK/a" --name "$NAME cp=2 dp=2 selective"
check "$NAME: recompute full is bit-identical" "$PY" "$SRC/validation/mpi/compare_runs.py" "$WORK/rf" "$WORK/a" --exact --name "$NAME recompute full"
check "$NAME: recompute selective is bit-identical" "$PY" "$SRC/validation/mpi/compare_runs.py" "$WORK/rs" "$WORK/a" --exact --name "$NAME recompute selective"
check "$NAME: lr +1% is beyond the tolerance" cmp "$WORK/lr" "$WORK/a" --name "$NAME lr+1%" --power
$masked && check "$NAME: the document mask changes the run" cmp "$WORK/nomask" "$WORK/a" --name "$NAME unmasked" --power
finish
