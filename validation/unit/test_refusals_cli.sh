#!/usr/bin/env bash
# The stages refuse before any work, with exit status 2 within seconds (never std::bad_alloc):
# memory plans that do not fit (pretrain's train.seq_len and model.d_ff, extend, sft, evaluate's
# eval.lengths, analyze's probe lengths; a product past int64; on 2 ranks together) name the keys and give the bytes
# needed and available, and write no run directory; a good run logs its plan once; a truncated
# shard or checkpoint is reported as truncated, naming the file and both sizes; a model whose
# vocabulary is not the data's is refused before config.ini is written; --config DIR, train.steps 0,
# a model.freeze pattern matching nothing and analyze over no evaluated run are refused.
# usage: test_refusals_cli.sh BIN_DIR SOURCE_DIR
set -uo pipefail
BIN=$1 SRC=$2
WORK=$(mktemp -d -t headroom_refusals.XXXXXX); trap 'rm -rf "$WORK"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_rmaps_base_oversubscribe=1 OMP_NUM_THREADS=1
failures=0 passed=0
check() {  # check NAME COMMAND...
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); else echo "FAIL: $name"; failures=$((failures + 1)); fi
}
# refused NAME 'REGEX|REGEX|...' COMMAND...: exit status 2 within 20 s, every extended regex in the
# output, and no bad_alloc.
refused() {
  local name=$1 patterns=$2; shift 2
  local log="$WORK/${name//[^a-zA-Z0-9]/_}.log" start=$SECONDS ok=1 p
  timeout 120 "$@" >"$log" 2>&1; local rc=$? took=$((SECONDS - start))
  [[ $rc -eq 2 ]] || { echo "  exit status $rc, wanted 2"; ok=0; }
  ((took <= 20)) || { echo "  took ${took}s"; ok=0; }
  IFS='|' read -ra list <<<"$patterns"
  for p in "${list[@]}"; do grep -qE -- "$p" "$log" || { echo "  no /$p/ in the output"; ok=0; }; done
  ! grep -q bad_alloc "$log" || { echo "  bad_alloc"; ok=0; }
  if ((ok)); then passed=$((passed + 1)); else echo "FAIL: $name"; cat "$log"; failures=$((failures + 1)); fi
}
quiet() { local log=$1; shift; "$@" >"$log" 2>&1; }  # quiet LOG COMMAND...
available='available [0-9.]+ [KMGTPE]?i?B \([0-9]+ bytes'
figures="needed [0-9.]+ [KMGTPE]?i?B \\([0-9]+ bytes\\) per rank|$available"
past_int64='overflows 64-bit integers|needed more than 8 EiB \(over 9223372036854775807 bytes: overflows int64\) per rank'

"$BIN/prepare" --input "$SRC/validation/data/sample_corpus/train" --output "$WORK/shards" --val-fraction 0.1 \
  >/dev/null || { echo "prepare failed"; exit 1; }
tiny=(--model.vocab_size 259 --model.d_model 32 --model.n_layers 2 --model.d_ff 64 --model.n_heads 4
      --model.n_kv_heads 2 --model.head_dim_qk 8 --model.head_dim_v 8 --train.seq_len 32 --train.global_batch 2
      --train.steps 2 --data.train "$WORK/shards/train.h5" --data.val "$WORK/shards/val.h5")
pretrain=(mpirun -np 1 "$BIN/pretrain")

# Memory plans that do not fit: refused before the run directory exists.
refused "pretrain train.seq_len" "memory plan of pretrain does not fit|$figures|train\.seq_len=99999999999|activations" \
  "${pretrain[@]}" --run-dir "$WORK/p_seq" "${tiny[@]}" --train.seq_len 99999999999
check "pretrain train.seq_len wrote no run directory" test ! -e "$WORK/p_seq"
refused "pretrain model.d_ff" "memory plan of pretrain does not fit|$figures|model\.d_ff=100000000000|parameters" \
  "${pretrain[@]}" --run-dir "$WORK/p_ff" "${tiny[@]}" --model.d_ff 100000000000
refused "pretrain past int64" "$past_int64|$available|model\.d_ff=1000000000000" \
  "${pretrain[@]}" --run-dir "$WORK/p_int64" "${tiny[@]}" --train.seq_len 99999999999 --model.d_ff 1000000000000
refused "2 ranks refuse together" "rank [01] of 2\): the memory plan of pretrain does not fit|$figures|parallel\.dp=2" \
  mpirun -np 2 "$BIN/pretrain" --run-dir "$WORK/p_2" "${tiny[@]}" --train.seq_len 99999999999

# The data's vocabulary is checked before anything is written.
refused "pretrain model.vocab_size" "model\.vocab_size = 300 but the data .*train\.h5|set model\.vocab_size = 259" \
  "${pretrain[@]}" --run-dir "$WORK/p_vocab" "${tiny[@]}" --model.vocab_size 300
check "a vocabulary refusal wrote no config.ini" test ! -e "$WORK/p_vocab/config.ini"

# A good run logs its plan once, and leaves a checkpoint for the stages below.
check "tiny pretrain runs" quiet "$WORK/pre.log" "${pretrain[@]}" --run-dir "$WORK/pre" "${tiny[@]}"
check "a warmup past train.steps is warned about" grep -q "warning: train.warmup_steps = 10 exceeds train.steps = 2" "$WORK/pre/log.txt"
check "the plan is logged once" test "$(grep -c 'memory plan per rank: .*iB (parameters' "$WORK/pre/log.txt")" -eq 1
# train.device = auto (the default) with no GPU visible: the CPU, said in the log, stored as cpu.
check "auto chose the CPU and says why" grep -q 'train.device = auto: cpu (no GPU visible' "$WORK/pre/log.txt"
check "the stored configuration says cpu" grep -qx 'device = cpu' "$WORK/pre/config.ini"
ckpt="$WORK/pre/checkpoints/$(cat "$WORK/pre/checkpoints/latest")"

refused "extend train.seq_len" "memory plan of extend does not fit|$figures|train\.seq_len=99999999999" \
  mpirun -np 1 "$BIN/extend" --init "$WORK/pre" --run-dir "$WORK/x" --train.seq_len 99999999999
refused "sft train.seq_len" "memory plan of sft does not fit|$figures|train\.seq_len=99999999999" \
  mpirun -np 1 "$BIN/sft" --init "$WORK/pre" --run-dir "$WORK/s" --train.seq_len 99999999999
refused "evaluate eval.lengths" "memory plan of evaluate does not fit|$figures|KV cache|eval\.lengths=99999999999" \
  mpirun -np 1 "$BIN/evaluate" --init "$WORK/pre" --run-dir "$WORK/e" --eval.lengths 99999999999 \
  --eval.allow_beyond_training true
check "evaluate eval.lengths wrote no run directory" test ! -e "$WORK/e"
check "a good evaluate runs" quiet "$WORK/e2.log" mpirun -np 1 "$BIN/evaluate" --init "$WORK/pre" \
  --run-dir "$WORK/e2" --eval.tasks loss_by_position --eval.lengths 32 --eval.loss_windows 2
check "a good evaluate logs its plan" grep -q 'memory plan per rank: .*KV cache' "$WORK/e2/log.txt"

# analyze checks the diagnostics' plan per run before it builds a probe: the run's diagnostics are
# refused with the figures (in the report's problems and on stderr), the rest of the report is made.
analyze_refuses() {
  local start=$SECONDS
  timeout 120 "$BIN/analyze" --runs "$WORK/e2" --out "$WORK/an" --analyze.word_dir "$SRC/inputs/eval"     --analyze.probe_lengths 99999999999 --analyze.plots false >"$WORK/an.log" 2>&1 || { cat "$WORK/an.log"; return 1; }
  ((SECONDS - start <= 20)) || { echo "  took $((SECONDS - start))s"; return 1; }
  ! grep -q bad_alloc "$WORK/an.log" "$WORK/an/report.md" || { echo "  bad_alloc"; return 1; }
  grep -qE "memory plan of analyze does not fit: needed [0-9.]+ [KMGTPE]?i?B.*KV cache.*analyze\.probe_lengths=99999999999" \
    "$WORK/an/report.md" || { echo "  no refusal in the report:"; grep -i "diagnostics" "$WORK/an/report.md"; return 1; }
}
check "analyze analyze.probe_lengths" analyze_refuses

# Truncated inputs: named, with their size and the size their superblock records.
head -c 2000 "$WORK/shards/train.h5" >"$WORK/cut_shard.h5"
shard_size=$(stat -c %s "$WORK/shards/train.h5")
refused "truncated shard" "cut_shard\.h5: not a readable HDF5 file: truncated: 2000 bytes of the $shard_size its superblock" \
  "${pretrain[@]}" --run-dir "$WORK/t1" "${tiny[@]}" --data.train "$WORK/cut_shard.h5"
head -c 3000 "$ckpt" >"$WORK/cut_ckpt.h5"
ckpt_size=$(stat -c %s "$ckpt")
for stage in extend sft evaluate; do
  refused "truncated checkpoint ($stage --init)" "cut_ckpt\.h5: not a readable HDF5 file: truncated: 3000 bytes of the $ckpt_size" \
    mpirun -np 1 "$BIN/$stage" --init "$WORK/cut_ckpt.h5" --run-dir "$WORK/t_$stage"
done
printf 'not hdf5 at all' >"$WORK/garbage.h5"
refused "garbage shard" "garbage\.h5: not a readable HDF5 file: no HDF5 signature in its 15 bytes" \
  "${pretrain[@]}" --run-dir "$WORK/t2" "${tiny[@]}" --data.train "$WORK/garbage.h5"

# Silent acceptances made refusals: a directory as --config (read as an empty file, defaults ran),
# train.steps 0 (DONE without a checkpoint), a model.freeze pattern that matches nothing (trained
# everything), analyze over directories without evaluation results (an empty report, exit 0).
refused "--config DIR" "config file $WORK/shards: is a directory" \
  "${pretrain[@]}" --run-dir "$WORK/c_dir" "${tiny[@]}" --config "$WORK/shards"
refused "train.steps 0" "train\.steps" "${pretrain[@]}" --run-dir "$WORK/c_steps" "${tiny[@]}" --train.steps 0
refused "model.freeze matching nothing" "model\.freeze = layers\.0\.mpl\*: the pattern 'layers\.0\.mpl\*' matches no parameter" \
  "${pretrain[@]}" --run-dir "$WORK/c_freeze" "${tiny[@]}" --model.freeze 'layers.0.mpl*'
check "a model.freeze run" quiet "$WORK/frozen.log" "${pretrain[@]}" --run-dir "$WORK/frozen" "${tiny[@]}" \
  --model.freeze 'layers.0.mlp.*'
check "  ...logs what is frozen" grep -q "model.freeze = layers.0.mlp.\*: frozen layers\.0\.mlp\..*w_up" "$WORK/frozen/log.txt"
refused "analyze over training runs" "none of the 2 --runs holds evaluation results; the first: no results.json in $WORK/pre" \
  "$BIN/analyze" --runs "$WORK/pre" "$WORK/frozen" --out "$WORK/an_empty" --analyze.plots false
check "  ...leaving no output directory" test ! -e "$WORK/an_empty"

echo "$passed passed, $failures failed"
[[ $failures -eq 0 ]]
