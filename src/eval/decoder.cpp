#include "eval/decoder.h"

#include "util/error.h"

#include <algorithm>
#include <cmath>

namespace headroom::eval {

model::KvCache<float>& Decoder::reset(int64_t capacity) {
  if (cache.capacity < capacity || cache.chunk_len != std::min(chunk, cache.capacity)) {
    cache = model::KvCache<float>{};  // free the old cache first: peak memory is one cache
    // Sliding-window layers keep only their window: scores need nothing else, and a 256K context
    // would otherwise hold every position in every layer. Keys and values in the table's cache
    // precision (bf16 on a GPU: half the memory, the same results).
    cache = model::make_kv_cache(model, capacity, chunk, model::KvWindows::kWindowOnly, model::KvPrecision::kTable);
  }
  cache.len = 0;
  return cache;
}

std::vector<int32_t> generate(Decoder& dec, int32_t eos, const std::vector<int32_t>& prompt, int64_t max_new,
                              int64_t capacity) {
  auto& cache = dec.reset(std::max(capacity, static_cast<int64_t>(prompt.size()) + max_new));
  return model::greedy_generate(dec.model, cache, prompt, max_new, eos);
}

std::vector<double> token_logprobs(Decoder& dec, const std::vector<int32_t>& ids, int64_t from) {
  const auto n = static_cast<int64_t>(ids.size());
  if (n < 2) fail("token_logprobs: need at least 2 tokens, got ", n);
  auto& cache = dec.reset(n);
  const int64_t V = dec.model.cfg.vocab_size;
  std::vector<float> logits(static_cast<size_t>(std::min(dec.chunk, n) * V));
  std::vector<double> out;
  out.reserve(static_cast<size_t>(std::max<int64_t>(0, n - 1 - from)));
  // Positions 0..n-2 predict the next token; the last token is never run (nothing to score).
  for (int64_t start = 0; start < n - 1; start += dec.chunk) {
    const int64_t rows = std::min(dec.chunk, n - 1 - start);
    model::prefill(dec.model, cache, ids.data() + start, rows, logits.data());
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t t = start + r;
      if (t < from) continue;
      const float* row = logits.data() + r * V;
      const float mx = *std::max_element(row, row + V);
      double sum = 0;
      for (int64_t v = 0; v < V; ++v) sum += std::exp(static_cast<double>(row[v] - mx));
      out.push_back(static_cast<double>(row[ids[static_cast<size_t>(t + 1)]] - mx) - std::log(sum));
    }
  }
  return out;
}

}  // namespace headroom::eval
