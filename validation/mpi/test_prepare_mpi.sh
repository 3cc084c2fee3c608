#!/usr/bin/env bash
# prepare at scale, in small: a 96 MB corpus of 8 files (one .gz, one .zst) prepared by 1 and by 2
# MPI ranks into shards of at most 16 MiB with a 1 MiB batch. Asserts: several shards; the same
# documents in each split with the same tokens for 1 and 2 ranks (h5py, through dataset.json);
# every rank's peak RSS above the program itself within the memory budget prepare --help states
# (57 MiB for these options and one thread), which is below the size of the corpus; pretrain reads the many-shard dataset;
# a disk that fills under 2 ranks stops both with a message naming the file, and a rerun starts over.
# One large JSON-lines file is shared by the 2 ranks in pieces, with the documents of 1 rank.
# usage: test_prepare_mpi.sh BIN_DIR SOURCE_DIR PYTHON
BIN=$1 SRC=$2 PY=$3
WORK=$(mktemp -d -t headroom_prepare_mpi.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
source "$SRC/validation/mpi/common.sh"

"$PY" "$SRC/validation/data/make_corpus.py" "$SRC/validation/data/sample_corpus/train" "$WORK/corpus" 96 8 || exit 1
gzip "$WORK/corpus/part-001.jsonl" && zstd -q --rm "$WORK/corpus/part-002.jsonl" || exit 1
"$BIN/prepare" --input "$SRC/validation/data/sample_corpus/train" --output "$WORK/tok" --tokenizer bpe \
  --vocab-size 1024 >/dev/null || { echo "prepare (tokenizer) failed"; exit 1; }

prep() {  # prep NP INPUT OUT
  mpirun -np "$1" "$BIN/prepare" --input "$2" --output "$3" --tokenizer "$WORK/tok/tokenizer.txt" \
    --shard-mib 16 --batch-mib 1 --max-document-mib 1 --val-fraction 0.05 >"$3.log" 2>&1
}
work() { sed -n 's/.*peak RSS of a rank [0-9]* MiB, \([0-9]*\) MiB above the program.*/\1/p' "$1/log.txt"; }

prep 1 "$WORK/corpus" "$WORK/ds1"; check "1 rank prepares" test $? -eq 0
prep 2 "$WORK/corpus" "$WORK/ds2"; check "2 ranks prepare" test $? -eq 0
check "several train shards" test "$(ls "$WORK/ds2" | grep -c '^train-.*\.h5$')" -ge 4
check "both ranks wrote shards" test "$(ls "$WORK/ds2" | grep -c '^train-00001-')" -ge 1
check "no partial directory left" test ! -e "$WORK/ds2/partial"
"$PY" "$SRC/validation/unit/compare_datasets.py" "$WORK/ds1" "$WORK/ds2" 16
check "1 and 2 ranks: same documents, tokens and split" test $? -eq 0

# One large JSON-lines file (36 MB) is read by both ranks, in pieces of 16 MiB.
mkdir -p "$WORK/one" && cat "$WORK"/corpus/part-00[3-5].jsonl >"$WORK/one/all.jsonl"
prep 1 "$WORK/one" "$WORK/one1"; check "1 rank prepares one file" test $? -eq 0
prep 2 "$WORK/one" "$WORK/one2"; check "2 ranks prepare one file" test $? -eq 0
check "  ...in pieces" grep -q "1 input files (3 with large JSON-lines files in pieces)" "$WORK/one2/log.txt"
check "  ...both ranks wrote shards" test "$(ls "$WORK/one2" | grep -c '^train-00001-')" -ge 1
"$PY" "$SRC/validation/unit/compare_datasets.py" "$WORK/one1" "$WORK/one2" 16
check "  ...the same documents, tokens and split as 1 rank" test $? -eq 0

# The budget of prepare --help, above the program's own resident set at start (its libraries differ
# between builds): 32 MiB + 3 x batch + 2 x longest document + 20 MiB per thread. Measured on this
# corpus: 22-31 MiB.
budget=$((32 + 3 * 1 + 2 * 1 + 20 * 1))
for ds in ds1 ds2; do
  rss=$(work "$WORK/$ds")
  echo "$ds: a rank's peak RSS above the program ${rss:-?} MiB, budget $budget MiB, corpus 96 MB (91.6 MiB) of text"
  check "$ds: peak RSS within the budget" test -n "$rss" -a "${rss:-999999}" -le $budget
done

run 2 "$WORK/run" --model.vocab_size 0 --model.d_model 32 --model.n_layers 2 --model.d_ff 64 --model.n_heads 4 \
  --model.n_kv_heads 4 --model.head_dim_qk 8 --model.head_dim_v 8 --model.window 16 --train.seq_len 32 \
  --train.global_batch 4 --train.steps 10 --train.log_every 1 --data.train "$WORK/ds2" --data.val "$WORK/ds2" \
  --parallel.dp 2
check "pretrain reads the many-shard dataset" test -f "$WORK/run/DONE"
check "pretrain logged every step" test "$(wc -l <"$WORK/run/metrics.jsonl")" -eq 10

# A disk that fills under 2 ranks (a 20 MiB tmpfs for ~70 MB of shards; root only): every rank stops
# (no hang) with exit 2 naming the file, nothing outside partial/ looks like a dataset, and a rerun
# into what was left starts over and gives ds2's dataset.
mkdir "$WORK/full"
if mount -t tmpfs -o size=20M tmpfs "$WORK/full" 2>/dev/null; then
  timeout 120 mpirun -np 2 "$BIN/prepare" --input "$WORK/corpus" --output "$WORK/full/ds" \
    --tokenizer "$WORK/tok/tokenizer.txt" --shard-mib 16 --batch-mib 1 --max-document-mib 1 --val-fraction 0.05 \
    >"$WORK/full.log" 2>&1
  check "full disk: every rank stops with exit 2" test $? -eq 2
  check "  ...naming the file" grep -q "error (rank [01] of 2): $WORK/full/ds/partial/.*No space left on device" \
    "$WORK/full.log"
  check "  ...no dataset.json, DONE or shard outside partial/" \
    test -z "$(ls "$WORK/full/ds" | grep -E '^(dataset.json|DONE|train-.*|val-.*)$')"
  cp -r "$WORK/full/ds" "$WORK/left" && umount "$WORK/full"
  prep 2 "$WORK/corpus" "$WORK/left"; check "  ...a rerun into what was left completes" test $? -eq 0
  check "  ...no partial directory left" test ! -e "$WORK/left/partial"
  "$PY" "$SRC/validation/unit/compare_datasets.py" "$WORK/ds2" "$WORK/left" 16
  check "  ...the same dataset as an undisturbed run" test $? -eq 0
else
  echo "skipped: full disk under MPI (mounting a tmpfs needs root)"
fi
finish
