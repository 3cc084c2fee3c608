// GPU discovery. Kept free of CUDA headers so host code can ask without including cuda_runtime.h.
#pragma once

#include <string>

namespace headroom::kernels::cuda {

// Number of usable GPUs; 0 when there is no driver or no device (cudaGetDeviceCount fails with
// "insufficient driver" on machines without a GPU, which is not an error for us).
int device_count();

// "NVIDIA H200 (sm_90, 139.8 GiB)"; throws if `device` is not usable.
std::string describe_device(int device);

// The device this thread's CUDA calls go to (cudaGetDevice).
int current_device();

// cudaMemGetInfo's total of the current device, in bytes (creates its context).
long long total_memory();

}  // namespace headroom::kernels::cuda
