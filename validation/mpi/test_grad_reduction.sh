#!/usr/bin/env bash
# How the gradients are summed over the replicas must not change the run. ZeRO-2 (gradients
# reduce-scattered to each rank's optimizer range) and the bucketed reduction that overlaps the
# backward (parallel.grad_bucket_mib) give the losses, gradient norms and weights of ZeRO-1 at dp = 2 and dp = 4,
# with tp = 2 and with cp = 2, within noise_floor.DEFAULT_FACTOR times the noise floor of the
# one-rank run (common.sh floor_kernels); at dp = 2 the buckets change no bit (each element is the
# same sum of two). A ZeRO-2 checkpoint resumes bit-exactly on its own layout and at tp = 2 without
# ZeRO within the floor. zero2 without zero1 is refused by key.
#
# parallel.grad_reduce_dtype = bf16 rounds what is reduced, so its floor is its own: how far the
# bf16 run at dp = 2 lies from the fp32 one. At dp = 2 a bf16 sum is one rounded addition (buckets
# change no bit); at dp = 4 with ZeRO-2 in buckets the additions come in another order, and the run
# must stay within the factor of that floor of dp = 2's, while the bf16 run itself must lie beyond
# the fp32 floor (it does round).
# usage: test_grad_reduction.sh BIN SRC PY
BIN=$1 SRC=$2 PY=$3
WORK=$(mktemp -d -t headroom_gradred.XXXXXX); trap 'rm -rf "$WORK"' EXIT
source "$(dirname "$0")/common.sh"
shards
# Two KV heads shared by tp = 2's ranks and layerwise QK norm: partial gradients summed over the TP
# group bucket by bucket. Buckets of 2 KiB: ~20 of them in this model.
args=($(tiny_args) --model.n_kv_heads 2 --model.qk_norm layer)
buckets=(--parallel.grad_bucket_mib 0.002)
zero1=(--parallel.zero1 true) zero2=(--parallel.zero1 true --parallel.zero2 true)
check "dp1 runs" run 1 "$WORK/a" "${args[@]}"
floor=($(run_floor 1 "$WORK/a" "${args[@]}"))
check "dp2 ZeRO-1 runs" run 2 "$WORK/z1" "${args[@]}" --parallel.dp 2 "${zero1[@]}"
check "dp2 ZeRO-1 in buckets runs" run 2 "$WORK/z1b" "${args[@]}" --parallel.dp 2 "${zero1[@]}" "${buckets[@]}"
check "  ...says how many buckets" grep -q "(ZeRO-1), gradients reduced in [0-9]* buckets" "$WORK/z1b/log.txt"
check "dp2 ZeRO-2 runs" run 2 "$WORK/z2" "${args[@]}" --parallel.dp 2 "${zero2[@]}"
check "  ...says ZeRO-2" grep -q "dp=2 (ZeRO-2)" "$WORK/z2/log.txt"
check "dp2 ZeRO-2 in buckets runs" run 2 "$WORK/z2b" "${args[@]}" --parallel.dp 2 "${zero2[@]}" "${buckets[@]}"
check "dp4 ZeRO-1 runs" run 4 "$WORK/d4z1" "${args[@]}" --parallel.dp 4 "${zero1[@]}"
check "dp4 ZeRO-2 in buckets runs" run 4 "$WORK/d4z2b" "${args[@]}" --parallel.dp 4 "${zero2[@]}" "${buckets[@]}"
check "tp2 dp2 ZeRO-2 in buckets runs" run 4 "$WORK/t2z2b" "${args[@]}" --parallel.tp 2 --parallel.dp 2 \
  --parallel.sequence_parallel true "${zero2[@]}" "${buckets[@]}"
check "cp2 dp2 ZeRO-2 in buckets runs" run 4 "$WORK/c2z2b" "${args[@]}" --parallel.cp 2 --parallel.dp 2 \
  "${zero2[@]}" "${buckets[@]}"
check "dp2 all-reduce in buckets runs" run 2 "$WORK/db" "${args[@]}" --parallel.dp 2 "${buckets[@]}"
check "dp2 all-reduce runs" run 2 "$WORK/d" "${args[@]}" --parallel.dp 2
bf16=(--parallel.grad_reduce_dtype bf16)
check "dp2 bf16 reduction runs" run 2 "$WORK/b2" "${args[@]}" --parallel.dp 2 "${bf16[@]}"
check "  ...says bf16" grep -q "gradients summed in bf16" "$WORK/b2/log.txt"
check "dp2 bf16 reduction in buckets runs" run 2 "$WORK/b2b" "${args[@]}" --parallel.dp 2 "${bf16[@]}" "${buckets[@]}"
check "dp4 bf16 ZeRO-2 in buckets runs" run 4 "$WORK/b4" "${args[@]}" --parallel.dp 4 "${zero2[@]}" "${buckets[@]}" \
  "${bf16[@]}"

cmp() { "$PY" "$SRC/validation/mpi/compare_runs.py" --grad-norm "$@"; }
within_floor() { cmp "$@" "${floor[@]}"; }
expect_rc() { local want=$1; shift; "$@"; local rc=$?; [[ $rc -eq $want ]] || { echo "  exit $rc, wanted $want"; return 1; }; }
refused() {  # refused LOG PATTERN COMMAND...: the command fails with PATTERN in LOG
  local log=$1 pattern=$2; shift 2
  "$@" && { echo "  it ran"; return 1; }
  grep -q -- "$pattern" "$log" || { echo "  no '$pattern' in:"; tail -5 "$log"; return 1; }
}
check "dp=2: buckets change no bit (ZeRO-1)" cmp "$WORK/z1b" "$WORK/z1" --exact --name "dp=2 zero1 buckets"
check "dp=2: buckets change no bit (all-reduce)" cmp "$WORK/db" "$WORK/d" --exact --name "dp=2 buckets"
check "dp=2: ZeRO-2 matches ZeRO-1" within_floor "$WORK/z2" "$WORK/z1" --name "dp=2 zero2"
check "dp=2: ZeRO-2 in buckets matches ZeRO-1" within_floor "$WORK/z2b" "$WORK/z1" --name "dp=2 zero2 buckets"
check "dp=4: ZeRO-2 in buckets matches ZeRO-1" within_floor "$WORK/d4z2b" "$WORK/d4z1" --name "dp=4 zero2 buckets"
check "dp=4: ZeRO-2 in buckets matches dp=1" within_floor "$WORK/d4z2b" "$WORK/a" --name "dp=4 zero2 buckets vs dp=1"
check "tp=2 dp=2 sp: ZeRO-2 in buckets matches dp=1" within_floor "$WORK/t2z2b" "$WORK/a" --name "tp=2 dp=2 zero2 buckets"
check "cp=2 dp=2: ZeRO-2 in buckets matches dp=1" within_floor "$WORK/c2z2b" "$WORK/a" --name "cp=2 dp=2 zero2 buckets"
check "dp=2 bf16: buckets change no bit" cmp "$WORK/b2b" "$WORK/b2" --exact --name "dp=2 bf16 buckets"
check "dp=2 bf16: beyond the fp32 floor" cmp "$WORK/b2" "$WORK/a" --power "${floor[@]}" --name "dp=2 bf16 vs dp=1"
check "dp=4 bf16 ZeRO-2 in buckets: within the bf16 floor of dp=2" cmp "$WORK/b4" "$WORK/b2" --floor "$WORK/d" \
  --name "dp=4 bf16 zero2 buckets vs dp=2 bf16"

# A ZeRO-2 checkpoint: the moments' ranges are ZeRO-1's, so the format is the same.
check "ZeRO-2 first half exits 75" expect_rc 75 run 2 "$WORK/r" "${args[@]}" --parallel.dp 2 "${zero2[@]}" \
  "${buckets[@]}" --train.steps_per_run 10
check "  ...second half resumes" run 2 "$WORK/r" "${args[@]}" --parallel.dp 2 "${zero2[@]}" "${buckets[@]}" \
  --resume auto
check "  ...bit-exactly" cmp "$WORK/r" "$WORK/z2b" --exact --name "zero2 resume"
check "ZeRO-2 first half for tp=2" expect_rc 75 run 2 "$WORK/rt" "${args[@]}" --parallel.dp 2 "${zero2[@]}" \
  --train.steps_per_run 10
check "  ...resumed at tp=2 without ZeRO" run 2 "$WORK/rt" "${args[@]}" --parallel.tp 2 --resume auto
check "  ...matches dp=1" within_floor "$WORK/rt" "$WORK/a" --name "zero2 then tp=2"

check "zero2 without zero1 is refused by key" refused "$WORK/bad.log" \
  "parallel.zero2 = true needs parallel.zero1 = true" run 2 "$WORK/bad" "${args[@]}" --parallel.dp 2 \
  --parallel.zero2 true
finish
