// Every op of the CUDA tables against the CPU backend on a GPU (checks in test_gpu_cases.h):
// cuda_ops_fp32() within 1e-5 relative norm error everywhere, cuda_ops_bf16() within 2e-2 for the
// bf16 GEMM and attention and 1e-5 for every other op. Exits 77 (CTest: skipped) without a GPU.
#include "cuda/cuda_tables.h"
#include "cuda/device.h"
#include "test_gpu_cases.h"

#include <cstdlib>
#include <iostream>

namespace headroom::kernels::gputest {

// HEADROOM_GPU_TEST_SMALL=1: the emulator's small shapes only (run_gpu_checks.sh runs them under
// compute-sanitizer, which slows kernels by orders of magnitude).
const bool kLarge = std::getenv("HEADROOM_GPU_TEST_SMALL") == nullptr;

INSTANTIATE_TEST_SUITE_P(Cuda, GpuOps,
                         ::testing::Values(Table{"bf16", []() -> const Ops& { return cuda_ops_bf16(); },
                                                 true, kLarge},
                                           Table{"fp32", []() -> const Ops& { return cuda_ops_fp32(); },
                                                 false, kLarge}),
                         table_name);

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
