// cuda_ops() for builds without the CUDA backend: callers that ask for a GPU get a clear reason
// instead of a link error.
#include "ops.h"
#include "cuda/precision.h"
#include "headroom_error.h"

namespace headroom::kernels {

const Ops& cuda_ops(AttentionKernel) {
  fail("Headroom was built without CUDA (configure with -DHEADROOM_CUDA=ON on a machine with nvcc)");
}

int cuda_device_count() { return 0; }

// What a CUDA build would use: a plan made here is for a GPU elsewhere.
int cuda_kv_bytes(AttentionKernel attention) { return cuda_precision::kv_bytes(cuda_precision::bf16(), attention); }

int cuda_weight_bytes() { return cuda_precision::weight_bytes(cuda_precision::bf16()); }

DeviceMemory cuda_device_memory() { return {-1, "Headroom was built without CUDA"}; }

}  // namespace headroom::kernels
