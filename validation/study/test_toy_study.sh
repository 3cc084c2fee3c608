#!/usr/bin/env bash
# Runs the reduced toy study (inputs/studies/toy_cpu_ci.study: two configurations, seed 1, the full
# study's recipes) and checks every run against the full study's recorded seed bands
# (validation/reference/toy_cpu_study.json, written by validation/study/record_toy_study.sh).
# usage: test_toy_study.sh BIN SRC PY
set -uo pipefail
BIN=$1 SRC=$2 PY=$3
WORK=$(mktemp -d /tmp/headroom_study.XXXXXX); trap 'rm -rf "$WORK"' EXIT
export HEADROOM_BIN=$BIN
"$SRC/jobs/run_study.sh" "$SRC/inputs/studies/toy_cpu_ci.study" --runs-root "$WORK" || { echo "FAIL: the study did not run"; exit 1; }
"$PY" "$SRC/validation/study/study_reference.py" check "$SRC/validation/reference/toy_cpu_study.json" "$WORK/toy_cpu_ci"
