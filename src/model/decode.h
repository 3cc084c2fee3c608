// Inference with a KV cache: chunked prefill (memory linear in context length: per-layer keys and
// values plus one chunk of activations) and greedy decoding. One sequence at a time.
#pragma once

#include "model/activations.h"

#include <functional>
#include <vector>

namespace headroom::model {

template <class T>
struct KvCache {
  using Ops = kernels::BasicOps<T>;
  int64_t capacity = 0;                       // positions
  int64_t len = 0;                            // positions filled
  std::vector<kernels::Buffer<T, Ops>> k, v;  // per layer [capacity, Hkv·dqk] / [capacity, Hkv·dv]
  Activations<T> chunk;                       // one block's activations for `chunk_len` rows
  int64_t chunk_len = 0;
};

template <class T>
KvCache<T> make_kv_cache(const Model<T>& m, int64_t capacity, int64_t chunk_len = 256);

// What a layer of a prefill chunk produced, for observers (attention diagnostics): the chunk's
// rows [pos, pos + rows), the layer's activations (queries in acts.q, [rows, Hq·dqk]), its output
// rows [rows, d_model] and the layer's cache, whose keys cover positions [0, pos + rows).
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
