// Every CUDA runtime call and kernel launch is checked; a failure throws headroom::Error with the
// call, the file:line and CUDA's own message.
#pragma once

#include "headroom_error.h"

#include <cuda_runtime.h>

namespace headroom::kernels::cuda {

inline void check(cudaError_t rc, const char* call, const char* file, int line) {
  if (rc != cudaSuccess)
    fail("CUDA ", call, " failed at ", file, ":", line, ": ", cudaGetErrorName(rc), " (", cudaGetErrorString(rc), ")");
}

}  // namespace headroom::kernels::cuda

#define HEADROOM_CUDA_CHECK(call) ::headroom::kernels::cuda::check((call), #call, __FILE__, __LINE__)
// After a <<<...>>> launch: launch-configuration errors surface from cudaGetLastError.
#define HEADROOM_CUDA_LAUNCHED(name) ::headroom::kernels::cuda::check(cudaGetLastError(), name, __FILE__, __LINE__)
