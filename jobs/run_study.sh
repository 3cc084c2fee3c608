#!/usr/bin/env bash
# Runs a study grid end to end: token shards, then for every model x seed a chain
# pretrain [-> extend -> sft] -> evaluate, then one analyze over all chains, and prints the
# per-stage wall times and the Findings table.
#
#   jobs/run_study.sh inputs/studies/toy_cpu.study              # here: chains run 2 at a time, 1 core each
#   jobs/run_study.sh inputs/studies/toy_cpu.study --slurm      # on a cluster: jobs/submit_pipeline.sh
#   jobs/run_study.sh STUDY --slurm -- --ntasks 1 --local       # after --: more submit_pipeline options
#   jobs/run_study.sh STUDY --parallel N --runs-root DIR --seeds 1,2 --models a,b
#   jobs/run_study.sh STUDY --ranks 2 --parallel 1  # each job on 2 data-parallel ranks (mpirun): one chain
#                                                   # at a time, each about twice as fast; the losses equal
#                                                   # one rank's to fp32 rounding (a different draw of it)
#
# A .study file is bash that sets: name, models (comma-separated names of model_dir/<name>.ini),
# model_dir, seeds, stages (subset of pretrain,extend,sft,evaluate,analyze), recipe_<stage> files,
# and corpus + tokenizer (byte|bpe, vocab_size for bpe, prepare_args: more prepare options) for
# the shards, or data (a prepared shard directory). Runs land in RUNS_ROOT/<name>/<model>-s<seed>/<stage>, the report in
# RUNS_ROOT/<name>/analysis. Re-running continues: finished stages (DONE) are skipped.
# Optional branches of a chain, each ending in its own evaluate:
#   evaluate_base=1       the pretrained checkpoint evaluated at the same lengths without extension
#                         (eval.allow_beyond_training): <model>-s<seed>/evaluate_base (also --slurm)
#   evaluate_base_lengths=512   ... at these lengths only (default: the evaluate recipe's; also --slurm)
#   extend_variants="yarn:A.ini+B.ini frozen:E.ini,F.ini"   more extension recipes (A+B: two
#                         extend stages, the second --init'ed from the first; E,F: E with F layered
#                         over it), each -> sft -> evaluate:
#                         <model>-s<seed>/{extend_yarn,extend_yarn_2,sft_yarn,evaluate_yarn}
#                         (here only: --slurm refuses a study with variants)
#   variant_models_<name>=a,b   run variant <name> for these models only (default: all)
# For --slurm on a GPU cluster: gpus_per_node=G (and nodes=N) make every training and evaluation
# job a GPU job, one rank per GPU (submit_pipeline.sh --gpus-per-node/--nodes; options after --
# override them).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
usage() { sed -n '2,/^set -euo/p' "$root/jobs/run_study.sh" | sed '$d; s/^# \{0,1\}//'; exit "${1:-0}"; }
die() { echo "run_study: error: $*" >&2; exit 2; }
[[ $# -ge 1 && $1 != -h && $1 != --help ]] || usage
study_file=$1; shift
[[ -f $study_file ]] || die "no study file $study_file"
name="" models="" model_dir=inputs/models seeds=1 stages=pretrain,evaluate,analyze corpus="" tokenizer=byte
vocab_size=4096 data="" evaluate_base=0 evaluate_base_lengths="" extend_variants="" prepare_args="" gpus_per_node=0 nodes=1
declare recipe_pretrain="" recipe_extend="" recipe_sft="" recipe_evaluate="" recipe_analyze=""
# shellcheck disable=SC1090
source "$study_file"
parallel=2 ranks=1 runs_root=runs slurm=0 submit_args=()
while (($#)); do
  case $1 in
    --parallel) parallel=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --runs-root) runs_root=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --slurm) slurm=1; shift ;;
    --) shift; submit_args=("$@"); break ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
[[ -n $name && -n $models ]] || die "$study_file must set name and models"
[[ $parallel =~ ^[1-9][0-9]*$ ]] || die "--parallel $parallel: a positive number of chains"
[[ $ranks =~ ^[1-9][0-9]*$ ]] || die "--ranks $ranks: a positive number of ranks per job"
dir=$runs_root/$name
mkdir -p "$dir"
export HEADROOM_ROOT=$root HEADROOM_BIN=${HEADROOM_BIN:-$root/build/bin}
t0=$(date +%s)
stamp() { echo "run_study: [$(( $(date +%s) - t0 ))s] $*"; }

if [[ -z $data ]]; then
  data=$dir/shards
  if [[ ! -f $data/DONE ]]; then
    [[ -n $corpus ]] || die "$study_file sets neither data nor corpus"
    # The default corpus is fetched on first use (jobs/fetch_corpus.sh: offline sources, ~15 s).
    [[ -d $corpus || $corpus != data/corpus/* ]] || jobs/fetch_corpus.sh data/corpus >/dev/null
    args=(--input "$corpus" --output "$data" --tokenizer "$tokenizer")
    [[ $tokenizer == bpe ]] && args+=(--vocab-size "$vocab_size")
    # shellcheck disable=SC2206
    args+=($prepare_args)
    "$HEADROOM_BIN/prepare" "${args[@]}" >/dev/null
  fi
fi
IFS=, read -ra model_list <<<"$models"
model_files=()
for m in "${model_list[@]}"; do
  f=$model_dir/$m.ini
  [[ -f $f ]] || die "model $m: no $f"
  model_files+=("$f")
done
stamp "study $name: ${#model_list[@]} configurations x seeds $seeds, stages $stages, shards $data"

if ((slurm)); then
  [[ -z $extend_variants ]] || die "$study_file sets extend_variants, which only the local runner knows"
  args=(--study "$name" --runs-root "$runs_root" --models "$(IFS=,; echo "${model_files[*]}")" --seeds "$seeds"
        --stages "$stages" --data "$data")
  [[ $evaluate_base == 1 ]] && args+=(--evaluate-base)
  [[ -n $evaluate_base_lengths ]] && args+=(--evaluate-base-lengths "$evaluate_base_lengths")
  ((gpus_per_node > 0)) && args+=(--gpus-per-node "$gpus_per_node" --nodes "$nodes")
  for s in pretrain extend sft evaluate analyze; do
    v=recipe_$s
    [[ -n ${!v} ]] && args+=(--recipe "$s=${!v}")
  done
  exec jobs/submit_pipeline.sh "${args[@]}" "${submit_args[@]}"
fi

# Here: each chain is the job scripts run as plain programs (one thread per rank; one rank, or
# `ranks` under mpirun), `parallel` chains at once.
has() { [[ ",$stages," == *",$1,"* ]]; }
job() {  # job NAME VAR=VALUE...: jobs/NAME.slurm (or STAGE_SCRIPT=...) as a plain program into $cdir/NAME
  local s=$1 t script
  shift
  t=$(date +%s)
  script=$s
  for a in "$@"; do [[ $a == STAGE_SCRIPT=* ]] && script=${a#STAGE_SCRIPT=}; done
  mkdir -p "$cdir/$s"
  env "$@" RUN_DIR="$cdir/$s" NP="$ranks" HEADROOM_LAUNCHER="$launcher" bash "jobs/$script.slurm" >"$cdir/$s/job.out" 2>&1 ||
    { echo "FAILED $cdir/$s (see $cdir/$s/job.out)"; return 1; }
  echo "finished $cdir/$s in $(( $(date +%s) - t ))s"
}
branch() {  # branch SUFFIX INIT EXTEND_RECIPES(+-joined): extend... -> sft -> evaluate, dirs <stage>SUFFIX
  local suf=$1 prev=$2 recipes=$3 k=0 r name extra l
  IFS=+ read -ra rs <<<"$recipes"
  for r in "${rs[@]}"; do
    k=$((k + 1)); name=extend$suf; ((k > 1)) && name+=_$k
    IFS=, read -ra layers <<<"$r"  # a,b: recipe a with b layered over it
    extra=""
    for l in "${layers[@]:1}"; do extra+=" --config $l"; done
    job "$name" INIT="$prev" RECIPE="${layers[0]}" EXTRA_ARGS="$extra" DATA_DIR="$data" STAGE_SCRIPT=extend || return 1
    prev=$cdir/$name
  done
  if has sft; then job "sft$suf" INIT="$prev" RECIPE="$recipe_sft" DATA_DIR="$data" STAGE_SCRIPT=sft || return 1; prev=$cdir/sft$suf; fi
  if has evaluate; then job "evaluate$suf" INIT="$prev" EVAL_CONFIG="$recipe_evaluate" STAGE_SCRIPT=evaluate || return 1; fi
}
chain() {  # chain MODEL_FILE SEED
  local mfile=$1 seed=$2 cdir prev="" v model spec vname vrec only
  model=$(basename "$mfile" .ini)
  cdir=$dir/$model-s$seed
  for s in pretrain extend sft; do
    has "$s" || continue
    v=recipe_$s
    if [[ $s == pretrain ]]; then
      job "$s" MODEL="$mfile" SEED="$seed" RECIPE="${!v}" DATA_DIR="$data" || return 1
    else
      job "$s" INIT="$prev" RECIPE="${!v}" DATA_DIR="$data" || return 1
    fi
    prev=$cdir/$s
  done
  if has evaluate; then
    job evaluate INIT="$prev" EVAL_CONFIG="$recipe_evaluate" || return 1
    if [[ $evaluate_base == 1 ]] && has pretrain; then
      job evaluate_base INIT="$cdir/pretrain" EVAL_CONFIG="$recipe_evaluate" STAGE_SCRIPT=evaluate \
        EXTRA_ARGS="--eval.allow_beyond_training true${evaluate_base_lengths:+ --eval.lengths $evaluate_base_lengths}" || return 1
    fi
  fi
  for spec in $extend_variants; do
    vname=${spec%%:*} vrec=${spec#*:}
    v=variant_models_$vname; only=${!v:-}
    [[ -z $only || ",$only," == *",$model,"* ]] || continue
    branch "_$vname" "$cdir/pretrain" "$vrec" || return 1
  done
  echo "chain $model-s$seed done"
}
export -f chain branch job has
launcher=none
((ranks > 1)) && launcher=mpirun
export dir data stages ranks launcher recipe_pretrain recipe_extend recipe_sft recipe_evaluate evaluate_base evaluate_base_lengths extend_variants
for v in ${!variant_models_*}; do export "${v?}"; done
export OMP_NUM_THREADS=1
IFS=, read -ra seed_list <<<"$seeds"
n=$(( ${#model_files[@]} * ${#seed_list[@]} ))
# Seeds outermost: the first finished chains already hold seed 1 of every configuration.
status=0
for seed in "${seed_list[@]}"; do for f in "${model_files[@]}"; do echo "$f $seed"; done; done |
  xargs -P "$parallel" -L 1 bash -c 'chain "$0" "$1"' | {
    k=0
    while read -r line; do
      echo "  $line"
      if [[ $line == chain*done ]]; then
        k=$((k + 1)); el=$(( $(date +%s) - t0 ))
        stamp "chain $k/$n done, ETA $(( el * (n - k) / k ))s"
      fi
    done
  } || status=1
stamp "all chains ran"
if has analyze; then
  evals=()
  for seed in "${seed_list[@]}"; do for f in "${model_files[@]}"; do
    for e in "$dir/$(basename "$f" .ini)-s$seed"/evaluate*/; do [[ -f $e/DONE ]] && evals+=("${e%/}"); done
  done; done
  rm -rf "$dir/analysis"  # analyze writes a fresh report each time
  RUNS="${evals[*]}" OUT=$dir/analysis ANALYZE_CONFIG=$recipe_analyze bash jobs/analyze.slurm >"$dir/analyze.out" 2>&1 ||
    { echo "run_study: analyze failed; see $dir/analyze.out" >&2; exit 1; }
  stamp "analysis in $dir/analysis/report.md"
  if [[ -f $dir/analysis/tables/findings.csv ]]; then
    echo "Findings ($dir/analysis/tables/findings.csv):"
    /usr/bin/python3 - "$dir/analysis/tables/findings.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
def f(x):
    try: return f"{float(x):.4f}"
    except ValueError: return x
print(f"  {'finding':<22} {'score':<10} {'A':<6} {'B':<6} {'mean A':>8} {'mean B':>8} {'effect':>8} {'swing':>8}  verdict")
for r in rows:
    print(f"  {r['finding']:<22} {r['score']:<10} {r['configs_a']:<6} {r['configs_b']:<6} {f(r['mean_a']):>8} {f(r['mean_b']):>8} "
          f"{f(r['effect']):>8} {f(r['mean_seed_swing']):>8}  {r['verdict']}")
PY
  fi
fi
stamp "done (wall time $(( $(date +%s) - t0 ))s)"
exit $status
