#!/usr/bin/env bash
# The retrieval probe (train.probe_every, src/train/probe.h): its scores do not depend on the
# process layout ((tp, dp) = (1, 1), (2, 1), (1, 2)), it leaves training untouched (losses and
# weights bit-identical to a run without it), and it writes step 0, every probe_every steps and
# the last step to probe.jsonl with accuracies in [0, 1].
# usage: test_probe.sh BIN SRC PY
BIN=$1 SRC=$2 PY=$3
WORK=$(mktemp -d /tmp/headroom_probe.XXXXXX); trap 'rm -rf "$WORK"' EXIT
source "$(dirname "$0")/common.sh"
shards
# kv examples need ~80 byte tokens: a longer window than tiny_args' 32.
args=($(tiny_args) --train.seq_len 96 --train.steps 12 --data.synthetic_ratio 0.5 --data.synthetic_tasks kv
      --data.synthetic_min_len 48)
probe=(--train.probe_every 5 --train.probe_samples 10 --train.probe_tasks kv)
check "no-probe run" run 1 "$WORK/plain" "${args[@]}"
check "tp1 dp1 probe run" run 1 "$WORK/a" "${args[@]}" "${probe[@]}"
check "tp2 dp1 probe run" run 2 "$WORK/b" "${args[@]}" "${probe[@]}" --parallel.tp 2 --parallel.dp 1
check "tp1 dp2 probe run" run 2 "$WORK/c" "${args[@]}" "${probe[@]}" --parallel.tp 1 --parallel.dp 2
for f in "$WORK"/*.log; do grep -q "error" "$f" && { echo "--- $f"; tail -5 "$f"; }; done
check "the probe leaves training bit-identical" "$PY" "$SRC/validation/mpi/compare_runs.py" "$WORK/a" "$WORK/plain" 0
check "the no-probe run writes no probe.jsonl" test ! -e "$WORK/plain/probe.jsonl"
compare_probe() {  # compare_probe A B
  "$PY" - "$1/probe.jsonl" "$2/probe.jsonl" <<'PY'
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
b = [json.loads(l) for l in open(sys.argv[2])]
bad = []
if [r["step"] for r in a] != [0, 5, 10, 12]:
    bad.append(f"probe steps {[r['step'] for r in a]}, expected [0, 5, 10, 12]")
if [r["step"] for r in a] != [r["step"] for r in b]:
    bad.append("probe steps differ between layouts")
for x, y in zip(a, b):
    if not (0 <= x["token_acc"] <= 1 and 0 <= x["exact"] <= 1):
        bad.append(f"step {x['step']}: token_acc {x['token_acc']}, exact {x['exact']} out of range")
    if x["examples"] != 10 or x["answer_tokens"] != y["answer_tokens"]:
        bad.append(f"step {x['step']}: examples {x['examples']}, answer tokens {x['answer_tokens']} vs {y['answer_tokens']}")
    if abs(x["loss"] - y["loss"]) > 1e-5 * abs(y["loss"]):
        bad.append(f"step {x['step']}: loss {x['loss']} vs {y['loss']}")
    # An argmax may flip on an fp32 near-tie between layouts: one token at most.
    if abs(x["token_acc"] - y["token_acc"]) > 1.0 / x["answer_tokens"] + 1e-12:
        bad.append(f"step {x['step']}: token_acc {x['token_acc']} vs {y['token_acc']}")
print(f"{sys.argv[1]} vs {sys.argv[2]}: {len(a)} probe points, loss at the last {a[-1]['loss']:.5f} vs {b[-1]['loss']:.5f}")
for m in bad:
    print("  " + m)
sys.exit(1 if bad else 0)
PY
}
check "probe at tp=2 matches tp=1" compare_probe "$WORK/b" "$WORK/a"
check "probe at dp=2 matches dp=1" compare_probe "$WORK/c" "$WORK/a"
finish
