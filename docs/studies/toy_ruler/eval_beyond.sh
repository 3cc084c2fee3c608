#!/usr/bin/env bash
# Do architectures separate more beyond the extended length? Evaluates finished toy RULER chains
# (their sft checkpoints, extended to 4L = 512) at 512, 768 and 1024 tokens with the 13 RULER tasks
# (eval.allow_beyond_training), then prints per architecture the mean RULER score at each length,
# the mean pairwise seed difference, and the range between architectures against the mean swing.
#
#   docs/studies/toy_ruler/eval_beyond.sh ARCH=CHAIN[,CHAIN...] [ARCH=...]
#     CHAIN  a chain directory with a finished sft/ (jobs/run_study.sh's <model>-s<seed>, or
#            swing_sources.sh's A_s<seed>); results go to CHAIN/evaluate_beyond
#
# Two evaluations at a time, one thread each. Finished evaluations (DONE) are kept.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
cd "$root"
[[ $# -ge 1 && $1 != -h && $1 != --help ]] || { sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0; }
cfg=$(mktemp --suffix=.ini)
trap 'rm -f "$cfg"' EXIT
cat >"$cfg" <<'EOF'
[eval]
tasks = ruler
lengths = 512,768,1024
samples = 20
max_new_tokens = 48
allow_beyond_training = true
EOF
for group in "$@"; do
  IFS=, read -ra chains <<<"${group#*=}"
  for c in "${chains[@]}"; do
    [[ -f $c/sft/DONE ]] || { echo "eval_beyond: error: no finished sft in $c" >&2; exit 2; }
    echo "$c"
  done
done | OMP_NUM_THREADS=1 NP=1 EVAL_CONFIG=$cfg xargs -P 2 -I{} bash -c \
  'INIT={}/sft RUN_DIR={}/evaluate_beyond bash jobs/evaluate.slurm >{}/evaluate_beyond.out 2>&1 || echo "FAILED {}"'

python3 - "$@" <<'EOF'
import os, sys
sys.path.insert(0, "docs/studies/toy_ruler")
from summarize import mean_swing, scores
lengths = (512, 768, 1024)
means, pairs = {}, {L: [] for L in lengths}
print(f"{'architecture':14s} {'seeds':>5s} " + " ".join(f"{'RULER@' + str(L):>11s}" for L in lengths) + "   seed swing at each length")
for group in sys.argv[1:]:
    arch, chains = group.split("=", 1)
    runs = [scores(os.path.join(c, "evaluate_beyond")) for c in chains.split(",")]
    v = {L: [r[L]["ruler"] for r in runs] for L in lengths}
    means[arch] = {L: sum(x) / len(x) for L, x in v.items()}
    for L, x in v.items(): pairs[L] += [abs(a - b) for i, a in enumerate(x) for b in x[i + 1:]]
    print(f"{arch:14s} {len(runs):5d} " + " ".join(f"{means[arch][L]:11.1f}" for L in lengths) + "   " +
          " ".join(f"{mean_swing(x):.1f}" if len(x) > 1 else "-" for x in v.values()))
for L in lengths:
    ms = [means[a][L] for a in means]
    sw = sum(pairs[L]) / len(pairs[L]) if pairs[L] else float("nan")
    print(f"at {L}: range over architectures {max(ms) - min(ms):.1f}, mean seed swing {sw:.1f} "
          f"(over {len(pairs[L])} seed pairs), ratio {(max(ms) - min(ms)) / sw:.1f}x")
EOF
