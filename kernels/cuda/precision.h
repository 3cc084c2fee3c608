// The CUDA tables' precision (HEADROOM_CUDA_PRECISION) and the decoding cache's that follows from
// it, as plain host code: the tables, the emulated device and the memory plan (which runs without a
// GPU, and in builds without CUDA) read the same rule.
#pragma once

#include "headroom_error.h"
#include "ops.h"

#include <cstdlib>
#include <cstring>

namespace headroom::kernels::cuda_precision {

// HEADROOM_CUDA_PRECISION: bf16 (the default) or fp32.
inline bool bf16() {
  const char* p = std::getenv("HEADROOM_CUDA_PRECISION");
  if (p == nullptr || *p == '\0' || std::strcmp(p, "bf16") == 0) return true;
  if (std::strcmp(p, "fp32") == 0) return false;
  fail("HEADROOM_CUDA_PRECISION = '", p, "': expected bf16 or fp32");
}

// The decoding cache follows the attention's operands: bf16 where the kernels read bf16 K and V.
inline bool bf16_cache(bool bf16_table, AttentionKernel a) { return bf16_table && a != AttentionKernel::kSimt; }

inline int kv_bytes(bool bf16_table, AttentionKernel a) { return bf16_cache(bf16_table, a) ? 2 : 4; }

// The GEMMs' weight copy: bf16 in the bf16 tables (their GEMMs are bf16 whatever the attention).
inline int weight_bytes(bool bf16_table) { return bf16_table ? 2 : 4; }

}  // namespace headroom::kernels::cuda_precision
