#!/usr/bin/env bash
# The evaluate app from the outside, on a tiny checkpoint made by prepare + pretrain: --help lists
# every key; the same results with 1 and 2 MPI ranks (results.json apart from timing and rank
# count, results.csv and samples.jsonl byte for byte); the output files and their schema; and bad
# input refused with a message naming what is wrong: unknown task names, lengths beyond what the
# model addresses (and the flag that allows them), a checkpoint without a tokenizer, a finished
# run directory.
# usage: test_eval_cli.sh BIN SRC PY
BIN=$1 SRC=$2 PY=$3
WORK=$(mktemp -d -t headroom_eval.XXXXXX); trap 'rm -rf "$WORK"' EXIT
source "$SRC/validation/mpi/common.sh"
shards
expect_fail() {  # expect_fail LOG PATTERN COMMAND...: exit status 2 and PATTERN in the output
  local log=$1 pattern=$2; shift 2
  "$@" >"$log" 2>&1; local rc=$?
  [[ $rc -eq 2 ]] || { echo "  exit $rc, wanted 2"; cat "$log"; return 1; }
  grep -q -- "$pattern" "$log" || { echo "  no '$pattern' in:"; cat "$log"; return 1; }
}

# A tiny model trained for a few steps at 1024 tokens.
mpirun -np 1 "$BIN/pretrain" --run-dir "$WORK/pre" --model.vocab_size 259 --model.d_model 32 \
  --model.n_layers 2 --model.d_ff 64 --model.n_heads 4 --model.n_kv_heads 2 --model.head_dim_qk 8 \
  --model.head_dim_v 8 --train.seq_len 1024 --train.global_batch 2 --train.steps 3 \
  --data.train "$WORK/shards/train.h5" --data.val "$WORK/shards/val.h5" >"$WORK/pre.log" 2>&1 \
  || { echo "pretrain failed"; cat "$WORK/pre.log"; exit 1; }
common=(--init "$WORK/pre" --eval.word_dir "$SRC/inputs/eval" --eval.mc_file "$SRC/inputs/eval/mc_quiz.jsonl"
        --eval.essay "$SRC/validation/data/sample_corpus/essay/sample.jsonl")
ev() {  # ev NP DIR ARGS...: evaluate on NP ranks into DIR
  local np=$1 dir=$2; shift 2
  mpirun -np "$np" "$BIN/evaluate" --run-dir "$dir" "${common[@]}" "$@"
}
evlog() { ev "$@" >"$2.log" 2>&1; }  # the same, output in DIR.log

check "--help lists the eval keys" bash -c "'$BIN/evaluate' --help | grep -q 'eval.allow_beyond_training'"
check "--print-config shows the checkpoint's model" \
  bash -c "'$BIN/evaluate' --init '$WORK/pre' --print-config | grep -qx 'n_kv_heads = 2'"

# Same numbers on 1 and 2 ranks: every task, one length, a few samples.
run_args=(--eval.tasks all --eval.lengths 1024 --eval.samples 3 --eval.loss_windows 3)
check "1 rank" evlog 1 "$WORK/r1" "${run_args[@]}"
check "2 ranks" evlog 2 "$WORK/r2" "${run_args[@]}"
check "results.csv identical" cmp "$WORK/r1/results.csv" "$WORK/r2/results.csv"
check "samples.jsonl identical" cmp "$WORK/r1/samples.jsonl" "$WORK/r2/samples.jsonl"
check "results.json identical but for timing and ranks" "$PY" - "$WORK/r1/results.json" "$WORK/r2/results.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert (a["ranks"], b["ranks"]) == (1, 2), (a["ranks"], b["ranks"])
for k in ("ranks", "seconds", "created_utc"):
    a.pop(k), b.pop(k)
assert a == b, "results differ between 1 and 2 ranks"
PY
# eval.tp = 2: one model split over both ranks decodes the same tokens as one rank (fp32), and its
# losses agree to fp32 rounding (the row-parallel products sum two partial products). A model
# trained a little longer, so that greedy choices are not near-ties of an untrained model.
mpirun -np 1 "$BIN/pretrain" --run-dir "$WORK/pre_tp" --model.vocab_size 259 --model.d_model 32 \
  --model.n_layers 2 --model.d_ff 64 --model.n_heads 4 --model.n_kv_heads 2 --model.head_dim_qk 8 \
  --model.head_dim_v 8 --model.layer_pattern SF --model.window 64 --train.seq_len 1024 --train.global_batch 2 \
  --train.steps 40 --train.lr 3e-3 --data.train "$WORK/shards/train.h5" --data.val "$WORK/shards/val.h5" \
  >"$WORK/pre_tp.log" 2>&1 || { echo "pretrain failed"; cat "$WORK/pre_tp.log"; exit 1; }
tp_args=(--init "$WORK/pre_tp" --eval.word_dir "$SRC/inputs/eval" --eval.mc_file "$SRC/inputs/eval/mc_quiz.jsonl"
         --eval.tasks niah_single_1,niah_multikey_3,vt,json_kv,loss_by_position,mc --eval.lengths 1024
         --eval.samples 2 --eval.loss_windows 2)
evtp() {  # evtp NP DIR ARGS...: evaluate pre_tp on NP ranks into DIR, output in DIR.log
  local np=$1 dir=$2; shift 2
  mpirun -np "$np" "$BIN/evaluate" --run-dir "$dir" "${tp_args[@]}" "$@" >"$dir.log" 2>&1
}
check "tp 1" evtp 1 "$WORK/tp1"
check "tp 2" evtp 2 "$WORK/tp2" --eval.tp 2
check "  ...recorded in config.ini" grep -qx "tp = 2" "$WORK/tp2/config.ini"
# The losses' noise floor: tp 1 again under two other OpenBLAS kernel sets (another summation order
# in every product), the loss task only.
evfloor() {  # evfloor KERNELS: tp 1's losses again under another OpenBLAS kernel set, in tp1.KERNELS
  OPENBLAS_CORETYPE=$1 mpirun -np 1 "$BIN/evaluate" --run-dir "$WORK/tp1.$1" --init "$WORK/pre_tp" \
    --eval.tasks loss_by_position --eval.lengths 1024 --eval.loss_windows 2 >"$WORK/tp1.$1.log" 2>&1
}
floors=()
for k in $(floor_kernels); do
  check "tp 1 under the $k kernels (noise floor)" evfloor "$k"
  floors+=("$WORK/tp1.$k")
done
check "tp 2 decodes the tokens tp 1 decodes, losses within 10x the noise floor" env PYTHONPATH="$SRC/validation" \
  "$PY" - "$WORK/tp1" "$WORK/tp2" "${floors[@]}" <<'PY'
import json, sys
import noise_floor
a, b, *floor_dirs = sys.argv[1:]
sa = [json.loads(l) for l in open(a + "/samples.jsonl")]
sb = [json.loads(l) for l in open(b + "/samples.jsonl")]
assert len(sa) == len(sb) > 0
for x, y in zip(sa, sb):
    assert (x["task"], x["index"], x.get("prediction")) == (y["task"], y["index"], y.get("prediction")), (x, y)
ra, rb = (json.load(open(d + "/results.json")) for d in (a, b))
assert ra["multiple_choice"] == rb["multiple_choice"]
def losses(r):  # the mean and every bucket of every length, in order
    return [x["mean_loss"] for c in r["loss_by_position"] for x in [c] + c["buckets"]]
def distance(x, y):  # the largest relative difference
    assert len(x) == len(y) > 0
    return max(abs(u - v) / abs(u) for u, v in zip(x, y))
ref = losses(ra)
floor = max(distance(ref, losses(json.load(open(d + "/results.json")))) for d in floor_dirs)
assert noise_floor.verdict("eval.tp 2 losses by position", distance(ref, losses(rb)), floor)
PY
check "eval.tp that does not divide the heads is refused by key" expect_fail "$WORK/tp3.log" \
  "eval.tp = 3 does not divide model.n_heads = 4" mpirun -np 3 "$BIN/evaluate" --run-dir "$WORK/tp3" "${tp_args[@]}" \
  --eval.tp 3

check "results.json has the documented schema" "$PY" - "$WORK/r1/results.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["format"] == "headroom-eval-results" and r["format_version"] == 1
assert r["prompt_template"] == "base" and r["stage"] == "pretrain"
assert r["config_id"].startswith("cfg-") and len(r["config_id"]) == 20
names = [t["task"] for t in r["tasks"]]
assert len(names) == 14 and names[0] == "niah_single_1" and names[-1] == "json_kv", names
for t in r["tasks"]:
    assert t["length"] == 1024 and t["n"] + t["skipped"] == 3, t
    assert t["score"] is None or 0 <= t["score"] <= 100, t
assert [a["length"] for a in r["ruler"]["by_length"]] == [1024]
curve = r["loss_by_position"][0]
assert curve["length"] == 1024 and curve["windows"] == 3
assert [(b["start"], b["end"]) for b in curve["buckets"]][:3] == [(0, 16), (16, 32), (32, 64)]
assert sum(b["tokens"] for b in curve["buckets"]) == 3 * 1024
assert r["multiple_choice"]["n"] == 280 and 0 <= r["multiple_choice"]["acc"] <= 100
PY
check "results.csv rows" bash -c "[[ \$(head -1 '$WORK/r1/results.csv') == 'task,length,score,n,checkpoint,config_id' ]] && grep -q '^ruler_average,0,' '$WORK/r1/results.csv' && grep -q '^mc_acc_norm,0,' '$WORK/r1/results.csv'"
check "the table and the template on stdout" grep -q "prompt template: base" "$WORK/r1.log"
check "progress lines with an ETA" grep -q "ETA" "$WORK/r1.log"
check "DONE written" test -s "$WORK/r1/DONE"

# Refusals.
check "finished run refused" expect_fail "$WORK/f.log" "holds a finished run" ev 1 "$WORK/r1" "${run_args[@]}"
check "unknown task names named" expect_fail "$WORK/t.log" "unknown task names 'niah_single_9', 'bogus'" \
  ev 1 "$WORK/t" --eval.tasks vt,niah_single_9,bogus
check "length beyond training refused" expect_fail "$WORK/l.log" "eval.lengths 2048 exceed what checkpoint .* can address (1024 tokens" \
  ev 1 "$WORK/l" --eval.tasks niah_single_1 --eval.lengths 1024,2048
check "  ...unless allowed" evlog 1 "$WORK/l2" --eval.tasks niah_single_1 --eval.lengths 2048 --eval.samples 1 \
  --eval.allow_beyond_training true
cp "$WORK/pre/checkpoints/$(cat "$WORK/pre/checkpoints/latest")" "$WORK/notok.h5"
PYTHONPATH="$SRC/validation/mpi" "$PY" -c "import h5py,sys,checkpoint_identity as ci; f=h5py.File(sys.argv[1],'r+'); f['/config'].attrs['tokenizer_id']=''; ci.refresh(f); f.close()" "$WORK/notok.h5"
check "checkpoint without a tokenizer refused" expect_fail "$WORK/n.log" "notok.h5 has no tokenizer" \
  mpirun -np 1 "$BIN/evaluate" --init "$WORK/notok.h5" --run-dir "$WORK/n" --eval.tasks niah_single_1 --eval.lengths 1024
check "2 ranks fail together on bad input" expect_fail "$WORK/t2.log" "unknown task name 'bogus'" \
  ev 2 "$WORK/t2" --eval.tasks bogus
finish
