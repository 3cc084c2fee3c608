// Every op of the CUDA tables against the CPU backend on a GPU (checks in test_gpu_cases.h):
// cuda_ops_fp32() within 1e-5 relative norm error everywhere, the bf16 tables within their noise
// floors for the GEMM and attention and 1e-5 for every other op. The bf16 table is checked twice:
// with cuDNN's fused attention where it supports the shape (the default) and with the own flash
// attention only, so each is the other's independent reference through the same CPU result; the
// blocked attention on cuBLASLt (train.attention_kernel = blocked) runs every attention case too, and
// so do the flash kernels' single-stage and streamed variants.
// Exits 77 (CTest: skipped) without a GPU.
#include "cuda/cuda_tables.h"
#include "cuda/cudnn_attention.h"
#include "cuda/device.h"
#include "cuda/entries.h"
#include "test_gpu_cases.h"

#include <cstdlib>
#include <iostream>
#include <string>

namespace headroom::kernels::gputest {

// HEADROOM_GPU_TEST_SMALL=1: the emulator's small shapes only (run_gpu_checks.sh runs them under
// compute-sanitizer, which slows kernels by orders of magnitude).
const bool kLarge = std::getenv("HEADROOM_GPU_TEST_SMALL") == nullptr;

INSTANTIATE_TEST_SUITE_P(
    Cuda, GpuOps,
    ::testing::Values(Table{"bf16", []() -> const Ops& { return cuda_ops_bf16(); }, true, kLarge},
                      Table{"bf16_flash", []() -> const Ops& { return cuda_ops_bf16(AttentionKernel::kFlash); }, true,
                            kLarge},
                      Table{"fp32", []() -> const Ops& { return cuda_ops_fp32(); }, false, kLarge}),
    table_name);

// The default table must really run cuDNN where the rules send a shape to it: a refused graph
// would fall back to the own kernels silently, and the bf16 table's checks would test those twice.
// The log line of the choice is printed on the first call of a shape, so this shape is used here
// only.
TEST(CudnnAttention, TrainingShapeRunsOnCudnn) {
  const cuda::CudnnSupport support = cuda::cudnn_support();
  if (support.sm < 80 || support.version < 90000)
    GTEST_SKIP() << "cuDNN " << support.version << " on sm_" << support.sm << ": the rules keep the own kernels";
  const Ops& d = cuda_ops_bf16();
  const int64_t B = 1, T = 128, H = 3, w = 72;
  Dev<float> q(d, random_floats(B * T * H * w, 1)), k(d, random_floats(B * T * H * w, 2)),
      v(d, random_floats(B * T * H * w, 3)), o(d, B * T * H * w), lse(d, B * H * T);
  ::testing::internal::CaptureStderr();
  d.attention_fwd(q.get(), k.get(), v.get(), o.get(), lse.get(), {B, T, T, 0, H, H, w, w, 0}, 0.1f);
  d.synchronize();
  const std::string log = ::testing::internal::GetCapturedStderr();
  std::cout << log;
  EXPECT_NE(log.find("forward, heads 3/3 (query/KV), widths 72/72 (qk/v), causal: cuDNN"), std::string::npos) << log;
}

// The blocked attention at every attention case, its GEMMs on the real cuBLASLt (the emulator's
// are sgemm): the other ops of its table are the bf16 table's, checked above.
TEST(CudaBlocked, AttentionForwardBackward) {
  check_attention(cuda_ops_bf16(AttentionKernel::kBlocked), true, kLarge, "bf16_blocked");
}

// The flash kernels' other ways of running (the table takes the first that fits): the backward
// with one query-side stage and streamed, the forward streamed, at every attention case.
TEST(CudaFlash, SingleStageAndStreamedMatchTheCpu) {
  const Ops& d = cuda_ops_bf16(AttentionKernel::kFlash);
  for (const int stages : {0, 1}) {
    const AttentionCalls calls{[stages](auto... a) { cuda::attention_fwd_bf16_with(a..., stages); },
                               [stages](auto... a) { cuda::attention_bwd_bf16_with(a..., stages); }};
    check_attention_cases(d, calls, true, attention_cases(kLarge), "flash, stages " + std::to_string(stages));
  }
}

// Split-key decoding and the decoding cache read in place (test_gpu_cases.h).
TEST(CudaFlash, SplitKeyForwardMatchesTheCpu) {
  check_split_forward(cuda_ops_bf16(AttentionKernel::kFlash),
                      {cuda::attention_fwd_bf16_with, cuda::attention_bwd_bf16_with, cuda::attention_decode_splits},
                      attention_cases(kLarge));
}

}  // namespace headroom::kernels::gputest

int main(int argc, char** argv) {
  if (headroom::kernels::cuda::device_count() == 0) {
    std::cout << "no GPU visible: skipping\n";
    return 77;
  }
  std::cout << "device 0: " << headroom::kernels::cuda::describe_device(0) << "\n";
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
