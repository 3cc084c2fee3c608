#include "train/optimizer.h"

#include "parallel/comm.h"

#include <cmath>

namespace headroom::train {

bool decays(const model::ParamSpec& spec, bool decay_embeddings) {
  return spec.matrix && (decay_embeddings || !spec.embedding);
}

template <class T>
AdamW<T> make_adamw(const model::Model<T>& model, const AdamWConfig& cfg) {
  AdamW<T> o;
  o.cfg = cfg;
  o.m = kernels::Buffer<T, kernels::BasicOps<T>>(*model.ops, model.n_params);
  o.v = kernels::Buffer<T, kernels::BasicOps<T>>(*model.ops, model.n_params);
  model.ops->fill(o.m.get(), T(0), model.n_params);
  model.ops->fill(o.v.get(), T(0), model.n_params);
  for (const auto& s : model.specs) {
    o.decay.push_back(decays(s, cfg.decay_embeddings));
    o.frozen.push_back(model::matches_any(s.name, cfg.freeze));
  }
  return o;
}

template <class T>
double grad_norm(const model::Model<T>& model, const AdamW<T>& opt) {
  // Each logical element counted once over the TP group: a slice by its owner only.
  double sum = 0;
  for (size_t i = 0; i < model.specs.size(); ++i)
    if (!opt.frozen[i] && model.shards[i].owner)
      sum += model.ops->sum_squares(model.grads.get() + model.offsets[i], model.shards[i].numel());
  if (model.tp.comm) model.tp.comm->allreduce_sum(&sum, 1);
  return std::sqrt(sum);
}

template <class T>
std::string first_nonfinite_grad(const model::Model<T>& model) {
  for (size_t i = 0; i < model.specs.size(); ++i)
    if (model.ops->count_nonfinite(model.grads.get() + model.offsets[i], model.shards[i].numel()) > 0)
      return model.specs[i].name;
  return "";
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
    const int64_t off = model.offsets[i], n = model.shards[i].numel();
    T* g = model.grads.get() + off;
    if (clip != 1.0) model.ops->scale(g, static_cast<T>(clip), n);
    model.ops->adamw(model.params.get() + off, g, opt.m.get() + off, opt.v.get() + off, n,
                     static_cast<T>(lr), static_cast<T>(opt.cfg.beta1),
                     static_cast<T>(opt.cfg.beta2), static_cast<T>(opt.cfg.eps),
                     static_cast<T>(opt.decay[i] ? opt.cfg.weight_decay : 0.0), opt.step);
  }
}

#define HEADROOM_OPT_INSTANTIATE(T)                                                      \
  template AdamW<T> make_adamw<T>(const model::Model<T>&, const AdamWConfig&);          \
  template double grad_norm<T>(const model::Model<T>&, const AdamW<T>&);               \
  template std::string first_nonfinite_grad<T>(const model::Model<T>&);                \
  template void adamw_step<T>(model::Model<T>&, AdamW<T>&, double, double);
HEADROOM_OPT_INSTANTIATE(float)
HEADROOM_OPT_INSTANTIATE(double)
#undef HEADROOM_OPT_INSTANTIATE

}  // namespace headroom::train
