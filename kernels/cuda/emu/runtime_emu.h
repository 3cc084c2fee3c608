// runtime.h for the CPU emulator: device memory comes from the emulated GPU's arena
// (device_arena.h), launches run at once, and every pointer a kernel is handed is checked to be
// device memory. The memory entries are defined in runtime_emu.cpp.
#pragma once

#include "cuda/emu/device_arena.h"
#include "cuda/emu/emulator.h"
#include "cuda/runtime.h"
#include "headroom_error.h"

#include <functional>
#include <string>
#include <type_traits>

namespace headroom::kernels::cuda_emu {

// While one exists (on this thread), a host transfer or wait (copy_to_host, download,
// copy_from_host, synchronize) throws: a test's proof that a region enqueues device work only, as
// a CUDA graph's capture or an overlapped step needs (copy_from_host waits on a GPU: pageable memory).
class NoHostWaits {
 public:
  NoHostWaits();
  ~NoHostWaits();
  NoHostWaits(const NoHostWaits&) = delete;
  NoHostWaits& operator=(const NoHostWaits&) = delete;
};

// The emulated stream: `work` runs at once, or, while this thread captures a graph (capture_begin),
// is recorded for the graph to run when it is launched. Every op that touches device memory goes
// through it (launches, copies, zero_async, the GEMMs, the scratch's poisoning), so it must own what
// it reads: capture by value.
void enqueue(std::function<void()> work);

// Every pointer argument of a kernel must be device memory: a host pointer would fault on a GPU.
// (Pointers inside a struct argument are not seen here; the ops that pass one also hand each of
// those buffers to a checked launch, copy or zero_async, except attention_bwd_bf16's lse.)
template <class... Args>
void require_device_args(const char* name, const Args&... args) {
  int k = 0;
  const auto one = [&](const auto& a) {
    ++k;
    if constexpr (std::is_pointer_v<std::decay_t<decltype(a)>>)
      if (a != nullptr && !on_device(a))
        require_device(static_cast<const void*>(a), (std::string("emulated launch of ") + name).c_str(),
                       ("kernel argument " + std::to_string(k)).c_str());
  };
  (one(args), ...);
}

template <class Kernel, class... Args>
void launch(const char* name, Kernel kernel, dim3 grid, dim3 block, std::size_t smem, Args... args) {
  if (grid.y > 65535 || grid.z > 65535) fail("emulated launch of ", name, ": grid too large in y/z");
  if (smem > max_dynamic_smem())
    fail("emulated launch of ", name, ": needs ", smem, " bytes of shared memory, more than ", max_dynamic_smem());
  require_device_args(name, args...);
  enqueue([=] {
    const std::function<void()> body = [&] { kernel(args...); };
    const DeviceAccess open;
    emu::run_grid(grid, block, smem, body);
  });
}

}  // namespace headroom::kernels::cuda_emu
