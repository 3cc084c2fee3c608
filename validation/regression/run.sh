#!/usr/bin/env bash
# The numerical regression runs: small fixed-seed runs of every stage on the committed sample corpus
# (validation/data/sample_corpus), whose figures extract.py reads and compare.py checks against
# validation/reference/regression.json. See validation/regression/README.md.
#
#   prepare   byte tokenizer, 10% of the documents held out            OUT/shards
#   pretrain  inputs/models/toy_d128.ini + toy_pretrain.ini, 1 rank,
#             seq_len 128, batch 8, 40 steps (retrieval probe when the
#             build has train.probe_every)                             OUT/pretrain
#   extend    --init pretrain, toy_extend.ini, seq_len 256, batch 4, 20 steps   OUT/extend
#   sft       --init extend, toy_sft.ini, seq_len 256, batch 4, 20 steps        OUT/sft
#             (byte tokens: the generated sft examples need >= 153)
#   evaluate  --init sft: niah_single_1 and qa_1 at 1024 tokens (beyond
#             training, allowed), loss_by_position, multiple choice     OUT/evaluate
#
# Every seed is given explicitly, every stage runs on 1 rank with OMP_NUM_THREADS=1, so the runs
# are a pure function of the code, the corpus and the arithmetic of the machine. About 25 s on
# one core. OUT_DIR's subdirectories of these names are replaced; nothing else in it is touched.
#
# usage: run.sh BUILD_DIR OUT_DIR
set -euo pipefail
if [[ $# -ne 2 ]]; then
  echo "usage: $0 BUILD_DIR OUT_DIR" >&2
  exit 2
fi
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BIN=$(cd "$1" && pwd)/bin
mkdir -p "$2"
OUT=$(cd "$2" && pwd)
for exe in prepare pretrain extend sft evaluate; do
  [[ -x $BIN/$exe ]] || { echo "run.sh: $BIN/$exe does not exist (build it first)" >&2; exit 2; }
done

# The mpi tests' environment (mpirun as root, shared-memory transport only, oversubscription,
# OMP_NUM_THREADS=1); only its exports are used. It sets -uo pipefail itself; -e is restated here.
# One BLAS thread too: the reference is computed single-threaded.
# shellcheck source=../mpi/common.sh
source "$SRC/validation/mpi/common.sh"
set -euo pipefail
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

t0=$(date +%s)
say() { echo "regression: [$(( $(date +%s) - t0 ))s] $*"; }
stage() {  # stage NAME LOG COMMAND...: run it, show the log's tail if it fails
  local name=$1 log=$2; shift 2
  if ! "$@" >"$log" 2>&1; then
    echo "regression: $name failed; the end of $log:" >&2
    tail -n 30 "$log" >&2
    exit 1
  fi
  say "$name done"
}

rm -rf "$OUT/shards" "$OUT/pretrain" "$OUT/extend" "$OUT/sft" "$OUT/evaluate"
stage prepare "$OUT/prepare.log" "$BIN/prepare" --input "$SRC/validation/data/sample_corpus/train" \
  --output "$OUT/shards" --tokenizer byte --val-fraction 0.1 --seed 1

M=$SRC/inputs/models R=$SRC/inputs/recipes
data=(--data.train "$OUT/shards/train.h5" --data.val "$OUT/shards/val.h5" --data.seed 1)
# Every logged step is a figure candidate; no intermediate checkpoints (the final one is written).
common=(--train.log_every 1 --train.checkpoint_every 0 --train.keep_last 1 --train.seed 1)

probe=()
help=$("$BIN/pretrain" --help 2>&1 || true)  # not a pipe into grep -q: SIGPIPE + pipefail
if [[ $help == *--train.probe_every* ]]; then
  probe=(--train.probe_every 10 --train.probe_samples 16)
else
  say "this pretrain has no train.probe_every: the probe figures are left out"
fi
stage pretrain "$OUT/pretrain.log" mpirun -np 1 "$BIN/pretrain" --config "$M/toy_d128.ini" \
  --config "$R/toy_pretrain.ini" "${data[@]}" "${common[@]}" --model.seed 1 \
  --train.seq_len 128 --train.global_batch 8 --train.steps 40 --train.warmup_steps 4 \
  "${probe[@]}" --run-dir "$OUT/pretrain"
stage extend "$OUT/extend.log" mpirun -np 1 "$BIN/extend" --init "$OUT/pretrain" \
  --config "$R/toy_extend.ini" "${data[@]}" "${common[@]}" \
  --train.seq_len 256 --train.global_batch 4 --train.steps 20 --train.warmup_steps 2 \
  --run-dir "$OUT/extend"
stage sft "$OUT/sft.log" mpirun -np 1 "$BIN/sft" --init "$OUT/extend" \
  --config "$R/toy_sft.ini" "${data[@]}" "${common[@]}" \
  --train.seq_len 256 --train.global_batch 4 --train.steps 20 --train.warmup_steps 2 \
  --run-dir "$OUT/sft"
stage evaluate "$OUT/evaluate.log" mpirun -np 1 "$BIN/evaluate" --init "$OUT/sft" \
  --config "$R/toy_evaluate.ini" --data.val "$OUT/shards/val.h5" \
  --eval.tasks niah_single_1,qa_1,loss_by_position,mc --eval.lengths 1024 \
  --eval.allow_beyond_training true --eval.samples 4 --eval.seed 1 --eval.max_new_tokens 16 \
  --eval.loss_windows 4 --eval.essay "$SRC/validation/data/sample_corpus/essay" \
  --eval.word_dir "$SRC/inputs/eval" --eval.mc_file "$SRC/inputs/eval/mc_quiz.jsonl" \
  --run-dir "$OUT/evaluate"
say "all stages done in $OUT"
