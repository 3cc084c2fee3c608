#!/usr/bin/env bash
# Runs a reduced toy study (a CI subset of a full one: some configurations, seed 1, the full study's
# recipes) and checks every run against the full study's recorded seed bands
# (validation/reference/<full>_study.json, written by validation/study/record_toy_study.sh).
# usage: test_toy_study.sh BIN SRC PY CI_STUDY REFERENCE [--also CI_STUDY2 REFERENCE2]... [RUN_STUDY_OPTIONS...]
#   e.g. ... inputs/studies/toy_cpu_ci.study validation/reference/toy_cpu_study.json
#        ... inputs/studies/toy_ruler_ci.study validation/reference/toy_ruler_budget_study.json --ranks 2 --parallel 1
# --also: one more reduced study, run after the first on the first one's token shards (so it must
# use the same corpus and tokenizer) and checked against its own reference.
# A study on the default corpus (data/corpus) uses SRC/data/corpus when it is complete, else
# $HEADROOM_CORPUS, else one jobs/fetch_corpus.sh gathers here (about 15 s): the same text.
set -uo pipefail
BIN=$1 SRC=$2 PY=$3 STUDY=$4 REFERENCE=$5
shift 5
also=() opts=()
while (($#)); do
  if [[ $1 == --also ]]; then also+=("$2" "$3"); shift 3; else opts+=("$1"); shift; fi
done
WORK=$(mktemp -d -t headroom_study.XXXXXX); trap 'rm -rf "$WORK"' EXIT
export HEADROOM_BIN=$BIN
study=$SRC/$STUDY
name=$(cd "$SRC" && bash -c 'source "$1"; echo "$name"' _ "$study")
if (cd "$SRC" && bash -c 'source "$1"; [[ $corpus == data/corpus/* ]]' _ "$study") &&
   [[ ! -f $SRC/data/corpus/manifest.json ]]; then
  corpus=${HEADROOM_CORPUS:-$WORK/corpus}
  if [[ ! -f $corpus/manifest.json ]]; then
    "$SRC/jobs/fetch_corpus.sh" "$corpus" >"$WORK/fetch.log" 2>&1 || { echo "FAIL: fetch_corpus"; cat "$WORK/fetch.log"; exit 1; }
  fi
  # The same study on that copy: its training text, and evaluate's essay haystack.
  evaluate=$(cd "$SRC" && bash -c 'source "$1"; echo "$recipe_evaluate"' _ "$study")
  { cat "$SRC/$evaluate"; echo; echo "[eval]"; echo "essay = $corpus/essay"; } >"$WORK/evaluate.ini"
  printf 'source %q\ncorpus=%q\nrecipe_evaluate=%q\n' "$study" "$corpus/train" "$WORK/evaluate.ini" >"$WORK/ci.study"
  study=$WORK/ci.study
  echo "corpus: $corpus"
fi
"$SRC/jobs/run_study.sh" "$study" --runs-root "$WORK" "${opts[@]}" || { echo "FAIL: the study did not run"; exit 1; }
"$PY" "$SRC/validation/study/study_reference.py" check "$SRC/$REFERENCE" "$WORK/$name" || status=1
for ((i = 0; i < ${#also[@]}; i += 2)); do
  study2=$SRC/${also[i]} reference2=${also[i+1]}
  name2=$(cd "$SRC" && bash -c 'source "$1"; echo "$name"' _ "$study2")
  printf 'source %q\ndata=%q\n' "$study2" "$WORK/$name/shards" >"$WORK/also$i.study"
  "$SRC/jobs/run_study.sh" "$WORK/also$i.study" --runs-root "$WORK" "${opts[@]}" || { echo "FAIL: ${also[i]} did not run"; exit 1; }
  "$PY" "$SRC/validation/study/study_reference.py" check "$SRC/$reference2" "$WORK/$name2" || status=1
done
exit "${status:-0}"
