// The emulated cuBLASLt: the CUDA backend's GEMM entries (entries.h) on the CPU backend's
// sgemm, after the same pointer checks a real device would enforce by faulting. The bf16 entry
// rounds both operands to bf16 first (fp32 accumulation and output, as the real one asks of
// cuBLASLt), so the bf16 table's numerics are the GPU's up to summation order.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "cpu/cpu_kernels.h"
#include "cuda/emu/device_arena.h"
#include "cuda/emu/emulator.h"
#include "cuda/emu/runtime_emu.h"
#include "cuda/entries.h"
#include "matmul_strides.h"

namespace headroom::kernels::cuda_emu {

namespace {

void require_operands(const char* call, const void* A, const void* B, const void* C) {
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

// A rows × cols bf16 matrix (raw bits) with leading dimension ld, widened to fp32, packed.
std::vector<float> widened(const uint16_t* X, int64_t rows, int64_t cols, int64_t ld) {
  std::vector<float> out(static_cast<std::size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) out[static_cast<std::size_t>(r * cols + c)] = emu::bf16_value(X[r * ld + c]);
  return out;
}

// Two packed bf16 operands (A [M,K] or [K,M], B [K,N] or [N,K]) widened to fp32.
struct Widened {
  std::vector<float> a, b;
};
Widened widened_operands(const void* A, const void* B, int64_t M, int64_t N, int64_t K, bool trans_a, bool trans_b) {
  return {widened(static_cast<const uint16_t*>(A), trans_a ? K : M, trans_a ? M : K, trans_a ? M : K),
          widened(static_cast<const uint16_t*>(B), trans_b ? N : K, trans_b ? K : N, trans_b ? K : N)};
}

}  // namespace

void matmul_fp32(const float* A, const float* B, float* C, int64_t M, int64_t N, int64_t K, bool trans_a, bool trans_b,
                 bool accumulate) {
  require_operands("emulated cublasLtMatmul (matmul_fp32)", A, B, C);
  enqueue([=] {
    const DeviceAccess open;
    cpu::matmul(A, B, C, M, N, K, trans_a, trans_b, accumulate);
  });
}

void matmul_bf16(const float* A, const float* B, float* C, int64_t M, int64_t N, int64_t K, bool trans_a, bool trans_b,
                 bool accumulate) {
  require_operands("emulated cublasLtMatmul (matmul_bf16)", A, B, C);
  enqueue([=] {
    const DeviceAccess open;
    const std::vector<float> a = rounded_bf16(A, trans_a ? K : M, trans_a ? M : K, trans_a ? M : K);
    const std::vector<float> b = rounded_bf16(B, trans_b ? N : K, trans_b ? K : N, trans_b ? K : N);
    cpu::matmul(a.data(), b.data(), C, M, N, K, trans_a, trans_b, accumulate);
  });
}

void matmul_bf16_stored(const float* A, const void* B, float* C, int64_t M, int64_t N, int64_t K, bool trans_a,
                        bool trans_b, bool accumulate) {
  require_operands("emulated cublasLtMatmul (matmul_bf16_stored)", A, B, C);
  enqueue([=] {
    const DeviceAccess open;
    const std::vector<float> a = rounded_bf16(A, trans_a ? K : M, trans_a ? M : K, trans_a ? M : K);
    const std::vector<float> b =
        widened(static_cast<const uint16_t*>(B), trans_b ? N : K, trans_b ? K : N, trans_b ? K : N);
    cpu::matmul(a.data(), b.data(), C, M, N, K, trans_a, trans_b, accumulate);
  });
}

void matmul_fp32_stored(const float* A, const void* B, float* C, int64_t M, int64_t N, int64_t K, bool trans_a,
                        bool trans_b, bool accumulate) {
  matmul_fp32(A, static_cast<const float*>(B), C, M, N, K, trans_a, trans_b, accumulate);
}

void matmul_bf16_both_stored(const void* A, const void* B, float* C, int64_t M, int64_t N, int64_t K, bool trans_a,
                             bool trans_b, bool accumulate) {
  require_operands("emulated cublasLtMatmul (matmul_bf16_both_stored)", A, B, C);
  enqueue([=] {
    const DeviceAccess open;
    const Widened w = widened_operands(A, B, M, N, K, trans_a, trans_b);
    cpu::matmul(w.a.data(), w.b.data(), C, M, N, K, trans_a, trans_b, accumulate);
  });
}

void matmul_fp32_both_stored(const void* A, const void* B, float* C, int64_t M, int64_t N, int64_t K, bool trans_a,
                             bool trans_b, bool accumulate) {
  matmul_fp32(static_cast<const float*>(A), static_cast<const float*>(B), C, M, N, K, trans_a, trans_b, accumulate);
}

// The fp32 sum rounded to bf16 as cuBLASLt's epilogue rounds (to nearest even).
void matmul_bf16_to_stored(const void* A, const void* B, void* C, int64_t M, int64_t N, int64_t K, bool trans_a,
                           bool trans_b) {
  require_operands("emulated cublasLtMatmul (matmul_bf16_to_stored)", A, B, C);
  enqueue([=] {
    const DeviceAccess open;
    const Widened w = widened_operands(A, B, M, N, K, trans_a, trans_b);
    std::vector<float> c(static_cast<std::size_t>(M * N));
    cpu::matmul(w.a.data(), w.b.data(), c.data(), M, N, K, trans_a, trans_b, false);
    auto* out = static_cast<uint16_t*>(C);
    for (std::size_t i = 0; i < c.size(); ++i) out[i] = emu::bf16_bits(c[i]);
  });
}

void matmul_fp32_to_stored(const void* A, const void* B, void* C, int64_t M, int64_t N, int64_t K, bool trans_a,
                           bool trans_b) {
  matmul_fp32(static_cast<const float*>(A), static_cast<const float*>(B), static_cast<float*>(C), M, N, K, trans_a,
              trans_b, false);
}

void matmul_strided(const float* A, int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc, int64_t M,
                    int64_t N, int64_t K, bool trans_a, bool trans_b, float alpha, float beta) {
  check_matmul_strides("emulated-cuda", M, N, K, trans_a, trans_b, lda, ldb, ldc);
  require_operands("emulated cublasLtMatmul (matmul_strided)", A, B, C);
  enqueue([=] {
    const DeviceAccess open;
    cpu::matmul_strided(A, lda, B, ldb, C, ldc, M, N, K, trans_a, trans_b, alpha, beta);
  });
}

// Each product of the batch on sgemm; bf16 operands are exact in fp32, so only the summation order
// differs from cuBLASLt. beta = 0 clears C first: cuBLASLt does not read C then (it may hold NaN).
void matmul_batched_bf16(Batched<const uint16_t> A, Batched<const uint16_t> B, Batched<float> C, int64_t batch,
                         int64_t M, int64_t N, int64_t K, bool trans_a, bool trans_b, float alpha, float beta) {
  check_matmul_strides("emulated-cuda batched", M, N, K, trans_a, trans_b, A.ld, B.ld, C.ld);
  if (batch < 0) fail("emulated-cuda matmul_batched_bf16: negative batch ", batch);
  const char* call = "emulated cublasLtMatmul (matmul_batched_bf16)";
  require_device(A.p, call, "operand A");
  require_device(B.p, call, "operand B");
  require_device(C.p, call, "output C");
  enqueue([=] {
    const DeviceAccess open;
    const int64_t a_rows = trans_a ? K : M, a_cols = trans_a ? M : K, b_rows = trans_b ? N : K,
                  b_cols = trans_b ? K : N;
    for (int64_t n = 0; n < batch; ++n) {
      const std::vector<float> a = widened(A.p + n * A.stride, a_rows, a_cols, A.ld);
      const std::vector<float> b = widened(B.p + n * B.stride, b_rows, b_cols, B.ld);
      float* c = C.p + n * C.stride;
      if (beta == 0.f)
        for (int64_t r = 0; r < M; ++r) std::fill(c + r * C.ld, c + r * C.ld + N, 0.f);
      cpu::matmul_strided(a.data(), a_cols, b.data(), b_cols, c, C.ld, M, N, K, trans_a, trans_b, alpha, beta);
    }
  });
}

}  // namespace headroom::kernels::cuda_emu
