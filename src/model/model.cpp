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

bool read_by_gemms(const ParamSpec& spec, const config::ModelConfig& cfg) {
  return spec.shape.size() == 2 && (spec.name != "embed.weight" || cfg.tie_embeddings);
}

namespace {

// The tensor `name` in an arena laid out by `offs` (-1: not there), `scale` arena elements a
// parameter.
template <class P>
P* view(const std::vector<ParamSpec>& specs, const std::vector<int64_t>& offs, P* arena, int64_t scale,
        const std::string& name) {
  for (size_t i = 0; i < specs.size(); ++i)
    if (specs[i].name == name) return !arena || offs[i] < 0 ? nullptr : arena + offs[i] * scale;
  return nullptr;
}

template <class P>
LayerTensors<P> layer_views(const std::vector<ParamSpec>& specs, const std::vector<int64_t>& offs, P* arena,
                            int64_t scale, long i) {
  const std::string l = cat("layers.", i, ".");
  auto v = [&](const char* name) { return view(specs, offs, arena, scale, l + name); };
  return {v("attn_norm.weight"),
          v("attn.wq"),
          v("attn.wk"),
          v("attn.wv"),
          v("attn.wo"),
          v("attn.q_norm.weight"),
          v("attn.k_norm.weight"),
          v("mlp_norm.weight"),
          v("mlp.w_gate"),
          v("mlp.w_up"),
          v("mlp.w_down")};
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
  const bool copy = ops.weight_bytes != static_cast<int64_t>(sizeof(T));
  m.master = use.master_weights || !copy;
  if (!m.master && use.gradients) fail("a model without master weights has no gradients to apply to them");
  int64_t n_held = 0, n_stored = 0;
  for (const auto& s : m.specs) {
    m.shards.push_back(make_shard(s, cfg, tp.rank, tp.size));
    const int64_t n = m.shards.back().numel();
    const bool gemm = copy && read_by_gemms(s, cfg);
    const bool held = m.master || !read_by_gemms(s, cfg) || s.name == "embed.weight";  // looked up in T
    m.offsets.push_back(m.n_params);
    m.param_offsets.push_back(held ? n_held : -1);
    m.stored_offsets.push_back(gemm ? n_stored : -1);
    m.n_params += n;
    n_held += held ? n : 0;
    n_stored += gemm ? n : 0;
  }
  m.params = kernels::Buffer<T, kernels::BasicOps<T>>(ops, n_held);
  if (copy) m.stored = kernels::Buffer<std::byte, kernels::BasicOps<T>>(ops, n_stored * ops.weight_bytes);
  if (use.gradients) m.grads = kernels::Buffer<T, kernels::BasicOps<T>>(ops, m.n_params);
  std::vector<T> host;
  for (size_t i = 0; i < m.specs.size() && use.random_weights; ++i) {
    host.resize(static_cast<size_t>(m.shards[i].numel()));
    init_shard(m.specs[i], m.shards[i], cfg.seed, host.data());
    write_weights(m, i, host.data(), 0, m.shards[i].numel());
  }
  if (!use.random_weights) ops.fill(m.params.get(), T(0), n_held);
  if (use.gradients) zero_grads(m);
  // The GEMMs' views: into stored, or into params as bytes where the table reads T.
  const int64_t wb = copy ? ops.weight_bytes : static_cast<int64_t>(sizeof(T));
  const std::byte* gemm_arena = copy ? m.stored.get() : reinterpret_cast<const std::byte*>(m.params.get());
  std::vector<int64_t> gemm_offs = m.stored_offsets;
  for (size_t i = 0; i < m.specs.size() && !copy; ++i)
    gemm_offs[i] = read_by_gemms(m.specs[i], cfg) ? m.param_offsets[i] : -1;
  auto p = [&](const std::string& name) { return view(m.specs, m.param_offsets, m.params.get(), 1, name); };
  auto g = [&](const std::string& name) { return view(m.specs, m.offsets, m.grads.get(), 1, name); };
  for (long i = 0; i < cfg.n_layers; ++i) {
    m.w.push_back(layer_views(m.specs, m.param_offsets, m.params.get(), 1, i));
    m.g.push_back(layer_views(m.specs, m.offsets, m.grads.get(), 1, i));
    m.sw.push_back(layer_views(m.specs, gemm_offs, gemm_arena, wb, i));
  }
  // Q, K and V run as one GEMM over [wq; wk; wv], the MLP's gate and up as one over [w_gate; w_up]
  // (layer.cpp): adjacent in every arena, as param_specs lists them.
  const int64_t q = config::q_width(m.local) * cfg.d_model, k = config::k_width(m.local) * cfg.d_model,
                gate = m.local.d_ff * cfg.d_model;
  const auto follows = [&](const std::byte* next, const std::byte* first, T* g_next, T* g_first, int64_t n) {
    return next == first + n * wb && (!g_first || g_next == g_first + n);
  };
  for (long i = 0; i < cfg.n_layers; ++i) {
    const auto &s = m.sw[static_cast<size_t>(i)], &gr = m.g[static_cast<size_t>(i)];
    if (!follows(s.wk, s.wq, gr.wk, gr.wq, q) || !follows(s.wv, s.wk, gr.wv, gr.wk, k))
      fail("make_model: layer ", i, "'s wq, wk and wv are not adjacent in the parameter layout");
    if (!follows(s.w_up, s.w_gate, gr.w_up, gr.w_gate, gate))
      fail("make_model: layer ", i, "'s w_up does not follow its w_gate in the parameter layout");
  }
  m.embed = p("embed.weight");
  m.g_embed = g("embed.weight");
  m.final_norm = p("final_norm.weight");
  m.g_final_norm = g("final_norm.weight");
  const std::string head = cfg.tie_embeddings ? "embed.weight" : "lm_head.weight";
  m.lm_head = p(head);
  m.g_lm_head = g(head);
  m.s_lm_head = view(m.specs, gemm_offs, gemm_arena, wb, head);
  m.rope[0] = rope_frequencies(cfg, false);
  m.rope[1] = rope_frequencies(cfg, true);
  return m;
}

template <class T>
void write_weights(Model<T>& m, size_t i, const T* host, int64_t first, int64_t n) {
  if (n <= 0) return;
  if (m.param_offsets[i] >= 0)
    m.ops->copy_from_host(m.params.get() + m.param_offsets[i] + first, host, static_cast<size_t>(n) * sizeof(T));
  if (m.master || m.stored_offsets[i] < 0) return;
  // No master copy to round from: through a bounded buffer on the backend, rounded as
  // refresh_stored_weights rounds.
  kernels::Buffer<T, kernels::BasicOps<T>> stage(*m.ops, std::min(n, kWeightStageElems));
  for (int64_t a = 0; a < n; a += kWeightStageElems) {
    const int64_t c = std::min(kWeightStageElems, n - a);
    m.ops->copy_from_host(stage.get(), host + a, static_cast<size_t>(c) * sizeof(T));
    m.ops->weight_store(m.stored.get() + (m.stored_offsets[i] + first + a) * m.ops->weight_bytes, stage.get(), c);
  }
}

template <class T>
void refresh_stored_weights(Model<T>& m) {
  if (m.stored_current) return;
  for (size_t i = 0; i < m.specs.size() && m.master && m.stored.size() > 0; ++i)
    if (m.stored_offsets[i] >= 0)
      m.ops->weight_store(m.stored.get() + m.stored_offsets[i] * m.ops->weight_bytes, m.params.get() + m.offsets[i],
                          m.shards[i].numel());
  m.stored_current = true;
}

template <class T>
const void* stored_weight(const Model<T>& m, const std::byte* w) {
  if (!m.stored_current) fail("a product read the weights before refresh_stored_weights after they changed");
  return w;
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
  template void write_weights<T>(Model<T>&, size_t, const T*, int64_t, int64_t);                                 \
  template const void* stored_weight<T>(const Model<T>&, const std::byte*);
HEADROOM_MODEL_INSTANTIATE(float)
HEADROOM_MODEL_INSTANTIATE(double)
#undef HEADROOM_MODEL_INSTANTIATE

}  // namespace headroom::model
