#!/usr/bin/env bash
# The main job on a fresh machine: install and build, gather the default corpus, then run the
# quickstart study (inputs/studies/quickstart.study: the toy RULER study of record's protocol for
# one architecture x a seed pair — pretrain at 128 tokens, extend to 512, sft, evaluate at
# 256/384/512, and the same pretrained checkpoint evaluated without extension — then one analyze)
# through Slurm: on the cluster that `scontrol ping` reaches, or on a single-node cluster it brings
# up (jobs/slurm_local_up.sh; stop it with jobs/slurm_local_down.sh). Prints each stage's wall
# time, where the results are, and the report's headline tables.
#
# Environment: QUICKSTART_STUDY (a .study file, default inputs/studies/quickstart.study),
# QUICKSTART_MODELS and QUICKSTART_SEEDS (override the study's, e.g. QUICKSTART_MODELS=wide,narrow:
# the head-width pair: a second pair of chains, about 6 minutes more), QUICKSTART_WAIT (seconds to
# wait for the study, default 3600). Re-running continues the study (finished stages are kept).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
t_start=$(date +%s)
stamp() { echo "quickstart: [$(( $(date +%s) - t_start ))s] $*"; }
# Packages first; then the corpus is gathered beside the build (mostly downloads and unpacking;
# its log is data/corpus.log). Only the programs are built: the tests are built by jobs/run_tests.sh.
SETUP_PACKAGES_ONLY=1 jobs/setup.sh
mkdir -p data
jobs/fetch_corpus.sh data/corpus >data/corpus.log 2>&1 &
corpus_pid=$!
# Without a GPU the first configure leaves the CUDA backend out (27 s of nvcc on 2 cores for a
# backend nothing here would run); jobs/run_tests.sh turns it back on, since CI builds it.
cuda_args=""
if [[ ! -f build/CMakeCache.txt ]] && ! ls /dev/nvidia[0-9]* >/dev/null 2>&1; then
  cuda_args="-DHEADROOM_CUDA=OFF"
  echo "quickstart: no GPU here: building the CPU backend only"
fi
CMAKE_ARGS="${CMAKE_ARGS:-} $cuda_args" \
  HEADROOM_BUILD_TARGETS=${HEADROOM_BUILD_TARGETS:-"prepare pretrain extend sft evaluate analyze"} jobs/setup.sh
stamp "built"
wait "$corpus_pid" || { cat data/corpus.log; echo "quickstart: jobs/fetch_corpus.sh failed (log above)"; exit 1; }
tail -1 data/corpus.log
stamp "corpus ready"
echo "quickstart: corpus in data/corpus (licences: data/corpus/LICENSES.md), essay hold-out in data/corpus/essay"

# Slurm: the one the environment reaches, else the local single-node cluster.
if scontrol ping 2>/dev/null | grep -q UP; then
  echo "quickstart: using the Slurm cluster that scontrol reaches ($(scontrol ping | head -1))"
else
  # Captured first: a failure inside eval "$(...)" would be lost and the study submitted to nothing.
  slurm_env=$(jobs/slurm_local_up.sh --env) || {
    echo "quickstart: the local Slurm cluster did not start (its error above); if another checkout's" \
         "local cluster holds the ports, stop it there with jobs/slurm_local_down.sh" >&2
    exit 1
  }
  eval "$slurm_env"
  echo "quickstart: no Slurm reachable; started the single-node cluster (SLURM_CONF=$SLURM_CONF;" \
       "stop it with jobs/slurm_local_down.sh)"
fi

study_file=${QUICKSTART_STUDY:-inputs/studies/quickstart.study}
study=$(bash -c 'source "$1"; echo "$name"' _ "$study_file")
overrides=()
[[ -n ${QUICKSTART_MODELS:-} ]] && overrides+=(--models "$QUICKSTART_MODELS")
[[ -n ${QUICKSTART_SEEDS:-} ]] && overrides+=(--seeds "$QUICKSTART_SEEDS")
# One rank per job: the toy models are far too small to split.
jobs/run_study.sh "$study_file" "${overrides[@]}" --slurm -- --ntasks 1
stamp "study submitted; waiting for it"
status=0
jobs/study_report.sh "runs/$study" --wait "${QUICKSTART_WAIT:-3600}" || status=$?
stamp "study finished"
echo
echo "quickstart: run directories in runs/$study/<model>-s<seed>/{pretrain,extend,sft,evaluate,evaluate_base}" \
     "(config.ini, log.txt, metrics.jsonl, checkpoints/, slurm-<job>.out); token shards in runs/$study/shards"
if [[ -d runs/$study/analysis ]]; then
  echo "quickstart: report runs/$study/analysis/report.md, tables runs/$study/analysis/tables/, plots runs/$study/analysis/plots/"
  # The headline: RULER by length per configuration, the extension's effect with its interval and
  # verdict against the seed swing, and the retrieval heads, as aligned columns.
  /usr/bin/python3 - "runs/$study/analysis/tables" <<'PY'
import csv, os, sys
show = [("ruler_by_length", "RULER by length (mean over seeds)", None),
        ("findings", "Findings", ["finding", "score", "configs_a", "configs_b", "mean_a", "mean_b", "effect",
                                  "mean_seed_swing", "ci_low", "ci_high", "verdict", "seeds_to_resolve"]),
        ("diagnostics_by_config", "Attention diagnostics (retrieval heads: Wu et al.'s score > 0.1)",
         ["config", "label", "runs", "needle_mass", "retrieval_heads", "retrieval_fraction"])]
for name, title, cols in show:
    path = os.path.join(sys.argv[1], name + ".csv")
    if not os.path.exists(path):
        continue
    rows = list(csv.DictReader(open(path)))
    cols = cols or list(rows[0].keys()) if rows else []
    def cell(v):
        try:
            return f"{float(v):.4g}"
        except ValueError:
            return v
    table = [cols] + [[cell(r.get(c, "")) for c in cols] for r in rows]
    w = [max(len(r[i]) for r in table) for i in range(len(cols))]
    print(f"\nquickstart: {title} ({path})")
    for r in table:
        print("  " + "  ".join(c.ljust(w[i]) for i, c in enumerate(r)).rstrip())
PY
fi
if ((status)); then
  echo "quickstart: a stage did not finish; its job log (slurm-<job>.out in its run directory) says why." \
       "Rerun jobs/quickstart.sh to continue from the last checkpoints."
fi
exit $status
