#!/usr/bin/env bash
# The Slurm plumbing end to end on the single-node cluster (label slurm):
#   1. jobs/slurm_local_up.sh brings the cluster up (and says so again when it is up);
#   2. jobs/submit_pipeline.sh submits a tiny study (2 toy models × 1 seed, pretrain -> extend -> sft);
#      every stage finishes with its outputs, in dependency order (job-log timestamps and scontrol),
#      and the final checkpoints' lineage names the three stages; re-running it submits nothing;
#   3. a failing stage (HEADROOM_INJECT_FAULT) says so in its job log, naming the dependents Slurm
#      cancels; the dependents are cancelled, not left pending; re-running submit_pipeline.sh
#      resumes the stage from its last good checkpoint and finishes the chain;
#   4. a job sent SIGUSR1 (scancel --signal=USR1) checkpoints, requeues and resumes to the end;
#   5. jobs/slurm_local_down.sh stops every daemon.
# usage: test_slurm.sh BIN SRC PY   (exit 77 = skipped: not root, or Slurm/munge not installed)
BIN=$1 SRC=$2 PY=$3
set -uo pipefail
export PATH=$PATH:/usr/sbin
for b in slurmctld slurmd munged sbatch; do
  command -v $b >/dev/null || { echo "SKIP: $b not installed (jobs/setup.sh installs slurmctld slurmd slurm-client munge)"; exit 77; }
done
[[ $(id -u) -eq 0 ]] || { echo "SKIP: the local cluster needs root"; exit 77; }
WORK=$(mktemp -d -t headroom_slurm.XXXXXX)
export HEADROOM_SLURM_DIR=$WORK/slurm HEADROOM_BIN=$BIN HEADROOM_SLURM_CRED_EXPIRE=5
unset SLURM_CONF SLURM_JOB_ID
# A free port pair, so a cluster already running on this machine is left alone.
for _ in $(seq 50); do
  port=$((20000 + RANDOM % 20000))
  ss -ltn 2>/dev/null | grep -qE ":($port|$((port + 1)))\b" || break
done
export HEADROOM_SLURM_PORT=$port
cleanup() {
  [[ -n ${SLURM_CONF:-} ]] && scancel --user=root >/dev/null 2>&1
  "$SRC/jobs/slurm_local_down.sh" >/dev/null 2>&1
  [[ -n ${KEEP:-} ]] || rm -rf "$WORK"
}
trap cleanup EXIT
failures=0 passed=0
check() {  # check NAME COMMAND...
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); else echo "FAIL: $name"; failures=$((failures + 1)); fi
}
t0=$(date +%s)
elapsed() { echo "[$(( $(date +%s) - t0 ))s] $*"; }

"$BIN/prepare" --input "$SRC/validation/data/sample_corpus/train" --output "$WORK/shards" \
  --tokenizer bpe --vocab-size 512 --val-fraction 0.1 >"$WORK/prepare.log" 2>&1 || { cat "$WORK/prepare.log"; exit 1; }

# 1. Up, twice.
check "cluster comes up" "$SRC/jobs/slurm_local_up.sh" >"$WORK/up.log" 2>&1 || { cat "$WORK/up.log"; tail -20 "$WORK"/slurm/log/*.log; exit 1; }
export SLURM_CONF=$WORK/slurm/etc/slurm.conf
check "  ...prints SLURM_CONF" grep -q "export SLURM_CONF=$SLURM_CONF" "$WORK/up.log"
check "  ...a second call only confirms" bash -c "'$SRC/jobs/slurm_local_up.sh' | grep -q 'already up'"
check "  ...node idle" test "$(sinfo -h -n localhost -o %T)" = idle
elapsed "cluster up"

# Waits until none of the given jobs is pending, running or requeued (at most $2 seconds).
wait_jobs() {  # wait_jobs "ID ID..." TIMEOUT
  local ids=$1 limit=$2
  for ((i = 0; i < limit; i++)); do
    [[ -z $(squeue -h -j "${ids// /,}" -o %i 2>/dev/null) ]] && return 0
    sleep 1
  done
  echo "  jobs $ids still queued after ${limit}s:"; squeue; return 1
}
job_ids() { grep -oE "job [0-9]+" "$1" | awk '{print $2}' | tr '\n' ' '; }
job_field() { scontrol show job "$1" | grep -oE "$2=[^ ]+" | head -1 | cut -d= -f2; }
log_epoch() {  # log_epoch LOG start|done: the epoch on the job log's start/done line
  grep -E "^headroom-job: $2 stage=" "$1" | tail -1 | grep -oE "epoch=[0-9]+" | cut -d= -f2
}
submit() { (cd "$SRC" && jobs/submit_pipeline.sh --toy --ntasks 1 --runs-root "$WORK/runs" --data "$WORK/shards" "$@"); }
short=(--args "pretrain=--train.steps 12 --train.log_every 4 --train.checkpoint_every 0"
       --args "extend=--train.steps 4 --train.log_every 2" --args "sft=--train.steps 4 --train.log_every 2")

# 2. A tiny study: 2 models × 1 seed, three stages.
submit --study tiny --models toy_d128,toy_llama3 --seeds 1 --stages pretrain,extend,sft "${short[@]}" >"$WORK/tiny.out" 2>&1
check "tiny study submitted (6 jobs)" test "$(job_ids "$WORK/tiny.out" | wc -w)" -eq 6 || cat "$WORK/tiny.out"
check "  ...finishes" wait_jobs "$(job_ids "$WORK/tiny.out")" 240
elapsed "tiny study done"
for chain in toy_d128-s1 toy_llama3-s1; do
  d=$WORK/runs/tiny/$chain
  prev_end=0 prev_job=""
  for s in pretrain extend sft; do
    log=$(ls "$d/$s"/slurm-*.out 2>/dev/null | head -1)
    job=$(basename "$log" .out); job=${job#slurm-}
    check "$chain $s: DONE, checkpoint, config, metrics" test -f "$d/$s/DONE" -a -s "$d/$s/checkpoints/latest" -a -f "$d/$s/config.ini" -a -s "$d/$s/metrics.jsonl"
    check "$chain $s: job log says done" grep -q "^headroom-job: done stage=$s" "$log"
    check "$chain $s: job COMPLETED" test "$(job_field "$job" JobState)" = COMPLETED
    start=$(log_epoch "$log" start)
    check "$chain $s: started after its dependency ended (logs)" test "${start:-0}" -ge "$prev_end"
    if [[ -n $prev_job ]]; then
      check "$chain $s: ... and per scontrol" test "$(job_field "$job" StartTime)" \> "$(job_field "$prev_job" EndTime)" -o \
        "$(job_field "$job" StartTime)" = "$(job_field "$prev_job" EndTime)"
    fi
    prev_end=$(log_epoch "$log" done) prev_job=$job
  done
  check "$chain: lineage pretrain, extend, sft" "$PY" - "$d/sft" <<'PY'
import h5py, json, os, sys
d = sys.argv[1]
with h5py.File(os.path.join(d, "checkpoints", open(os.path.join(d, "checkpoints/latest")).read().strip())) as f:
    assert [s["stage"] for s in json.loads(f.attrs["lineage"])] == ["pretrain", "extend", "sft"]
PY
done
submit --study tiny --models toy_d128,toy_llama3 --seeds 1 --stages pretrain,extend,sft "${short[@]}" >"$WORK/tiny2.out" 2>&1
check "re-running submits nothing" grep -q "0 submitted, 0 already queued, 6 finished" "$WORK/tiny2.out"

# The base evaluation's jobs (--evaluate-base, as printed by --dry-run): the pretrained checkpoint
# evaluated beyond its length after pretrain, and analyze reading it next to the chain's evaluate.
submit --study base --models toy_d128 --seeds 1 --evaluate-base --dry-run >"$WORK/base.out" 2>&1
check "--evaluate-base: an evaluate of the pretrained checkpoint" \
  grep -qE "evaluate: RUN_DIR=$WORK/runs/base/toy_d128-s1/evaluate_base .*INIT=$WORK/runs/base/toy_d128-s1/pretrain .*--eval.allow_beyond_training true" "$WORK/base.out"
check "  ...after pretrain" grep -qE "evaluate_base/slurm-%j.out --dependency=afterok:<toy_d128-s1/pretrain> " "$WORK/base.out"
check "  ...and analyze reads it" \
  grep -qE "analyze: .*RUNS=$WORK/runs/base/toy_d128-s1/evaluate $WORK/runs/base/toy_d128-s1/evaluate_base" "$WORK/base.out"
submit --study base --models toy_d128 --seeds 1 --evaluate-base --evaluate-base-lengths 512 --dry-run >"$WORK/base_len.out" 2>&1
check "--evaluate-base-lengths: the base evaluation at those lengths only" \
  grep -qE "evaluate: RUN_DIR=$WORK/runs/base/toy_d128-s1/evaluate_base .*--eval.allow_beyond_training true --eval.lengths 512 " "$WORK/base_len.out"
check "  ...and the chain's own evaluate at the recipe's" \
  bash -c "grep -E 'RUN_DIR=$WORK/runs/base/toy_d128-s1/evaluate ' '$WORK/base_len.out' | grep -qv -- --eval.lengths"

# 3 + 4 together: a failing chain and a preempted job.
fail_args=(--args "pretrain=--train.steps 12 --train.log_every 2 --train.checkpoint_every 2"
           --args "extend=--train.steps 4" --args "sft=--train.steps 4")
HEADROOM_INJECT_FAULT="error,rank=0,step=5" submit --study fail --models toy_d128 --seeds 2 \
  --stages pretrain,extend,sft "${fail_args[@]}" >"$WORK/fail.out" 2>&1
read -r fpre fext fsft <<<"$(job_ids "$WORK/fail.out")"
submit --study preempt --models toy_d512 --seeds 1 --stages pretrain \
  --args "pretrain=--train.steps 120 --train.log_every 2 --train.checkpoint_every 0" >"$WORK/preempt.out" 2>&1
ppre=$(job_ids "$WORK/preempt.out")
plog=$WORK/runs/preempt/toy_d512-s1/pretrain/slurm-${ppre// /}.out
for _ in $(seq 120); do grep -q "step 6/" "$plog" 2>/dev/null && break; sleep 0.5; done
check "preempted job is running" grep -q "step 6/" "$plog"
scancel --signal=USR1 "${ppre// /}"
elapsed "SIGUSR1 sent to job $ppre"

check "failing chain: dependents leave the queue" wait_jobs "$fpre $fext $fsft" 120
fdir=$WORK/runs/fail/toy_d128-s2
flog=$fdir/pretrain/slurm-$fpre.out
check "failed stage: job FAILED" test "$(job_field "$fpre" JobState)" = FAILED
check "  ...its log says FAILED with the cause" grep -q "^headroom-job: FAILED stage=pretrain" "$flog"
check "  ...names the cause" grep -q "injected fault at step 5" "$flog"
check "  ...names the cancelled dependent" grep -qE "this stops the chain: .*$fext\(" "$flog"
for j in $fext $fsft; do
  check "dependent $j cancelled, not pending" test "$(job_field "$j" JobState)" = CANCELLED
  check "  ...because its dependency failed" test "$(job_field "$j" Reason)" = DependencyNeverSatisfied
done
check "no extend/sft output of the failed chain" test ! -e "$fdir/extend/DONE" -a ! -e "$fdir/sft/DONE"
# The fix (no more fault): re-running continues from the last good checkpoint.
submit --study fail --models toy_d128 --seeds 2 --stages pretrain,extend,sft "${fail_args[@]}" >"$WORK/fail2.out" 2>&1
check "re-run submits the three stages again" test "$(job_ids "$WORK/fail2.out" | wc -w)" -eq 3
check "  ...and finishes" wait_jobs "$(job_ids "$WORK/fail2.out")" 240
check "  ...pretrain resumed from step 4" grep -q "resumed from .*step_00000004.h5" "$fdir/pretrain/log.txt"
check "  ...the chain is done" test -f "$fdir/sft/DONE"

check "preempted job finishes after its requeue" wait_jobs "${ppre// /}" 240
elapsed "preempted job done"
pdir=$WORK/runs/preempt/toy_d512-s1/pretrain
check "  ...checkpointed on the signal" grep -q "signal 10 received: checkpoint written at step" "$pdir/log.txt"
check "  ...exit 75 and requeue in the job log" grep -q "requeueing job ${ppre// /}" "$plog"
check "  ...ran twice" test "$(grep -c '^headroom-job: start stage=pretrain' "$plog")" -eq 2
check "  ...Slurm counted the restart" test "$(job_field "${ppre// /}" Restarts)" = 1
check "  ...resumed from the checkpoint" grep -q "resumed from .*step_000000" "$pdir/log.txt"
check "  ...and reached the last step" grep -q "step 120/120" "$pdir/log.txt"
check "  ...DONE" test -f "$pdir/DONE"

# 5. Down.
pids=$(cat "$WORK"/slurm/run/{munged,slurmctld,slurmd}.pid 2>/dev/null)
check "three daemons ran" test "$(echo $pids | wc -w)" -eq 3
"$SRC/jobs/slurm_local_down.sh" >"$WORK/down.log" 2>&1
gone() { for p in $pids; do kill -0 "$p" 2>/dev/null && return 1; done; return 0; }
check "cluster stops: no daemon left" gone
check "  ...controller unreachable" bash -c "! scontrol ping 2>/dev/null | grep -q UP"
check "  ...a second stop is harmless" "$SRC/jobs/slurm_local_down.sh" >/dev/null
elapsed "cluster down"
if ((failures)); then
  for f in "$WORK"/runs/*/*/*/slurm-*.out; do echo "=== $f"; tail -15 "$f"; done
  tail -30 "$WORK/slurm/log/slurmctld.log"
fi
echo "$passed passed, $failures failed ($(( $(date +%s) - t0 ))s)"
[[ $failures -eq 0 ]]
