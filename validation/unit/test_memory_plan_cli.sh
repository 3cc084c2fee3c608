#!/usr/bin/env bash
# --memory-plan from the outside: one process, no GPU, no data, no checkpoint (a model file stands
# in for --init); exit 0 when the plan fits and 2 when not, with the figures and the keys. The
# figures of the studies' recipes on 8 × 80 GiB H100s per node (inputs/studies/*/README.md): a
# Llama-3-8B-shaped model at 64K and the first study's 0.6B models at 256K fit with the recipes'
# layout and recomputation and do not fit without it; evaluate's plans on one GPU. On the emulated
# device (its arena is its GPU memory) the training stage itself refuses with the GPU's figures
# before any allocation.
# usage: test_memory_plan_cli.sh BIN_DIR SOURCE_DIR
set -uo pipefail
BIN=$1 SRC=$2
WORK=$(mktemp -d -t headroom_memory_plan.XXXXXX); trap 'rm -rf "$WORK"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1 OMPI_MCA_btl_vader_single_copy_mechanism=none OMP_NUM_THREADS=1
failures=0 passed=0
# expect NAME STATUS 'REGEX|REGEX|...' COMMAND...: the exit status, every extended regex in the output.
expect() {
  local name=$1 want=$2 patterns=$3; shift 3
  local log="$WORK/${name//[^a-zA-Z0-9]/_}.log" ok=1 p
  timeout 60 "$@" >"$log" 2>&1; local rc=$?
  [[ $rc -eq $want ]] || { echo "  exit status $rc, wanted $want"; ok=0; }
  IFS='|' read -ra list <<<"$patterns"
  for p in "${list[@]}"; do grep -qE -- "$p" "$log" || { echo "  no /$p/ in the output"; ok=0; }; done
  if ((ok)); then passed=$((passed + 1)); else echo "FAIL: $name"; cat "$log"; failures=$((failures + 1)); fi
}
M=$SRC/inputs/models
gpu_node=(--world-size 8 --device-memory 79.1 --host-memory 1000 --train.device cuda)
gpu_fits='GPU: fits, [0-9.]+ GiB of 79\.1 GiB \(--device-memory 79\.1\), [0-9.]+ GiB to spare'
gpu_short='does not fit: the memory plan of extend does not fit in GPU memory: needed [0-9.]+ GiB \([0-9]+ bytes\) per GPU|GPU memory 79\.1 GiB \(84932978278 bytes, --device-memory 79\.1\)|reserved per GPU'
tiny=(--model.vocab_size 259 --model.d_model 32 --model.n_layers 2 --model.d_ff 64 --model.n_heads 4
      --model.n_kv_heads 2 --model.head_dim_qk 8 --model.head_dim_v 8 --train.seq_len 32 --train.global_batch 2)

# Every option in --help, with the reserve's figure.
expect "help names the options" 0 '--memory-plan|--world-size|--device-memory|--host-memory|--ranks-per-node|less a reserve: 3\.0 GiB|Sizing a long-context job' \
  "$BIN/pretrain" --help

# A tiny CPU plan fits; with a tiny node it does not, with the host figures and the keys.
expect "tiny fits" 0 'pretrain --memory-plan: 1 rank\(s\) as tp=1 cp=1 dp=1, train.device = cpu|host total|host: fits' \
  "$BIN/pretrain" --memory-plan "${tiny[@]}" --train.device cpu
expect "tiny on a tiny node" 2 'does not fit: the memory plan of pretrain does not fit: needed [0-9.]+ [KM]iB \([0-9]+ bytes\) per rank|available 1\.0 MiB \(1048576 bytes, --host-memory|train\.seq_len=32' \
  "$BIN/pretrain" --memory-plan "${tiny[@]}" --train.device cpu --host-memory 0.0009765625
# --world-size resolves the grid: dp = the rest, and a world tp × cp does not divide is refused by key.
expect "world size resolves dp" 0 '4 rank\(s\) as tp=2 cp=1 dp=2' \
  "$BIN/pretrain" --memory-plan "${tiny[@]}" --train.device cpu --world-size 4 --parallel.tp 2
expect "world size that does not factor" 2 'parallel\.tp = 2 × parallel\.cp = 2 × parallel\.dp = 1 = 4 ranks, but the job has 6' \
  "$BIN/pretrain" --memory-plan "${tiny[@]}" --world-size 6 --parallel.tp 2 --parallel.cp 2 --parallel.dp 1

# The second study's 64K extension (Llama-3-8B shape, vocabulary 128256) on 8 × 80 GiB.
llama=(--config "$M/llama3_8b.ini" --config "$SRC/inputs/studies/arch_gpu/extend.ini" --model.vocab_size 128256 "${gpu_node[@]}")
expect "llama3 8B 64K: the recipe fits" 0 "8 rank\(s\) as tp=8 cp=1 dp=1|train\.recompute=full|parallel\.sequence_parallel=true|$gpu_fits" \
  "$BIN/extend" --memory-plan "${llama[@]}"
expect "llama3 8B 64K: pretrain's plan is extend's" 0 "$gpu_fits" "$BIN/pretrain" --memory-plan "${llama[@]}"
expect "llama3 8B 64K: no recompute does not fit" 2 "$gpu_short|train\.recompute=none" \
  "$BIN/extend" --memory-plan "${llama[@]}" --train.recompute none
expect "llama3 8B 64K: selective does not fit" 2 "$gpu_short|train\.recompute=selective" \
  "$BIN/extend" --memory-plan "${llama[@]}" --train.recompute selective
# The first study's 256K continued pretraining (0.6B d512, vocabulary 32768) on 8 × 80 GiB.
heads=(--config "$M/d512_0.6b.ini" --config "$SRC/inputs/studies/heads_gpu/extend.ini" --model.vocab_size 32768 "${gpu_node[@]}")
expect "d512 0.6B 256K: the recipe fits" 0 "8 rank\(s\) as tp=2 cp=4 dp=1|train\.seq_len=262144|$gpu_fits" \
  "$BIN/extend" --memory-plan "${heads[@]}"
expect "d512 0.6B 256K: no recompute does not fit" 2 "$gpu_short|train\.recompute=none" \
  "$BIN/extend" --memory-plan "${heads[@]}" --train.recompute none
expect "sft plans without --init" 0 "$gpu_fits" "$BIN/sft" --memory-plan "${heads[@]}"

# evaluate on one 80 GiB GPU, from a model configuration alone: the first study's 0.6B models at
# 256K (sliding-window layers cache their window only, no gradients) and an OLMo-3-7B-shaped model
# at 32K; the 0.6B model at 256K on a 16 GiB GPU is refused with the cache's keys.
one_gpu=(--world-size 1 --device-memory 79.1 --host-memory 1000 --train.device cuda)
for m in d128_0.6b d512_0.6b; do
  expect "evaluate $m 256K fits one GPU" 0 "evaluate --memory-plan: 1 rank\(s\), each a whole model and one sequence of 262144 tokens, train.device = cuda|GPU +KV cache \(bf16\) +\[eval\.lengths=262144, eval\.prefill_chunk=512, .*model\.window=512|$gpu_fits" \
    "$BIN/evaluate" --memory-plan --config "$M/$m.ini" --model.vocab_size 32768 --eval.lengths 262144 "${one_gpu[@]}"
done
expect "evaluate olmo3 7B 32K fits one GPU" 0 "one sequence of 32768 tokens|model\.window=4096|$gpu_fits" \
  "$BIN/evaluate" --memory-plan --config "$M/olmo3_7b.ini" --model.vocab_size 128256 --train.seq_len 32768 --eval.lengths 32K "${one_gpu[@]}"
# The first study's 3B models at 256K: one GPU holds the bf16 cache; the fp32 table's cache
# (HEADROOM_CUDA_PRECISION=fp32) is too large for it, and eval.tp 2 splits model and cache over two.
expect "evaluate d512 3B 256K fits one GPU" 0 "KV cache \(bf16\) +\[|eval\.tp=1|$gpu_fits" \
  "$BIN/evaluate" --memory-plan --config "$M/d512_3b.ini" --model.vocab_size 32768 --eval.lengths 262144 "${one_gpu[@]}"
expect "evaluate d512 3B 256K in fp32 does not fit one GPU" 2 "does not fit in GPU memory|KV cache +\[|eval\.tp=1" \
  env HEADROOM_CUDA_PRECISION=fp32 "$BIN/evaluate" --memory-plan --config "$M/d512_3b.ini" --model.vocab_size 32768 \
  --eval.lengths 262144 "${one_gpu[@]}"
expect "evaluate d512 3B 256K in fp32 fits two GPUs with eval.tp 2" 0 "1/2 of a model \(eval\.tp = 2\)|eval\.tp=2|$gpu_fits" \
  env HEADROOM_CUDA_PRECISION=fp32 "$BIN/evaluate" --memory-plan --config "$M/d512_3b.ini" --model.vocab_size 32768 --eval.lengths 262144 \
  --eval.tp 2 --world-size 2 --device-memory 79.1 --host-memory 1000 --train.device cuda
expect "evaluate d128 0.6B 256K on 16 GiB" 2 "does not fit: the memory plan of evaluate does not fit in GPU memory|KV cache|eval\.lengths=262144" \
  "$BIN/evaluate" --memory-plan --config "$M/d128_0.6b.ini" --model.vocab_size 32768 --eval.lengths 262144 \
  --world-size 1 --device-memory 16 --train.device cuda
expect "evaluate plans without a vocabulary are refused by key" 2 "model\.vocab_size = 0" \
  "$BIN/evaluate" --memory-plan --config "$M/d128_0.6b.ini" --eval.lengths 4K "${one_gpu[@]}"

# The emulated device: its arena is its GPU memory. --memory-plan reads it, and the stage itself
# refuses before allocating, on the GPU's figures (the host's plan fits).
EMU=$BIN/emulated
if [[ -x $EMU/pretrain ]]; then
  big=("${tiny[@]}" --model.n_layers 400000 --train.device cuda)
  emu_short='does not fit in GPU memory: needed [0-9.]+ GiB \([0-9]+ bytes\) per GPU|GPU memory [0-9.]+ GiB \([0-9]+ bytes, the emulated device.s arena|parameters [0-9.]+ GiB|model\.n_layers=400000'
  expect "emulated: --memory-plan reads the arena" 2 "$emu_short" "$EMU/pretrain" --memory-plan "${big[@]}"
  "$BIN/prepare" --input "$SRC/validation/data/sample_corpus/train" --output "$WORK/shards" --val-fraction 0.1 \
    >/dev/null || { echo "prepare failed"; exit 1; }
  expect "emulated: the stage refuses on the GPU's figures" 2 "$emu_short" \
    mpirun -np 1 "$EMU/pretrain" --run-dir "$WORK/emu" "${big[@]}" --data.train "$WORK/shards/train.h5" \
    --data.val "$WORK/shards/val.h5" --train.steps 1
  [[ ! -e $WORK/emu ]] && passed=$((passed + 1)) || { echo "FAIL: the refused stage wrote $WORK/emu"; failures=$((failures + 1)); }
else
  echo "skipped the emulated-device checks: no $EMU/pretrain (configure with -DHEADROOM_EMULATED_DEVICE=ON)"
fi

echo "test_memory_plan_cli: $passed passed, $failures failed"
((failures == 0))
