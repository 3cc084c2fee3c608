// Tiny model configurations and batches shared by the model tests.
#pragma once

#include "config/config.h"

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace headroom::fixtures {

// A valid tiny configuration (vocab 13, d_model 8, 2 layers, 2 heads of width 4) with overrides
// given as {"key", "value"} pairs of [model] keys.
config::ModelConfig tiny_model(std::initializer_list<std::pair<std::string, std::string>> overrides);

struct Batch {
  int64_t B = 0, T = 0;
  std::vector<int32_t> ids, targets;  // targets −1 where masked
};

// Random ids; targets are ids shifted by one, with every `mask_every`-th target masked (0 = none).
Batch random_batch(int64_t vocab, int64_t B, int64_t T, uint64_t seed, int mask_every = 0);

}  // namespace headroom::fixtures
