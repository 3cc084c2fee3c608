// Inference with a KV cache: chunked prefill (memory linear in context length: per-layer keys and
// values plus one chunk of activations; constant on sliding-window layers that keep their window
// only) and greedy decoding. One sequence at a time.
#pragma once

#include "model/activations.h"

#include <cstddef>
#include <functional>
#include <vector>

namespace headroom::model {

// How a cache keeps a sliding-window layer's keys: every position (kFull: what attention
// diagnostics read back, position p at row p) or only the last ones its queries can still see
// (kWindowOnly: memory constant in the context length).
enum class KvWindows { kFull, kWindowOnly };

// The precision a cache keeps keys and values in: the table's (kTable: Ops::kv_bytes per element,
// bf16 in the bf16 CUDA tables, whose attention reads bf16 K and V anyway) or the compute type T
// (kCompute: what observers read back).
enum class KvPrecision { kCompute, kTable };

template <class T>
struct KvCache {
  using Ops = kernels::BasicOps<T>;
  int64_t capacity = 0;  // positions
  int64_t len = 0;       // positions filled; 0 empties the cache for reuse
  KvPrecision precision = KvPrecision::kCompute;
  int64_t elem_bytes = sizeof(T);
  // Per layer [rows[i], Hkv·dqk] / [rows[i], Hkv·dv] elements of elem_bytes each.
  std::vector<kernels::Buffer<std::byte, Ops>> k, v;
  // Per layer: rows allocated (capacity, or a windowed layer's kv_rows) and the position held in
  // row 0. A windowed layer's keys stay contiguous in position order, rows [0, len − first[i]):
  // when the next chunk would not fit, the last window − 1 positions move to the front, so the
  // attention kernels see an ordinary cached prefix that starts at position first[i].
  std::vector<int64_t> rows, first;
  Activations<T> chunk;  // one block's activations for `chunk_len` rows
  int64_t chunk_len = 0;

  // Layer i's keys as T: a kCompute cache's (throws for a kTable one).
  const T* keys(long i) const;
};

// Rows a cache of `capacity` positions and `chunk_len`-row chunks allocates for `layer`: the
// capacity, or under kWindowOnly for a sliding-window layer 2·(window − 1) + chunk_len when smaller (the
// window − 1 positions a chunk's first query still sees, the chunk, and as many again so that the
// move to the front never overlaps itself and happens at most once per window − 1 positions).
int64_t kv_rows(const config::ModelConfig& c, long layer, int64_t capacity, int64_t chunk_len, KvWindows windows);

template <class T>
KvCache<T> make_kv_cache(const Model<T>& m, int64_t capacity, int64_t chunk_len = 256,
                         KvWindows windows = KvWindows::kFull, KvPrecision precision = KvPrecision::kCompute);

// What a layer of a prefill chunk produced, for observers (attention diagnostics): the chunk's
// rows [pos, pos + rows), the layer's activations (queries in acts.q in T, [rows, Hq·dqk]), its output
// rows [rows, d_model] and the layer's cache, whose keys cover positions [0, pos + rows) (observers
// need a KvWindows::kFull, KvPrecision::kCompute cache).
template <class T>
struct LayerOutput {
  long layer;
  int64_t pos, rows;
  const LayerActs<T>& acts;
  const T* out;
  const KvCache<T>& cache;
};
template <class T>
using LayerObserver = std::function<void(const LayerOutput<T>&)>;

// Appends tokens[0, n) to the cache, running them in chunks. Returns the logits of the last token
// [V]; when all_logits is non-null it receives every token's logits [n, V] (host). `observe`, when
// set, is called after every layer of every chunk.
template <class T>
std::vector<T> prefill(Model<T>& m, KvCache<T>& cache, const int32_t* tokens, int64_t n, T* all_logits = nullptr,
                       const LayerObserver<T>& observe = {});

// Greedy decoding after `prompt`: up to max_new tokens, stopping after `stop` (if ≥ 0).
template <class T>
std::vector<int32_t> greedy_generate(Model<T>& m, KvCache<T>& cache, const std::vector<int32_t>& prompt,
                                     int64_t max_new, int32_t stop);

}  // namespace headroom::model
