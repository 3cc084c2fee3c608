#include "train/optimizer.h"

#include "parallel/comm.h"

#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

namespace headroom::train {

bool decays(const model::ParamSpec& spec, bool decay_embeddings) {
  return spec.matrix && (decay_embeddings || !spec.embedding);
}

template <class T>
AdamW<T> make_adamw(const model::Model<T>& model, const AdamWConfig& cfg, parallel::Comm* zero_dp) {
  AdamW<T> o;
  o.cfg = cfg;
  o.hi = model.n_params;
  if (zero_dp && zero_dp->size() > 1) {
    o.zero = zero_dp;
    const int64_t n = model.n_params, parts = zero_dp->size();
    for (int64_t r = 0; r < parts; ++r) {
      o.displs.push_back(n * r / parts);
      o.counts.push_back(n * (r + 1) / parts - n * r / parts);
    }
    o.lo = o.displs[static_cast<size_t>(zero_dp->rank())];
    o.hi = o.lo + o.counts[static_cast<size_t>(zero_dp->rank())];
  }
  o.m = kernels::Buffer<T, kernels::BasicOps<T>>(*model.ops, o.hi - o.lo);
  o.v = kernels::Buffer<T, kernels::BasicOps<T>>(*model.ops, o.hi - o.lo);
  model.ops->fill(o.m.get(), T(0), o.hi - o.lo);
  model.ops->fill(o.v.get(), T(0), o.hi - o.lo);
  for (const auto& s : model.specs) {
    o.decay.push_back(decays(s, cfg.decay_embeddings));
    o.frozen.push_back(model::matches_any(s.name, cfg.freeze));
  }
  return o;
}

template <class T>
double grad_norm(const model::Model<T>& model, const AdamW<T>& opt) {
  // Each logical element counted once over the TP group: a slice by its owner only. Slices are
  // contiguous in the arena, so consecutive counted ones are summed as one range: one reduction
  // (one device synchronisation on a GPU) per run of counted tensors instead of one per tensor.
  double sum = 0;
  int64_t begin = 0, end = 0;
  auto flush = [&] {
    if (end > begin) sum += model.ops->sum_squares(model.grads.get() + begin, end - begin);
  };
  // Scattered gradients are summed over the DP group only in this rank's range: count that part.
  const int64_t lo = opt.scattered_grads ? opt.lo : 0, hi = opt.scattered_grads ? opt.hi : model.n_params;
  for (size_t i = 0; i < model.specs.size(); ++i) {
    if (opt.frozen[i] || !model.shards[i].owner) continue;
    const int64_t a = std::max(model.offsets[i], lo), b = std::min(model.offsets[i] + model.shards[i].numel(), hi);
    if (a >= b) continue;
    if (a != end) flush(), begin = a;
    end = b;
  }
  flush();
  if (opt.scattered_grads) opt.zero->allreduce_sum(&sum, 1);
  if (model.tp.comm) model.tp.comm->allreduce_sum(&sum, 1);
  return std::sqrt(sum);
}

template <class T>
std::string first_nonfinite_grad(const model::Model<T>& model) {
  // One pass over the whole gradient arena; the tensor is looked up only when something is wrong.
  if (model.ops->count_nonfinite(model.grads.get(), model.n_params) == 0) return "";
  for (size_t i = 0; i < model.specs.size(); ++i)
    if (model.ops->count_nonfinite(model.grads.get() + model.offsets[i], model.shards[i].numel()) > 0)
      return model.specs[i].name;
  return "";
}

template <class T>
void gather_params(model::Model<T>& model, AdamW<T>& opt) {
  if constexpr (std::is_same_v<T, float>)
    opt.zero->allgather(model.params.get(), opt.counts.data(), opt.displs.data());
  else
    fail("ZeRO-1 is implemented for fp32 training only");
}

double clip_scale(double norm, double max_norm) {
  if (max_norm <= 0 || !(norm > max_norm)) return 1.0;
  return max_norm / norm;
}

template <class T>
void adamw_step(model::Model<T>& model, AdamW<T>& opt, double lr, double clip) {
  ++opt.step;
  for (size_t i = 0; i < model.specs.size(); ++i) {
    if (opt.frozen[i]) continue;
    // The part of this tensor inside the rank's range (all of it without ZeRO).
    const int64_t a = std::max(model.offsets[i], opt.lo);
    const int64_t b = std::min(model.offsets[i] + model.shards[i].numel(), opt.hi);
    if (a >= b) continue;
    T* g = model.grads.get() + a;
    if (clip != 1.0) model.ops->scale(g, static_cast<T>(clip), b - a);
    model.ops->adamw(model.params.get() + a, g, opt.m.get() + (a - opt.lo), opt.v.get() + (a - opt.lo), b - a,
                     static_cast<T>(lr), static_cast<T>(opt.cfg.beta1), static_cast<T>(opt.cfg.beta2),
                     static_cast<T>(opt.cfg.eps), static_cast<T>(opt.decay[i] ? opt.cfg.weight_decay : 0.0), opt.step);
  }
  if (opt.zero) gather_params(model, opt);
  model::weights_changed(model);
}

#define HEADROOM_OPT_INSTANTIATE(T)                                                             \
  template AdamW<T> make_adamw<T>(const model::Model<T>&, const AdamWConfig&, parallel::Comm*); \
  template double grad_norm<T>(const model::Model<T>&, const AdamW<T>&);                        \
  template std::string first_nonfinite_grad<T>(const model::Model<T>&);                         \
  template void adamw_step<T>(model::Model<T>&, AdamW<T>&, double, double);
HEADROOM_OPT_INSTANTIATE(float)
HEADROOM_OPT_INSTANTIATE(double)
#undef HEADROOM_OPT_INSTANTIATE

io::OptimizerMoments checkpoint_moments(AdamW<float>& opt) {
  return {opt.m.get(), opt.v.get(), opt.lo, opt.hi, opt.zero, static_cast<int64_t>(opt.step)};
}

}  // namespace headroom::train
