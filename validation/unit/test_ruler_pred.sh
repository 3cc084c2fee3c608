#!/usr/bin/env bash
# evaluate --eval.ruler_pred true writes RULER's prediction files: ruler_pred/<length>/<task>.jsonl,
# one line per scored sample with RULER's fields (index, pred, input, outputs, others, truncation,
# length), whose pred and outputs are samples.jsonl's prediction and references, whose input is the
# whole prompt text (it re-tokenizes to the recorded prompt length in bytes with the byte tokenizer),
# and which re-score to results.json's task scores with RULER's own metrics written here
# (string_match_all for niah and vt, string_match_part for qa), with no Headroom code. Without the
# key there is no ruler_pred/ and no "input" in samples.jsonl.
# usage: test_ruler_pred.sh BIN SRC PY
BIN=$1 SRC=$2 PY=$3
WORK=$(mktemp -d -t headroom_ruler_pred.XXXXXX); trap 'rm -rf "$WORK"' EXIT
source "$SRC/validation/mpi/common.sh"
shards
mpirun -np 1 "$BIN/pretrain" --run-dir "$WORK/pre" $(tiny_args) --train.seq_len 1024 --train.steps 2 \
  --train.global_batch 2 >"$WORK/pre.log" 2>&1 || { echo "pretrain failed"; cat "$WORK/pre.log"; exit 1; }
ev=(--init "$WORK/pre" --eval.word_dir "$SRC/inputs/eval" --eval.mc_file "$SRC/inputs/eval/mc_quiz.jsonl"
    --eval.essay "$SRC/validation/data/sample_corpus/essay/sample.jsonl" --eval.allow_beyond_training true
    --eval.tasks niah_single_1,niah_multikey_1,vt,qa_1 --eval.lengths 1024,2048 --eval.samples 2
    --eval.max_new_tokens 8)
check "evaluate with ruler_pred" bash -c "mpirun -np 1 '$BIN/evaluate' --run-dir '$WORK/e' ${ev[*]} --eval.ruler_pred true >'$WORK/e.log' 2>&1"
check "evaluate without" bash -c "mpirun -np 1 '$BIN/evaluate' --run-dir '$WORK/plain' ${ev[*]} >'$WORK/plain.log' 2>&1"
check "no ruler_pred/ by default" test ! -e "$WORK/plain/ruler_pred"
check "no input in samples.jsonl by default" bash -c "! grep -q '\"input\"' '$WORK/plain/samples.jsonl'"
check "the same scores with and without" cmp <(grep -v seconds "$WORK/e/results.csv") <(grep -v seconds "$WORK/plain/results.csv")
rescore() {
  "$PY" - "$WORK/e" <<'PY'
import glob, json, os, sys
run = sys.argv[1]
# RULER's metrics (scripts/eval/synthetic/constants.py) and its postprocess_pred
# (scripts/eval/evaluate.py), reimplemented from their definition.
import re
def post(p):
    return re.sub(r"[\x00-\x1f]", "\n", p.strip()).strip()
def match_all(preds, refs):
    return 100 * sum(sum(r.lower() in p.lower() for r in rs) / len(rs) for p, rs in zip(preds, refs)) / len(preds)
def match_part(preds, refs):
    return 100 * sum(max(r.lower() in p.lower() for r in rs) for p, rs in zip(preds, refs)) / len(preds)
metric = {"niah_single_1": match_all, "niah_multikey_1": match_all, "vt": match_all, "qa_1": match_part}
samples = [json.loads(l) for l in open(os.path.join(run, "samples.jsonl"))]
results = json.load(open(os.path.join(run, "results.json")))
bad, files = [], sorted(glob.glob(os.path.join(run, "ruler_pred", "*", "*.jsonl")))
want = {(t["task"], t["length"]) for t in results["tasks"] if t["n"] > 0}
got = {(os.path.basename(f)[:-6], int(os.path.basename(os.path.dirname(f)))) for f in files}
if got != want:
    bad.append(f"files for {sorted(got)}, expected the scored cells {sorted(want)}")
for f in files:
    task, length = os.path.basename(f)[:-6], int(os.path.basename(os.path.dirname(f)))
    lines = [json.loads(l) for l in open(f)]
    for l in lines:
        if list(l) != ["index", "pred", "input", "outputs", "others", "truncation", "length"]:
            bad.append(f"{f}: fields {list(l)}")
        s = next(x for x in samples if x["task"] == task and x["length"] == length and x["index"] == l["index"])
        if (l["pred"], l["outputs"], l["input"]) != (s["prediction"], s["references"], s["input"]):
            bad.append(f"{f} index {l['index']}: pred/outputs/input differ from samples.jsonl")
        # Byte tokenizer: BOS + one token per byte of the prompt text.
        if len(l["input"].encode()) + 1 != l["length"]:
            bad.append(f"{f} index {l['index']}: input has {len(l['input'].encode())} bytes, length {l['length']}")
    score = metric[task]([post(l["pred"]) for l in lines], [l["outputs"] for l in lines])
    ours = next(t["score"] for t in results["tasks"] if t["task"] == task and t["length"] == length)
    print(f"{task}@{length}: {len(lines)} samples, RULER-style re-score {score:.3f}, results.json {ours:.3f}")
    if abs(score - ours) > 1e-9:
        bad.append(f"{task}@{length}: re-scored {score}, results.json {ours}")
for b in bad:
    print("  " + b)
sys.exit(1 if bad else 0)
PY
}
check "RULER's files re-score to results.json" rescore
finish
