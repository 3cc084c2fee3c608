#!/usr/bin/env bash
# The CUDA backend's checks on a GPU machine, in one go, in 8 minutes (build included), sized for a
# lent GPU's 15 minutes of device time (start, transfers and a rerun included):
#
#   validation/gpu/run_gpu_checks.sh [--build-dir DIR] [--prebuilt] [--peak-tflops X] [--dry-run]
#
#   build  Release, CUDA on, only the targets needed (-j$(nproc)), in DIR (default build-gpu).
#          --prebuilt skips it and uses DIR as it is (binaries built elsewhere, e.g. staged with
#          validation/gpu/stage_prebuilt.sh, whose Debian packages it unpacks first; DIR/lib, if
#          present, goes on LD_LIBRARY_PATH).
#   (a)    test_gpu_ops: every op of cuda_ops_fp32() (≤ 1e-5) and of the bf16 table (GEMM and
#          attention within their noise floors, everything else ≤ 1e-5) against the CPU backend on
#          fresh random inputs, outputs NaN-poisoned first; the bf16 table twice, with cuDNN's fused
#          attention where it supports the shape and with the own flash attention only, so the two
#          attentions are checked against the same CPU results (and the test asserts that cuDNN
#          really ran a training shape), and the blocked attention on cuBLASLt at every attention
#          case; exits 77 without a GPU.
#   (s)    compute-sanitizer (racecheck, then memcheck) on the small attention forward/backward
#          cases of test_gpu_ops (HEADROOM_GPU_TEST_SMALL=1: the own kernels of the bf16 and fp32
#          tables, the flash kernels' single-stage and streamed variants and the blocked
#          attention, widths 24–1024, GQA, windows, queries that see no key), and memcheck on one
#          training step of a tiny model (pretrain --train.device cuda, whose attention goes to
#          cuDNN: the bindings handed to it are checked too): any hazard or invalid access fails
#          the row.
#   (b)    a small model trained 20 steps on CPU, on GPU in fp32 (HEADROOM_CUDA_PRECISION=fp32) and on
#          GPU in bf16, from the same initial weights (initialisation is a pure function of model.seed,
#          computed on the host for every backend); per-step losses compared. Needs
#          `pretrain --train.device cuda`; says so when that option is not there yet.
#   (d)    every knob family (MHA, GQA, QK norm layer/head, post-norm, sliding, partial RoPE, YaRN,
#          frozen) 5 steps on the GPU in fp32 (within 1e-5 of the CPU) and bf16 (within its bf16
#          floor), checkpoints across devices, sft and evaluate's decoded tokens: the emulated-GPU
#          test of CI (validation/mpi/test_emulated_device.sh) pointed at the real device
#          (DEVICE_BIN; two-rank checks only with two GPUs). At most D_LIMIT s.
#   (e)    a 64K training step that fills most of the GPU: one rank, train.recompute full, the ~0.3B
#          model's width (d_model 1024, 8×128 heads, d_ff 2816) with the most layers of 128/96/64/32
#          whose memory plan (pretrain --memory-plan) fits 90% of the GPU; its peak device memory
#          (nvidia-smi memory.used, sampled every 0.2 s) against the plan's GPU total with the
#          reserve, and tokens/s of 4 such layers with recompute none and full (both fit). At most
#          E_LIMIT s; runs only while (c) keeps 150 s.
#   (c)    bench_gpu: GEMM TFLOP/s; attention forward/backward TFLOP/s at widths 128–1024 and
#          sequence 4K and 32K (causal pairs only), every path side by side: cuDNN (up to width
#          256), the blocked attention on cuBLASLt and the own flash attention (up to width 256
#          with K/V pipelined by cp.async, and streamed beside it: rows "flash, streamed"), the
#          blocked path at 128/256/512 queries per block (width 512), and a context-parallel
#          rank's last chunk (cp 4: T/8 queries after 7/8 of the window) on the
#          blocked and the flash path at widths 128 and 512 (rows "blocked@cp", "flash@cp"), and
#          there one decoding step's forward, split over its keys as decoding does and in one
#          part (rows "fwd flash decode, N part(s)", N from decode_splits, and "…, 1 part(s)"); then
#          training tokens/s and MFU of the head-width study's 0.6B models d128_0.6b and d512_0.6b
#          (inputs/models; 16×128 against 4×512 heads, train.attention_kernel auto) at sequence
#          4096 through pretrain --train.device cuda. MFU = tokens/s × FLOPs/token (pretrain's
#          count) / peak, peak = --peak-tflops (default 989, H100/H200 SXM dense bf16); and where
#          each model's steps 2-3 go, region by region (train.profile_steps, profile.json); when
#          time is left, d128_0.6b again without CUDA graphs (train.cuda_graphs false: every op
#          launched one by one), and with each GEMM shape's algorithm timed among cuBLASLt's
#          first 8 (HEADROOM_GEMM_SEARCH=8, kernels/cuda/gemm.cu) against the heuristic's first
#          choice.
#   (f)    one RULER sample (niah_single_1) at 131,072 tokens on the first study's d128_0.6b model
#          (weights: one step at learning rate 0 from its initialisation; the score is not the point),
#          evaluate --train.device cuda: wall time, and peak device memory (nvidia-smi, as (e))
#          against evaluate --memory-plan's GPU total. At most F_LIMIT s; runs after (c)'s two
#          models, before the GEMM search, while F_LIMIT s are left.
#
# A short table comes last; it is also written to $OUT/gpu_checks.txt when OUT is set (the device
# tool's folder that comes back), else to DIR/gpu_checks.txt, followed by which of its rows go into
# the README. Without a GPU it still builds, runs (a), which skips, and prints "no GPU: skipped"
# rows. --dry-run prints the plan (each step, its command and its share of the 8 minutes) and exits
# 0 without building or running anything. Exit status: 0 unless a check that ran failed.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=$root/build-gpu
PREBUILT=0
PEAK=989
DRY=0
while (($#)); do
  case $1 in
    --build-dir) BUILD=$(realpath -m "$2"); shift 2 ;;
    --prebuilt) PREBUILT=1; shift ;;
    --peak-tflops) PEAK=$2; shift 2 ;;
    --dry-run) DRY=1; shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "run_gpu_checks.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
  esac
done
[[ -d $BUILD/lib ]] && export LD_LIBRARY_PATH=$BUILD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for d in /usr/local/cuda/lib64 /usr/local/cuda/lib; do  # binaries built where CUDA lives elsewhere
  [[ -d $d ]] && export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d
done
# Staged with the Debian packages of its libraries and OpenMPI (stage_prebuilt.sh): unpack them first.
if ((PREBUILT && !DRY)) && [[ -d $BUILD/debs ]]; then
  source "$root/validation/gpu/unpack_prebuilt.sh"
  unpack_prebuilt || exit 1
fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/headroom_gpu_checks.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader \
  OMPI_MCA_pml=ob1 OMPI_MCA_btl_vader_single_copy_mechanism=none
T0=$SECONDS
BUDGET=480  # seconds (8 minutes): stop starting new work past this
OPS_LIMIT=200  # seconds for (a), which every earlier step leaves it
SAN_LIMIT=60   # seconds for each compute-sanitizer run of (s)
D_LIMIT=120    # seconds for (d), which runs only while (c) keeps 120 s
E_LIMIT=120    # seconds for (e), which runs only while (c) keeps 150 s
F_LIMIT=120    # seconds for (f), which runs only while that much is left after (c)'s models
status=0
rows=()
row() { rows+=("$(printf '%-44s %s' "$1" "$2")"); }
log() { printf '[%3ds] %s\n' $((SECONDS - T0)) "$*"; }
left() { echo $((BUDGET - (SECONDS - T0))); }
# The first python3 with h5py and numpy (the comparisons read checkpoints): Debian's here, a
# virtual environment's on GPU images whose /usr/bin/python3 has neither.
PY=
for p in /usr/bin/python3 $(command -v python3); do
  [[ -x $p ]] && "$p" -c 'import h5py, numpy' 2>/dev/null && { PY=$p; break; }
done
LAUNCH=()  # one MPI rank: mpirun when there is one, else a singleton
command -v mpirun >/dev/null && LAUNCH=(mpirun -np 1 -x HEADROOM_CUDA_PRECISION -x OMP_NUM_THREADS)
SANITIZER=$(command -v compute-sanitizer || true)
[[ -z $SANITIZER && -x /usr/local/cuda/bin/compute-sanitizer ]] && SANITIZER=/usr/local/cuda/bin/compute-sanitizer
TABLE=${OUT:-$BUILD}/gpu_checks.txt
gpu_devices() { ls /dev/nvidia[0-9]* 2>/dev/null | wc -l; }

if ((DRY)); then
  gpus=$(gpu_devices)
  echo "run_gpu_checks.sh --dry-run: the plan ($BUDGET s in all; a step starts only with its time left)"
  if ((PREBUILT)); then
    echo "  build   skipped (--prebuilt): binaries from $BUILD$([[ -d $BUILD/debs ]] && echo ", its staged packages unpacked under $BUILD/root")"
  else
    echo "  build   cmake -DHEADROOM_CUDA=ON in $BUILD; targets test_gpu_ops test_gpu_device bench_gpu, then prepare pretrain extend sft evaluate (until $((BUDGET - 200)) s)"
  fi
  echo "  (s)     ${SANITIZER:-compute-sanitizer (not found here: the step would be skipped)} --tool racecheck and --tool memcheck on test_gpu_ops --gtest_filter='*AttentionForwardBackward/bf16_flash:*AttentionForwardBackward/fp32:CudaBlocked.*:CudaFlash.*' with HEADROOM_GPU_TEST_SMALL=1 ($SAN_LIMIT s each at most); memcheck on pretrain --train.device cuda --train.steps 1, tiny model ($SAN_LIMIT s); only while (a) keeps its $OPS_LIMIT s"
  echo "  (a)     $BUILD/tests/test_gpu_ops: the fp32 table, the bf16 table with cuDNN's attention and with the own ($OPS_LIMIT s at most)"
  echo "  (b)     pretrain 20 steps on cpu / cuda fp32 / cuda bf16, losses compared (needs 200 s left)"
  echo "  (d)     DEVICE_BIN=$BUILD/bin validation/mpi/test_emulated_device.sh: knob families fp32/bf16, checkpoints across devices, sft, evaluate ($D_LIMIT s at most; needs $((D_LIMIT + 120)) s left)"
  echo "  (e)     pretrain --memory-plan picks the layers (128/96/64/32) of a 64K, recompute-full model that fits 90% of the GPU; 2 steps of it with nvidia-smi memory.used sampled (peak vs plan), then 4 layers at 64K with recompute none and full, 2 steps each (tokens/s); $E_LIMIT s at most, needs $((E_LIMIT + 150)) s left"
  echo "  (c)     $BUILD/bin/bench_gpu --seqs 4096,32768 --blocks 128,256,512, then d128_0.6b and d512_0.6b training at 4K, 10 steps each (the rest, half each); when time is left after (f), d128_0.6b with train.cuda_graphs false (needs 90 s), then with HEADROOM_GEMM_SEARCH=8 (needs 45 s)"
  echo "  (f)     pretrain 1 step of d128_0.6b at learning rate 0, then evaluate niah_single_1 at 131072 tokens on the GPU: wall time, nvidia-smi peak vs evaluate --memory-plan ($F_LIMIT s at most, when that much is left after (c)'s models)"
  echo "  table   to $TABLE, with the rows the README takes"
  echo "GPU devices visible here: $gpus$( ((gpus == 0)) && echo ' (a real run would report no GPU: skipped)')"
  exit 0
fi

# ---- build --------------------------------------------------------------------------------------------
if ((PREBUILT == 0)); then
  log "configure (Release, CUDA on) in $BUILD"
  if ! timeout 120 cmake -S "$root" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DHEADROOM_CUDA=ON \
      >"$WORK/configure.log" 2>&1; then
    tail -20 "$WORK/configure.log"
    row "build" "FAILED: cmake configure (log above)"
    status=1
  elif ! grep -q "CUDA backend ON" "$WORK/configure.log"; then
    row "build" "FAILED: the CUDA backend is off (nvcc not found?)"
    status=1
  else
    log "build test_gpu_ops test_gpu_device bench_gpu"
    t=$SECONDS
    if timeout $(( $(left) - 200 )) cmake --build "$BUILD" -j"$(nproc)" \
        --target test_gpu_ops test_gpu_device bench_gpu >"$WORK/build.log" 2>&1; then
      row "build: CUDA backend + GPU tests" "ok ($((SECONDS - t)) s, -j$(nproc))"
    else
      grep -E "error|Error" "$WORK/build.log" | head -20
      row "build: CUDA backend + GPU tests" "FAILED (errors above)"
      status=1
    fi
    log "build prepare pretrain extend sft evaluate"
    t=$SECONDS
    if timeout $(( $(left) - 150 )) cmake --build "$BUILD" -j"$(nproc)" \
        --target prepare pretrain extend sft evaluate >"$WORK/build_apps.log" 2>&1; then
      row "build: prepare and the stages" "ok ($((SECONDS - t)) s)"
    else
      grep -E "error|Error" "$WORK/build_apps.log" | head -10
      row "build: prepare and the stages" "FAILED (errors above; training steps skipped)"
    fi
  fi
fi
BIN=$BUILD/bin
TESTS=$BUILD/tests

ensure_shards() {  # the sample corpus as token shards in $WORK/shards, once
  [[ -f $WORK/shards/train.h5 ]] ||
    "$BIN/prepare" --input "$root/validation/data/sample_corpus/train" --output "$WORK/shards" >"$WORK/prepare.log" 2>&1
}

# ---- (s) compute-sanitizer: one small attention forward/backward, one training step ---------------
# Each tool gets at most SAN_LIMIT s; the step runs only while (a) keeps its OPS_LIMIT s.
sanitize() {  # sanitize LABEL TOOL LOG CMD...: one row; hazards or errors fail it
  local label=$1 tool=$2 logf=$3 rc
  shift 3
  timeout "$SAN_LIMIT" "$SANITIZER" --tool "$tool" --error-exitcode 3 "$@" >"$logf" 2>&1
  rc=$?
  case $rc in
    0) row "$label" "PASS: $(grep -m1 -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$logf" | sed 's/^========= //')" ;;
    77) row "$label" "no GPU: skipped" ;;
    124) row "$label" "not finished in $SAN_LIMIT s (timed out; no verdict)" ;;
    *) grep -E '^=========' "$logf" | head -20
       row "$label" "FAILED (rc $rc; the sanitizer's report above)"; status=1 ;;
  esac
}
if (($(gpu_devices) == 0)); then
  row "(s) compute-sanitizer" "no GPU: skipped"
elif [[ -z $SANITIZER ]]; then
  row "(s) compute-sanitizer" "not run: compute-sanitizer not found (PATH, /usr/local/cuda/bin)"
elif [[ ! -x $TESTS/test_gpu_ops ]]; then
  row "(s) compute-sanitizer" "not run: $TESTS/test_gpu_ops missing"
elif (($(left) < OPS_LIMIT + 2 * SAN_LIMIT)); then
  row "(s) compute-sanitizer" "not run: out of time (the op checks come first)"
else
  log "(s) compute-sanitizer racecheck + memcheck on the small attention cases"
  for tool in racecheck memcheck; do
    HEADROOM_GPU_TEST_SMALL=1 sanitize "(s) $tool: attention fwd/bwd, small cases" "$tool" "$WORK/san_$tool.log" \
      "$TESTS/test_gpu_ops" --gtest_filter='*AttentionForwardBackward/bf16_flash:*AttentionForwardBackward/fp32:CudaBlocked.*:CudaFlash.*'
  done
  if [[ -x $BIN/pretrain && -x $BIN/prepare ]] && (($(left) > OPS_LIMIT + SAN_LIMIT)); then
    log "(s) compute-sanitizer memcheck on one training step"
    ensure_shards
    sanitize "(s) memcheck: one training step (cuda, bf16)" memcheck "$WORK/san_step.log" \
      "$BIN/pretrain" --run-dir "$WORK/san_step" --train.device cuda --model.d_model 64 --model.n_layers 2 \
      --model.d_ff 128 --model.n_heads 2 --model.n_kv_heads 1 --model.head_dim_qk 32 --model.head_dim_v 32 \
      --model.layer_pattern SF --model.window 16 --train.seq_len 64 --train.global_batch 2 --train.steps 1 \
      --train.warmup_steps 0 --data.train "$WORK/shards/train.h5" --data.val "$WORK/shards/val.h5"
  else
    row "(s) memcheck: one training step" "not run: $([[ -x $BIN/pretrain ]] && echo out of time || echo pretrain not built)"
  fi
fi

# ---- (a) every op against the CPU backend --------------------------------------------------------
gpu=0
if [[ -x $TESTS/test_gpu_ops ]]; then
  log "(a) test_gpu_ops"
  timeout "$OPS_LIMIT" "$TESTS/test_gpu_ops" >"$WORK/ops.log" 2>&1
  rc=$?
  case $rc in
    0)
      gpu=1
      worst=$(awk '/relative error/ {r = $(NF-2) / substr($NF, 1, length($NF)-1);
                                     if (r > w) {w = r; l = $1 " " $2}}
                   END {printf "%.2f of its tolerance (%s)", w, l}' "$WORK/ops.log")
      row "(a) ops vs CPU (fp32 1e-5, bf16 2e-2)" "PASS: $(grep -c '^\[       OK' "$WORK/ops.log") tests; worst $worst" ;;
    77) row "(a) ops vs CPU" "no GPU: skipped" ;;
    124) row "(a) ops vs CPU" "FAILED: timed out"; status=1 ;;
    *)
      grep -E "Failure|FAILED|relative norm error|error:" "$WORK/ops.log" | head -30
      row "(a) ops vs CPU" "FAILED (rc $rc; failures above)"; status=1; gpu=1 ;;
  esac
else
  row "(a) ops vs CPU" "not run: $TESTS/test_gpu_ops missing"
  status=1
fi

# ---- (b) 20 training steps, CPU vs GPU -------------------------------------------------------------
has_device_option=0
# Captured first: with pipefail, grep -q closing the pipe early would make pretrain's SIGPIPE the status.
if [[ -x $BIN/pretrain ]] && [[ $("$BIN/pretrain" --help 2>/dev/null) == *--train.device* ]]; then
  has_device_option=1
fi
if [[ -x $BIN/pretrain ]]; then
  row "pretrain --train.device" "$( ((has_device_option)) && echo present || echo 'not there yet: (b) and the training figure of (c) cannot run')"
fi
if ((gpu == 0)); then
  row "(b) 20 steps CPU vs GPU" "no GPU: skipped"
elif [[ ! -x $BIN/pretrain || ! -x $BIN/prepare ]]; then
  row "(b) 20 steps CPU vs GPU" "not run: pretrain/prepare not built"
elif ((has_device_option == 0)); then
  row "(b) 20 steps CPU vs GPU" "not run: pretrain has no --train.device option yet"
elif (($(left) < 200)); then
  row "(b) 20 steps CPU vs GPU" "not run: out of time"
else
  log "(b) prepare shards; 20 steps on cpu, cuda fp32, cuda bf16"
  ensure_shards
  small=(--model.d_model 256 --model.n_layers 4 --model.d_ff 704 --model.n_heads 4
         --model.n_kv_heads 2 --model.head_dim_qk 64 --model.head_dim_v 64 --model.qk_norm head
         --model.layer_pattern SF --model.window 64 --train.seq_len 256 --train.global_batch 8
         --train.steps 20 --train.warmup_steps 2 --train.log_every 1
         --data.train "$WORK/shards/train.h5" --data.val "$WORK/shards/val.h5")
  export HEADROOM_CUDA_PRECISION=bf16 OMP_NUM_THREADS=$(nproc)
  timeout 120 "${LAUNCH[@]}" "$BIN/pretrain" --run-dir "$WORK/cpu" "${small[@]}" --train.device cpu \
    >"$WORK/cpu.log" 2>&1
  HEADROOM_CUDA_PRECISION=fp32 timeout 90 "${LAUNCH[@]}" "$BIN/pretrain" --run-dir "$WORK/fp32" \
    "${small[@]}" --train.device cuda >"$WORK/fp32.log" 2>&1
  timeout 90 "${LAUNCH[@]}" "$BIN/pretrain" --run-dir "$WORK/bf16" "${small[@]}" --train.device cuda \
    >"$WORK/bf16.log" 2>&1
  compare() {  # prints "max relative loss difference over the steps both runs logged"
    "$PY" - "$1/metrics.jsonl" "$2/metrics.jsonl" <<'PYEOF'
import json, sys
def losses(p):
    try:
        return {r["step"]: r["loss"] for r in map(json.loads, open(p))}
    except OSError:
        return {}
a, b = losses(sys.argv[1]), losses(sys.argv[2])
steps = sorted(set(a) & set(b))
if not steps:
    print("none"); sys.exit()
d = max(abs(a[s] - b[s]) / abs(a[s]) for s in steps)
print(f"{d:.2e} {len(steps)} {a[steps[-1]]:.4f} {b[steps[-1]]:.4f}")
PYEOF
  }
  for p in fp32:1e-3 bf16:2e-2; do
    name=${p%%:*} tol=${p##*:}
    read -r diff n lc lg <<<"$(compare "$WORK/cpu" "$WORK/$name")"
    if [[ $diff == none || -z ${n:-} ]]; then
      tail -5 "$WORK/cpu.log" "$WORK/$name.log"
      row "(b) 20 steps CPU vs GPU $name" "FAILED: no common logged steps (logs above)"; status=1
    elif "$PY" -c "import sys; sys.exit(0 if $diff <= $tol and $n == 20 else 1)"; then
      row "(b) 20 steps CPU vs GPU $name" "PASS: max rel. loss diff $diff <= $tol (step 20: $lc vs $lg)"
    else
      row "(b) 20 steps CPU vs GPU $name" "FAILED: max rel. loss diff $diff > $tol or $n/20 steps"; status=1
    fi
  done
fi

# ---- (d) every knob family on the GPU against the CPU (the emulated-GPU test on the real device) ----
if ((gpu == 0)); then
  row "(d) knob families, checkpoints, sft, evaluate" "no GPU: skipped"
elif [[ ! -x $BIN/extend || ! -x $BIN/sft || ! -x $BIN/evaluate || -z $PY ]]; then
  row "(d) knob families, checkpoints, sft, evaluate" "not run: extend/sft/evaluate not built or no python3"
elif (($(left) < D_LIMIT + 120)); then
  row "(d) knob families, checkpoints, sft, evaluate" "not run: out of time"
else
  log "(d) validation/mpi/test_emulated_device.sh on the GPU"
  ranks=1
  (($(gpu_devices) >= 2)) && ranks=2
  DEVICE_BIN=$BIN DEVICE_RANKS=$ranks timeout "$D_LIMIT" bash "$root/validation/mpi/test_emulated_device.sh" \
    "$BIN" "$root" "$PY" >"$WORK/device.log" 2>&1
  rc=$?
  grep -E "^FAIL|fp32:|bf16:|losses max rel" "$WORK/device.log" | head -40
  summary=$(tail -1 "$WORK/device.log")
  case $rc in
    0) row "(d) knob families, checkpoints, sft, evaluate" "PASS: $summary (ranks $ranks)" ;;
    124) row "(d) knob families, checkpoints, sft, evaluate" "not finished in $D_LIMIT s (timed out; $summary)" ;;
    *) row "(d) knob families, checkpoints, sft, evaluate" "FAILED: $summary (failures above)"; status=1 ;;
  esac
fi

# ---- (e) a 64K step that fills the GPU: peak device memory against the plan, recompute's cost ------
long64k=(--model.d_model 1024 --model.d_ff 2816 --model.n_heads 8 --model.n_kv_heads 8 --model.head_dim_qk 128
         --model.head_dim_v 128 --train.seq_len 65536 --train.global_batch 1 --train.micro_batch 1 --train.steps 2
         --train.warmup_steps 1 --train.log_every 1 --train.device cuda)
# watch_peak PID SECONDS FILE [DONE...]: samples nvidia-smi's memory.used every 0.2 s until PID
# ends, the time is up or the command DONE... succeeds; the peak (MiB) goes to FILE.
watch_peak() {
  local pid=$1 deadline=$((SECONDS + $2)) file=$3 peak=0 used
  shift 3
  while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do
    used=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0 2>/dev/null | head -1)
    ((${used:-0} > peak)) && peak=$used
    (($#)) && "$@" && break
    sleep 0.2
  done
  echo "$peak" >"$file"
}
two_steps_logged() { [[ -f $1/metrics.jsonl ]] && (($(wc -l <"$1/metrics.jsonl") >= 2)); }
# run_64k NAME SECONDS ARGS...: 2 steps, stopped once both are logged (before the checkpoint); the
# peak of nvidia-smi's memory.used (MiB) while it ran goes to $WORK/NAME.peak.
run_64k() {
  local name=$1 limit=$2 pid
  shift 2
  "${LAUNCH[@]}" "$BIN/pretrain" --run-dir "$WORK/$name" "${long64k[@]}" --data.train "$WORK/shards/train.h5" \
    --data.val "$WORK/shards/val.h5" "$@" >"$WORK/$name.log" 2>&1 &
  pid=$!
  watch_peak "$pid" "$limit" "$WORK/$name.peak" two_steps_logged "$WORK/$name"
  kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
}
step2_tps() { "$PY" -c "import json,sys; r=[json.loads(l) for l in open(sys.argv[1])]; print(round(r[1]['tokens_per_s']) if len(r) > 1 else 'none')" "$WORK/$1/metrics.jsonl" 2>/dev/null || echo none; }
if ((gpu == 0)); then
  row "(e) 64K step filling the GPU: memory vs plan" "no GPU: skipped"
elif ((has_device_option == 0)) || [[ -z $PY ]]; then
  row "(e) 64K step filling the GPU: memory vs plan" "not run: pretrain has no --train.device or no python3"
elif (($(left) < E_LIMIT + 150)); then
  row "(e) 64K step filling the GPU: memory vs plan" "not run: out of time"
else
  log "(e) 64K training step sized by the memory plan"
  ensure_shards
  t_e=$SECONDS
  total_mib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits -i 0 | head -1)
  budget_gib=$(awk -v m="$total_mib" 'BEGIN { printf "%.2f", 0.9 * m / 1024 }')
  layers=""
  for n in 128 96 64 32; do
    "$BIN/pretrain" --memory-plan "${long64k[@]}" --model.vocab_size 259 --model.n_layers "$n" --train.recompute full \
      --device-memory "$budget_gib" >"$WORK/plan_$n.txt" 2>&1 && { layers=$n; break; }
  done
  if [[ -z $layers ]]; then
    row "(e) 64K step filling the GPU: memory vs plan" "FAILED: no candidate fits 90% of $total_mib MiB (plans in $WORK)"; status=1
  else
    plan_b=$(sed -nE 's/^  GPU total .* = [0-9.]+ GiB \(([0-9]+) bytes\)$/\1/p' "$WORK/plan_$layers.txt")
    run_64k fill $((E_LIMIT - 50)) --model.n_layers "$layers" --train.recompute full
    peak_mib=$(cat "$WORK/fill.peak")
    ratio=$(awk -v p="$peak_mib" -v b="$plan_b" 'BEGIN { printf "%.3f", p * 1048576 / b }')
    if [[ $(step2_tps fill) == none ]] && grep -q "error" "$WORK/fill.log"; then
      tail -5 "$WORK/fill.log"
      row "(e) 64K, $layers layers, recompute full" "FAILED: peak $peak_mib MiB vs plan $((plan_b / 1048576)) MiB (log above)"; status=1
    elif [[ $(step2_tps fill) == none ]]; then
      row "(e) 64K, $layers layers, recompute full" "not finished in $((E_LIMIT - 50)) s (no verdict): peak so far $peak_mib MiB vs plan $((plan_b / 1048576)) MiB"
    else
      row "(e) 64K, $layers layers, recompute full" "peak $peak_mib MiB (nvidia-smi) vs plan $((plan_b / 1048576)) MiB with the reserve: measured/plan $ratio; $(step2_tps fill) tok/s"
    fi
    left_e=$((E_LIMIT - (SECONDS - t_e)))
    if ((left_e > 30)); then
      run_64k none4 $((left_e / 2)) --model.n_layers 4 --train.recompute none
      run_64k full4 $((left_e / 2)) --model.n_layers 4 --train.recompute full
      a=$(step2_tps none4) b=$(step2_tps full4)
      row "(e) 64K, 4 layers: tok/s recompute none / full" "$a / $b$([[ $a != none && $b != none ]] && awk -v a="$a" -v b="$b" 'BEGIN { printf " (recompute costs %.0f%%)", 100 * (a / b - 1) }')"
    else
      row "(e) 64K, 4 layers: tok/s recompute none / full" "not run: out of time"
    fi
  fi
fi

# ---- (c) throughput ----------------------------------------------------------------------------------
if [[ -x $BIN/bench_gpu ]] && (($(left) > 150)); then
  log "(c) bench_gpu"
  timeout $(( $(left) - 120 )) "$BIN/bench_gpu" --seqs 4096,32768 --blocks 128,256,512 >"$WORK/bench.log" 2>&1
  rc=$?
  if ((rc == 77)); then
    row "(c) GEMM / attention TFLOP/s" "no GPU: skipped"
  elif ((rc != 0)); then
    tail -5 "$WORK/bench.log"
    row "(c) GEMM / attention TFLOP/s" "FAILED (rc $rc; partial figures in the log above)"; status=1
  else
    sed -n '/^kernel /,$p' "$WORK/bench.log"
    while read -r line; do row "(c) ${line% *}" "${line##* } TFLOP/s"; done < <(awk '
      /^matmul bf16/ && /8192x8192x8192/ {print "GEMM bf16 8192^3 " $NF}
      /^matmul fp32/ && /8192x8192x8192/ {print "GEMM fp32 8192^3 " $NF}
      /^attention fwd/ && (/T4096 / || /T32768 /) {print "attn fwd " $3 " " $4 " " $7 " " $NF}
      /^attention bwd/ && (/T4096 / || /T32768 /) {print "attn bwd " $3 " " $4 " " $7 " " $NF}' "$WORK/bench.log")
  fi
else
  row "(c) GEMM / attention TFLOP/s" "not run: $([[ -x $BIN/bench_gpu ]] && echo out of time || echo bench_gpu missing)"
fi

# One of the head-width study's 0.6B models trained 10 steps at 4K: its row gives the median
# tokens/s of steps 4 and later and the MFU against --peak-tflops, and a second row where steps 2-3
# go (train.profile_steps, which synchronizes the device at every region: those steps are left out
# of the rate). $1: the model's name (inputs/models/$1.ini), $2: seconds it may take, $3 (optional):
# a number of cuBLASLt algorithms to time per GEMM shape (HEADROOM_GEMM_SEARCH, kernels/cuda/gemm.cu),
# $4 (optional): train.cuda_graphs (default true: the micro-batches' passes replayed as CUDA graphs).
train_rate() {
  local search=${3:-1} graphs=${4:-true}
  local name=$1 limit=$2 dir=$WORK/$1.search$search.graphs$graphs
  local what="(c) $name training at 4K$( ((search > 1)) && echo ", GEMM search $search")$([[ $graphs == true ]] || echo ", CUDA graphs off")"
  log "(c) $name at 4K, 10 steps ($limit s at most)"
  HEADROOM_GEMM_SEARCH=$search "${LAUNCH[@]}" "$BIN/pretrain" --run-dir "$dir" --config "$root/inputs/models/$name.ini" \
    --train.seq_len 4096 --train.global_batch 8 --train.micro_batch 2 --train.steps 10 \
    --train.warmup_steps 2 --train.log_every 1 --data.train "$WORK/shards/train.h5" \
    --data.val "$WORK/shards/val.h5" --train.device cuda --train.profile_steps 2 --train.cuda_graphs "$graphs" \
    >"$dir.log" 2>&1 &
  local pid=$! deadline=$((SECONDS + limit))
  # The numbers are in metrics.jsonl once 10 steps are logged: stop before the checkpoint.
  while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do
    [[ -f $dir/metrics.jsonl ]] && (($(wc -l <"$dir/metrics.jsonl") >= 10)) && break
    sleep 2
  done
  kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  grep -h "headroom: attention" "$dir.log" | sort -u | head -4
  # Whether the passes ran as CUDA graphs (stderr says so once, or why not).
  local graphs_said
  graphs_said=$(grep -h "headroom: CUDA graphs" "$dir.log" | head -1 | sed 's/^headroom: //')
  local mflop res
  mflop=$(grep -o '[0-9.e+]* MFLOP/token' "$dir/log.txt" 2>/dev/null | head -1 | cut -d' ' -f1)
  res=$("$PY" - "$dir/metrics.jsonl" "${mflop:-0}" "$PEAK" <<'PYEOF'
import json, sys, statistics
try:
    rows = [json.loads(l) for l in open(sys.argv[1])]
except OSError:
    rows = []
tps = [r["tokens_per_s"] for r in rows if r["step"] >= 4]
if not tps:
    print("none"); sys.exit()
t = statistics.median(tps)
mflop, peak = float(sys.argv[2]), float(sys.argv[3])
print(f"{t:.0f} tok/s, MFU {100 * t * mflop * 1e6 / (peak * 1e12):.1f}% ({mflop:.0f} MFLOP/token, peak {peak:.0f} TFLOP/s, median of {len(tps)} steps)")
PYEOF
)
  if [[ $res == none ]]; then
    tail -5 "$dir.log"
    row "$what: tokens/s, MFU" "FAILED: no step logged (log above)"; status=1
  else
    row "$what: tokens/s, MFU" "$res${graphs_said:+; $graphs_said}"
  fi
  local prof
  prof=$("$PY" - "$dir/profile.json" <<'PYEOF'
import json, sys
try:
    p = json.load(open(sys.argv[1]))
except OSError:
    print("none (no profile.json)"); sys.exit()
print(f"{p['ms_per_step']:.1f} ms: " + "; ".join(f"{r['name']} {100 * r['share']:.0f}%" for r in p["regions"][:6]))
PYEOF
)
  ((search > 1)) || [[ $graphs != true ]] || row "(c) $name at 4K: where steps 2-3 go (top 6 regions)" "$prof"
}

# (f) keeps its F_LIMIT s when the two models still get 90 s between them.
f_reserve=$F_LIMIT
(($(left) - 10 - f_reserve < 90)) && f_reserve=0
for name in d128_0.6b d512_0.6b; do
  if ((gpu == 0)); then
    row "(c) $name training at 4K: tokens/s, MFU" "no GPU: skipped"
  elif ((has_device_option == 0)); then
    row "(c) $name training at 4K: tokens/s, MFU" "not run: pretrain has no --train.device option yet"
  elif (($(left) < 45)); then
    row "(c) $name training at 4K: tokens/s, MFU" "not run: out of time"
  else
    ensure_shards
    # The first model gets half of what is left (less (f)'s share), the second the rest.
    limit=$(($(left) - 10 - f_reserve))
    [[ $name == d128_0.6b ]] && limit=$((limit / 2))
    train_rate "$name" "$limit"
  fi
done
# ---- (f) one RULER sample at 128K on the first study's 0.6B model: wall time, memory vs plan -----------
ruler_128k() {
  local what="(f) RULER niah_single_1 at 128K, d128_0.6b" pid rc t total_gib plan_b peak_mib
  log "$what"
  if ! timeout 90 "${LAUNCH[@]}" "$BIN/pretrain" --run-dir "$WORK/f_init" --config "$root/inputs/models/d128_0.6b.ini" \
      --train.seq_len 4096 --train.global_batch 1 --train.micro_batch 1 --train.steps 1 --train.lr 0 \
      --train.min_lr 0 --train.warmup_steps 0 --data.train "$WORK/shards/train.h5" --data.val "$WORK/shards/val.h5" \
      --train.device cuda >"$WORK/f_init.log" 2>&1; then
    tail -5 "$WORK/f_init.log"
    row "$what" "FAILED: the one-step checkpoint (log above)"; status=1
    return
  fi
  local ev=(--init "$WORK/f_init" --eval.tasks niah_single_1 --eval.lengths 131072 --eval.samples 1
            --eval.max_new_tokens 8 --eval.allow_beyond_training true --eval.word_dir "$root/inputs/eval"
            --eval.essay "$root/validation/data/sample_corpus/essay/sample.jsonl" --train.device cuda)
  total_gib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits -i 0 | head -1 |
    awk '{ printf "%.2f", $1 / 1024 }')
  "$BIN/evaluate" --memory-plan "${ev[@]}" --device-memory "$total_gib" >"$WORK/plan_f.txt" 2>&1
  plan_b=$(sed -nE 's/^  GPU total .* = [0-9.]+ GiB \(([0-9]+) bytes\)$/\1/p' "$WORK/plan_f.txt")
  t=$SECONDS
  "${LAUNCH[@]}" "$BIN/evaluate" --run-dir "$WORK/f_eval" "${ev[@]}" >"$WORK/f_eval.log" 2>&1 &
  pid=$!
  watch_peak "$pid" "$(($(left) < F_LIMIT - 30 ? $(left) : F_LIMIT - 30))" "$WORK/f.peak"
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
    row "$what" "not finished in $((SECONDS - t)) s (no verdict): peak so far $(cat "$WORK/f.peak") MiB vs plan $((${plan_b:-0} / 1048576)) MiB"
    return
  fi
  wait "$pid"; rc=$?
  peak_mib=$(cat "$WORK/f.peak")
  if ((rc != 0)) || [[ -z $plan_b ]]; then
    tail -5 "$WORK/f_eval.log"
    row "$what" "FAILED (evaluate rc $rc; plan ${plan_b:-missing}; log above)"; status=1
  else
    row "$what" "$((SECONDS - t)) s (load, 131,072-token prefill, 8 tokens); peak $peak_mib MiB (nvidia-smi) vs plan $((plan_b / 1048576)) MiB with the reserve: measured/plan $(awk -v p="$peak_mib" -v b="$plan_b" 'BEGIN { printf "%.3f", p * 1048576 / b }')"
  fi
}
if ((gpu == 0)); then
  row "(f) RULER niah_single_1 at 128K, d128_0.6b" "no GPU: skipped"
elif ((has_device_option == 0)); then
  row "(f) RULER niah_single_1 at 128K, d128_0.6b" "not run: pretrain has no --train.device option yet"
elif (($(left) < F_LIMIT)); then
  row "(f) RULER niah_single_1 at 128K, d128_0.6b" "not run: out of time"
else
  ensure_shards
  ruler_128k
fi

# When time is left: the step without CUDA graphs, then the cuBLASLt search against the heuristic's
# first choice, each against the first d128_0.6b row.
if ((gpu == 1 && has_device_option == 1)) && (($(left) >= 90)); then
  train_rate d128_0.6b $((($(left) - 10) / 2)) 1 false
fi
if ((gpu == 1 && has_device_option == 1)) && (($(left) >= 45)); then
  train_rate d128_0.6b $(($(left) - 10)) 8
fi

# ---- the table ---------------------------------------------------------------------------------------
{
  echo "CUDA backend checks ($((SECONDS - T0)) s of $BUDGET; $(date -u +%FT%TZ); $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || echo 'no nvidia-smi'))"
  printf '%s\n' "${rows[@]}"
  echo
  echo "For the README (its \"On GPUs\" section, a table of this machine's figures, with the GPU's name and the date):"
  echo "  (a)'s worst ratio to tolerance, (s)'s verdicts, (b)'s loss differences, (c)'s GEMM and attention"
  echo "  TFLOP/s and the 0.6B models' tokens/s and MFU; rows that say 'skipped' or 'not run' go in as such."
} >"$WORK/table.txt"
echo
cat "$WORK/table.txt"
mkdir -p "$(dirname "$TABLE")" && cp "$WORK/table.txt" "$TABLE" && echo "(table written to $TABLE)"
exit $status
