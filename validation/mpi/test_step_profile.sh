#!/usr/bin/env bash
# train.profile_steps: the steps it times are the second to the (N+1)-th of the invocation; every
# region of the step is in profile.json and log.txt with a time above zero, the shares sum to one,
# the ranks agree (tp = 2 with sequence parallelism, and dp = 2 with ZeRO-2 in buckets); and timing
# changes no bit of the run (the same losses and weights as unprofiled).
# usage: test_step_profile.sh BIN SRC PY
BIN=$1 SRC=$2 PY=$3
WORK=$(mktemp -d -t headroom_profile.XXXXXX); trap 'rm -rf "$WORK"' EXIT
source "$(dirname "$0")/common.sh"
shards
args=($(tiny_args) --model.n_kv_heads 2)
tp=(--parallel.tp 2 --parallel.sequence_parallel true)
dp=(--parallel.dp 2 --parallel.zero1 true --parallel.zero2 true --parallel.grad_bucket_mib 0.002)
check "tp2 runs" run 2 "$WORK/a" "${args[@]}" "${tp[@]}"
check "tp2 profiled runs" run 2 "$WORK/p" "${args[@]}" "${tp[@]}" --train.profile_steps 3
check "dp2 ZeRO-2 in buckets profiled runs" run 2 "$WORK/d" "${args[@]}" "${dp[@]}" --train.profile_steps 2
check "profiling changes no bit" "$PY" "$SRC/validation/mpi/compare_runs.py" "$WORK/p" "$WORK/a" --exact --grad-norm

regions() {  # regions RUN FIRST LAST: profile.json's steps, regions and shares, and log.txt's table
  "$PY" - "$@" <<'PY'
import json, math, sys
run, first, last = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
p = json.load(open(run + "/profile.json"))
assert (p["first_step"], p["last_step"], p["ranks"]) == (first, last, 2), p
names = [r["name"] for r in p["regions"]]
want = {"data loading", "embedding (forward and backward)", "forward: norms and Q/K/V/output projections",
        "forward: attention (kernel and context-parallel exchange)", "forward: MLP",
        "final norm, LM head and loss (forward and backward)", "backward: MLP",
        "backward: norms and Q/K/V/output projections", "backward: attention (kernel and context-parallel exchange)",
        "gradient reduction (what the backward pass did not hide)",
        "optimizer: gradient norm, clipping, AdamW, ZeRO all-gather",
        "other: zeroing, target counts, loss sums, non-finite checks"}
assert set(names) == want and len(names) == len(want), sorted(set(names) ^ want)
assert all(r["ms_per_step"] > 0 for r in p["regions"]), p["regions"]
assert math.isclose(sum(r["ms_per_step"] for r in p["regions"]), p["ms_per_step"], rel_tol=1e-9)
assert math.isclose(sum(r["share"] for r in p["regions"]), 1.0, rel_tol=1e-9)
log = open(run + "/log.txt").read()
assert f"profile of steps {first}-{last} (mean over {last - first + 1} steps and 2 ranks" in log
assert all(n in log for n in names)
PY
}
check "tp2: steps 2-4, every region" regions "$WORK/p" 2 4
check "dp2: steps 2-3, every region" regions "$WORK/d" 2 3
check "  ...in buckets" grep -q "gradients reduced in [0-9]* buckets" "$WORK/d/log.txt"
finish
