#!/usr/bin/env bash
# Data/tensor-parallel throughput and checkpoint I/O, as figures (not a test).
#   bench/bench_parallel.sh [BUILD_DIR]
# Prints tokens/s (median over logging windows) of the same training step at (tp, dp) = (1,1),
# (1,2), (2,1) with one thread per rank, REPEATS (default 3) times, the median speed-ups, and
# checkpoint write/read MB/s next to `dd` sequential-write MB/s on the same disk.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${1:-$root/build}/bin
WORK=$(mktemp -d "${TMPDIR:-/tmp}/headroom_bench_parallel.XXXXXX"); trap 'rm -rf "$WORK"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader \
  OMPI_MCA_pml=ob1 OMPI_MCA_btl_vader_single_copy_mechanism=none OMP_NUM_THREADS=1
"$BIN/prepare" --input "$root/validation/data/sample_corpus/train" --output "$WORK/shards" >/dev/null
model=(--model.vocab_size 259 --model.d_model 256 --model.n_layers 4 --model.d_ff 704
       --model.n_heads 4 --model.n_kv_heads 4 --model.head_dim_qk 64 --model.head_dim_v 64
       --train.seq_len 256 --train.global_batch 8 --train.steps 28 --train.warmup_steps 2
       --train.log_every 4 --data.train "$WORK/shards/train.h5" --data.val "$WORK/shards/val.h5")
# Median over the logging windows after the first (which holds start-up): one slow window from a
# neighbour on a shared VM does not decide the figure.
tps() { /usr/bin/python3 -c "import json,sys,statistics as s; print(round(s.median([json.loads(l)['tokens_per_s'] for l in open(sys.argv[1])][1:])))" "$1/metrics.jsonl"; }
run() { local np=$1 dir=$2; shift 2; mpirun -np "$np" "$BIN/pretrain" --run-dir "$WORK/$dir" "${model[@]}" "$@" >"$WORK/$dir.log" 2>&1; }

# Each layout runs REPEATS times, interleaved, and the speed-ups are medians over repetitions: on a
# shared VM a whole run can land in a slow minute (single runs of the same dp=2 job gave 1.66-2.1x).
repeats=${REPEATS:-3}
echo "training step, d_model 256, 4 layers, 4x64 heads, seq 256, global batch 8, 1 thread/rank:"
for r in $(seq 1 "$repeats"); do
  run 1 "dp1_$r" --train.checkpoint_every 4
  run 2 "dp2_$r" --parallel.dp 2
  run 2 "tp2_$r" --parallel.tp 2
  a=$(tps "$WORK/dp1_$r"); b=$(tps "$WORK/dp2_$r"); c=$(tps "$WORK/tp2_$r")
  printf '  repetition %d: tp=1 dp=1 %6d tok/s | tp=1 dp=2 %6d tok/s (%.2fx) | tp=2 dp=1 %6d tok/s (%.2fx)\n' \
    "$r" "$a" "$b" "$(echo "$b / $a" | bc -l)" "$c" "$(echo "$c / $a" | bc -l)"
  echo "$a $b $c" >>"$WORK/tps.txt"
done
/usr/bin/python3 - "$WORK/tps.txt" <<'PY'
import statistics as s, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1])]
print("  median over %d repetitions: dp=2 %.2fx, tp=2 %.2fx (dp=1 %d tok/s)" % (
    len(rows), s.median(r[1] / r[0] for r in rows), s.median(r[2] / r[0] for r in rows), s.median(r[0] for r in rows)))
PY

run 1 ck --train.checkpoint_every 0 --train.steps_per_run 6 --train.steps 12 || true
run 1 ck --resume auto --train.steps 12
echo "checkpoint I/O:"
grep -o '([0-9.e+]* MB) written in .*' "$WORK/dp1_1.log" | sed 's/^/  write: /' || true
grep -o '[0-9.e+]* MB read in .*' "$WORK/ck.log" | sed 's/^/  read:  /' || true
dd if=/dev/zero of="$WORK/dd.bin" bs=1M count=256 conv=fdatasync 2>&1 | tail -1 | sed 's/^/  dd sequential write (256 MiB, fdatasync): /'
