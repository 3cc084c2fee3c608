// Inference with a KV cache: chunked prefill (memory linear in context length: per-layer keys and
// values plus one chunk of activations) and greedy decoding. One sequence at a time.
#pragma once

#include "model/activations.h"

#include <vector>

namespace headroom::model {

template <class T>
struct KvCache {
  using Ops = kernels::BasicOps<T>;
  int64_t capacity = 0;  // positions
  int64_t len = 0;       // positions filled
  std::vector<kernels::Buffer<T, Ops>> k, v;  // per layer [capacity, Hkv·dqk] / [capacity, Hkv·dv]
  Activations<T> chunk;                       // one block's activations for `chunk_len` rows
  int64_t chunk_len = 0;
};

template <class T>
KvCache<T> make_kv_cache(const Model<T>& m, int64_t capacity, int64_t chunk_len = 256);

// Appends tokens[0, n) to the cache, running them in chunks. Returns the logits of the last token
// [V]; when all_logits is non-null it receives every token's logits [n, V] (host).
template <class T>
std::vector<T> prefill(Model<T>& m, KvCache<T>& cache, const int32_t* tokens, int64_t n,
                       T* all_logits = nullptr);

// Greedy decoding after `prompt`: up to max_new tokens, stopping after `stop` (if ≥ 0).
template <class T>
std::vector<int32_t> greedy_generate(Model<T>& m, KvCache<T>& cache,
                                     const std::vector<int32_t>& prompt, int64_t max_new,
                                     int32_t stop);

}  // namespace headroom::model
