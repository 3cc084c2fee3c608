// Token embedding lookup and its scatter-add gradient.
#include <algorithm>
#include <cstring>

#include "cpu/cpu_kernels.h"
#include "cpu/cpu_parallel.h"

namespace headroom::kernels::cpu {

void embedding_fwd(const float* table, const int32_t* ids, float* out, int64_t n, int64_t d) {
#pragma omp parallel for if (n * d >= kParallelMinElements)
  for (int64_t i = 0; i < n; ++i) std::memcpy(out + i * d, table + static_cast<int64_t>(ids[i]) * d, sizeof(float) * d);
}

// A token repeated in the batch adds into the same table row, so splitting the tokens across threads
// would race. Splitting the columns instead gives each thread a disjoint slice of every row: no races,
// no atomics, and the sum order per element is the token order, so results are deterministic.
void embedding_bwd(const float* dout, const int32_t* ids, float* dtable, int64_t n, int64_t d) {
  constexpr int64_t kColumns = 64;
  const int64_t slices = (d + kColumns - 1) / kColumns;
#pragma omp parallel for if (n * d >= kParallelMinElements)
  for (int64_t s = 0; s < slices; ++s) {
    const int64_t c0 = s * kColumns, c1 = std::min(d, c0 + kColumns);
    for (int64_t i = 0; i < n; ++i) {
      float* row = dtable + static_cast<int64_t>(ids[i]) * d;
      const float* g = dout + i * d;
#pragma omp simd
      for (int64_t c = c0; c < c1; ++c) row[c] += g[c];
    }
  }
}

}  // namespace headroom::kernels::cpu
