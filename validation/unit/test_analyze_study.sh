#!/usr/bin/env bash
# analyze on a whole (tiny) study: seven real pretrain checkpoints in five configurations (two with
# a second seed), fake extension stages and evaluate outputs (analysis_fixture.py), plus broken
# inputs (no results.json, another tokenizer, other evaluation lengths, a run without
# samples.jsonl, a score out of range, another eval.seed). Asserts that analyze finishes, writes report.md, the tables and the plots, says
# what it cannot compute on stderr and in the report, and that its statistics equal an independent
# numpy computation (check_analysis_stats.py). Then a single-seed study (no seed pairs) and --help.
# usage: test_analyze_study.sh BIN SRC PY   (KEEP_WORK=1 keeps the scratch directory)
BIN=$1 SRC=$2 PY=$3
WORK=$(mktemp -d -t headroom_analyze.XXXXXX)
[[ -n ${KEEP_WORK:-} ]] && echo "work directory kept: $WORK" || trap 'rm -rf "$WORK"' EXIT
source "$SRC/validation/mpi/common.sh"
shards
base=($(tiny_args) --train.steps 12)
pre() {  # pre RUN ARGS...: pretrain p_RUN
  local name=$1; shift
  run 1 "$WORK/p_$name" "${base[@]}" "$@" || { echo "pretrain $name failed:"; tail -5 "$WORK/p_$name.log"; exit 1; }
}
pre A1
pre A2 --model.seed 2 --train.seed 2
pre B1 --model.qk_norm layer
pre B2 --model.qk_norm layer --model.seed 2 --train.seed 2
pre C1 --model.n_kv_heads 2 --model.layer_pattern SF
pre D1 --model.n_kv_heads 2 --model.qk_norm layer
pre E1 --model.qk_norm layer --model.layer_pattern SF
"$PY" "$SRC/validation/unit/analysis_fixture.py" "$WORK" || exit 1

diag=(--analyze.word_dir "$SRC/inputs/eval" --analyze.probe_lengths 700 --analyze.probe_depths 0.2,0.8
      --analyze.probe_samples 1 --analyze.query_rows 32 --analyze.rank_tokens 32 --analyze.max_new_tokens 8)
runs=()
for r in A1 A2 B1 B2 C1 D1 E1 missing othertok otherlen; do runs+=("$WORK/e_$r"); done
OUT=$WORK/out
check "analyze runs" "$BIN/analyze" --runs "${runs[@]}" --out "$OUT" "${diag[@]}" --analyze.bootstrap_samples 4000 \
  >"$WORK/analyze.out" 2>"$WORK/analyze.err"
check "DONE written" test -f "$OUT/DONE"
for t in runs configs ruler_by_length ruler_by_length_runs ruler_tasks multiple_choice loss_by_position \
         loss_overall training training_by_config seed_pairs seed_noise config_differences predictors regressions \
         diagnostics diagnostics_by_config diagnostics_heads diagnostics_probes effective_rank run_problems; do
  check "table $t.csv" test -s "$OUT/tables/$t.csv"
done
check "diagnostics of every pool checkpoint (7 runs x 2 layers x 4 heads)" \
  test "$(($(wc -l <"$OUT/tables/diagnostics_heads.csv") - 1))" -ge 56
check "effective rank is a number in (1, d_model]" "$PY" -c "
import csv,sys
rows=list(csv.DictReader(open('$OUT/tables/effective_rank.csv')))
v=[float(r[k]) for r in rows for k in ('L0','L1')]
sys.exit(0 if rows and all(1<x<=32 for x in v) else 1)"
check "progress lines on stdout" grep -q "diagnostics: probe 2/2" "$WORK/analyze.out"
# Bad input: said on stderr and in the report, and the rest computed.
check "stderr: missing results.json" grep -q "e_missing: no results.json" "$WORK/analyze.err"
check "stderr: other tokenizer left out" grep -q "e_othertok: left out of the pool.*tokenizer" "$WORK/analyze.err"
check "stderr: other lengths left out" grep -q "e_otherlen: left out of the pool.*evaluation lengths" "$WORK/analyze.err"
check "stderr: retrieval scores need correct answers" grep -q "not computed: retrieval-head scores of e_A1, e_A2.*answered correctly" "$WORK/analyze.err"
check "report: Not computed section lists the missing run" grep -q "e_missing" "$OUT/report.md"
for h in "## Runs" "## RULER" "## Seed noise" "## Configuration differences" "## What predicts" "## Attention diagnostics" \
         "## Training" "## Not computed"; do
  check "report section $h" grep -q "^$h" "$OUT/report.md"
done
if "$PY" -c "import matplotlib" 2>/dev/null; then
  for p in ruler_by_length loss_curves spike_scores effective_rank scatter_pretrain_loss scatter_feature_count retrieval_heads_e_A1; do
    check "plot $p.png" test -s "$OUT/plots/$p.png"
    check "report embeds $p.png" grep -q "](plots/$p.png)" "$OUT/report.md"
  done
else
  echo "note: $PY has no matplotlib; plots not checked (jobs/setup.sh installs python3-matplotlib)"
  check "report says why plots are missing" grep -q "not drawn" "$OUT/report.md"
fi
check "statistics equal numpy's" "$PY" "$SRC/validation/unit/check_analysis_stats.py" "$OUT" "$WORK"
check "a finished output is not overwritten" bash -c "! '$BIN/analyze' --runs '$WORK/e_A1' --out '$OUT' --analyze.diagnostics false 2>/dev/null"

# Single seed per configuration: no seed pairs, said so, everything else still computed.
OUT1=$WORK/out1
check "single-seed analyze runs" "$BIN/analyze" --runs "$WORK/e_C1" "$WORK/e_D1" "$WORK/e_E1" --out "$OUT1" \
  --analyze.diagnostics false --analyze.plots false >"$WORK/single.out" 2>"$WORK/single.err"
check "single seed: stderr says no seed pairs" grep -q "not computed: seed noise.*single seed" "$WORK/single.err"
check "single seed: report says no seed pairs" grep -q "No seed pairs" "$OUT1/report.md"
check "single seed: differences still computed" test "$(($(wc -l <"$OUT1/tables/config_differences.csv") - 1))" -eq 3
check "single seed: the separate-features model needs more configurations" \
  grep -q "features separately: 3 points for 3 predictor" "$WORK/single.err"

# A score outside [0, 100] leaves its run out; runs evaluated with another eval.seed are pooled with
# a warning naming them.
OUT2=$WORK/out2
check "analyze with a damaged score and another eval.seed runs" "$BIN/analyze" --runs "$WORK/e_A1" "$WORK/e_A2" \
  "$WORK/e_B1" "$WORK/e_badscore" "$WORK/e_otherseed" --out "$OUT2" --analyze.diagnostics false --analyze.plots false \
  >"$WORK/mixed.out" 2>"$WORK/mixed.err"
check "  ...a score of -500 is refused, naming the field" \
  grep -q "e_badscore: .*task .* at length [0-9]*: 'score' is -500, outside the scores' range \[0, 100\]).*left out of every table" \
  "$WORK/mixed.err"
check "  ...another eval.seed is named" grep -q "e_otherseed: evaluated with eval.seed = 7 where most of the pool has 1" \
  "$WORK/mixed.err"
check "  ...and said for the study" grep -q "the pool mixes eval.seed values (most runs: 1; other: e_otherseed)" \
  "$WORK/mixed.err"

# --help lists every key that --print-config prints.
"$BIN/analyze" --help >"$WORK/help.txt"
"$BIN/analyze" --print-config | grep -E '^[a-z_]+ *=' | sed 's/ *=.*//' | sort -u >"$WORK/keys.txt"
missing_keys=$(while read -r k; do grep -q -- "\.$k \|--$k " "$WORK/help.txt" || echo "$k"; done <"$WORK/keys.txt")
check "--help lists every key (missing: ${missing_keys:-none})" test -z "$missing_keys"
check "no runs: a usage error naming --runs" bash -c "'$BIN/analyze' --out '$WORK/x' 2>&1 | grep -q -- '--runs'"
finish
