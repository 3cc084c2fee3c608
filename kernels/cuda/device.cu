#include "cuda/cuda_check.h"
#include "cuda/device.h"

namespace headroom::kernels::cuda {

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error so later calls are not poisoned
    return 0;
  }
  return n;
}

std::string describe_device(int device) {
  cudaDeviceProp p{};
  HEADROOM_CUDA_CHECK(cudaGetDeviceProperties(&p, device));
  return cat(p.name, " (sm_", p.major, p.minor, ", ",
             static_cast<double>(p.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0), " GiB)");
}

int current_device() {
  int d = 0;
  HEADROOM_CUDA_CHECK(cudaGetDevice(&d));
  return d;
}

long long total_memory() {
  std::size_t free_b = 0, total_b = 0;
  HEADROOM_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  return static_cast<long long>(total_b);
}

}  // namespace headroom::kernels::cuda
