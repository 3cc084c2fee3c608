#!/usr/bin/env bash
# Where the toy RULER study's seed swing comes from: pretraining, or what follows it (the README's
# "The range against the swing"). Two groups of chains, each extend -> sft -> evaluate with the
# study's recipes, on pretrained runs of the protocol made by screen_pretraining.sh:
#
#   A (every source)   each seed's own pretrained run, extension and sft data orders inherited
#                      from it, as the grid does: the whole seed swing
#   B (after pretraining only)  the first seed's pretrained run, extend and sft with other data
#                      seeds (--data.seed), with A's chain of that seed: the swing the extension,
#                      sft and their data orders add to one pretrained model
#
#   docs/studies/toy_ruler/swing_sources.sh OUT_DIR PRETRAINED [SEEDS] [DATA_SEEDS]
#     PRETRAINED  a screen_pretraining.sh directory (PRETRAINED/<kernels>_s<seed>, default kernels
#                 Cooperlake: KERNELS=... in the environment)
#     SEEDS       group A, comma-separated (default 4,5,6,7,8,9)
#     DATA_SEEDS  group B, comma-separated (default 11,12,13; '' for none: group A alone)
#   prints each chain's RULER and niah averages at 512 and each group's mean pairwise difference.
#
# Two chains at a time, one thread and one rank each (2 cores). Finished stages (DONE) are skipped.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
cd "$root"
die() { echo "swing_sources: error: $*" >&2; exit 2; }
[[ $# -ge 2 && $1 != -h && $1 != --help ]] || { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0; }
out=$1 pre=$2 seeds=${3:-4,5,6,7,8,9} data_seeds=${4-11,12,13} kernels=${KERNELS:-Cooperlake}
shards=runs/toy_ruler/shards study=inputs/studies/toy_ruler
[[ -f $shards/train.h5 ]] || die "no token shards in $shards (run jobs/run_study.sh inputs/studies/toy_ruler.study first)"
IFS=, read -ra ss <<<"$seeds"
IFS=, read -ra ds <<<"$data_seeds"
for s in "${ss[@]}"; do [[ -f $pre/${kernels}_s$s/DONE ]] || die "no finished pretraining run $pre/${kernels}_s$s"; done
mkdir -p "$out"

chain() {  # chain NAME PRETRAINED_RUN [extra options for extend and sft]
  local name=$1 init=$2 d=$out/$1
  shift 2
  mkdir -p "$d"
  # The pretraining's kernels for the rest of the chain too: on a VM whose OpenBLAS picks other ones
  # natively, the chain would otherwise be another rounding draw than a grid run with these.
  export OMP_NUM_THREADS=1 NP=1 DATA_DIR=$shards OPENBLAS_CORETYPE=$kernels
  INIT=$init RECIPE=$study/extend.ini RUN_DIR=$d/extend bash jobs/extend.slurm "$@" >"$d/extend.out" 2>&1 &&
    INIT=$d/extend RECIPE=$study/sft.ini RUN_DIR=$d/sft bash jobs/sft.slurm "$@" >"$d/sft.out" 2>&1 &&
    INIT=$d/sft EVAL_CONFIG=$study/evaluate.ini RUN_DIR=$d/evaluate bash jobs/evaluate.slurm >"$d/evaluate.out" 2>&1 ||
    { echo "FAILED $d (see its *.out)"; return 1; }
  echo "finished $name"
}
export -f chain
export out study shards kernels
{
  for s in "${ss[@]}"; do echo "A_s$s $pre/${kernels}_s$s"; done
  for x in "${ds[@]}"; do echo "B_s${ss[0]}_data$x $pre/${kernels}_s${ss[0]} --data.seed $x"; done
} | xargs -P 2 -L 1 bash -c 'chain "$@"' _

python3 - "$out" "${ss[0]}" <<'EOF'
import glob, os, sys
sys.path.insert(0, "docs/studies/toy_ruler")
from summarize import mean_swing, scores
out, first = sys.argv[1], sys.argv[2]
groups = {}
for d in sorted(glob.glob(os.path.join(out, "*_s*/"))):
    name = os.path.basename(d.rstrip("/"))
    s = scores(os.path.join(d, "evaluate"))[512]
    print(f"{name:22s} RULER@512 {s['ruler']:5.1f}  niah@512 {s['niah']:5.1f}")
    groups.setdefault(name[0], []).append(s)
    if name == f"A_s{first}": groups.setdefault("B", []).append(s)
for g, label in (("A", "A, every source (own pretraining)"), ("B", "B, after pretraining only")):
    xs = groups.get(g, [])
    if len(xs) < 2: continue
    print(f"{label}: {len(xs)} chains, mean pairwise |difference| RULER@512 "
          f"{mean_swing([x['ruler'] for x in xs]):.1f}, niah@512 {mean_swing([x['niah'] for x in xs]):.1f}")
EOF
