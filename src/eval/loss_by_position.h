// Held-out loss at a context length, bucketed by token position: if a model uses long context,
// the loss keeps falling at late positions; if it does not, the curve flattens (or rises past
// the training length). Windows of length + 1 tokens come from the val shard with the training
// loader's deterministic window order (data/loader.h), each scored with the KV-cache prefill
// (memory linear in length; forward_loss keeps every layer's activations for a backward pass).
#pragma once

#include "data/shard.h"
#include "eval/decoder.h"

#include <cstdint>
#include <utility>
#include <vector>

namespace headroom::eval {

// Position buckets [0, 16), [16, 32), [32, 64), ... doubling, the last ending at `length`.
std::vector<std::pair<int64_t, int64_t>> position_buckets(int64_t length);

// The per-bucket loss sums of window `index` at `length`: {sum_0, count_0, sum_1, count_1, ...}
// (natural-log cross-entropy of predicting token t + 1 at position t).
std::vector<double> window_bucket_losses(Decoder& dec, const data::ShardReader& val, int64_t length, uint64_t seed,
                                         int64_t index);

}  // namespace headroom::eval
