#!/usr/bin/env bash
# Faults: an error on one rank stops every rank promptly with that rank's message (no hang); a
# non-finite gradient is reported with the step and the parameter, then stops or is skipped as
# configured; a full disk during a checkpoint write stops both ranks with exit 2, naming the file and
# the cause, the previous checkpoint intact; SIGTERM to the job script over mpirun checkpoints and
# requeues; a run directory has one writer at a time; a stage never writes into another kind's directory;
# a checkpoint whose metadata (logged history, spike-monitor state, run identity) was damaged is named
# and skipped for the previous one.
# usage: test_faults.sh BIN SRC PY
BIN=$1 SRC=$2 PY=$3
WORK=$(mktemp -d -t headroom_faults.XXXXXX)
cleanup() { mountpoint -q "$WORK/full" && umount "$WORK/full"; [[ -n ${KEEP_WORK:-} ]] || rm -rf "$WORK"; }
trap cleanup EXIT
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
# ---- A full disk during a checkpoint write (a 3 MB tmpfs; root only) ------------------------------
mkdir -p "$WORK/full"
if mount -t tmpfs -o size=3M tmpfs "$WORK/full" 2>/dev/null; then
  start=$(date +%s)
  timeout 120 mpirun -np 2 "$BIN/pretrain" --run-dir "$WORK/full/run" "${args[@]}" --parallel.dp 2 \
    --train.steps 40 --train.checkpoint_every 1 --train.keep_last 0 --train.log_every 10 >"$WORK/full.log" 2>&1
  rc=$?
  check "full disk: both ranks exit 2 (no hang, no abort)" test $rc -eq 2
  check "  ...promptly" test $(( $(date +%s) - start )) -lt 100
  check "  ...ranks finished MPI together (no MPI_Abort)" bash -c '! grep -q MPI_ABORT "$0"' "$WORK/full.log"
  check "  ...naming the file and the cause" \
    grep -qE "checkpoint .*step_[0-9]+\.h5 not written: .*the file system is full" "$WORK/full.log"
  check "  ...in log.txt too" grep -q "error: checkpoint .* not written" "$WORK/full/run/log.txt"
  check "  ...no .tmp left" bash -c '! ls "$0"/*.tmp 2>/dev/null | grep -q .' "$WORK/full/run/checkpoints"
  check "  ...no DONE" test ! -e "$WORK/full/run/DONE"
  check "  ...no lock left" test ! -e "$WORK/full/run/LOCK"
  # The newest checkpoint loads: resumed (on a disk with room) without a warning.
  cp -r "$WORK/full/run" "$WORK/full_resumed"; umount "$WORK/full"
  last=$(sed 's/step_0*\([0-9]*\)\.h5/\1/' "$WORK/full_resumed/checkpoints/latest")
  mpirun -np 2 "$BIN/pretrain" --run-dir "$WORK/full_resumed" "${args[@]}" --parallel.dp 2 --resume auto \
    --train.steps $((last + 2)) >"$WORK/full_resumed.log" 2>&1
  check "  ...the previous checkpoint (step $last) resumes" test $? -eq 0
  check "  ...without a warning" bash -c '! grep -q "cannot resume" "$0"' "$WORK/full_resumed/log.txt"
else
  echo "skipped: full disk (mounting a tmpfs needs root)"
fi

# ---- Preemption through mpirun: SIGTERM to the job script requeues ----------------------------------
# stage.sh passes the signal on as SIGUSR1 (mpirun kills the ranks soon after forwarding SIGTERM); the
# ranks checkpoint, write STOPPED and exit 75; outside Slurm stage.sh's requeue decision is exit 75.
cat >"$WORK/stage_job.sh" <<JOB
unset SLURM_JOB_ID
source "$SRC/jobs/lib/stage.sh"
NP=2 HEADROOM_LAUNCHER=mpirun RUN_DIR="$WORK/pre" HEADROOM_ROOT="$SRC"
hr_init pretrain
hr_run "$BIN/pretrain" --run-dir "$WORK/pre" ${args[*]} --parallel.dp 2 --train.steps 100000 --train.log_every 50
JOB
# --foreground: timeout otherwise signals its whole process group, mpirun included (what the job
# scripts avoid with --signal=B:USR1); this way only stage.sh receives the SIGTERM.
timeout --foreground 120 bash "$WORK/stage_job.sh" >"$WORK/pre.log" 2>&1 & pid=$!
for _ in $(seq 600); do grep -q "step 50/" "$WORK/pre/log.txt" 2>/dev/null && break; sleep 0.1; done
start=$(date +%s)
kill -TERM $pid; wait $pid
rc=$?
check "SIGTERM to stage.sh over mpirun: requeue decision (exit 75)" test $rc -eq 75
check "  ...promptly" test $(( $(date +%s) - start )) -lt 60
check "  ...the ranks checkpointed" test -s "$WORK/pre/checkpoints/latest"
check "  ...and left the stop marker" grep -q "signal 10 received" "$WORK/pre/STOPPED"
check "  ...stage.sh decided from it" grep -q "stage=pretrain checkpointed and stopped (exit 75 after SIGTERM)" "$WORK/pre.log"
check "  ...no DONE, no lock left" test ! -e "$WORK/pre/DONE" -a ! -e "$WORK/pre/LOCK"

# ---- A foreign checkpoint is refused, naming both values, before config.ini is replaced ---------------
mpirun -np 2 "$BIN/pretrain" --run-dir "$WORK/own" "${args[@]}" --parallel.dp 2 --train.steps_per_run 5 \
  >"$WORK/own.log" 2>&1
check "a run that stops after 5 steps (75)" test $? -eq 75
foreign() {  # foreign NAME REGEX ARGS...: --resume auto on $WORK/own with ARGS is refused with REGEX
  local name=$1 re=$2; shift 2
  timeout 60 mpirun -np 2 "$BIN/pretrain" --run-dir "$WORK/own" "${args[@]}" --parallel.dp 2 --resume auto "$@" \
    >"$WORK/foreign.log" 2>&1
  check "$name: refused (exit 2)" test $? -eq 2
  check "  ...naming both values" grep -qE "$re" "$WORK/foreign.log"
  check "  ...the checkpoints' config.ini stays" cmp -s "$WORK/own/config.ini" "$WORK/own_config.ini"
}
cp "$WORK/own/config.ini" "$WORK/own_config.ini"
foreign "another model seed" "step_0*5\.h5 is another run's: its model\.seed is [0-9]+, this run's is 77" --model.seed 77
foreign "another data order" "its train\.seed is [0-9]+, this run's is 78" --train.seed 78
foreign "another architecture" "its model\.d_ff is 64, this run's is 128" --model.d_ff 128
mv "$WORK/own/checkpoints/step_00000005.h5" "$WORK/own/checkpoints/step_00000009.h5"
foreign "a step that disagrees with the file's name" "step_0*9\.h5 holds step 5, not the step of its name"
mv "$WORK/own/checkpoints/step_00000009.h5" "$WORK/own/checkpoints/step_00000005.h5"
timeout 60 mpirun -np 2 "$BIN/pretrain" --run-dir "$WORK/own" "${args[@]}" --parallel.dp 2 --resume auto \
  >"$WORK/own2.log" 2>&1
check "its own configuration resumes it" test $? -eq 0

# ---- Damaged metadata: every part of a checkpoint carries a checksum ---------------------------------
# A flipped value in the logged history, the spike monitor's state or the run's identity makes the
# checkpoint unloadable like a damaged tensor: resume names the dataset, skips it for the previous one.
mpirun -np 2 "$BIN/pretrain" --run-dir "$WORK/meta" "${args[@]}" --parallel.dp 2 --train.steps_per_run 4 \
  --train.checkpoint_every 2 --train.keep_last 0 >"$WORK/meta.log" 2>&1
check "a run with checkpoints at steps 2 and 4 (75)" test $? -eq 75
ck=$WORK/meta/checkpoints
cp "$ck/step_00000004.h5" "$WORK/pristine4.h5"
damaged() {  # damaged NAME PYTHON_EDIT REGEX: edit f (h5py, r+) in step 4, resume, expect REGEX and step 2
  local name=$1 edit=$2 re=$3
  cp "$WORK/pristine4.h5" "$ck/step_00000004.h5"
  rm -f "$ck"/step_0000000[3-9].h5.tmp "$ck/step_00000003.h5"
  "$PY" -c "import h5py
with h5py.File('$ck/step_00000004.h5', 'r+') as f:
    $edit" || { check "$name: the edit" false; return; }
  timeout 60 mpirun -np 2 "$BIN/pretrain" --run-dir "$WORK/meta" "${args[@]}" --parallel.dp 2 --resume auto \
    --train.steps_per_run 1 --train.checkpoint_every 2 --train.keep_last 0 >"$WORK/meta_resume.log" 2>&1
  check "$name: the run goes on (75)" test $? -eq 75
  check "  ...naming what does not match its checksum" \
    grep -qE "cannot resume from .*step_00000004\.h5: .*$re.*(corrupted file)" "$WORK/meta/log.txt"
  check "  ...resuming from the previous checkpoint" grep -q "resumed from .*step_00000002.h5 at step 2" \
    "$WORK/meta_resume.log"
}
damaged "a logged loss" "d = f['metrics/loss']; d[0] = d[0] + 1.0" "dataset /metrics/loss does not match its checksum"
damaged "the spike monitor's state" "d = f['spike_monitor/loss_values']; d[-1] = d[-1] * 2.0" \
  "dataset /spike_monitor/loss_values does not match its checksum"
damaged "the configuration text" \
  "a = f['config'].attrs['config_ini']; a = a.decode() if isinstance(a, bytes) else a; i = a.index('lr'); f['config'].attrs.modify('config_ini', a[:i] + 'LR' + a[i + 2:])" \
  "config_ini, lineage and tokenizer_id do not match their checksum"

# ---- One writer per run directory ------------------------------------------------------------------
mpirun -np 2 "$BIN/pretrain" --run-dir "$WORK/lock" "${args[@]}" --parallel.dp 2 --train.steps 100000 \
  --train.log_every 100 --train.checkpoint_every 50 --train.lr 1e-3 >"$WORK/lock_a.log" 2>&1 & pid=$!
for _ in $(seq 300); do grep -q "step 100/" "$WORK/lock/log.txt" 2>/dev/null && break; sleep 0.1; done
holder=$(cat "$WORK/lock/LOCK" 2>/dev/null)
timeout 60 mpirun -np 2 "$BIN/pretrain" --run-dir "$WORK/lock" "${args[@]}" --parallel.dp 2 --train.lr 5e-3 \
  --resume auto >"$WORK/lock_b.log" 2>&1
check "a second writer is refused with exit 2" test $? -eq 2
check "  ...naming the holder's host and pid" \
  grep -q "is in use by another stage .*host=$(hostname) pid=$(sed 's/.*pid=\([0-9]*\).*/\1/' <<<"$holder") " "$WORK/lock_b.log"
check "  ...before writing anything (the first run's config stays)" grep -q "^lr = 0.001" "$WORK/lock/config.ini"
kill -TERM $pid; wait $pid
check "  ...the first run stops as usual (75), releasing its lock" test ! -e "$WORK/lock/LOCK"
# (After the run stopped: while it runs, its checkpoints rotate under the reader.)
timeout 60 "$BIN/evaluate" --init "$WORK/lock" --run-dir "$WORK/lock" >"$WORK/lock_ev.log" 2>&1
check "evaluate into a training run is refused" test $? -eq 2
check "  ...naming why" grep -q "holds a training run" "$WORK/lock_ev.log"
check "  ...and leaves no DONE" test ! -e "$WORK/lock/DONE"
# A lock whose process is gone (killed without unwinding) is taken over, and the log says so.
echo "host=$(hostname) pid=999999999 job=none stage=pretrain since=x" >"$WORK/lock/LOCK"
timeout 60 mpirun -np 1 "$BIN/pretrain" --run-dir "$WORK/lock" "${args[@]}" --resume auto --train.steps 102 \
  >"$WORK/lock_c.log" 2>&1
check "a stale lock is taken over" test $? -eq 0
check "  ...naming it" grep -q "took over the stale lock .*pid=999999999.*no longer runs" "$WORK/lock/log.txt"
# A killed stage whose parent died with it stays a zombie until something reaps it, and kill(pid, 0)
# still finds it: its lock is stale too. The zombie here: a child that exits under a parent that
# never waits (the parent execs sleep).
(sleep 0.1 & exec sleep 20) & keeper=$!
sleep 1
zombie=$(ps -o pid=,stat= --ppid "$keeper" | awk '$2 ~ /^Z/ {print $1}' | head -1)
check "  (a zombie to test with)" test -n "$zombie"
mkdir -p "$WORK/zlock"
echo "host=$(hostname) pid=${zombie:-0} job=none stage=pretrain since=x" >"$WORK/zlock/LOCK"
timeout 60 mpirun -np 1 "$BIN/pretrain" --run-dir "$WORK/zlock" "${args[@]}" --train.steps 2 >"$WORK/lock_z.log" 2>&1
check "a zombie's lock is taken over" test $? -eq 0
check "  ...naming it" grep -q "took over the stale lock .*pid=${zombie:-0}.*zombie" "$WORK/zlock/log.txt"
kill "$keeper" 2>/dev/null; wait "$keeper" 2>/dev/null

finish
