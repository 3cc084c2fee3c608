// cuda_ops() of the emulated-device build (CMake option HEADROOM_EMULATED_DEVICE, for tests only):
// the CUDA backend's tables with their kernels on the CPU emulator, cuBLASLt emulated on sgemm and
// memory from the arena (device_arena.h). One emulated GPU per process, so `--train.device auto`
// chooses it and the trainer's whole device path (buffers, copies, collectives, checkpoint
// gathers) runs on a machine without a GPU.
#include "cuda/emu/device_arena.h"
#include "cuda/emu/runtime_emu.h"
#include "cuda/table.h"
#include "ops.h"

namespace headroom::kernels {

int cuda_device_count() { return 1; }

// The arena's range is what the emulated GPU can hand out: its "memory".
DeviceMemory cuda_device_memory() {
  return {static_cast<int64_t>(cuda_emu::arena_capacity()),
          "the emulated device's arena (kernels/cuda/emu/device_arena.h)"};
}

const Ops& cuda_ops(AttentionKernel attention) {
  return cuda_emu::table_for(
      {"emulated-cuda", "emulated-cuda-flash", "emulated-cuda-simt", "emulated-cuda-fp32", "emulated-cuda-blocked"},
      cuda_precision::bf16(), attention);
}

int cuda_kv_bytes(AttentionKernel attention) { return cuda_precision::kv_bytes(cuda_precision::bf16(), attention); }

int cuda_weight_bytes() { return cuda_precision::weight_bytes(cuda_precision::bf16()); }

}  // namespace headroom::kernels
