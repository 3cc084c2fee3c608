#!/usr/bin/env bash
# The toy RULER study's pretraining of one architecture under several seeds and OpenBLAS kernel
# sets: does it learn to retrieve, and when (the README's kernel table and learning curves).
#
#   docs/studies/toy_ruler/screen_pretraining.sh OUT_DIR [STEPS] [SEEDS] [KERNELS] [-- --key value ...]
#     OUT_DIR   one run directory per kernel set and seed: OUT_DIR/<kernels>_s<seed>
#     STEPS     pretraining steps (default: the recipe's); the WSD decay stays the recipe's last steps
#     SEEDS     comma-separated, default 1,2,3,4 (model, data order and data seeds alike)
#     KERNELS   comma-separated OPENBLAS_CORETYPE names, default Cooperlake,Haswell,SkylakeX
#     after --  more options for pretrain (e.g. --train.weight_decay 0)
#   then: docs/studies/toy_ruler/learning_curves.py OUT_DIR   (onsets table + learning_curves.png)
#
# Runs two at a time, one thread each (2 cores); the architecture is model=wide unless MODEL is
# set in the environment. Needs runs/toy_ruler/shards (jobs/run_study.sh makes them) and a build
# (HEADROOM_BIN, default build/bin). Finished runs (DONE) are skipped.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
cd "$root"
die() { echo "screen_pretraining: error: $*" >&2; exit 2; }
[[ $# -ge 1 && $1 != -h && $1 != --help ]] || { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0; }
out=$1; shift
steps="" seeds=1,2,3,4 kernels=Cooperlake,Haswell,SkylakeX
for v in steps seeds kernels; do
  [[ $# -ge 1 && $1 != -- ]] || break
  printf -v "$v" '%s' "$1"; shift
done
[[ $# -eq 0 || $1 == -- ]] || die "unexpected argument '$1' (see --help)"
[[ $# -eq 0 ]] || shift
extra=("$@")
bin=${HEADROOM_BIN:-$root/build/bin} model=${MODEL:-wide}
recipe=inputs/studies/toy_ruler/pretrain.ini shards=runs/toy_ruler/shards
model_ini=inputs/studies/toy_ruler/models/$model.ini
[[ -x $bin/pretrain ]] || die "no $bin/pretrain (build first, or set HEADROOM_BIN)"
[[ -f $shards/train.h5 && -f $shards/val.h5 ]] || die "no token shards in $shards (run jobs/run_study.sh inputs/studies/toy_ruler.study first)"
[[ -f $model_ini ]] || die "no model file $model_ini (MODEL=$model)"
mkdir -p "$out"
jobs=()
IFS=, read -ra ks <<< "$kernels"
IFS=, read -ra ss <<< "$seeds"
for s in "${ss[@]}"; do for k in "${ks[@]}"; do jobs+=("$k $s"); done; done
run_one() {
  local k=$1 s=$2 dir=$out/${1}_s$2
  [[ -f $dir/DONE ]] && { echo "screen_pretraining: $dir done already"; return 0; }
  local args=(--config "$model_ini" --config "$recipe" --data.train "$shards/train.h5" --data.val "$shards/val.h5"
              --model.seed "$s" --train.seed "$s" --data.seed "$s" --run-dir "$dir" --force)
  [[ -n $steps ]] && args+=(--train.steps "$steps")
  OPENBLAS_CORETYPE=$k OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 \
    "$bin/pretrain" "${args[@]}" "${extra[@]}" > "$dir.out" 2>&1 || { echo "screen_pretraining: $dir failed (see $dir.out)"; return 0; }
  touch "$dir/DONE"
  echo "screen_pretraining: $dir: $(grep -h 'probe at step' "$dir.out" | tail -1 | sed 's/.*probe at //')"
}
export -f run_one
export out steps bin model_ini recipe shards
export extra_joined="${extra[*]}"
printf '%s\n' "${jobs[@]}" | xargs -P 2 -L 1 bash -c 'extra=($extra_joined); run_one "$0" "$1"'
