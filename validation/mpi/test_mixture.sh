#!/usr/bin/env bash
# data.mix over three datasets for 1,000 steps: tokens per source (metrics.jsonl) within 1% of the
# weights; the same per-source counts for dp = 1 and dp = 2; a run stopped at step 500 and resumed
# logs, from there on, exactly the lines of the uninterrupted run (loss and gradient norm to the
# last bit, per-source tokens included).
# usage: test_mixture.sh BIN_DIR SOURCE_DIR PYTHON
BIN=$1 SRC=$2 PY=$3
WORK=$(mktemp -d -t headroom_mixture.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
source "$SRC/validation/mpi/common.sh"

for name in web code long; do
  "$PY" "$SRC/validation/data/make_corpus.py" "$SRC/validation/data/sample_corpus/train" "$WORK/c_$name" 1 2 >/dev/null
  "$BIN/prepare" --input "$WORK/c_$name" --output "$WORK/$name" --seed 3 >/dev/null || { echo "prepare failed"; exit 1; }
done
mix="web=$WORK/web:0.6,code=$WORK/code:0.2,long=$WORK/long:0.2"
args=(--model.vocab_size 0 --model.d_model 16 --model.n_layers 1 --model.d_ff 32 --model.n_heads 2
  --model.n_kv_heads 2 --model.head_dim_qk 8 --model.head_dim_v 8 --model.window 16 --train.seq_len 16
  --train.global_batch 4 --train.steps 1000 --train.warmup_steps 10 --train.log_every 100
  --train.checkpoint_every 0 --data.mix "$mix" --data.val "$WORK/web")

run 1 "$WORK/dp1" "${args[@]}"; check "dp=1 runs" test -f "$WORK/dp1/DONE"
run 2 "$WORK/dp2" "${args[@]}" --parallel.dp 2; check "dp=2 runs" test -f "$WORK/dp2/DONE"
run 1 "$WORK/rs" "${args[@]}" --train.steps_per_run 500; check "stops at step 500" test ! -f "$WORK/rs/DONE"
mpirun -np 1 "$BIN/pretrain" --run-dir "$WORK/rs" "${args[@]}" --resume auto >>"$WORK/rs.log" 2>&1
check "resumes to the end" test -f "$WORK/rs/DONE"

"$PY" - "$WORK" <<'PY'
import json, sys
work = sys.argv[1]
def lines(run):
    out = {}
    for l in open(f"{work}/{run}/metrics.jsonl"):
        j = json.loads(l)
        j.pop("tokens_per_s", None)
        out[j["step"]] = j  # a resumed run repeats steps after its checkpoint: keep the last
    return out
dp1, dp2, rs = lines("dp1"), lines("dp2"), lines("rs")
last = dp1[1000]["tokens_by_source"]
total = sum(last.values())
assert total == dp1[1000]["tokens"], (total, dp1[1000]["tokens"])
for name, w in (("web", 0.6), ("code", 0.2), ("long", 0.2)):
    share = last[name] / total
    assert abs(share / w - 1) < 0.01, f"{name}: share {share:.4f}, weight {w}"
    print(f"mixture: {name} {last[name]} tokens, share {share:.4f} (weight {w})")
assert all(dp1[s]["tokens_by_source"] == dp2[s]["tokens_by_source"] for s in dp1), "dp=1 and dp=2 differ"
assert sorted(rs) == sorted(dp1), (sorted(rs), sorted(dp1))
for s in rs:
    assert rs[s] == dp1[s], f"step {s}: resumed {rs[s]} vs uninterrupted {dp1[s]}"
print("mixture: dp=1 and dp=2 draw the same sources; the resumed run matches bit for bit")
PY
check "shares, layouts and resume" test $? -eq 0
finish
