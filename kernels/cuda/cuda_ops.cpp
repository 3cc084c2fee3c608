// The CUDA entries of ops.h and cuda_tables.h. The device check comes first so the message names the
// real obstacle on a machine without a GPU.
#include "cuda/cuda_tables.h"
#include "cuda/device.h"
#include "cuda/table.h"
#include "headroom_error.h"

namespace headroom::kernels {

namespace {

void require_gpu() {
  if (cuda::device_count() == 0) fail("--device cuda: no usable GPU on this machine (cudaGetDeviceCount found none)");
}

constexpr cuda::TableNames kNames{"cuda", "cuda-flash", "cuda-simt", "cuda-fp32", "cuda-blocked"};

}  // namespace

int cuda_device_count() { return cuda::device_count(); }

DeviceMemory cuda_device_memory() {
  if (cuda::device_count() == 0) return {-1, "no usable GPU (cudaGetDeviceCount found none)"};
  const int d = cuda::current_device();
  return {cuda::total_memory(), cat("cudaMemGetInfo total of GPU ", d, ", ", cuda::describe_device(d))};
}

const Ops& cuda_ops_bf16(AttentionKernel attention) {
  require_gpu();
  return cuda::table_for(kNames, true, attention);
}

const Ops& cuda_ops_fp32() {
  require_gpu();
  return cuda::table_for(kNames, false, AttentionKernel::kAuto);
}

const Ops& cuda_ops(AttentionKernel attention) {
  require_gpu();
  return cuda::table_for(kNames, cuda_precision::bf16(), attention);
}

int cuda_kv_bytes(AttentionKernel attention) { return cuda_precision::kv_bytes(cuda_precision::bf16(), attention); }

int cuda_weight_bytes() { return cuda_precision::weight_bytes(cuda_precision::bf16()); }

}  // namespace headroom::kernels
