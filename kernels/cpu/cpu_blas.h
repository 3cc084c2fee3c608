// What the CPU kernels need around OpenBLAS: its 32-bit integer interface and its own thread pool.
#pragma once

#include <cblas.h>

#include <cstdint>
#include <limits>

#include "headroom_error.h"

namespace headroom::kernels::cpu {

// OpenBLAS's cblas takes blasint (32-bit in Debian's build): a dimension past 2^31 must fail loudly
// rather than wrap into a wrong product.
inline blasint blas_dim(int64_t x, const char* what) {
  if (x < 0 || x > std::numeric_limits<blasint>::max())
    fail("cpu matmul: ", what, " = ", x, " does not fit OpenBLAS's ", sizeof(blasint) * 8, "-bit integer interface");
  return static_cast<blasint>(x);
}

// Kernels that call sgemm on small blocks from inside their own OpenMP threads. The pthread build of
// OpenBLAS would otherwise split a block above its size threshold across its own pool as well:
// oversubscribed cores, and concurrent callers queueing for the same pool. While this lives, sgemm
// runs on the calling thread. The OpenMP build already does that inside a parallel region and the
// serial build always does, so they are left alone.
class SerialBlasScope {
 public:
  SerialBlasScope() {
    if (openblas_get_parallel() == OPENBLAS_THREAD) {
      saved_ = openblas_get_num_threads();
      if (saved_ > 1) openblas_set_num_threads(1);
    }
  }
  ~SerialBlasScope() {
    if (saved_ > 1) openblas_set_num_threads(saved_);
  }
  SerialBlasScope(const SerialBlasScope&) = delete;
  SerialBlasScope& operator=(const SerialBlasScope&) = delete;

 private:
  int saved_ = 0;
};

}  // namespace headroom::kernels::cpu
