// The emulated GPU's memory: one reserved address range that the host cannot touch.
//
// Why: on the emulator "device" memory is host memory, so a trainer that hands a host buffer to a
// kernel, a GEMM or a device collective, or reads a device buffer on the host, would run here and
// crash (or read garbage) only on a real GPU. The arena makes both mistakes stop the run:
//   - every device call checks its pointers (require_device / require_host) and throws
//     headroom::Error naming the call and the argument;
//   - the arena's pages are PROT_NONE except while a device call runs (a DeviceAccess scope), so a
//     host load or store of device memory faults; the SIGSEGV handler names the address and the
//     allocation it lies in and prints the host call stack, then aborts.
//
// Allocation: 256-byte aligned blocks cut from the range front to back; a freed block is reused for
// a later request of the same rounded size (training allocates the same shapes again and again).
// Single-threaded like the emulator: device calls come from one host thread.
#pragma once

#include <cstddef>

namespace headroom::kernels::cuda_emu {

void* arena_alloc(std::size_t bytes);
void arena_free(void* p);  // throws for a pointer the arena did not hand out

// Inside an allocation that is live now.
bool on_device(const void* p);

// Throw headroom::Error "<call>: <what> is a host pointer (...)" / "... is device memory".
// nullptr passes both (kernels take optional arguments as null).
void require_device(const void* p, const char* call, const char* what);
void require_host(const void* p, const char* call, const char* what);

// The arena is readable and writable while at least one DeviceAccess lives (nestable).
class DeviceAccess {
 public:
  DeviceAccess();
  ~DeviceAccess();
  DeviceAccess(const DeviceAccess&) = delete;
  DeviceAccess& operator=(const DeviceAccess&) = delete;
};

// Bytes handed out and not freed (for tests).
std::size_t arena_live_bytes();

// The size of the reserved range: the most the emulated GPU can hand out (its "memory").
std::size_t arena_capacity();

}  // namespace headroom::kernels::cuda_emu
