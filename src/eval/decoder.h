// Running samples through the model: one KV cache reused across samples (reallocated only when a
// longer context comes), chunked prefill (memory linear in context length) and greedy decoding.
// One sequence at a time.
#pragma once

#include "data/tokenizer.h"
#include "model/decode.h"

#include <cstdint>
#include <string>
#include <vector>

namespace headroom::eval {

struct Decoder {
  model::Model<float>& model;
  int64_t chunk = 512;
  model::KvCache<float> cache;

  // An empty cache of at least `capacity` positions.
  model::KvCache<float>& reset(int64_t capacity);
};

// Greedy continuation of `prompt` (ids, BOS first when the tokenizer has one): up to max_new
// tokens, stopping after `eos` (data::eos_id of the tokenizer).
// The cache is sized for at least `capacity` positions (pass the target length, so the samples of
// one length share one allocation). Returns the generated ids.
std::vector<int32_t> generate(Decoder& dec, int32_t eos, const std::vector<int32_t>& prompt, int64_t max_new,
                              int64_t capacity = 0);

// Per-token log-likelihoods: out[t] = log p(ids[t + 1] | ids[0..t]) for t in [0, n - 1), computed
// block by block from the logits of each prefill chunk (never [n, vocab] at once). `from` skips
// the first positions' scores (they are still run as context): out has n - 1 - from entries.
std::vector<double> token_logprobs(Decoder& dec, const std::vector<int32_t>& ids, int64_t from = 0);

}  // namespace headroom::eval
