// What a stage will allocate on one rank, computed from the configuration before anything is
// allocated: parameters, gradients, optimizer moments, activations, logits, KV cache, RoPE tables
// and the host buffers around them, each with the config keys that drive it. The arithmetic
// mirrors the allocation code (model/params.cpp, model/activations.cpp, model/decode.cpp,
// train/optimizer.cpp, train/trainer.cpp, eval/decoder.cpp) and saturates at kOverflow instead of
// wrapping, so an absurd key is refused with figures rather than ending in std::bad_alloc.
#pragma once

#include "config/config.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace headroom::app {

// A size whose product does not fit in int64 (bytes or elements).
constexpr int64_t kOverflow = std::numeric_limits<int64_t>::max();

struct MemoryPart {
  std::string name;     // "activations"
  int64_t bytes = 0;    // kOverflow when the size overflows int64
  bool device = false;  // in the backend's memory (the GPU's with train.device = cuda), else host
  std::string keys;     // the config keys that drive it, with values: "train.seq_len=512, ..."
};

struct MemoryPlan {
  std::string stage;              // "pretrain"
  std::vector<MemoryPart> parts;  // per rank
  bool device_elsewhere = false;  // train.device = cuda: device parts are on the GPU, not in host memory
  std::string advice;             // what else than lowering the keys would help
};

// The process layout a training plan is for: the degrees of the tp × cp × dp grid (the real one,
// or --world-size's under --memory-plan) and whether the tp ranks split the residual rows.
struct TrainingLayout {
  int tp = 1, cp = 1, dp = 1;
  bool sequence_parallel = false;  // parallel.sequence_parallel; counts only with tp > 1
};

// pretrain / extend / sft: one rank of the grid. ZeRO-1 (cfg.parallel.zero1) splits the moments
// over the cp × dp ranks that hold the same weights; the activations are model::activation_floats
// of this layout and train.recompute, the count make_activations allocates. cfg.model.vocab_size
// must be resolved; an invalid tp split or token layout is refused by name.
MemoryPlan training_plan(const std::string& stage, const config::Config& cfg, const TrainingLayout& layout);
// What evaluate runs through the model: the longest context in tokens (a generated sample's
// prompt and answer fit in its length) and the prefill block (eval.prefill_chunk).
struct EvalShape {
  int64_t max_length = 0;
  int64_t prefill_chunk = 0;
  // Who runs it and the keys that set the two figures (analyze runs the same prefill).
  std::string stage = "evaluate", length_key = "eval.lengths", chunk_key = "eval.prefill_chunk";
  int tp = 1;  // eval.tp: the model and its KV cache split over tp ranks
  // Bytes per cached key or value element: the table's cache precision (kernels::cuda_kv_bytes on a
  // GPU, 2 for bf16); 4 on the CPU and for analyze's diagnostics, which read the keys in fp32.
  int kv_bytes = 4;
};

// evaluate: one sequence at a time through a KV cache, one model replica per group of eval.tp ranks,
// parameters only (no gradients); sliding-window layers cache their window
// (model::KvWindows::kWindowOnly).
MemoryPlan evaluation_plan(const config::ModelConfig& m, bool cuda, const EvalShape& e);

// Adds the program itself to the host parts: its code, libraries and runtimes (MPI, OpenMP, the
// BLAS) as resident when the plan is made (`resident`: VmRSS, util/peak_memory.h; < 0 adds
// nothing). About 180 MiB for a CPU rank here, which a small job's plan would miss by more than
// 10%; a GPU rank's CUDA context adds host memory later that this does not see.
void count_program(MemoryPlan& plan, int64_t resident);

// Parameters one tensor-parallel rank holds (model::make_model's n_params), saturating.
int64_t params_per_rank(const config::ModelConfig& m, int tp);
// Of those, the ones its GEMMs read (model::read_by_gemms): all but the norms and an untied input
// embedding.
int64_t gemm_params_per_rank(const config::ModelConfig& m, int tp);

// What the CUDA backend holds on each GPU besides the plan's parts, whatever the model: the CUDA
// context with the loaded kernel modules (ours, cuBLASLt's, cuDNN's: about 0.6 GiB on an H100 with
// lazy loading), cuBLASLt's 32 MiB workspace (kernels/cuda/gemm.cu), cuDNN's handle and cached
// graphs, and NCCL's buffers for the trainer's three communicators (tp, cp, replicas; NCCL_BUFFSIZE
// 4 MiB per channel and peer, NVLS buffers on NVSwitch systems). The shape-dependent scratch
// workspace (kernels/cuda/runtime.cu) is a part of the plan of its own.
constexpr int64_t kDeviceReserve = int64_t{3} << 30;
constexpr const char* kDeviceReserveText =
    "3.0 GiB reserved per GPU for the CUDA context and kernel modules, cuBLASLt's workspace, cuDNN's "
    "handle and graphs and NCCL's buffers";

// Sum of the parts that live in host memory (all of them unless device_elsewhere), saturating.
int64_t host_bytes(const MemoryPlan& plan);
// Sum of the parts on the GPU (0 unless device_elsewhere), the reserve not included, saturating.
int64_t device_bytes(const MemoryPlan& plan);
bool overflows(const MemoryPlan& plan);

// "1.5 GiB"; "more than 8 EiB" for kOverflow.
std::string format_bytes(int64_t bytes);

// One line for the log: "memory plan per rank: 1.2 GiB (parameters 1.0 MiB, ...)".
std::string plan_line(const MemoryPlan& plan);

// The refusal: bytes needed (total and by part, per rank and for the ranks of this node), bytes
// available and where that figure comes from, and the keys that drive the largest parts.
std::string plan_refusal(const MemoryPlan& plan, int ranks_on_node, int64_t available,
                         const std::string& available_source);

// The same for one GPU: its parts and the reserve against the GPU's memory (`gpu_memory`, < 0:
// unknown) and where that figure comes from.
std::string device_refusal(const MemoryPlan& plan, int64_t gpu_memory, const std::string& gpu_source);

// Whether the GPU parts and the reserve fit in `gpu_memory` (an unknown figure, < 0, fits).
bool fits_device(const MemoryPlan& plan, int64_t gpu_memory);

// The whole plan, one part a line with its bytes, where it lives and the keys that drive it, then
// the totals (--memory-plan).
std::string plan_table(const MemoryPlan& plan);

}  // namespace headroom::app
