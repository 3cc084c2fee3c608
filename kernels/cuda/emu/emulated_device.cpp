// cuda_ops() of the emulated-device build (CMake option HEADROOM_EMULATED_DEVICE, for tests only):
// the CUDA backend's tables with their kernels on the CPU emulator, cuBLASLt emulated on sgemm and
// memory from the arena (device_arena.h). One emulated GPU per process, so `--train.device auto`
// chooses it and the trainer's whole device path (buffers, copies, collectives, checkpoint
// gathers) runs on a machine without a GPU.
#include "cuda/emu/runtime_emu.h"
#include "cuda/table.h"
#include "ops.h"

#include <cstdlib>
#include <cstring>

namespace headroom::kernels {

int cuda_device_count() { return 1; }

const Ops& cuda_ops() {
  static const Ops bf16 = cuda_emu::make_table("emulated-cuda", true);
  static const Ops fp32 = cuda_emu::make_table("emulated-cuda-fp32", false);
  const char* p = std::getenv("HEADROOM_CUDA_PRECISION");
  if (p == nullptr || *p == '\0' || std::strcmp(p, "bf16") == 0) return bf16;
  if (std::strcmp(p, "fp32") == 0) return fp32;
  fail("HEADROOM_CUDA_PRECISION = '", p, "': expected bf16 or fp32");
}

}  // namespace headroom::kernels
