// The CUDA entries of ops.h and cuda_tables.h. The device check comes first so the message names the
// real obstacle on a machine without a GPU.
#include "cuda/cuda_tables.h"
#include "cuda/device.h"
#include "cuda/table.h"
#include "headroom_error.h"

#include <cstdlib>
#include <cstring>

namespace headroom::kernels {

namespace {

void require_gpu() {
  if (cuda::device_count() == 0)
    fail("--device cuda: no usable GPU on this machine (cudaGetDeviceCount found none)");
}

}  // namespace

int cuda_device_count() { return cuda::device_count(); }

const Ops& cuda_ops_bf16() {
  require_gpu();
  static const Ops table = cuda::make_table("cuda", true);
  return table;
}

const Ops& cuda_ops_fp32() {
  require_gpu();
  static const Ops table = cuda::make_table("cuda-fp32", false);
  return table;
}

const Ops& cuda_ops() {
  const char* p = std::getenv("HEADROOM_CUDA_PRECISION");
  if (p == nullptr || *p == '\0' || std::strcmp(p, "bf16") == 0) return cuda_ops_bf16();
  if (std::strcmp(p, "fp32") == 0) return cuda_ops_fp32();
  fail("HEADROOM_CUDA_PRECISION = '", p, "': expected bf16 or fp32");
}

}  // namespace headroom::kernels
