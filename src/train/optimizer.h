// AdamW over a model's parameter arena, with per-parameter decay and freezing decided once from
// the registry, global-norm gradient clipping, and the non-finite check that names the first
// parameter affected.
#pragma once

#include "buffer.h"
#include "io/checkpoint.h"
#include "model/model.h"
#include "parallel/comm.h"

#include <string>
#include <vector>

namespace headroom::train {

struct AdamWConfig {
  double beta1 = 0.9, beta2 = 0.95, eps = 1e-8, weight_decay = 0.1;
  bool decay_embeddings = false;  // embed.weight / lm_head.weight
  std::string freeze;             // comma-separated glob patterns over parameter names
};

// ZeRO-1: with a data-parallel communicator, each DP rank keeps the moments of one contiguous
// range [lo, hi) of the parameter arena, updates only those parameters, then all-gathers them.
template <class T>
struct AdamW {
  using Ops = kernels::BasicOps<T>;
  AdamWConfig cfg;
  int64_t lo = 0, hi = 0;               // this rank's range of the arena (everything without ZeRO)
  parallel::Comm* zero = nullptr;       // the DP group when the state is sharded
  bool scattered_grads = false;         // ZeRO-2: only [lo, hi) of the gradients is summed over that group
  std::vector<int64_t> counts, displs;  // every DP rank's range, for the all-gather
  kernels::Buffer<T, Ops> m, v;         // moments of [lo, hi): m[i - lo] belongs to params[i]
  std::vector<bool> decay, frozen;      // per parameter
  long step = 0;                        // optimizer steps taken
};

template <class T>
AdamW<T> make_adamw(const model::Model<T>& model, const AdamWConfig& cfg, parallel::Comm* zero_dp = nullptr);

// Whether a parameter decays by default: 2-D weights, not norms; embeddings only when asked.
bool decays(const model::ParamSpec& spec, bool decay_embeddings);

// L2 norm of the gradients of the trainable (non-frozen) parameters over the whole logical model
// (summed over the TP group; with scattered gradients, each rank's range summed over the DP group),
// accumulated in double; one reduction per run of contiguous counted tensors.
template <class T>
double grad_norm(const model::Model<T>& model, const AdamW<T>& opt);

// Name of the first parameter whose gradient holds NaN/Inf on this rank, or "" when all are finite
// (one pass over the arena when all are).
template <class T>
std::string first_nonfinite_grad(const model::Model<T>& model);

// One AdamW step at learning rate lr; gradients are first scaled by clip_scale (1 = no clipping).
template <class T>
void adamw_step(model::Model<T>& model, AdamW<T>& opt, double lr, double clip_scale);

// The optimizer's state as a checkpoint holds it: its moment arenas, their ZeRO-1 range and group,
// and its step count (io/ knows no optimizer).
io::OptimizerMoments checkpoint_moments(AdamW<float>& opt);

// The clipping factor for a global norm: min(1, max_norm / norm); max_norm ≤ 0 disables clipping.
double clip_scale(double norm, double max_norm);

}  // namespace headroom::train
