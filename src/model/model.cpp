#include "model/model.h"

#include "parallel/comm.h"
#include "util/error.h"

#include <algorithm>

namespace headroom::model {

template <class T>
int find_param(const Model<T>& m, const std::string& name) {
  for (size_t i = 0; i < m.specs.size(); ++i)
    if (m.specs[i].name == name) return static_cast<int>(i);
  return -1;
}

namespace {

template <class T>
T* view(Model<T>& m, T* arena, const std::string& name) {
  const int i = find_param(m, name);
  return i < 0 || !arena ? nullptr : arena + m.offsets[static_cast<size_t>(i)];
}

template <class T>
LayerTensors<T> layer_views(Model<T>& m, T* arena, long i) {
  const std::string l = cat("layers.", i, ".");
  return {view(m, arena, l + "attn_norm.weight"),
          view(m, arena, l + "attn.wq"),
          view(m, arena, l + "attn.wk"),
          view(m, arena, l + "attn.wv"),
          view(m, arena, l + "attn.wo"),
          view(m, arena, l + "attn.q_norm.weight"),
          view(m, arena, l + "attn.k_norm.weight"),
          view(m, arena, l + "mlp_norm.weight"),
          view(m, arena, l + "mlp.w_gate"),
          view(m, arena, l + "mlp.w_up"),
          view(m, arena, l + "mlp.w_down")};
}

}  // namespace

template <class T>
Model<T> make_model(const config::ModelConfig& cfg, const kernels::BasicOps<T>& ops, TpContext tp, ModelUse use) {
  check_tp(cfg, tp.size);
  Model<T> m;
  m.cfg = cfg;
  m.local = local_config(cfg, tp.size);
  m.tp = tp;
  m.kv_rep = kv_replication(cfg, tp.size);
  m.ops = &ops;
  m.specs = param_specs(cfg);
  for (const auto& s : m.specs) {
    m.shards.push_back(make_shard(s, cfg, tp.rank, tp.size));
    m.offsets.push_back(m.n_params);
    m.n_params += m.shards.back().numel();
  }
  m.params = kernels::Buffer<T, kernels::BasicOps<T>>(ops, m.n_params);
  if (ops.weight_bytes != static_cast<int64_t>(sizeof(T)))
    m.stored = kernels::Buffer<std::byte, kernels::BasicOps<T>>(ops, m.n_params * ops.weight_bytes);
  if (use.gradients) m.grads = kernels::Buffer<T, kernels::BasicOps<T>>(ops, m.n_params);
  std::vector<T> host;
  for (size_t i = 0; i < m.specs.size() && use.random_weights; ++i) {
    host.resize(static_cast<size_t>(m.shards[i].numel()));
    init_shard(m.specs[i], m.shards[i], cfg.seed, host.data());
    ops.copy_from_host(m.params.get() + m.offsets[i], host.data(), host.size() * sizeof(T));
  }
  if (!use.random_weights) ops.fill(m.params.get(), T(0), m.n_params);
  if (use.gradients) zero_grads(m);
  for (long i = 0; i < cfg.n_layers; ++i) {
    m.w.push_back(layer_views(m, m.params.get(), i));
    m.g.push_back(layer_views(m, m.grads.get(), i));
  }
  m.embed = view(m, m.params.get(), "embed.weight");
  m.g_embed = view(m, m.grads.get(), "embed.weight");
  m.final_norm = view(m, m.params.get(), "final_norm.weight");
  m.g_final_norm = view(m, m.grads.get(), "final_norm.weight");
  m.lm_head = cfg.tie_embeddings ? m.embed : view(m, m.params.get(), "lm_head.weight");
  m.g_lm_head = cfg.tie_embeddings ? m.g_embed : view(m, m.grads.get(), "lm_head.weight");
  m.rope[0] = rope_frequencies(cfg, false);
  m.rope[1] = rope_frequencies(cfg, true);
  return m;
}

template <class T>
void refresh_stored_weights(Model<T>& m) {
  if (m.stored_current) return;
  if (m.stored.size() > 0) m.ops->weight_store(m.stored.get(), m.params.get(), m.n_params);
  m.stored_current = true;
}

template <class T>
const void* stored_weight(const Model<T>& m, const T* w) {
  if (!m.stored_current) fail("a product read the weights before refresh_stored_weights after they changed");
  if (m.stored.size() == 0) return w;
  return m.stored.get() + (w - m.params.get()) * m.ops->weight_bytes;
}

template <class T>
void ensure_rope(Model<T>& m, int64_t n_pos) {
  if (n_pos <= m.rope_pos) return;
  // Grow geometrically so decoding one token at a time does not rebuild the table each step.
  n_pos = std::max(n_pos, 2 * m.rope_pos);
  for (int kind = 0; kind < 2; ++kind) {
    if (m.rope[kind].rot_dims == 0) continue;
    std::vector<T> cos, sin;
    rope_fill(m.rope[kind], n_pos, cos, sin);
    m.rope_cos[kind] = kernels::Buffer<T, kernels::BasicOps<T>>(*m.ops, static_cast<int64_t>(cos.size()));
    m.rope_sin[kind] = kernels::Buffer<T, kernels::BasicOps<T>>(*m.ops, static_cast<int64_t>(sin.size()));
    m.ops->copy_from_host(m.rope_cos[kind].get(), cos.data(), cos.size() * sizeof(T));
    m.ops->copy_from_host(m.rope_sin[kind].get(), sin.data(), sin.size() * sizeof(T));
  }
  m.rope_pos = n_pos;
}

template <class T>
void sync_partial_grads(Model<T>& m, size_t first, size_t end) {
  if (m.tp.size == 1) return;
  end = std::min(end, m.specs.size());
  // Under sequence parallelism each rank's replicated weights (norms, embeddings, the LM head) saw
  // only its own rows of the residual stream: their gradients are summed over the group, on the
  // backend, in place.
  for (size_t i = first; i < end && m.tp.sequence_parallel; ++i)
    if (m.shards[i].axis == -1 && !m.shards[i].partial_grad)
      m.tp.comm->allreduce_sum(m.grads.get() + m.offsets[i], m.shards[i].numel());
  // Each rank's partial gradient sits in its own slot of a zeroed full-size buffer, so one
  // all-reduce sums exactly the ranks that share a slice.
  std::vector<T> full;
  for (size_t i = first; i < end; ++i) {
    const Shard& s = m.shards[i];
    if (!s.partial_grad) continue;
    const int64_t row = m.specs[i].shape.size() > 1 ? m.specs[i].shape[1] : 1;
    const int64_t first = s.axis == 0 ? s.offset * row : 0, n = s.numel();
    full.assign(static_cast<size_t>(m.specs[i].numel()), T(0));
    m.ops->copy_to_host(full.data() + first, m.grads.get() + m.offsets[i], static_cast<size_t>(n) * sizeof(T));
    m.tp.comm->allreduce_sum(full.data(), static_cast<int64_t>(full.size()));
    m.ops->copy_from_host(m.grads.get() + m.offsets[i], full.data() + first, static_cast<size_t>(n) * sizeof(T));
  }
}

template <class T>
void zero_grads(Model<T>& m) {
  m.ops->fill(m.grads.get(), T(0), m.n_params);
}

#define HEADROOM_MODEL_INSTANTIATE(T)                                                                            \
  template Model<T> make_model<T>(const config::ModelConfig&, const kernels::BasicOps<T>&, TpContext, ModelUse); \
  template void sync_partial_grads<T>(Model<T>&, size_t, size_t);                                                \
  template int find_param<T>(const Model<T>&, const std::string&);                                               \
  template void ensure_rope<T>(Model<T>&, int64_t);                                                              \
  template void zero_grads<T>(Model<T>&);                                                                        \
  template void refresh_stored_weights<T>(Model<T>&);                                                            \
  template const void* stored_weight<T>(const Model<T>&, const T*);
HEADROOM_MODEL_INSTANTIATE(float)
HEADROOM_MODEL_INSTANTIATE(double)
#undef HEADROOM_MODEL_INSTANTIATE

}  // namespace headroom::model
