#!/usr/bin/env bash
# Submits a study to Slurm: for every model configuration × seed, a chain of jobs
#   pretrain -> extend -> sft -> evaluate      (sbatch --dependency=afterok:<previous> --kill-on-invalid-dep=yes)
# and one analyze job after every chain's evaluate. Prints the job ids.
#
#   jobs/submit_pipeline.sh --study heads --models d128_0.6b,d256_0.6b,d512_0.6b --seeds 1,2
#   jobs/submit_pipeline.sh --study tiny --toy --models toy_d128,toy_d512 --seeds 1,2 --ntasks 1
#
# Re-running it with the same arguments continues the study: a stage whose run directory holds
# DONE is skipped (its dependents start without waiting for it), a stage whose job is still queued
# or running is not submitted twice (its job id is reused for the dependencies), and every other
# stage is submitted again and resumes from its newest good checkpoint (--resume auto).
#
# Options:
#   --study NAME          runs go to RUNS_ROOT/NAME/<model>-s<seed>/<stage> (default: study)
#   --runs-root DIR       default: runs
#   --models A,B,...      inputs/models/<name>.ini (default: d128_0.6b,d256_0.6b,d512_0.6b)
#   --seeds 1,2,...       model.seed values (default: 1,2)
#   --stages LIST         a subset of pretrain,extend,sft,evaluate,analyze (default: all five);
#                         e.g. leave out stages whose programs are not built yet
#   --toy                 use the toy recipes (inputs/recipes/toy_<stage>.ini)
#   --recipe STAGE=FILE   a stage's recipe (repeatable), e.g. --recipe extend=inputs/recipes/extend_yarn_stage1.ini;
#                         evaluate/analyze take it as their --config (default inputs/recipes/[toy_]<stage>.ini if present)
#   --args STAGE=ARGS     extra program arguments for one stage (repeatable), e.g. --args "extend=--config inputs/recipes/extend_frozen.ini"
#   --data DIR            token shards (train.h5, val.h5; default: data/shards)
#   --ntasks N            ranks per pretrain/extend/sft/evaluate job on CPUs (default: the job scripts' own)
#   --gpus-per-node G     GPU jobs: pretrain/extend/sft/evaluate ask for --nodes=N --gpus-per-node=G
#                         --ntasks-per-node=G (one rank per GPU; train.device = auto takes them) and
#                         pretrain uses the architecture's own GPU script (jobs/pretrain_d512.slurm
#                         for d512_*); 0 = CPU jobs (default: $HEADROOM_GPUS_PER_NODE, else 0)
#   --nodes N             nodes per GPU job (default: $HEADROOM_NODES, else 1)
#   --evaluate-base       also evaluate each chain's pretrained checkpoint at the evaluate lengths,
#                         without extension (eval.allow_beyond_training), into <chain>/evaluate_base;
#                         analyze reads it too (the "extended vs not" comparison of one checkpoint)
#   --evaluate-base-lengths L1,L2   ... at these lengths only (default: the evaluate recipe's)
#   --sbatch "ARGS"       extra sbatch options for every job (partition, account, --time, ...)
#   --local               when no Slurm is reachable, bring up the single-node one (jobs/slurm_local_up.sh)
#   --dry-run             print the sbatch commands instead of running them
# Environment: HEADROOM_BIN (default <repo>/build/bin), HEADROOM_LAUNCHER (see jobs/lib/stage.sh).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
study=study runs_root=runs models=d128_0.6b,d256_0.6b,d512_0.6b seeds=1,2
stages=pretrain,extend,sft,evaluate,analyze toy=0 data=data/shards ntasks="" sbatch_extra="" local=0 dry=0
evaluate_base=0 evaluate_base_lengths="" gpus_per_node=${HEADROOM_GPUS_PER_NODE:-0} nodes=${HEADROOM_NODES:-1}
declare -A recipe=() stage_args=()
usage() { sed -n '2,/^set -euo/p' "$root/jobs/submit_pipeline.sh" | sed '$d; s/^# \{0,1\}//'; exit "${1:-0}"; }
die() { echo "submit_pipeline: error: $*" >&2; exit 2; }
while (($#)); do
  case $1 in
    --study) study=$2; shift 2 ;;
    --runs-root) runs_root=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    --stages) stages=$2; shift 2 ;;
    --toy) toy=1; shift ;;
    --recipe) [[ $2 == *=* ]] || die "--recipe takes STAGE=FILE"; recipe[${2%%=*}]=${2#*=}; shift 2 ;;
    --args) [[ $2 == *=* ]] || die "--args takes STAGE=ARGS"; stage_args[${2%%=*}]=${2#*=}; shift 2 ;;
    --data) data=$2; shift 2 ;;
    --ntasks) ntasks=$2; shift 2 ;;
    --gpus-per-node) gpus_per_node=$2; shift 2 ;;
    --nodes) nodes=$2; shift 2 ;;
    --evaluate-base) evaluate_base=1; shift ;;
    --evaluate-base-lengths) evaluate_base_lengths=$2; shift 2 ;;
    --sbatch) sbatch_extra=$2; shift 2 ;;
    --local) local=1; shift ;;
    --dry-run) dry=1; shift ;;
    -h|--help) usage ;;
    *) echo "submit_pipeline: unknown option '$1'" >&2; usage 2 ;;
  esac
done
[[ $gpus_per_node =~ ^[0-9]+$ ]] || die "--gpus-per-node must be a whole number, not '$gpus_per_node'"
[[ $nodes =~ ^[1-9][0-9]*$ ]] || die "--nodes must be a positive whole number, not '$nodes'"
if ((gpus_per_node > 0)) && [[ -n $ntasks ]]; then
  die "--ntasks $ntasks and --gpus-per-node $gpus_per_node: GPU jobs run one rank per GPU (nodes x GPUs per node); give one of them"
fi
((gpus_per_node > 0)) || ((nodes == 1)) || die "--nodes $nodes needs --gpus-per-node (CPU jobs size themselves with --ntasks)"
all_stages=(pretrain extend sft evaluate analyze)
declare -A want=()
IFS=, read -ra sel <<<"$stages"
for s in "${sel[@]}"; do
  [[ " ${all_stages[*]} " == *" $s "* ]] || die "--stages: unknown stage '$s' (pretrain, extend, sft, evaluate, analyze)"
  want[$s]=1
done
IFS=, read -ra model_list <<<"$models"
IFS=, read -ra seed_list <<<"$seeds"
for m in "${model_list[@]}"; do
  [[ -f inputs/models/$m.ini || -f $m ]] || die "--models: no inputs/models/$m.ini"
done
for s in pretrain extend sft; do
  if [[ -z ${recipe[$s]:-} ]]; then
    if ((toy)); then recipe[$s]=inputs/recipes/toy_$s.ini; else recipe[$s]=inputs/recipes/$s.ini; fi
  fi
  if [[ -n ${want[$s]:-} && ! -f ${recipe[$s]} ]]; then die "recipe ${recipe[$s]} of stage $s does not exist"; fi
done
# evaluate / analyze: an optional --config of their own (inputs/recipes/[toy_]<stage>.ini when present).
for s in evaluate analyze; do
  if [[ -z ${recipe[$s]:-} ]]; then
    f=inputs/recipes/$s.ini
    if ((toy)); then f=inputs/recipes/toy_$s.ini; fi
    if [[ -f $f ]]; then recipe[$s]=$f; fi
  fi
done
if [[ -n ${want[pretrain]:-} && ! -f $data/train.h5 ]]; then
  die "no token shards in $data (train.h5): run jobs/quickstart.sh or build/bin/prepare first"
fi
export HEADROOM_ROOT=$root HEADROOM_BIN=${HEADROOM_BIN:-$root/build/bin}

# A reachable Slurm: the environment's, else the local single-node one.
if ((!dry)); then
  if ! scontrol ping >/dev/null 2>&1 && [[ -f ${HEADROOM_SLURM_DIR:-$root/.local/slurm}/etc/slurm.conf ]]; then
    export SLURM_CONF=${HEADROOM_SLURM_DIR:-$root/.local/slurm}/etc/slurm.conf
  fi
  if ! scontrol ping 2>/dev/null | grep -q UP; then
    if ((local)); then
      eval "$(jobs/slurm_local_up.sh --env)"
    else
      die "no Slurm controller is reachable (scontrol ping); start the single-node cluster with jobs/slurm_local_up.sh, or pass --local"
    fi
  fi
fi

study_dir=$runs_root/$study
submitted=0 skipped=0 reused=0

finished() {  # finished STAGE DIR
  case $1 in
    evaluate) [[ -f $2/DONE || -f $2/results.json ]] ;;
    analyze) [[ -f $2/DONE || -f $2/report.md ]] ;;
    *) [[ -f $2/DONE ]] ;;
  esac
}
queued_job() {  # the id of a still pending/running job recorded for DIR
  local f=$1/.slurm_job_id id st
  [[ -s $f ]] || return 1
  id=$(cat "$f")
  st=$(squeue -h -j "$id" -o %T 2>/dev/null | head -1) || return 1
  [[ $st =~ ^(PENDING|RUNNING|REQUEUED|REQUEUE_HOLD|CONFIGURING|COMPLETING|SUSPENDED|RESIZING)$ ]] || return 1
  echo "$id"
}
# submit STAGE CHAIN DIR SCRIPT DEPS VAR=VALUE... ; sets $last to the job id ("" when skipped)
submit() {
  local stage=$1 chain=$2 dir=$3 script=$4 deps=$5; shift 5
  last=""
  if finished "$stage" "$dir"; then
    echo "  $chain $stage: finished ($dir), skipped"; skipped=$((skipped + 1)); return
  fi
  if ((!dry)) && last=$(queued_job "$dir"); then
    echo "  $chain $stage: job $last is already queued or running, reused"; reused=$((reused + 1)); return
  fi
  local cmd=(sbatch --parsable --job-name="hr-$study-$chain-$stage" --output="$dir/slurm-%j.out")
  if [[ -n $deps ]]; then cmd+=(--dependency="afterok:$deps" --kill-on-invalid-dep=yes); fi
  if [[ -n $ntasks && $stage != analyze ]]; then cmd+=(--ntasks="$ntasks"); fi
  if ((gpus_per_node > 0)) && [[ $stage != analyze ]]; then
    cmd+=(--nodes="$nodes" --gpus-per-node="$gpus_per_node" --ntasks-per-node="$gpus_per_node")
  fi
  # shellcheck disable=SC2206
  if [[ -n $sbatch_extra ]]; then cmd+=($sbatch_extra); fi
  cmd+=("$script")
  local vars=(RUN_DIR="$dir" MODEL= RECIPE= INIT= SEED= DATA_DIR="$data" RUNS= OUT= EVAL_CONFIG= ANALYZE_CONFIG=
              EXTRA_ARGS="${stage_args[$stage]:-}" NP="${ntasks:-}" "$@")
  if ((dry)); then
    last="<$chain/$stage>"
    echo "  $chain $stage: ${vars[*]} ${cmd[*]}"
    return
  fi
  mkdir -p "$dir"
  last=$(env "${vars[@]}" "${cmd[@]}") || die "sbatch failed for $chain $stage"
  last=${last%%;*}
  echo "$last" >"$dir/.slurm_job_id"
  echo "  $chain $stage: job $last${deps:+ (after $deps)}  log: $dir/slurm-$last.out"
  submitted=$((submitted + 1))
}

echo "submit_pipeline: study '$study' in $study_dir: models ${models}, seeds ${seeds}, stages ${stages}," \
     "$( ((gpus_per_node > 0)) && echo "GPU jobs: $nodes node(s) x $gpus_per_node GPUs, one rank per GPU" || echo "CPU jobs")"
eval_dirs=() eval_jobs=()
for m in "${model_list[@]}"; do
  mfile=inputs/models/$m.ini
  if [[ -f $m ]]; then mfile=$m; fi
  name=$(basename "$m" .ini)
  for seed in "${seed_list[@]}"; do
    chain=$name-s$seed cdir=$study_dir/$name-s$seed prev=""
    # pretrain: on GPUs the architecture's own GPU script when there is one (pretrain_d128.slurm
    # for d128_*), else the generic one.
    if [[ -n ${want[pretrain]:-} ]]; then
      script=jobs/pretrain.slurm
      for tag in d128 d256 d512 k512_v128 k128_v512; do
        if ((gpus_per_node > 0)) && [[ $name == "${tag}_"* && -f jobs/pretrain_$tag.slurm ]]; then script=jobs/pretrain_$tag.slurm; fi
      done
      submit pretrain "$chain" "$cdir/pretrain" "$script" "" MODEL="$mfile" RECIPE="${recipe[pretrain]}" SEED="$seed"
      prev=$last
    fi
    pretrain_job=$prev
    previous_dir=$cdir/pretrain
    for s in extend sft; do
      if [[ -n ${want[$s]:-} ]]; then
        if [[ -z $prev ]] && ! finished pretrain "$previous_dir" && [[ ! -s $previous_dir/checkpoints/latest ]]; then
          echo "  warning: $chain $s starts from $previous_dir, which has no checkpoint and no job in this submission"
        fi
        submit "$s" "$chain" "$cdir/$s" "jobs/$s.slurm" "$prev" INIT="$previous_dir" RECIPE="${recipe[$s]}"
        prev=$last
      fi
      # The next stage starts from this one when it runs (or ran); a stage left out is bridged.
      if [[ -n ${want[$s]:-} ]] || finished "$s" "$cdir/$s"; then previous_dir=$cdir/$s; fi
    done
    if [[ -n ${want[evaluate]:-} ]]; then
      submit evaluate "$chain" "$cdir/evaluate" jobs/evaluate.slurm "$prev" INIT="$previous_dir" EVAL_CONFIG="${recipe[evaluate]:-}"
      if [[ -n $last ]]; then eval_jobs+=("$last"); fi
    fi
    eval_dirs+=("$cdir/evaluate")
    if ((evaluate_base)) && [[ -n ${want[evaluate]:-} ]]; then
      submit evaluate "$chain" "$cdir/evaluate_base" jobs/evaluate.slurm "$pretrain_job" INIT="$cdir/pretrain" \
        EVAL_CONFIG="${recipe[evaluate]:-}" EXTRA_ARGS="${stage_args[evaluate]:-} --eval.allow_beyond_training true${evaluate_base_lengths:+ --eval.lengths $evaluate_base_lengths}"
      if [[ -n $last ]]; then eval_jobs+=("$last"); fi
      eval_dirs+=("$cdir/evaluate_base")
    fi
  done
done
if [[ -n ${want[analyze]:-} ]]; then
  deps=$(IFS=:; echo "${eval_jobs[*]}")
  submit analyze "$study" "$study_dir/analysis" jobs/analyze.slurm "$deps" RUNS="${eval_dirs[*]}" OUT="$study_dir/analysis" \
    ANALYZE_CONFIG="${recipe[analyze]:-}"
fi
echo "submit_pipeline: $submitted submitted, $reused already queued, $skipped finished; watch with: squeue; logs: $study_dir/*/*/slurm-*.out"
