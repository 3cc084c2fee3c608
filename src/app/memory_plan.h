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
  bool device_elsewhere = false;  // train.device = cuda: device parts are not in host memory
  std::string advice;             // what else than lowering the keys would help
};

// pretrain / extend / sft on a tp × dp grid (ZeRO-1 moments split over dp when cfg.parallel.zero1).
// cfg.model.vocab_size must be resolved; the tp split must be valid (model::check_tp).
MemoryPlan training_plan(const std::string& stage, const config::Config& cfg, int tp, int dp);

// What evaluate runs through the model: the longest context in tokens (a generated sample's
// prompt and answer fit in its length) and the prefill block (eval.prefill_chunk).
struct EvalShape {
  int64_t max_length = 0;
  int64_t prefill_chunk = 0;
  // Who runs it and the keys that set the two figures (analyze runs the same prefill).
  std::string stage = "evaluate", length_key = "eval.lengths", chunk_key = "eval.prefill_chunk";
};

// evaluate (and analyze's diagnostics): one sequence at a time through a KV cache, one model
// replica per rank.
MemoryPlan evaluation_plan(const config::ModelConfig& m, bool cuda, const EvalShape& e);

// Parameters one tensor-parallel rank holds (model::make_model's n_params), saturating.
int64_t params_per_rank(const config::ModelConfig& m, int tp);

// Floats of make_activations' arena for B sequences of T tokens of a per-rank model config, and
// the LM-head logits chunk inside it, saturating.
struct ActivationFloats {
  int64_t arena = 0;   // everything, the logits chunk included
  int64_t logits = 0;  // the [chunk_rows, vocab] block
};
ActivationFloats activation_floats(const config::ModelConfig& local, int64_t B, int64_t T);

// Sum of the parts that live in host memory (all of them unless device_elsewhere), saturating.
int64_t host_bytes(const MemoryPlan& plan);
bool overflows(const MemoryPlan& plan);

// "1.5 GiB"; "more than 8 EiB" for kOverflow.
std::string format_bytes(int64_t bytes);

// One line for the log: "memory plan per rank: 1.2 GiB (parameters 1.0 MiB, ...)".
std::string plan_line(const MemoryPlan& plan);

// The refusal: bytes needed (total and by part, per rank and for the ranks of this node), bytes
// available and where that figure comes from, and the keys that drive the largest parts.
std::string plan_refusal(const MemoryPlan& plan, int ranks_on_node, int64_t available,
                         const std::string& available_source);

}  // namespace headroom::app
