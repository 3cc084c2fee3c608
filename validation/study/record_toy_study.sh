#!/usr/bin/env bash
# Runs the full toy CPU study (inputs/studies/toy_cpu.study, about 10 minutes on 2 cores) and
# records its results as reference numbers: validation/reference/toy_cpu_study.json (per run, per
# configuration with the seed spread, and the Findings table). The change shows in git diff.
#   validation/study/record_toy_study.sh [RUNS_ROOT]     (default runs; reuses finished runs)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
runs_root=${1:-runs}
jobs/run_study.sh inputs/studies/toy_cpu.study --runs-root "$runs_root"
/usr/bin/python3 validation/study/study_reference.py record "$runs_root/toy_cpu" \
  "validation/study/record_toy_study.sh $runs_root" > validation/reference/toy_cpu_study.json.tmp
mv validation/reference/toy_cpu_study.json.tmp validation/reference/toy_cpu_study.json
echo "record_toy_study: wrote validation/reference/toy_cpu_study.json"
