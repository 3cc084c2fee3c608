#!/usr/bin/env bash
# The trainer's GPU path on the emulated GPU (bin/emulated/: the CUDA backend's kernels on the CPU
# emulator, cuBLASLt emulated on sgemm, device memory in a guarded arena, NCCL emulated on MPI;
# CMake option HEADROOM_EMULATED_DEVICE), against the CPU backend:
#   - 5 steps of a tiny model for every knob family (extend from the same initial weights): the fp32 table within 1e-5 of the CPU run
#     (losses and weights); the bf16 table within noise_floor's factor of the bf16 floor: how far
#     the CPU run moves when its initial weights are rounded to bf16 (what bf16 inputs alone cost,
#     as test_gpu_cases.h derives the op tolerances);
#   - the bf16 table at tp=2 with sequence parallelism and recompute full, and at cp=2 (keys and
#     values gathered in bf16) with recompute full, within the same floor;
#   - tp=2, dp=2 with ZeRO-1, ZeRO-2 in buckets (fp32, and bf16 on the wire within the bf16
#     reduction's floor of the CPU's bf16 run), cp=2 with recompute full, cp=2 with the document mask and tp=2 with
#     sequence parallelism under mpirun (fp32, within 1e-5 of the one-rank CPU run), and sft;
#   - a checkpoint written on the emulated GPU resumes on the CPU and the reverse;
#   - SIGUSR1 checkpoints and exits 75;
#   - evaluate decodes the same tokens on the emulated GPU as on the CPU.
# Any host pointer handed to a kernel, GEMM or device collective, or any host read of device memory,
# stops a run here (kernels/cuda/emu/device_arena.h), so every check also covers that.
# usage: test_emulated_device.sh BIN SRC PY   (BIN/emulated/ holds the emulated stages)
# The same checks on a real GPU (validation/gpu/run_gpu_checks.sh, step (d)): DEVICE_BIN=DIR whose
# stages have the real CUDA backend, DEVICE_RANKS=1 on a machine with one GPU (the tp=2, dp=2 and
# SIGUSR1 checks need two devices: NCCL refuses two ranks on one GPU).
BIN=$1 SRC=$2 PY=$3
WORK=$(mktemp -d -t headroom_emu.XXXXXX); [[ -n ${KEEP:-} ]] || trap 'rm -rf "$WORK"' EXIT
source "$(dirname "$0")/common.sh"
EMU=${DEVICE_BIN:-$BIN/emulated}
RANKS=${DEVICE_RANKS:-2}
[[ -x $EMU/pretrain ]] || { echo "no $EMU/pretrain: configure with -DHEADROOM_EMULATED_DEVICE=ON"; exit 1; }
shards
cmp() { "$PY" "$SRC/validation/mpi/compare_runs.py" "$@"; }
erun() {  # erun APP PRECISION NP RUN_DIR ARGS...: an emulated stage, output in RUN_DIR.log
  local app=$1 precision=$2 np=$3 dir=$4; shift 4
  HEADROOM_CUDA_PRECISION=$precision mpirun -np "$np" "$EMU/$app" --train.device cuda \
    --run-dir "$dir" "$@" >"$dir.log" 2>&1
}
xrun() {  # xrun NP RUN_DIR ARGS...: extend on the CPU, output in RUN_DIR.log
  local np=$1 dir=$2; shift 2
  mpirun -np "$np" "$BIN/extend" --run-dir "$dir" "$@" --train.device cpu >"$dir.log" 2>&1
}
crun() { run "$@" --train.device cpu; }  # pretrain on the CPU even where a GPU is visible
expect_rc() { local want=$1; shift; "$@"; local rc=$?; [[ $rc -eq $want ]] || { echo "  exit $rc, wanted $want"; return 1; }; }
latest() { echo "$1/checkpoints/$(cat "$1/checkpoints/latest")"; }

# ---- every knob family, fp32 and bf16 ----------------------------------------------------------------
steps=(--train.steps 5)
family() {  # family NAME OVERRIDES...: the initial weights from pretrain, then 5 steps of extend
  local name=$1; shift
  local d=$WORK/$name args=($(tiny_args) "$@")
  # The initial weights as a checkpoint (one step at learning rate 0), exact and rounded to bf16.
  crun 1 "$d.init" "${args[@]}" --train.steps 1 --train.lr 0 --train.min_lr 0 --train.warmup_steps 0 ||
    { echo "FAIL: $name: initial weights"; tail -3 "$d.init.log"; return 1; }
  "$PY" "$SRC/validation/mpi/round_bf16.py" "$(latest "$d.init")" "$d.init_bf16.h5" || return 1
  check "$name: cpu" xrun 1 "$d.cpu" "${args[@]}" "${steps[@]}" --init "$(latest "$d.init")"
  check "$name: cpu from bf16 weights" xrun 1 "$d.cpu_bf16in" "${args[@]}" "${steps[@]}" --init "$d.init_bf16.h5"
  check "$name: emulated fp32" erun extend fp32 1 "$d.fp32" "${args[@]}" "${steps[@]}" --init "$(latest "$d.init")"
  check "$name: emulated bf16" erun extend bf16 1 "$d.bf16" "${args[@]}" "${steps[@]}" --init "$(latest "$d.init")"
  check "$name: fp32 table matches the cpu" cmp "$d.fp32" "$d.cpu" --max-rel 1e-5 --name "$name fp32"
  check "$name: bf16 table within the bf16 floor" cmp "$d.bf16" "$d.cpu" --floor "$d.cpu_bf16in" --name "$name bf16"
}
family mha
family gqa --model.n_kv_heads 2
family qk_layer --model.qk_norm layer
family qk_head_post --model.qk_norm head --model.norm_order post
family sliding --model.layer_pattern SF --model.window 8
family partial_rope --model.head_dim_qk 16 --model.rope_dims_full 8
family yarn --model.head_dim_qk 16 --model.rope_scaling yarn --model.yarn_layers full \
  --model.yarn_factor 4 --model.yarn_original_len 8
family frozen --model.freeze 'layers.*.attn.w?'

# CUDA graphs (train.cuda_graphs, on by default): with two micro-batches a step each pass is captured
# once and replayed after; the run is the one with every op enqueued one by one, bit for bit on the
# emulator, and within the bf16 floor of the CPU on a GPU (whose atomics vary the last bits).
d=$WORK/mha
for graphs in false true; do
  check "graphs $graphs: emulated bf16, two micro-batches a step" erun extend bf16 1 "$WORK/graphs_$graphs" \
    $(tiny_args) "${steps[@]}" --init "$(latest "$d.init")" --train.micro_batch 2 --train.cuda_graphs $graphs
done
check "  ...the passes captured and replayed" \
  grep -q "CUDA graphs: [1-9][0-9]* captures and [1-9][0-9]* launches" "$WORK/graphs_true/log.txt"
if [[ -z ${DEVICE_BIN:-} ]]; then
  check "  ...the losses and weights of the ops one by one" cmp "$WORK/graphs_true" "$WORK/graphs_false" --exact \
    --name "graphs"
else
  check "  ...within the bf16 floor of the cpu" cmp "$WORK/graphs_true" "$d.cpu" --floor "$d.cpu_bf16in" \
    --name "graphs bf16"
fi
if ((RANKS >= 2)); then
  # The bf16 table's stored GEMM inputs and gradients with the rows split over the tp ranks
  # (sequence parallelism gathers the normed rows in fp32 and stores them after; the output
  # gradients are gathered before they are stored) and the layers recomputed: against the gqa
  # family's CPU runs, within the bf16 floor as the families' own bf16 runs.
  d=$WORK/gqa
  check "gqa: emulated bf16 tp=2 sequence-parallel, recompute full" erun extend bf16 2 "$WORK/sp2b" \
    $(tiny_args) --model.n_kv_heads 2 "${steps[@]}" --init "$(latest "$d.init")" --parallel.tp 2 \
    --parallel.sequence_parallel true --train.recompute full
  check "  ...within the bf16 floor of the cpu" cmp "$WORK/sp2b" "$d.cpu" --floor "$d.cpu_bf16in" \
    --name "gqa bf16 tp=2 sp"
  # Context parallelism with the keys and values kept in bf16 (the cache precision): the whole
  # window's gather (the full-attention layer) and the halos (the sliding one) move 16-bit words,
  # gathered again by the recomputed forward and the backward pass.
  d=$WORK/sliding
  check "sliding: emulated bf16 cp=2, recompute full" erun extend bf16 2 "$WORK/cp2b" \
    $(tiny_args) --model.layer_pattern SF --model.window 8 "${steps[@]}" --init "$(latest "$d.init")" \
    --parallel.cp 2 --train.recompute full
  check "  ...within the bf16 floor of the cpu" cmp "$WORK/cp2b" "$d.cpu" --floor "$d.cpu_bf16in" \
    --name "sliding bf16 cp=2"
fi

# ---- layouts, checkpoints, signals -------------------------------------------------------------------
args=($(tiny_args) --model.n_kv_heads 2 --model.qk_norm layer --train.steps 10)
check "cpu straight" crun 1 "$WORK/a" "${args[@]}"
if ((RANKS >= 2)); then
  check "emulated tp=2" erun pretrain fp32 2 "$WORK/tp2" "${args[@]}" --parallel.tp 2
  check "  ...matches the cpu" cmp "$WORK/tp2" "$WORK/a" --max-rel 1e-5 --name "emulated tp=2"
  check "emulated dp=2 ZeRO-1" erun pretrain fp32 2 "$WORK/z" "${args[@]}" --parallel.dp 2 --parallel.zero1 true
  check "  ...matches the cpu" cmp "$WORK/z" "$WORK/a" --max-rel 1e-5 --name "emulated dp=2 zero1"
  check "  ...on the emulated GPU" grep -q "parameters .* (GPU)" "$WORK/z/log.txt"
  # The overlapped reduction's calls on the emulated NCCL: ZeRO-2's reduce-scatter in buckets.
  check "emulated dp=2 ZeRO-2 in buckets" erun pretrain fp32 2 "$WORK/z2" "${args[@]}" --parallel.dp 2 \
    --parallel.zero1 true --parallel.zero2 true --parallel.grad_bucket_mib 0.002
  check "  ...matches the cpu" cmp "$WORK/z2" "$WORK/a" --max-rel 1e-5 --name "emulated dp=2 zero2 buckets"
  # Its backward pass starts the buckets between layers: a CUDA graph for each piece between two.
  check "  ...its micro-batches' passes replayed as CUDA graphs" \
    grep -q "CUDA graphs: [1-9][0-9]* captures and [1-9][0-9]* launches" "$WORK/z2/log.txt"
  # The same in bf16 on the wire, against the CPU's bf16 run: within ten times the bf16 floor, how
  # far the fp32 reduction lies from it.
  check "cpu dp=2 ZeRO-2 in buckets, bf16 reduction" crun 2 "$WORK/z2b.cpu" "${args[@]}" --parallel.dp 2 \
    --parallel.zero1 true --parallel.zero2 true --parallel.grad_bucket_mib 0.002 --parallel.grad_reduce_dtype bf16
  check "emulated dp=2 ZeRO-2 in buckets, bf16 reduction" erun pretrain fp32 2 "$WORK/z2b" "${args[@]}" \
    --parallel.dp 2 --parallel.zero1 true --parallel.zero2 true --parallel.grad_bucket_mib 0.002 \
    --parallel.grad_reduce_dtype bf16
  check "  ...within the bf16 floor of the cpu" cmp "$WORK/z2b" "$WORK/z2b.cpu" --floor "$WORK/z2" \
    --name "emulated dp=2 zero2 buckets bf16"
  # Context parallelism through the device tables (attention with a query offset, row gathers,
  # device copies) and the emulated NCCL's all-gather and reduce-scatter; sequence parallelism.
  check "emulated cp=2 recompute full" erun pretrain fp32 2 "$WORK/cp2" "${args[@]}" --parallel.cp 2 --train.recompute full
  check "  ...matches the cpu" cmp "$WORK/cp2" "$WORK/a" --max-rel 1e-5 --name "emulated cp=2 full"
  # The document mask: each rank's queries carry their documents' starts into the device kernels.
  check "cpu document mask" crun 1 "$WORK/dm" "${args[@]}" --data.document_mask true
  check "emulated cp=2 document mask" erun pretrain fp32 2 "$WORK/cp2dm" "${args[@]}" --parallel.cp 2 --data.document_mask true
  check "  ...matches the cpu" cmp "$WORK/cp2dm" "$WORK/dm" --max-rel 1e-5 --name "emulated cp=2 document mask"
  check "emulated tp=2 sequence-parallel" erun pretrain fp32 2 "$WORK/sp2" "${args[@]}" --parallel.tp 2 --parallel.sequence_parallel true
  check "  ...matches the cpu" cmp "$WORK/sp2" "$WORK/a" --max-rel 1e-5 --name "emulated tp=2 sp"
  # The collectives inside the passes captured into the graphs: tp = 2 sequence-parallel and cp = 2
  # with two micro-batches a step, against the same runs op by op, bit for bit (on the emulator).
  for graphs in false true; do
    check "emulated tp=2 sp, two micro-batches, graphs $graphs" erun pretrain fp32 2 "$WORK/sp2g_$graphs" \
      "${args[@]}" --parallel.tp 2 --parallel.sequence_parallel true --train.micro_batch 2 --train.cuda_graphs $graphs
    check "emulated cp=2, two micro-batches, graphs $graphs" erun pretrain fp32 2 "$WORK/cp2g_$graphs" \
      "${args[@]}" --parallel.cp 2 --train.micro_batch 2 --train.cuda_graphs $graphs
  done
  for run in sp2g cp2g; do
    check "  ...$run: the passes captured and replayed" \
      grep -q "CUDA graphs: [1-9][0-9]* captures and [1-9][0-9]* launches" "$WORK/${run}_true/log.txt"
    if [[ -z ${DEVICE_BIN:-} ]]; then
      check "  ...$run: as op by op, bit for bit" cmp "$WORK/${run}_true" "$WORK/${run}_false" --exact --name "$run graphs"
    else
      check "  ...$run: matches the cpu" cmp "$WORK/${run}_true" "$WORK/a" --max-rel 1e-5 --name "$run graphs"
    fi
  done
fi

check "emulated first half exits 75" expect_rc 75 erun pretrain fp32 1 "$WORK/e2c" "${args[@]}" --train.steps_per_run 5
check "  ...resumes on the cpu" crun 1 "$WORK/e2c" "${args[@]}" --resume auto
check "  ...from its checkpoint" grep -q "resumed from .*step_00000005.h5" "$WORK/e2c.log"
check "  ...matching the cpu" cmp "$WORK/e2c" "$WORK/a" --max-rel 1e-5 --name "emulated then cpu"
check "cpu first half exits 75" expect_rc 75 crun 1 "$WORK/c2e" "${args[@]}" --train.steps_per_run 5
check "  ...resumes on the emulated GPU (dp=$RANKS)" erun pretrain fp32 "$RANKS" "$WORK/c2e" "${args[@]}" --parallel.dp "$RANKS" --resume auto
check "  ...matching the cpu" cmp "$WORK/c2e" "$WORK/a" --max-rel 1e-5 --name "cpu then emulated dp=$RANKS"

# sft (instruction pairs and generated examples, answer-only loss) from the CPU run's checkpoint.
printf '%s\n' '{"prompt": "What is the capital of France?", "response": "Paris."}' \
  '{"prompt": "Name a primary colour.", "response": "Red."}' >"$WORK/pairs.jsonl"
sft=(--init "$WORK/a" --train.steps 5 --train.seq_len 256 --train.global_batch 2 --train.log_every 1
     --data.train "$WORK/shards/train.h5" --data.val "$WORK/shards/val.h5" --data.sft_file "$WORK/pairs.jsonl")
check "sft on the cpu" bash -c '"$0" --train.device cpu --run-dir "$1" "${@:2}" >"$1.log" 2>&1' "$BIN/sft" "$WORK/sft_cpu" "${sft[@]}"
check "sft on the emulated GPU" erun sft fp32 1 "$WORK/sft_emu" "${sft[@]}"
check "  ...matches the cpu" cmp "$WORK/sft_emu" "$WORK/sft_cpu" --max-rel 1e-5 --name "emulated sft"

if ((RANKS >= 2)); then
  # SIGUSR1 (what Slurm sends with --signal): finish the step, checkpoint, exit 75.
  HEADROOM_CUDA_PRECISION=fp32 mpirun -np 2 "$EMU/pretrain" --train.device cuda --run-dir "$WORK/f" \
    "${args[@]}" --parallel.dp 2 --train.steps 100000 >"$WORK/f.log" 2>&1 & pid=$!
  for _ in $(seq 600); do grep -q "step 3/" "$WORK/f.log" 2>/dev/null && break; sleep 0.1; done
  kill -USR1 $pid; wait $pid; rc=$?
  check "SIGUSR1 exits 75" test $rc -eq 75
  check "  ...after a checkpoint" test -s "$WORK/f/checkpoints/latest"
fi

# ---- evaluate: the same tokens decoded ---------------------------------------------------------------
ev=(--init "$WORK/a" --eval.tasks niah_single_1,vt --eval.lengths 1024
    --eval.samples 2 --eval.max_new_tokens 8 --eval.allow_beyond_training true
    --eval.word_dir "$SRC/inputs/eval" --eval.essay "$SRC/validation/data/sample_corpus/essay/sample.jsonl")
check "evaluate on the cpu" bash -c '"$0" --train.device cpu --run-dir "$1" "${@:2}" >"$1.log" 2>&1' "$BIN/evaluate" "$WORK/ev_cpu" "${ev[@]}"
check "evaluate on the emulated GPU" bash -c 'HEADROOM_CUDA_PRECISION=fp32 "$0" --train.device cuda --run-dir "$1" "${@:2}" >"$1.log" 2>&1' \
  "$EMU/evaluate" "$WORK/ev_emu" "${ev[@]}"
same_tokens() {
  "$PY" - "$WORK/ev_cpu/samples.jsonl" "$WORK/ev_emu/samples.jsonl" <<'PY'
import json, sys
a, b = ([json.loads(l) for l in open(p)] for p in sys.argv[1:])
assert len(a) == len(b) and len(a) > 0, (len(a), len(b))
keys = [k for k in a[0] if k.startswith("pred")]
assert keys, f"no prediction field in {sorted(a[0])}"
diff = [(x.get("task"), x.get("index")) for x, y in zip(a, b) if any(x[k] != y[k] for k in keys)]
print(f"{len(a)} samples, fields {keys}: {len(diff)} differ {diff[:5]}")
sys.exit(1 if diff else 0)
PY
}
check "  ...decodes the same tokens" same_tokens
finish
