#!/usr/bin/env bash
# Imported Hugging Face models through the stages, unchanged: the tiny Llama (llama3 RoPE scaling),
# Qwen 3 (YaRN, tied embeddings) and OLMo 3 (sliding layers) directories of make_tiny_hf.py are
# imported, evaluated on a short RULER subset at 1024 tokens in their own tokenizer (read from the
# checkpoint), analyzed together, and extended for two steps on a shard prepared with the same
# tokenizer.json (prepare --tokenizer HF_DIR; the three directories share one tokenizer, so one
# shard serves them all).
# usage: test_hf_stages.sh BIN SRC PY
BIN=$1 SRC=$2 PY=$3
WORK=$(mktemp -d -t headroom_hf_stages.XXXXXX); trap 'rm -rf "$WORK"' EXIT
source "$SRC/validation/mpi/common.sh"

"$PY" "$SRC/validation/hf/make_tiny_hf.py" "$WORK/hf" >/dev/null || { echo "make_tiny_hf.py failed"; exit 1; }
"$BIN/prepare" --input "$SRC/validation/data/sample_corpus/train" --output "$WORK/shards" \
  --tokenizer "$WORK/hf/llama" --val-fraction 0.1 >"$WORK/prepare.log" 2>&1 \
  || { echo "prepare failed"; cat "$WORK/prepare.log"; exit 1; }

stages() {  # stages NAME: import, evaluate, extend
  local n=$1
  "$BIN/import_hf" --hf "$WORK/hf/$n" --out "$WORK/$n" >"$WORK/$n.import.log" 2>&1 \
    || { cat "$WORK/$n.import.log"; return 1; }
  mpirun -np 1 "$BIN/evaluate" --init "$WORK/$n" --run-dir "$WORK/eval/$n" --eval.tasks niah_single_1,vt \
    --eval.lengths 1024 --eval.samples 2 --eval.loss_windows 1 --data.val "$WORK/shards/val.h5" \
    --eval.word_dir "$SRC/inputs/eval" --eval.essay "$SRC/validation/data/sample_corpus/essay/sample.jsonl" \
    >"$WORK/$n.eval.log" 2>&1 || { cat "$WORK/$n.eval.log"; return 1; }
  # Scored, not skipped: the prompts fit at 1024 in the model's own tokenizer.
  "$PY" - "$WORK/eval/$n/results.json" "$WORK/$n/checkpoints/step_00000000.h5" <<'EOF' || return 1
import json, sys, h5py
r = json.load(open(sys.argv[1]))
with h5py.File(sys.argv[2], "r") as f:
    tok = f["config"].attrs["tokenizer_id"]
tok = tok.decode() if isinstance(tok, bytes) else tok
assert r["tokenizer_id"] == tok and tok.startswith("hf"), (r["tokenizer_id"], tok)
by_length = r["ruler"]["by_length"]
assert by_length and by_length[0]["n_tasks"] == 2, "tasks skipped: %r" % by_length
print("%s: evaluate scored 2 tasks (tokenizer %s, RULER average %s)" % (sys.argv[1], tok, r["ruler"]["average"]))
EOF
  mpirun -np 1 "$BIN/extend" --init "$WORK/$n" --run-dir "$WORK/ext/$n" --data.train "$WORK/shards/train.h5" \
    --data.val "$WORK/shards/val.h5" --train.steps 2 --train.seq_len 128 --train.global_batch 2 \
    --train.warmup_steps 1 >"$WORK/$n.extend.log" 2>&1 || { cat "$WORK/$n.extend.log"; return 1; }
  [[ -f $WORK/ext/$n/DONE ]]
}
for n in llama qwen3 olmo3; do check "$n: import, evaluate, extend" stages "$n"; done

analyze_all() {
  "$BIN/analyze" --runs "$WORK"/eval/* --out "$WORK/analysis" >"$WORK/analyze.log" 2>&1 \
    || { cat "$WORK/analyze.log"; return 1; }
  [[ -f $WORK/analysis/report.md ]] && grep -q "import" "$WORK/analysis/report.md"
}
check analyze analyze_all
finish
