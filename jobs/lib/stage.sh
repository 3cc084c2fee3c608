# What every jobs/*.slurm script shares: finding the checkout, launching ranks (srun --mpi=pmix, or
# mpirun as the fallback), forwarding the preemption signal, requeueing after exit 75, and saying
# clearly in the job log when a stage failed and which dependent jobs that cancels.
# Sourced by the job scripts; every setting comes from the environment (see jobs/README.md):
#   HEADROOM_ROOT  the checkout (submit_pipeline.sh exports it; else SLURM_SUBMIT_DIR)
#   HEADROOM_BIN   the executables (default $HEADROOM_ROOT/build/bin)
#   HEADROOM_LAUNCHER  auto (srun --mpi=pmix inside a Slurm job when srun has PMIx, else mpirun),
#                  srun, mpirun, or none (run the program directly, one process)
#   NP             ranks (default: one per GPU when the job has GPUs, nodes × GPUs per node;
#                  else SLURM_NTASKS, or 1 outside Slurm)
#   HEADROOM_DRY_RUN=1  print the launch command instead of running it (tests, checking a job)

hr_log() { echo "headroom-job: $*"; }

hr_init() {  # hr_init STAGE
  HR_STAGE=$1
  HEADROOM_ROOT=${HEADROOM_ROOT:-${SLURM_SUBMIT_DIR:-$PWD}}
  [[ -f $HEADROOM_ROOT/jobs/lib/stage.sh ]] || {
    hr_log "error: $HEADROOM_ROOT is not a Headroom checkout (no jobs/lib/stage.sh); set HEADROOM_ROOT"; exit 2; }
  cd "$HEADROOM_ROOT"
  HEADROOM_BIN=${HEADROOM_BIN:-$HEADROOM_ROOT/build/bin}
  hr_gpu_layout
  NP=${NP:-${HR_GPU_RANKS:-${SLURM_NTASKS:-1}}}
  export OMP_NUM_THREADS=${OMP_NUM_THREADS:-${SLURM_CPUS_PER_TASK:-1}}
  export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
  if [[ ${SLURM_JOB_NUM_NODES:-1} -eq 1 ]]; then  # one node: shared memory only (safe in sandboxes)
    export OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader} OMPI_MCA_pml=${OMPI_MCA_pml:-ob1}
  fi
  [[ $(id -u) -eq 0 ]] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  HR_T0=$(date +%s)
  hr_log "start stage=$HR_STAGE job=${SLURM_JOB_ID:-none} restarts=${SLURM_RESTART_COUNT:-0}" \
         "host=$(hostname) ranks=$NP epoch=$HR_T0 ($(date -u +%FT%TZ))"
  if [[ -n $HR_GPUS_PER_NODE ]]; then
    hr_log "GPUs: $HR_GPUS_PER_NODE per node x ${SLURM_JOB_NUM_NODES:-1} nodes: one rank per GPU" \
           "(train.device = auto takes them; each rank uses GPU local_rank mod visible GPUs)"
    if [[ -n ${SLURM_NTASKS_PER_NODE:-} && ${SLURM_NTASKS_PER_NODE%%(*} != "$HR_GPUS_PER_NODE" ]]; then
      hr_log "warning: the job has --ntasks-per-node=$SLURM_NTASKS_PER_NODE but $HR_GPUS_PER_NODE GPUs per node;" \
             "launching $HR_GPUS_PER_NODE ranks per node (pass both, e.g. --gpus-per-node=4 --ntasks-per-node=4)"
    fi
  fi
}

# The GPUs of a Slurm job: HR_GPUS_PER_NODE (empty without GPUs) and HR_GPU_RANKS (one rank per
# GPU on every node). SLURM_GPUS_ON_NODE is what this node holds; SLURM_GPUS_PER_NODE is what
# --gpus-per-node asked for, possibly typed ("h100:8").
hr_gpu_layout() {
  local g=${SLURM_GPUS_ON_NODE:-${SLURM_GPUS_PER_NODE:-}}
  g=${g##*:}
  HR_GPUS_PER_NODE="" HR_GPU_RANKS=""
  if [[ -n ${SLURM_JOB_ID:-} && $g =~ ^[0-9]+$ && $g -gt 0 ]]; then
    HR_GPUS_PER_NODE=$g
    HR_GPU_RANKS=$(( g * ${SLURM_JOB_NUM_NODES:-1} ))
  fi
}

hr_need_binary() {  # hr_need_binary NAME [what delivers it]
  local exe=$HEADROOM_BIN/$1
  if [[ ! -x $exe ]]; then
    hr_log "error: stage $HR_STAGE needs $exe, which does not exist.${2:+ $2}" \
           "Build it (cmake --build build) or leave the stage out (jobs/submit_pipeline.sh --stages ...)."
    hr_fail 3
  fi
}

# Which pending jobs wait on this one (for the failure message).
hr_dependents() {
  [[ -n ${SLURM_JOB_ID:-} ]] || return 0
  squeue -h -o "%i %j %E" 2>/dev/null | awk -v id="$SLURM_JOB_ID" \
    '{ if ($3 ~ ("(^|[,?])after[a-z]*:" id "([(_:,?]|$)")) printf "%s%s(%s)", sep, $1, $2; sep=" " }'
}

hr_fail() {  # hr_fail STATUS: the clear message, then exit STATUS
  local rc=$1 deps
  deps=$(hr_dependents)
  hr_log "FAILED stage=$HR_STAGE job=${SLURM_JOB_ID:-none} status=$rc epoch=$(date +%s)" \
         "after $(( $(date +%s) - HR_T0 ))s${RUN_DIR:+; see $RUN_DIR/log.txt}."
  if [[ -n $deps ]]; then
    hr_log "this stops the chain: Slurm cancels the jobs that wait on this one" \
           "(--kill-on-invalid-dep=yes) and their dependents: $deps"
  fi
  hr_log "after fixing the cause, rerun jobs/submit_pipeline.sh with the same arguments: finished stages" \
         "are skipped and this one continues from its last checkpoint (--resume auto)"
  exit "$rc"
}

# hr_run PROGRAM ARGS...: launch on NP ranks, pass SIGUSR1/SIGTERM on to the ranks as SIGUSR1, and
# handle the outcome: the stage's stop marker $RUN_DIR/STOPPED (written after it checkpointed for a
# signal) or exit 75 requeues the job, DONE or exit 0 ends it, anything else is a failure. The marker
# decides because launchers do not pass the ranks' status through reliably.
# Why SIGUSR1 whatever arrived: Open MPI 4's mpirun, given SIGTERM, forwards it and kills the ranks
# about a second later, before they can checkpoint (the job returns 1, no marker); SIGUSR1 it only
# forwards (ess_base_forward_signals) and then waits for the ranks. srun forwards both, and the stages
# treat both as "checkpoint and stop", so SIGUSR1 works for every launcher.
hr_run() {
  local launcher=${HEADROOM_LAUNCHER:-auto} cmd=() child rc
  if [[ $launcher == auto ]]; then
    launcher=mpirun
    if [[ -n ${SLURM_JOB_ID:-} ]] && command -v srun >/dev/null && srun --mpi=list 2>&1 | grep -qw pmix; then
      launcher=srun
    fi
  fi
  case $launcher in
    srun)
      cmd=(srun --mpi=pmix --kill-on-bad-exit=1 -n "$NP")
      if [[ -n $HR_GPUS_PER_NODE ]]; then cmd+=(--ntasks-per-node="$HR_GPUS_PER_NODE"); fi ;;
    mpirun)
      cmd=(mpirun)
      [[ $(id -u) -eq 0 ]] && cmd+=(--allow-run-as-root)
      # Outside Slurm nobody assigns cores: Open MPI's default binds rank 0 of every mpirun to core
      # 0, so two jobs started side by side (a study's chains, two screens) would share one core.
      if [[ -z ${SLURM_JOB_ID:-} ]]; then cmd+=(-np "$NP" --oversubscribe --bind-to none);
      elif [[ -n $HR_GPUS_PER_NODE ]]; then cmd+=(-np "$NP" --map-by "ppr:$HR_GPUS_PER_NODE:node"); fi ;;
    none) cmd=() ;;
    *) hr_log "error: HEADROOM_LAUNCHER=$launcher (auto, srun, mpirun or none)"; hr_fail 2 ;;
  esac
  hr_log "launch: ${cmd[*]} $*"
  if [[ ${HEADROOM_DRY_RUN:-0} == 1 ]]; then hr_log "dry run: not launched"; return 0; fi
  [[ -n ${RUN_DIR:-} ]] && rm -f "$RUN_DIR/STOPPED"  # only this launch's marker counts
  "${cmd[@]}" "$@" &
  child=$!
  HR_SIGNAL=""
  trap 'hr_forward_stop USR1 "$child"' USR1
  trap 'hr_forward_stop TERM "$child"' TERM
  while :; do
    wait "$child"; rc=$?
    kill -0 "$child" 2>/dev/null || break
  done
  wait "$child"; rc=$?  # the real status even if the last wait was interrupted by a signal
  trap - USR1 TERM
  rc=$(hr_outcome "$rc")
  if [[ $rc -eq 75 ]]; then
    hr_log "stage=$HR_STAGE checkpointed and stopped (exit 75${HR_SIGNAL:+ after SIG$HR_SIGNAL}) at epoch=$(date +%s)"
    if [[ -n ${SLURM_JOB_ID:-} ]]; then
      hr_log "requeueing job $SLURM_JOB_ID; it resumes from its checkpoint (--resume auto)"
      if scontrol requeue "$SLURM_JOB_ID"; then
        sleep 60 & wait $!  # Slurm ends this instance of the job now
        exit 0
      fi
      hr_log "scontrol requeue $SLURM_JOB_ID failed (cancelled job, or not requeueable): run it again"
      hr_fail 75
    fi
    hr_log "not under Slurm: run the same command again to resume"
    exit 75
  elif [[ $rc -ne 0 ]]; then
    hr_fail "$rc"
  fi
  hr_log "done stage=$HR_STAGE job=${SLURM_JOB_ID:-none} epoch=$(date +%s) after $(( $(date +%s) - HR_T0 ))s"
}

hr_forward_stop() {  # hr_forward_stop SIGNAL CHILD: ask the ranks to checkpoint and stop (see hr_run)
  HR_SIGNAL=$1
  hr_log "SIG$1 received (preemption): sending SIGUSR1 to the launcher ($2) so the ranks checkpoint and stop"
  kill -USR1 "$2" 2>/dev/null
}

# hr_outcome RC: the launch's status as the stage meant it. 75 when the stage left its stop marker
# (whatever the launcher returned); 0 when it finished (DONE) but the launcher, signalled during the
# last moments, returned non-zero; RC otherwise.
hr_outcome() {
  local rc=$1
  if [[ -n ${RUN_DIR:-} && -f $RUN_DIR/STOPPED ]]; then
    [[ $rc -ne 75 ]] && hr_log "the launcher returned $rc, but the stage checkpointed and stopped ($RUN_DIR/STOPPED: $(cat "$RUN_DIR/STOPPED")): treated as 75" >&2
    echo 75
  elif [[ $rc -ne 0 && -n ${HR_SIGNAL:-} && -n ${RUN_DIR:-} && -f $RUN_DIR/DONE ]]; then
    hr_log "the launcher returned $rc after SIG$HR_SIGNAL, but the stage finished ($RUN_DIR/DONE): treated as 0" >&2
    echo 0
  else
    echo "$rc"
  fi
}

# The training stages: pretrain (MODEL + RECIPE, SEED) or extend / sft (INIT + RECIPE).
#   RUN_DIR, RECIPE, DATA_DIR (train.h5/val.h5; default data/shards), EXTRA_ARGS (more flags), "$@".
hr_train() {  # hr_train STAGE [ARGS...]
  local stage=$1; shift
  hr_init "$stage"
  : "${RUN_DIR:?RUN_DIR must name the run directory}"
  : "${RECIPE:?RECIPE must name a recipe (inputs/recipes/*.ini)}"
  local args=(--config "$RECIPE" --run-dir "$RUN_DIR" --resume auto)
  if [[ $stage == pretrain ]]; then
    : "${MODEL:?MODEL must name a model configuration (inputs/models/*.ini)}"
    # A seed replicate differs in everything seeded: initial weights, data order, synthetic tasks.
    args=(--config "$MODEL" "${args[@]}" --model.seed "${SEED:-1}" --train.seed "${SEED:-1}" --data.seed "${SEED:-1}")
  else
    : "${INIT:?INIT must name the checkpoint or run directory to start from}"
    args=(--init "$INIT" "${args[@]}")
  fi
  local data=${DATA_DIR:-data/shards}
  args+=(--data.train "$data/train.h5" --data.val "$data/val.h5")
  hr_need_binary "$stage"
  if [[ -f $RUN_DIR/DONE ]]; then
    hr_log "stage=$stage already finished ($RUN_DIR/DONE: $(cat "$RUN_DIR/DONE")); nothing to do"
    hr_log "done stage=$stage job=${SLURM_JOB_ID:-none} epoch=$(date +%s) after 0s"
    return 0
  fi
  # shellcheck disable=SC2086  # EXTRA_ARGS is a flag list
  hr_run "$HEADROOM_BIN/$stage" "${args[@]}" ${EXTRA_ARGS:-} "$@"
}
