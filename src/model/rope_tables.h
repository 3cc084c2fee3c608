// RoPE angle tables for one layer kind: cos and sin of p · inv_freq[i] for positions 0..n_pos−1
// and i < rot_dims/2, computed in double and cast (MODEL_SPEC.md "RoPE"), with YaRN's frequency
// blend and attention factor when it applies to that kind of layer, or Llama 3.1's bands.
#pragma once

#include "config/config.h"

#include <cstdint>
#include <vector>

namespace headroom::model {

struct RopeTable {
  int64_t rot_dims = 0;  // 0: this layer kind has no RoPE (NoPE)
  int64_t n_pos = 0;
  std::vector<double> inv_freq;   // [rot_dims / 2]
  double attention_factor = 1.0;  // YaRN's multiplier on cos and sin
};

// The frequencies for full ('F') or sliding ('S') layers of a model.
RopeTable rope_frequencies(const config::ModelConfig& m, bool sliding);

// Fills cos/sin [n_pos, rot_dims/2] (row-major) for positions [0, n_pos).
template <class T>
void rope_fill(const RopeTable& t, int64_t n_pos, std::vector<T>& cos, std::vector<T>& sin);

}  // namespace headroom::model
