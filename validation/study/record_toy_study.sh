#!/usr/bin/env bash
# Runs a toy study in full and records its results as reference numbers:
# validation/reference/<study>_study.json (per run, per configuration with the seed spread, and the
# Findings table). The change shows in git diff.
#   validation/study/record_toy_study.sh [RUNS_ROOT] [STUDY]   (default runs, toy_cpu; reuses finished runs)
#   toy_cpu: inputs/studies/toy_cpu.study, about 10 minutes on 2 cores
#   toy_ruler: inputs/studies/toy_ruler.study, about 65-105 minutes on 2 cores (64 in commit f66521d, 2026-12-03)
#   toy_ruler_examples: 111 minutes on commit bfed806's 2-core VM (~88 on commit 97fea9b's)
#   toy_ruler_budget: the study of record, 87 minutes on commit bfed806's 2-core VM
#   toy_ruler_widths: the width ladder, 73 minutes on that VM with another user's builds beside it
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
runs_root=${1:-runs} study=${2:-toy_cpu}
out=validation/reference/${study}_study.json
jobs/run_study.sh "inputs/studies/$study.study" --runs-root "$runs_root"
/usr/bin/python3 validation/study/study_reference.py record "$runs_root/$study" \
  "validation/study/record_toy_study.sh $runs_root $study" > "$out.tmp"
mv "$out.tmp" "$out"
echo "record_toy_study: wrote $out"
