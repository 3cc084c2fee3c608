#!/usr/bin/env bash
# prepare from the outside: --help, --print-config, every refusal exits 2 with a message naming the
# culprit and leaves no shard behind; a real run writes shards that h5py reads.
# usage: test_prepare_cli.sh PREPARE_BIN PYTHON SOURCE_DIR
set -uo pipefail
prepare=$1 python=$2 src=$3
work=$(mktemp -d -t headroom_prepare_cli.XXXXXX)
trap 'rm -rf "$work"' EXIT
failures=0 passed=0
check() {  # check NAME CONDITION...
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); else echo "FAIL: $name"; failures=$((failures + 1)); fi
}
expect_fail() {  # expect_fail NAME NEEDLE ARGS... : exit status 2 and NEEDLE in stderr
  local name=$1 needle=$2; shift 2
  "$prepare" "$@" >"$work/out" 2>"$work/err"; local rc=$?
  if [[ $rc -ne 2 ]] || ! grep -qF -- "$needle" "$work/err"; then
    echo "FAIL: $name (rc=$rc, wanted 2 and '$needle' in stderr)"; cat "$work/err"
    failures=$((failures + 1))
  else passed=$((passed + 1)); fi
}
corpus=$src/validation/data/sample_corpus/train

"$prepare" --help >"$work/help"
for key in --input --output --tokenizer --vocab-size --val-fraction --seed --config --print-config --force \
    --shard-mib --batch-mib --max-document-mib --bpe-sample-mib "Memory budget per rank"; do
  check "help lists $key" grep -qF -- "$key" "$work/help"
done

"$prepare" --print-config --tokenizer bpe --vocab-size 512 --input a --input b >"$work/p1.ini"
check "print-config shows tokenizer" grep -qx "tokenizer = bpe" "$work/p1.ini"
check "print-config repeats list keys" test "$(grep -c '^input = ' "$work/p1.ini")" -eq 2
"$prepare" --print-config --config "$work/p1.ini" >"$work/p2.ini"
check "printed config reads back identically" cmp -s "$work/p1.ini" "$work/p2.ini"

expect_fail "unknown option" "unknown option '--vocab'" --vocab 5 --input x
expect_fail "vocab range" "vocab-size = 10" --input "$corpus" --output "$work/o" --tokenizer bpe --vocab-size 10
printf 'tokenizer = byte\nvocab_size = 3\n' >"$work/bad.ini"
expect_fail "unknown key in config names file" "$work/bad.ini" --config "$work/bad.ini"
expect_fail "missing input" "$work/nope" --input "$work/nope" --output "$work/o1"
check "missing input leaves no shard" test ! -e "$work/o1/train.h5"
expect_fail "no input" "no input" --output "$work/o2"
printf 'not a tokenizer\n' >"$work/tok.txt"
expect_fail "bad tokenizer file" "$work/tok.txt" --input "$corpus" --output "$work/o3" --tokenizer "$work/tok.txt"
check "bad tokenizer leaves no shard" test ! -e "$work/o3/train.h5"

# Both splits need a whole document: refused after the pass that counts them, keeping no shard.
printf 'A single short document.\n' >"$work/one.txt"
expect_fail "one short document refused" "needs at least 2 documents" --input "$work/one.txt" --output "$work/one"
check "one short document names the input" grep -qF "$work/one.txt" "$work/err"
no_shard() { [[ -z $(find "$1" -name '*.h5*' -o -name dataset.json -o -name DONE 2>/dev/null) ]]; }
check "one short document keeps no shard" no_shard "$work/one"
expect_fail "val-fraction 0 refused" "val split would hold no tokens" --input "$corpus" --output "$work/zero" \
  --val-fraction 0
check "val-fraction 0 keeps no shard" no_shard "$work/zero"

# Bad input, each refused with exit 2 naming the file, and no shard kept.
mkdir -p "$work/bad/empty"
expect_fail "empty input directory" "$work/bad/empty" --input "$work/bad/empty" --output "$work/bad/o1"
check "empty input directory keeps no shard" no_shard "$work/bad/o1"
gzip -c "$corpus/sample.jsonl" | head -c 20000 >"$work/bad/cut.jsonl.gz"
expect_fail "truncated .gz" "cut.jsonl.gz" --input "$work/bad/cut.jsonl.gz" --output "$work/bad/o2"
check "truncated .gz keeps no shard" no_shard "$work/bad/o2"
printf 'caf\xe9\n' >"$work/bad/latin1.txt"
expect_fail "non-UTF-8 text" "latin1.txt: not UTF-8" --input "$corpus" --input "$work/bad/latin1.txt" \
  --output "$work/bad/o3"
check "non-UTF-8 text keeps no shard" no_shard "$work/bad/o3"
head -c 100000000 /dev/zero | tr '\0' 'x' >"$work/bad/long.jsonl"
expect_fail "a 100 MB line" "long.jsonl:1: a line longer than" --input "$work/bad/long.jsonl" --output "$work/bad/o4"
check "a 100 MB line keeps no shard" no_shard "$work/bad/o4"
rm -f "$work/bad/long.jsonl"

# BPE that learns nothing (no byte pair occurs twice in the train split) is refused rather than
# passed off as BPE encoding byte by byte.
for pair in ab cd ef gh ij kl mn op qr st uv wx yz AB CD EF GH IJ KL MN OP QR ST UV WX YZ; do
  printf '{"text": "%s"}\n' "$pair"
done >"$work/pairs.jsonl"
expect_fail "bpe without a repeated pair refused" "--tokenizer bpe learned no merge" --input "$work/pairs.jsonl" \
  --output "$work/pairs" --tokenizer bpe --vocab-size 300 --val-fraction 0.3
check "bpe without merges writes no shard" test ! -e "$work/pairs/train.h5" -a ! -e "$work/pairs/tokenizer.txt"

# A full disk, simulated with a file-size limit (writes then fail with EFBIG instead of ENOSPC).
( trap '' XFSZ; ulimit -f 64; "$prepare" --input "$corpus" --output "$work/full" ) >"$work/out" 2>"$work/err"
check "full disk fails" test $? -eq 2
check "full disk names the file" grep -q "full/partial/train-00000-00000.h5" "$work/err"
check "full disk leaves no shard or temporary" no_shard "$work/full"
check "full disk: the error is in the dataset's log.txt" grep -q "error: .*full/partial/train-00000-00000.h5" \
  "$work/full/log.txt"

"$prepare" --input "$corpus" --output "$work/run" --val-fraction 0.2 >"$work/out" 2>&1
check "run succeeds" test $? -eq 0
for f in train.h5 val.h5 tokenizer.txt config.ini log.txt DONE; do
  check "run wrote $f" test -s "$work/run/$f"
done
expect_fail "finished run is not clobbered" "holds a finished run" --input "$corpus" --output "$work/run"
"$prepare" --input "$corpus" --output "$work/run" --val-fraction 0.2 --force >/dev/null 2>&1
check "--force replaces a finished run" test $? -eq 0

"$python" "$src/validation/unit/read_shard.py" "$work/run/train.h5" "$corpus"
check "h5py reads the shard" test $? -eq 0

echo "$passed passed, $failures failed"
[[ $failures -eq 0 ]]
