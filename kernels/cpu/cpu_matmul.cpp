// Dense products through OpenBLAS sgemm (threaded by OpenBLAS itself).
#include "cpu/cpu_blas.h"
#include "cpu/cpu_kernels.h"
#include "matmul_strides.h"

namespace headroom::kernels::cpu {

void matmul(const float* A, const float* B, float* C, int64_t M, int64_t N, int64_t K, bool trans_a, bool trans_b,
            bool accumulate) {
  if (M == 0 || N == 0) return;
  if (K == 0) {
    // An empty sum: sgemm's behaviour with k == 0 is not something to lean on.
    if (!accumulate) fill(C, 0.f, M * N);
    return;
  }
  matmul_strided(A, trans_a ? M : K, B, trans_b ? K : N, C, N, M, N, K, trans_a, trans_b, 1.f, accumulate ? 1.f : 0.f);
}

void matmul_strided(const float* A, int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc, int64_t M,
                    int64_t N, int64_t K, bool trans_a, bool trans_b, float alpha, float beta) {
  check_matmul_strides("cpu", M, N, K, trans_a, trans_b, lda, ldb, ldc);
  if (M == 0 || N == 0) return;
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, blas_dim(M, "M"),
              blas_dim(N, "N"), blas_dim(K, "K"), alpha, A, blas_dim(lda, "lda"), B, blas_dim(ldb, "ldb"), beta, C,
              blas_dim(ldc, "ldc"));
}

}  // namespace headroom::kernels::cpu
