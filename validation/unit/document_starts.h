// Document masks for the attention op tests: ops.h's doc_start rows for packed documents.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace headroom::kernels {

// doc_start [B, T] for queries at positions q_pos0.. of windows whose documents begin at `starts`
// (absolute positions, ascending; position 0 begins one too). Row b's boundaries lie 3·b later, so
// batch rows differ and a kernel that reads another row's mask is caught.
inline std::vector<int32_t> document_starts(int64_t B, int64_t T, int64_t q_pos0, const std::vector<int64_t>& starts) {
  std::vector<int32_t> out(static_cast<std::size_t>(B * T));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) {
      int64_t begin = 0;
      for (int64_t s : starts)
        if (s + 3 * b <= q_pos0 + t) begin = s + 3 * b;
      out[static_cast<std::size_t>(b * T + t)] = static_cast<int32_t>(begin);
    }
  return out;
}

}  // namespace headroom::kernels
