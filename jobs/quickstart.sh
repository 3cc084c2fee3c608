#!/usr/bin/env bash
# The main job on a fresh machine: install and build, gather the default corpus and turn it into
# token shards with a trained byte-level BPE, then run a tiny study through Slurm — two toy
# architectures (head width 16 vs 64, inputs/models/toy_d128.ini and toy_d512.ini) × two seeds,
# each a chain pretrain -> extend -> sft -> evaluate, and one analyze over all of them — on the
# cluster that `scontrol ping` reaches, or on a single-node cluster it brings up
# (jobs/slurm_local_up.sh; stop it with jobs/slurm_local_down.sh). evaluate and analyze are left
# out while their programs are not built. Prints each stage's wall time and where the results are.
#
# Environment: QUICKSTART_MODELS (default toy_d128,toy_d512), QUICKSTART_SEEDS (1,2),
# QUICKSTART_STUDY (tiny), QUICKSTART_NO_STUDY=1 (stop after the shards), QUICKSTART_WAIT (seconds
# to wait for the study, default 3600). Re-running continues the study (finished stages are kept).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
t_start=$(date +%s)
stamp() { echo "quickstart: [$(( $(date +%s) - t_start ))s] $*"; }
# Only the programs: the tests are built by jobs/run_tests.sh.
HEADROOM_BUILD_TARGETS=${HEADROOM_BUILD_TARGETS:-"prepare pretrain extend sft evaluate analyze"} jobs/setup.sh
stamp "built"
jobs/fetch_corpus.sh data/corpus
if [[ -f data/shards/DONE ]]; then
  echo "quickstart: data/shards already prepared ($(cat data/shards/DONE))"
else
  build/bin/prepare --input data/corpus/train --output data/shards --tokenizer bpe --vocab-size 4096
fi
stamp "corpus and shards ready"
echo "quickstart: corpus in data/corpus (licences: data/corpus/LICENSES.md), essay hold-out in data/corpus/essay"
echo "quickstart: shards in data/shards (train.h5, val.h5, tokenizer.txt; log: data/shards/log.txt)"
[[ -n ${QUICKSTART_NO_STUDY:-} ]] && exit 0

# Slurm: the one the environment reaches, else the local single-node cluster.
if scontrol ping 2>/dev/null | grep -q UP; then
  echo "quickstart: using the Slurm cluster that scontrol reaches ($(scontrol ping | head -1))"
else
  eval "$(jobs/slurm_local_up.sh --env)"
  echo "quickstart: no Slurm reachable; started the single-node cluster (SLURM_CONF=$SLURM_CONF;" \
       "stop it with jobs/slurm_local_down.sh)"
fi

stages=pretrain,extend,sft
missing=()
for s in evaluate analyze; do
  if [[ -x build/bin/$s ]]; then stages+=,$s; else missing+=("$s"); fi
done
((${#missing[@]})) && echo "quickstart: ${missing[*]} not built yet: the study runs pretrain -> extend -> sft only"
study=${QUICKSTART_STUDY:-tiny}
jobs/submit_pipeline.sh --study "$study" --toy --models "${QUICKSTART_MODELS:-toy_d128,toy_d512}" \
  --seeds "${QUICKSTART_SEEDS:-1,2}" --stages "$stages" --ntasks 1
stamp "study submitted; waiting for it"
status=0
jobs/study_report.sh "runs/$study" --wait "${QUICKSTART_WAIT:-3600}" || status=$?
stamp "study finished"
echo
echo "quickstart: run directories in runs/$study/<model>-s<seed>/{pretrain,extend,sft,evaluate}" \
     "(config.ini, log.txt, metrics.jsonl, checkpoints/, slurm-<job>.out)"
if [[ -d runs/$study/analysis ]]; then
  echo "quickstart: report runs/$study/analysis/report.md, tables runs/$study/analysis/tables/, plots runs/$study/analysis/plots/"
  # The headline: RULER by length per configuration, and the configuration differences with their
  # intervals and verdicts (what the report opens with), as aligned columns.
  for t in ruler_by_length config_differences findings; do
    f=runs/$study/analysis/tables/$t.csv
    [[ -f $f ]] || continue
    echo
    echo "quickstart: $t ($f)"
    /usr/bin/python3 -c 'import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
w = [max(len(r[i]) if i < len(r) else 0 for r in rows) for i in range(len(rows[0]))]
for r in rows: print("  " + "  ".join(c.ljust(w[i]) for i, c in enumerate(r)).rstrip())' "$f"
  done
fi
if ((status)); then
  echo "quickstart: a stage did not finish; its job log (slurm-<job>.out in its run directory) says why." \
       "Rerun jobs/quickstart.sh to continue from the last checkpoints."
fi
exit $status
