// Dense products through OpenBLAS sgemm (threaded by OpenBLAS itself).
#include "cpu/cpu_blas.h"
#include "cpu/cpu_kernels.h"

namespace headroom::kernels::cpu {

void matmul(const float* A, const float* B, float* C, int64_t M, int64_t N, int64_t K, bool trans_a,
            bool trans_b, bool accumulate) {
  if (M == 0 || N == 0) return;
  if (K == 0) {
    // An empty sum: sgemm's behaviour with k == 0 is not something to lean on.
    if (!accumulate) fill(C, 0.f, M * N);
    return;
  }
  const blasint m = blas_dim(M, "M"), n = blas_dim(N, "N"), k = blas_dim(K, "K");
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, m, n, k, 1.f, A, trans_a ? m : k, B,
              trans_b ? k : n, accumulate ? 1.f : 0.f, C, n);
}

}  // namespace headroom::kernels::cpu
