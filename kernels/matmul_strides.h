// The argument checks of matmul_strided (ops.h), made by every backend before it touches memory, so
// a wrong stride is the same clear error on CPU and GPU instead of a product of the wrong elements.
#pragma once

#include <cstdint>

#include "headroom_error.h"

namespace headroom::kernels {

inline void check_matmul_strides(const char* backend, int64_t M, int64_t N, int64_t K, bool trans_a, bool trans_b,
                                 int64_t lda, int64_t ldb, int64_t ldc) {
  if (M < 0 || N < 0 || K < 1)
    fail(backend, " matmul_strided: sizes M = ", M, ", N = ", N, ", K = ", K, " (K must be at least 1)");
  const int64_t a_cols = trans_a ? M : K, b_cols = trans_b ? K : N;
  if (lda < a_cols) fail(backend, " matmul_strided: lda = ", lda, " is less than A's row width ", a_cols);
  if (ldb < b_cols) fail(backend, " matmul_strided: ldb = ", ldb, " is less than B's row width ", b_cols);
  if (ldc < N) fail(backend, " matmul_strided: ldc = ", ldc, " is less than C's row width ", N);
}

}  // namespace headroom::kernels
