#include "model/decode.h"

#include "model/layer.h"
#include "util/error.h"

#include <algorithm>

namespace headroom::model {

int64_t kv_rows(const config::ModelConfig& c, long layer, int64_t capacity, int64_t chunk_len, KvWindows windows) {
  if (windows == KvWindows::kFull || !is_sliding(c, layer)) return capacity;
  return std::min(capacity, 2 * (c.window - 1) + chunk_len);
}

template <class T>
KvCache<T> make_kv_cache(const Model<T>& m, int64_t capacity, int64_t chunk_len, KvWindows windows,
                         KvPrecision precision) {
  const auto& c = m.local;
  KvCache<T> cache;
  cache.capacity = capacity;
  cache.chunk_len = std::max<int64_t>(1, std::min(chunk_len, capacity));
  cache.precision = precision;
  cache.elem_bytes = precision == KvPrecision::kTable ? m.ops->kv_bytes : static_cast<int64_t>(sizeof(T));
  for (long i = 0; i < c.n_layers; ++i) {
    const int64_t rows = kv_rows(c, i, capacity, cache.chunk_len, windows);
    cache.rows.push_back(rows);
    cache.first.push_back(0);
    cache.k.emplace_back(*m.ops, rows * config::k_width(c) * cache.elem_bytes);
    cache.v.emplace_back(*m.ops, rows * config::v_width(c) * cache.elem_bytes);
  }
  // One block's worth of activations, reused by every layer in turn.
  config::ModelConfig one = c;
  one.n_layers = 1;
  cache.chunk = make_activations(one, *m.ops, 1, cache.chunk_len);
  return cache;
}

template <class T>
const T* KvCache<T>::keys(long i) const {
  if (precision != KvPrecision::kCompute)
    fail("KV cache: layer ", i, "'s keys are kept in the table's precision, not read back as the compute type");
  return reinterpret_cast<const T*>(k[static_cast<size_t>(i)].get());
}

namespace {

// Makes room in layer i's rows for positions [pos, pos + n): when they would run past its rows,
// moves the last window − 1 positions (all its queries from pos on can see) to the front. With
// kv_rows' slack the source starts past window − 1 rows, so one non-overlapping copy does it.
template <class T>
void slide_window(const Model<T>& m, KvCache<T>& cache, long i, int64_t pos, int64_t n) {
  const auto li = static_cast<size_t>(i);
  const int64_t held = pos - cache.first[li];
  if (held + n <= cache.rows[li]) return;
  const int64_t keep = std::min<int64_t>(m.local.window - 1, held), from = held - keep;
  if (keep > from) fail("KV cache of layer ", i, ": moving ", keep, " rows from row ", from, " would overlap");
  const int64_t K = config::k_width(m.local) * cache.elem_bytes, VD = config::v_width(m.local) * cache.elem_bytes;
  std::byte *k = cache.k[li].get(), *v = cache.v[li].get();
  if (keep > 0) {
    m.ops->copy(k, k + from * K, static_cast<size_t>(keep * K));
    m.ops->copy(v, v + from * VD, static_cast<size_t>(keep * VD));
  }
  cache.first[li] = pos - keep;
}

}  // namespace

template <class T>
std::vector<T> prefill(Model<T>& m, KvCache<T>& cache, const int32_t* tokens, int64_t n, T* all_logits,
                       const LayerObserver<T>& observe) {
  const auto& c = m.local;
  const auto& ops = *m.ops;
  const int64_t d = c.d_model, V = c.vocab_size;
  if (n <= 0) fail("prefill: no tokens");
  if (observe && cache.rows != std::vector<int64_t>(cache.rows.size(), cache.capacity))
    fail("prefill: layer observers read every position's keys, which a KvWindows::kWindowOnly cache does not keep");
  if (observe && cache.precision != KvPrecision::kCompute)
    fail("prefill: layer observers read the keys in the compute type, which a KvPrecision::kTable cache does not keep");
  if (cache.len + n > cache.capacity)
    fail("context of ", cache.len + n, " tokens exceeds the KV cache capacity ", cache.capacity);
  for (int64_t t = 0; t < n; ++t)
    if (tokens[t] < 0 || tokens[t] >= V) fail("token id ", tokens[t], " is outside the vocabulary [0, ", V, ")");
  ensure_rope(m, cache.len + n);
  refresh_stored_weights(m);
  // Setting len = 0 empties a cache for reuse (eval::Decoder, the diagnostics): its windows start over.
  if (cache.len == 0) std::fill(cache.first.begin(), cache.first.end(), 0);
  Activations<T>& a = cache.chunk;
  LayerActs<T>& l = a.layers[0];
  const bool post = c.norm_order == config::NormOrder::kPost;
  std::vector<T> last(static_cast<size_t>(V));
  for (int64_t start = 0; start < n; start += cache.chunk_len) {
    const int64_t rows = std::min(cache.chunk_len, n - start), pos = cache.len;
    ops.copy_from_host(a.ids.get(), tokens + start, static_cast<size_t>(rows) * sizeof(int32_t));
    ops.embedding_fwd(m.embed, a.ids.get(), a.resid[0], rows, d);
    T *cur = a.resid[0], *next = a.resid[1];
    for (long i = 0; i < c.n_layers; ++i) {
      l.x_in = cur;
      if (post) l.a_in = cur;
      const auto li = static_cast<size_t>(i);
      slide_window(m, cache, i, pos, rows);
      const CachedKeys kv{.k = cache.k[li].get(),
                          .v = cache.v[li].get(),
                          .row = pos - cache.first[li],  // where this chunk's keys go
                          .key_pos0 = cache.first[li],
                          .table = cache.precision == KvPrecision::kTable};
      layer_forward(m, i, l, next, rows, pos, kv, a.stat);
      if (observe) observe(LayerOutput<T>{i, pos, rows, l, next, cache});
      std::swap(cur, next);
    }
    rms_forward(ops, cur, m.final_norm, a.xf, a.f_rstd, a.stat, rows, d, c.norm_eps);
    // Logits for every row only when asked; otherwise just the chunk's last row.
    const int64_t first = all_logits ? 0 : rows - 1;
    for (int64_t r0 = first; r0 < rows; r0 += a.chunk_rows) {
      const int64_t R = std::min(a.chunk_rows, rows - r0);
      ops.matmul_stored(a.xf + r0 * d, stored_weight(m, m.s_lm_head), a.logits, R, V, d, false, true, false);
      if (all_logits) ops.copy_to_host(all_logits + (start + r0) * V, a.logits, static_cast<size_t>(R * V) * sizeof(T));
      if (r0 + R == rows) ops.copy_to_host(last.data(), a.logits + (R - 1) * V, static_cast<size_t>(V) * sizeof(T));
    }
    cache.len += rows;
  }
  return last;
}

template <class T>
std::vector<int32_t> greedy_generate(Model<T>& m, KvCache<T>& cache, const std::vector<int32_t>& prompt,
                                     int64_t max_new, int32_t stop) {
  std::vector<int32_t> out;
  if (max_new <= 0) return out;
  std::vector<T> logits = prefill(m, cache, prompt.data(), static_cast<int64_t>(prompt.size()));
  for (int64_t i = 0; i < max_new; ++i) {
    const int32_t next = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    out.push_back(next);
    if (next == stop || i + 1 == max_new || cache.len == cache.capacity) break;
    logits = prefill(m, cache, &next, 1);
  }
  return out;
}

#define HEADROOM_DECODE_INSTANTIATE(T)                                                                              \
  template const T* KvCache<T>::keys(long) const;                                                                   \
  template KvCache<T> make_kv_cache<T>(const Model<T>&, int64_t, int64_t, KvWindows, KvPrecision);                  \
  template std::vector<T> prefill<T>(Model<T>&, KvCache<T>&, const int32_t*, int64_t, T*, const LayerObserver<T>&); \
  template std::vector<int32_t> greedy_generate<T>(Model<T>&, KvCache<T>&, const std::vector<int32_t>&, int64_t,    \
                                                   int32_t);
HEADROOM_DECODE_INSTANTIATE(float)
HEADROOM_DECODE_INSTANTIATE(double)
#undef HEADROOM_DECODE_INSTANTIATE

}  // namespace headroom::model
