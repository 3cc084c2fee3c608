#include "model/shard.h"

#include "util/error.h"

namespace headroom::model {

int64_t Shard::numel() const {
  int64_t n = 1;
  for (int64_t d : local_shape) n *= d;
  return n;
}

void check_tp(const config::ModelConfig& m, int tp, const char* key) {
  if (tp < 1) fail(key, " = ", tp, " must be at least 1");
  if (m.n_heads % tp != 0)
    fail(key, " = ", tp, " does not divide model.n_heads = ", m.n_heads,
         " (heads are split across tensor-parallel ranks)");
  if (m.n_kv_heads % tp != 0 && tp % m.n_kv_heads != 0)
    fail(key, " = ", tp, " and model.n_kv_heads = ", m.n_kv_heads,
         ": one must divide the other (KV heads are split, or replicated when fewer than tp)");
  if (m.d_ff % tp != 0) fail(key, " = ", tp, " does not divide model.d_ff = ", m.d_ff);
}

int64_t kv_replication(const config::ModelConfig& m, int tp) { return m.n_kv_heads >= tp ? 1 : tp / m.n_kv_heads; }

config::ModelConfig local_config(const config::ModelConfig& m, int tp) {
  config::ModelConfig l = m;
  l.n_heads = m.n_heads / tp;
  l.n_kv_heads = m.n_kv_heads >= tp ? m.n_kv_heads / tp : 1;
  l.d_ff = m.d_ff / tp;
  return l;
}

Shard make_shard(const ParamSpec& spec, const config::ModelConfig& m, int tp_rank, int tp) {
  Shard s;
  s.local_shape = spec.shape;
  const int64_t rep = kv_replication(m, tp);
  if (spec.split == Split::kNone || tp == 1) {
    s.count = spec.shape[0];
    s.partial_grad = spec.head_shared && tp > 1;
    s.owner = tp_rank == 0;
    return s;
  }
  s.axis = spec.split == Split::kRows ? 0 : 1;
  const int64_t full = spec.shape[static_cast<size_t>(s.axis)];
  if (spec.kv && rep > 1) {
    // One KV head per rank, shared by `rep` neighbouring ranks.
    const int64_t per_head = full / m.n_kv_heads;
    s.offset = (tp_rank / rep) * per_head;
    s.count = per_head;
    s.partial_grad = true;
    s.owner = tp_rank % rep == 0;
  } else {
    s.count = full / tp;
    s.offset = tp_rank * s.count;
  }
  s.local_shape[static_cast<size_t>(s.axis)] = s.count;
  return s;
}

template <class T>
void init_shard(const ParamSpec& spec, const Shard& shard, unsigned long seed, T* out) {
  if (shard.axis != 1) {
    const int64_t row = spec.shape.size() > 1 ? spec.shape[1] : 1;
    init_values(spec, seed, shard.axis == 0 ? shard.offset * row : 0, shard.numel(), out);
    return;
  }
  const int64_t rows = spec.shape[0], cols = spec.shape[1];
  for (int64_t r = 0; r < rows; ++r)
    init_values(spec, seed, r * cols + shard.offset, shard.count, out + r * shard.count);
}

template void init_shard<float>(const ParamSpec&, const Shard&, unsigned long, float*);
template void init_shard<double>(const ParamSpec&, const Shard&, unsigned long, double*);

}  // namespace headroom::model
