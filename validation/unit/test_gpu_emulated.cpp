// The CUDA backend's kernels, compiled from their real sources (kernels/cuda/*.cuh) against the CPU
// emulator (kernels/cuda/emu/emulator.h), checked op by op against the CPU backend with the same
// checks test_gpu_ops runs on a GPU (test_gpu_cases.h). Runs everywhere, GPU or not (label unit).
//
// What it proves: the kernels' indexing, masking, tiling, shared-memory use, reductions, online
// softmax and MMA fragment bookkeeping compute the ops.h contracts. What it cannot: anything about
// the hardware (timing, races the fibers never interleave, register/shared-memory limits), the
// cuBLASLt calls (the emulated matmul is a plain loop, with bf16-rounded operands for the bf16
// table), the memory entries (host memory here) and whether the PTX mma matches the emulated
// fragment layout. Those are test_gpu_ops' job on a GPU.
#define HEADROOM_CUDA_EMULATE 1

#include "cuda/attention.cuh"
#include "cuda/pointwise.cuh"
#include "cuda/reduce.cuh"
#include "cuda/table.h"
#include "matmul_strides.h"
#include "test_gpu_cases.h"

namespace headroom::kernels::cuda_emu {

namespace {
void reference_matmul(const float* A, int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc,
                      int64_t M, int64_t N, int64_t K, bool ta, bool tb, float alpha, float beta,
                      bool bf16) {
  const auto rd = [bf16](float x) { return bf16 ? emu::bf16_value(emu::bf16_bits(x)) : x; };
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t p = 0; p < K; ++p)
        s += static_cast<double>(rd(ta ? A[p * lda + i] : A[i * lda + p])) *
             rd(tb ? B[j * ldb + p] : B[p * ldb + j]);
      float& c = C[i * ldc + j];
      c = static_cast<float>(beta == 0 ? alpha * s : alpha * s + beta * static_cast<double>(c));
    }
}
void packed_matmul(const float* A, const float* B, float* C, int64_t M, int64_t N, int64_t K, bool ta,
                   bool tb, bool acc, bool bf16) {
  reference_matmul(A, ta ? M : K, B, tb ? K : N, C, N, M, N, K, ta, tb, 1.f, acc ? 1.f : 0.f, bf16);
}
}  // namespace

void matmul_fp32(const float* A, const float* B, float* C, int64_t M, int64_t N, int64_t K,
                 bool trans_a, bool trans_b, bool accumulate) {
  packed_matmul(A, B, C, M, N, K, trans_a, trans_b, accumulate, false);
}
void matmul_bf16(const float* A, const float* B, float* C, int64_t M, int64_t N, int64_t K,
                 bool trans_a, bool trans_b, bool accumulate) {
  packed_matmul(A, B, C, M, N, K, trans_a, trans_b, accumulate, true);
}
void matmul_strided(const float* A, int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc,
                    int64_t M, int64_t N, int64_t K, bool trans_a, bool trans_b, float alpha,
                    float beta) {
  check_matmul_strides("emulated-cuda", M, N, K, trans_a, trans_b, lda, ldb, ldc);
  reference_matmul(A, lda, B, ldb, C, ldc, M, N, K, trans_a, trans_b, alpha, beta, false);
}

}  // namespace headroom::kernels::cuda_emu

namespace headroom::kernels::gputest {

const Ops& emulated(bool bf16) {
  static const Ops t_bf16 = cuda_emu::make_table("emulated-cuda", true);
  static const Ops t_fp32 = cuda_emu::make_table("emulated-cuda-fp32", false);
  return bf16 ? t_bf16 : t_fp32;
}

INSTANTIATE_TEST_SUITE_P(Emulated, GpuOps,
                         ::testing::Values(Table{"bf16", []() -> const Ops& { return emulated(true); },
                                                 true, false},
                                           Table{"fp32", []() -> const Ops& { return emulated(false); },
                                                 false, false}),
                         table_name);

}  // namespace headroom::kernels::gputest
