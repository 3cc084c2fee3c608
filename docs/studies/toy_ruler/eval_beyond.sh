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
tasks = niah_single_1,niah_single_2,niah_single_3,niah_multikey_1,niah_multikey_2,niah_multikey_3,niah_multivalue,niah_multiquery,vt,cwe,fwe,qa_1,qa_2
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
import csv, itertools, os, sys
lengths = (512, 768, 1024)
def ruler(chain, length):
    rows = [r for r in csv.DictReader(open(os.path.join(chain, "evaluate_beyond", "results.csv")))
            if int(r["length"]) == length and int(r["n"]) > 0]
    return sum(float(r["score"]) for r in rows) / len(rows)
means, swings = {}, {}
print(f"{'architecture':14s} {'seeds':>5s} " + " ".join(f"{'RULER@' + str(L):>11s}" for L in lengths) + "   seed swing at each length")
for group in sys.argv[1:]:
    arch, chains = group.split("=", 1)
    chains = chains.split(",")
    s = {L: [ruler(c, L) for c in chains] for L in lengths}
    means[arch] = {L: sum(v) / len(v) for L, v in s.items()}
    swings[arch] = {L: [abs(a - b) for a, b in itertools.combinations(v, 2)] for L, v in s.items()}
    print(f"{arch:14s} {len(chains):5d} " + " ".join(f"{means[arch][L]:11.1f}" for L in lengths) + "   " +
          " ".join(f"{sum(x) / len(x):.1f}" if x else "-" for x in swings[arch].values()))
for L in lengths:
    pairs = [d for a in swings for d in swings[a][L]]
    ms = [means[a][L] for a in means]
    sw = sum(pairs) / len(pairs) if pairs else float("nan")
    print(f"at {L}: range over architectures {max(ms) - min(ms):.1f}, mean seed swing {sw:.1f} "
          f"(over {len(pairs)} seed pairs), ratio {(max(ms) - min(ms)) / sw:.1f}x")
EOF
