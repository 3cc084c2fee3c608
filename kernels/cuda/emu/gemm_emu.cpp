// The emulated cuBLASLt: the CUDA backend's three GEMM entries (entries.h) on the CPU backend's
// sgemm, after the same pointer checks a real device would enforce by faulting. The bf16 entry
// rounds both operands to bf16 first (fp32 accumulation and output, as the real one asks of
// cuBLASLt), so the bf16 table's numerics are the GPU's up to summation order.
#include <cstdint>
#include <vector>

#include "cpu/cpu_kernels.h"
#include "cuda/emu/device_arena.h"
#include "cuda/emu/emulator.h"
#include "cuda/entries.h"
#include "matmul_strides.h"

namespace headroom::kernels::cuda_emu {

namespace {

void require_operands(const char* call, const float* A, const float* B, const float* C) {
  require_device(A, call, "operand A");
  require_device(B, call, "operand B");
  require_device(C, call, "output C");
}

// A rows × cols matrix with leading dimension ld, rounded to bf16 values, packed (ld = cols).
std::vector<float> rounded_bf16(const float* X, int64_t rows, int64_t cols, int64_t ld) {
  std::vector<float> out(static_cast<std::size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      out[static_cast<std::size_t>(r * cols + c)] = emu::bf16_value(emu::bf16_bits(X[r * ld + c]));
  return out;
}

}  // namespace

void matmul_fp32(const float* A, const float* B, float* C, int64_t M, int64_t N, int64_t K, bool trans_a, bool trans_b,
                 bool accumulate) {
  require_operands("emulated cublasLtMatmul (matmul_fp32)", A, B, C);
  const DeviceAccess open;
  cpu::matmul(A, B, C, M, N, K, trans_a, trans_b, accumulate);
}

void matmul_bf16(const float* A, const float* B, float* C, int64_t M, int64_t N, int64_t K, bool trans_a, bool trans_b,
                 bool accumulate) {
  require_operands("emulated cublasLtMatmul (matmul_bf16)", A, B, C);
  const DeviceAccess open;
  const std::vector<float> a = rounded_bf16(A, trans_a ? K : M, trans_a ? M : K, trans_a ? M : K);
  const std::vector<float> b = rounded_bf16(B, trans_b ? N : K, trans_b ? K : N, trans_b ? K : N);
  cpu::matmul(a.data(), b.data(), C, M, N, K, trans_a, trans_b, accumulate);
}

void matmul_strided(const float* A, int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc, int64_t M,
                    int64_t N, int64_t K, bool trans_a, bool trans_b, float alpha, float beta) {
  check_matmul_strides("emulated-cuda", M, N, K, trans_a, trans_b, lda, ldb, ldc);
  require_operands("emulated cublasLtMatmul (matmul_strided)", A, B, C);
  const DeviceAccess open;
  cpu::matmul_strided(A, lda, B, ldb, C, ldc, M, N, K, trans_a, trans_b, alpha, beta);
}

}  // namespace headroom::kernels::cuda_emu
