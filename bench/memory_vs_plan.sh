#!/usr/bin/env bash
# The memory plan's host figure against the measured peak (not a test): a small model trained for
# 2 steps on one 16K-token window, with train.recompute none, full, and with cp = 2 (2 ranks);
# prints each rank's peak resident memory (VmHWM, the trainer's last log line) next to the plan's
# host total of the same configuration (pretrain --memory-plan) and their ratio.
#   bench/memory_vs_plan.sh [BUILD_DIR]      (SEQ=16384 by default; about 3 minutes on 2 cores)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${1:-$root/build}/bin
WORK=$(mktemp -d "${TMPDIR:-/tmp}/headroom_memory_vs_plan.XXXXXX"); trap 'rm -rf "$WORK"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader \
  OMPI_MCA_pml=ob1 OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1
"$BIN/prepare" --input "$root/validation/data/sample_corpus/train" --output "$WORK/shards" >/dev/null
seq=${SEQ:-16384}
model=(--model.vocab_size 259 --model.d_model 256 --model.n_layers 2 --model.d_ff 2048
       --model.n_heads 4 --model.n_kv_heads 4 --model.head_dim_qk 64 --model.head_dim_v 64
       --train.seq_len "$seq" --train.global_batch 1 --train.micro_batch 1 --train.steps 2
       --train.warmup_steps 1 --train.log_every 1 --train.device cpu
       --data.train "$WORK/shards/train.h5" --data.val "$WORK/shards/val.h5")
gib() { awk -v b="$1" 'BEGIN { printf "%.3f", b / 1073741824 }'; }
printf "%-16s %5s %12s %12s %12s %7s %6s\n" layout ranks "plan GiB" "peak GiB" "(lowest)" "plan/peak" "s"
for spec in "none 1" "full 1" "cp2 2"; do
  read -r name np <<<"$spec"
  args=(--train.recompute none)
  [[ $name == full ]] && args=(--train.recompute full)
  [[ $name == cp2 ]] && args=(--train.recompute none --parallel.cp 2)
  plan=$("$BIN/pretrain" --memory-plan --world-size "$np" "${model[@]}" "${args[@]}" |
         sed -nE 's/^  host total .*\(([0-9]+) bytes\)$/\1/p')
  start=$SECONDS
  OMP_NUM_THREADS=$((2 / np > 0 ? 2 / np : 1)) mpirun -np "$np" "$BIN/pretrain" --run-dir "$WORK/$name" \
    "${model[@]}" "${args[@]}" >"$WORK/$name.out" 2>&1 || { cat "$WORK/$name.out"; exit 1; }
  line=$(grep 'peak resident memory per rank' "$WORK/$name/log.txt")
  high=$(sed -nE 's/.*highest ([0-9]+) bytes.*/\1/p' <<<"$line")
  low=$(sed -nE 's/.*lowest ([0-9]+) bytes.*/\1/p' <<<"$line")
  printf "%-16s %5s %12s %12s %12s %7s %6s\n" "recompute $name" "$np" "$(gib "$plan")" "$(gib "$high")" \
    "$(gib "$low")" "$(awk -v p="$plan" -v h="$high" 'BEGIN { printf "%.3f", p / h }')" $((SECONDS - start))
done
