#!/usr/bin/env bash
# The retrieval probe (train.probe_every, src/train/probe.h): its scores do not depend on the
# process layout ((tp, dp) = (1, 1), (2, 1), (1, 2)), it leaves training untouched (losses and
# weights bit-identical to a run without it), and it writes step 0, every probe_every steps and
# the last step to probe.jsonl with accuracies in [0, 1]; pretrain --force over a finished run moves
# its logs aside instead of appending to them.
# usage: test_probe.sh BIN SRC PY
BIN=$1 SRC=$2 PY=$3
WORK=$(mktemp -d -t headroom_probe.XXXXXX); trap 'rm -rf "$WORK"' EXIT
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
check "the probe leaves training bit-identical" "$PY" "$SRC/validation/mpi/compare_runs.py" "$WORK/a" "$WORK/plain" --exact
check "the no-probe run writes no probe.jsonl" test ! -e "$WORK/plain/probe.jsonl"
# compare_probe RUN REF FLOOR_RUN...: the probe loss of RUN within noise_floor's factor of the floor
# (the largest distance of a FLOOR_RUN, REF under another kernel set, to REF); answer-token accuracy
# within as many tokens as the floor runs flipped, and at least one: an argmax flips on an fp32
# near-tie, and one token is the smallest step the share can take.
compare_probe() {
  "$PY" - "$SRC/validation" "$@" <<'PY'
import json, sys
sys.path.insert(0, sys.argv[1])
import noise_floor
read = lambda d: [json.loads(l) for l in open(d + "/probe.jsonl")]
a, b, floors = read(sys.argv[2]), read(sys.argv[3]), [read(d) for d in sys.argv[4:]]
bad = []
if [r["step"] for r in a] != [0, 5, 10, 12]:
    bad.append(f"probe steps {[r['step'] for r in a]}, expected [0, 5, 10, 12]")
for run in [b] + floors:
    if [r["step"] for r in run] != [r["step"] for r in a]:
        bad.append("probe steps differ between runs")
for x, y in zip(a, b):
    if not (0 <= x["token_acc"] <= 1 and 0 <= x["exact"] <= 1):
        bad.append(f"step {x['step']}: token_acc {x['token_acc']}, exact {x['exact']} out of range")
    if x["examples"] != 10 or x["answer_tokens"] != y["answer_tokens"]:
        bad.append(f"step {x['step']}: examples {x['examples']}, answer tokens {x['answer_tokens']} vs {y['answer_tokens']}")
rel = lambda u, v: max(abs(p["loss"] - q["loss"]) / abs(q["loss"]) for p, q in zip(u, v))
flips = lambda u, v: max(round(abs(p["token_acc"] - q["token_acc"]) * q["answer_tokens"]) for p, q in zip(u, v))
name = sys.argv[2].rsplit("/", 1)[-1] + " vs " + sys.argv[3].rsplit("/", 1)[-1]
ok = noise_floor.verdict(f"probe {name} loss", rel(a, b), max(rel(f, b) for f in floors))
allowed = max([1] + [flips(f, b) for f in floors])
print(f"probe {name}: answer tokens flipped {flips(a, b)}, allowed {allowed} (floor runs flipped "
      f"{[flips(f, b) for f in floors]})")
if flips(a, b) > allowed:
    bad.append(f"answer-token accuracy differs by {flips(a, b)} tokens, more than {allowed}")
for m in bad:
    print("  " + m)
sys.exit(0 if ok and not bad else 1)
PY
}
floor=($(run_floor 1 "$WORK/a" "${args[@]}" "${probe[@]}" | sed 's/^--floor //'))
check "probe at tp=2 matches tp=1" compare_probe "$WORK/b" "$WORK/a" "${floor[@]}"
check "probe at dp=2 matches dp=1" compare_probe "$WORK/c" "$WORK/a" "${floor[@]}"
# --force over a finished run: the old run's logs move aside whole, the new ones start empty.
cp "$WORK/a/probe.jsonl" "$WORK/a_probe_before.jsonl"
check "--force reruns a finished run" run 1 "$WORK/a" "${args[@]}" "${probe[@]}" --force
check "--force: probe.jsonl holds only the new run" test "$(wc -l <"$WORK/a/probe.jsonl")" -eq 4
check "--force: metrics.jsonl holds only the new run" \
  test "$(wc -l <"$WORK/a/metrics.jsonl")" -eq "$(wc -l <"$WORK/plain/metrics.jsonl")"
check "--force: the old logs, checkpoints, config.ini and DONE are kept aside" \
  bash -c 'cmp -s "$1"/replaced-*/probe.jsonl "$2" && ls -d "$1"/replaced-*/checkpoints "$1"/replaced-*/DONE "$1"/replaced-*/config.ini' _ "$WORK/a" "$WORK/a_probe_before.jsonl"
finish
