#!/usr/bin/env bash
# GPU cluster jobs without a GPU cluster: the sbatch lines jobs/submit_pipeline.sh and
# jobs/run_study.sh generate for 1 and 4 nodes, and the launch lines the job scripts build from
# the environment Slurm gives a GPU job (one rank per GPU), all in dry-run mode.
#   test_gpu_jobs.sh BIN_DIR REPO
set -euo pipefail
bin=$1 repo=$(cd "$2" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$repo"
fails=0
expect() {  # expect WHAT TEXT PATTERN: TEXT contains PATTERN (fixed string)
  if ! grep -qF -- "$3" <<<"$2"; then echo "FAIL: $1: no '$3' in:"; echo "$2" | sed 's/^/    /'; fails=$((fails + 1)); fi
}
refuse() {  # refuse WHAT TEXT PATTERN: TEXT does not contain PATTERN
  if grep -qF -- "$3" <<<"$2"; then echo "FAIL: $1: unexpected '$3' in:"; echo "$2" | sed 's/^/    /'; fails=$((fails + 1)); fi
}
line() { grep -F " $1: " <<<"$2" || true; }  # the dry-run line of one chain stage

mkdir -p "$tmp/shards" && : >"$tmp/shards/train.h5"
sp() { jobs/submit_pipeline.sh --dry-run --runs-root "$tmp/runs" --data "$tmp/shards" --models d512_0.6b --seeds 1 "$@"; }

# 1 node x 8 GPUs: every training and evaluation job asks for them; pretrain uses the GPU script.
out=$(sp --study g1 --gpus-per-node 8)
for s in pretrain extend sft evaluate; do
  expect "1 node, $s" "$(line "d512_0.6b-s1 $s" "$out")" "--nodes=1 --gpus-per-node=8 --ntasks-per-node=8"
done
expect "1 node, pretrain script" "$(line "d512_0.6b-s1 pretrain" "$out")" "jobs/pretrain_d512.slurm"
refuse "1 node, analyze" "$(line "g1 analyze" "$out")" "--gpus-per-node"
expect "1 node, summary" "$out" "GPU jobs: 1 node(s) x 8 GPUs, one rank per GPU"

# 4 nodes, from the environment as a cluster profile would set it.
out=$(HEADROOM_GPUS_PER_NODE=4 HEADROOM_NODES=4 sp --study g4)
expect "4 nodes, extend" "$(line "d512_0.6b-s1 extend" "$out")" "--nodes=4 --gpus-per-node=4 --ntasks-per-node=4"

# CPU jobs (the default): the generic pretrain script, no GPU request anywhere.
out=$(sp --study c --ntasks 8)
expect "cpu, pretrain script" "$(line "d512_0.6b-s1 pretrain" "$out")" "jobs/pretrain.slurm"
expect "cpu, sft" "$(line "d512_0.6b-s1 sft" "$out")" "--ntasks=8"
refuse "cpu" "$out" "--gpus-per-node"

# Contradictions are refused by name.
if msg=$(sp --study x --gpus-per-node 8 --ntasks 8 2>&1); then echo "FAIL: --ntasks with --gpus-per-node accepted"; fails=$((fails + 1)); fi
expect "ntasks + gpus refused" "$msg" "--ntasks 8 and --gpus-per-node 8"
if msg=$(sp --study x --nodes 2 2>&1); then echo "FAIL: --nodes without GPUs accepted"; fails=$((fails + 1)); fi
expect "nodes without gpus refused" "$msg" "--nodes 2 needs --gpus-per-node"

# The first study's GPU file submits unchanged; nodes and GPUs overridable after --.
out=$(jobs/run_study.sh inputs/studies/heads_gpu.study --slurm --runs-root "$tmp/runs" -- --dry-run --data "$tmp/shards")
expect "heads_gpu" "$(line "d128_0.6b-s3 evaluate" "$out")" "--nodes=1 --gpus-per-node=8 --ntasks-per-node=8"
expect "heads_gpu pretrain script" "$(line "k512_v128_0.6b-s2 pretrain" "$out")" "jobs/pretrain_k512_v128.slurm"
out=$(jobs/run_study.sh inputs/studies/heads_gpu.study --slurm --runs-root "$tmp/runs" -- --dry-run --data "$tmp/shards" --nodes 4 --gpus-per-node 4)
expect "heads_gpu on 4 nodes" "$(line "d512_0.6b-s1 sft" "$out")" "--nodes=4 --gpus-per-node=4 --ntasks-per-node=4"

# Inside a job: the launch line from the environment Slurm sets for a GPU job.
job() {  # job VAR=VALUE...: jobs/pretrain_d512.slurm in dry-run mode, its log
  env -i PATH="$PATH" HOME="$tmp" HEADROOM_ROOT="$repo" HEADROOM_BIN="$bin" HEADROOM_DRY_RUN=1 \
    RUN_DIR="$tmp/run" SLURM_JOB_ID=7 "$@" bash jobs/pretrain_d512.slurm 2>&1
}
out=$(job SLURM_JOB_NUM_NODES=1 SLURM_GPUS_ON_NODE=8 SLURM_NTASKS=8 SLURM_NTASKS_PER_NODE=8 HEADROOM_LAUNCHER=srun)
expect "job 1 node srun" "$out" "launch: srun --mpi=pmix --kill-on-bad-exit=1 -n 8 --ntasks-per-node=8 $bin/pretrain --config inputs/models/d512_0.6b.ini"
expect "job 1 node log" "$out" "GPUs: 8 per node x 1 nodes: one rank per GPU"
refuse "job 1 node warning" "$out" "warning"
out=$(job SLURM_JOB_NUM_NODES=4 SLURM_GPUS_PER_NODE=h100:8 SLURM_NTASKS=32 SLURM_NTASKS_PER_NODE="8(x4)" HEADROOM_LAUNCHER=srun)
expect "job 4 nodes srun" "$out" "launch: srun --mpi=pmix --kill-on-bad-exit=1 -n 32 --ntasks-per-node=8 "
refuse "job 4 nodes warning" "$out" "warning"
out=$(job SLURM_JOB_NUM_NODES=4 SLURM_GPUS_ON_NODE=8 SLURM_NTASKS=32 HEADROOM_LAUNCHER=mpirun)
expect "job 4 nodes mpirun" "$out" "-np 32 --map-by ppr:8:node $bin/pretrain"
out=$(job SLURM_JOB_NUM_NODES=2 SLURM_GPUS_ON_NODE=4 SLURM_NTASKS=16 SLURM_NTASKS_PER_NODE=8 HEADROOM_LAUNCHER=srun)
expect "job mismatch runs one rank per GPU" "$out" "-n 8 --ntasks-per-node=4 "
expect "job mismatch warns" "$out" "warning: the job has --ntasks-per-node=8 but 4 GPUs per node"
out=$(job SLURM_JOB_NUM_NODES=1 SLURM_NTASKS=8 HEADROOM_LAUNCHER=srun)
expect "cpu job" "$out" "launch: srun --mpi=pmix --kill-on-bad-exit=1 -n 8 $bin/pretrain"
refuse "cpu job" "$out" "GPUs:"

if ((fails)); then echo "test_gpu_jobs: $fails failure(s)"; exit 1; fi
echo "test_gpu_jobs: every generated sbatch and launch line as expected"
