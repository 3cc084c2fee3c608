// The CUDA entry of ops.h. The CUDA op table is being built kernel by kernel (GitHub issue 8:
// cuBLASLt GEMMs, flash attention, NCCL); until every entry exists the table is not handed out, so
// no caller can reach a missing op. The device check comes first so the message says which is the
// real obstacle on this machine.
#include "cuda/device.h"
#include "ops.h"
#include "util/error.h"

namespace headroom::kernels {

const Ops& cuda_ops() {
  if (cuda::device_count() == 0)
    fail("--device cuda: no usable GPU on this machine (cudaGetDeviceCount found none)");
  fail("--device cuda: this build's CUDA op table is incomplete (kernels/cuda has device "
       "discovery only); use --device cpu");
}

}  // namespace headroom::kernels
