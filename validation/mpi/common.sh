# Shared by the mpi tests: environment, a tiny model, and runners. Sourced, not executed.
# Expects: BIN (build/bin), SRC (source dir), PY (python with h5py), WORK (scratch dir).
set -uo pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1 OMPI_MCA_btl_vader_single_copy_mechanism=none
# One OpenMP thread per rank unless the caller chose (validation/run_across_kernels.sh runs 1 and 2).
export OMPI_MCA_rmaps_base_oversubscribe=1 OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
failures=0 passed=0
check() {  # check NAME COMMAND...
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); else echo "FAIL: $name"; failures=$((failures + 1)); fi
}
finish() { echo "$passed passed, $failures failed"; [[ $failures -eq 0 ]]; }

shards() {  # byte-level shards of the committed sample corpus, made once per scratch dir
  [[ -f $WORK/shards/DONE ]] || "$BIN/prepare" --input "$SRC/validation/data/sample_corpus/train" \
    --output "$WORK/shards" --val-fraction 0.1 >/dev/null || { echo "prepare failed"; exit 1; }
}

# A model small enough that 20 steps take well under a second per rank.
tiny_args() {
  echo --model.vocab_size 259 --model.d_model 32 --model.n_layers 2 --model.d_ff 64 \
       --model.n_heads 4 --model.n_kv_heads 4 --model.head_dim_qk 8 --model.head_dim_v 8 \
       --model.window 16 --train.seq_len 32 --train.global_batch 4 --train.steps 20 \
       --train.lr 3e-3 --train.warmup_steps 4 --train.log_every 1 --train.checkpoint_every 0 \
       --data.train "$WORK/shards/train.h5" --data.val "$WORK/shards/val.h5"
}

source "$(dirname "${BASH_SOURCE[0]}")/../floor_kernels.sh"

# run_floor NP RUN_DIR ARGS... : RUN_DIR.<kernels> for each floor kernel set; prints the
# --floor arguments of compare_runs.py.
run_floor() {
  local np=$1 dir=$2 k; shift 2
  for k in $(floor_kernels); do
    OPENBLAS_CORETYPE=$k run "$np" "$dir.$k" "$@" || { echo "floor run $dir.$k failed" >&2; tail -5 "$dir.$k.log" >&2; }
    echo "--floor $dir.$k"
  done
}

run() {  # run NP RUN_DIR ARGS... : pretrain on NP ranks, output in RUN_DIR.log
  local np=$1 dir=$2; shift 2
  mpirun -np "$np" "$BIN/pretrain" --run-dir "$dir" "$@" >"$dir.log" 2>&1
}
