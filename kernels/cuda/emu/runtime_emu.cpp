// The emulated runtime's memory entries (runtime.h), on the device arena: copies check which side
// each pointer is on, and open the arena only for their own duration.
#include "cuda/emu/runtime_emu.h"

#include <cstring>

namespace headroom::kernels::cuda_emu {

void* alloc(std::size_t bytes) { return arena_alloc(bytes); }
void free(void* p) { arena_free(p); }

void copy_to_host(void* host_dst, const void* src, std::size_t bytes) {
  require_host(host_dst, "copy_to_host", "the destination");
  require_device(src, "copy_to_host", "the source");
  const DeviceAccess open;
  if (bytes) std::memcpy(host_dst, src, bytes);
}

void copy_from_host(void* dst, const void* host_src, std::size_t bytes) {
  require_device(dst, "copy_from_host", "the destination");
  require_host(host_src, "copy_from_host", "the source");
  const DeviceAccess open;
  if (bytes) std::memcpy(dst, host_src, bytes);
}

void copy(void* dst, const void* src, std::size_t bytes) {
  require_device(dst, "copy", "the destination");
  require_device(src, "copy", "the source");
  const DeviceAccess open;
  if (bytes) std::memmove(dst, src, bytes);
}

void synchronize() {}

void* scratch(std::size_t bytes) {
  static void* buf = nullptr;
  static std::size_t have = 0;
  if (bytes > have) {
    arena_free(buf);
    have = bytes + bytes / 4 + (std::size_t{1} << 20);
    buf = arena_alloc(have);
  }
  // Fresh contents each time, NaN-patterned, so a kernel that reads scratch it did not write fails.
  const DeviceAccess open;
  std::memset(buf, 0xFF, bytes);
  return buf;
}

void zero_async(void* p, std::size_t bytes) {
  require_device(p, "zero_async", "the buffer");
  const DeviceAccess open;
  if (bytes) std::memset(p, 0, bytes);
}

void download(void* host_dst, const void* src, std::size_t bytes) { copy_to_host(host_dst, src, bytes); }

unsigned long long* error_slot() {
  static auto* slot = [] {
    auto* p = static_cast<unsigned long long*>(arena_alloc(sizeof(unsigned long long)));
    const DeviceAccess open;
    *p = ~0ull;
    return p;
  }();
  return slot;
}

void reset_error_slot() {
  unsigned long long* p = error_slot();
  const DeviceAccess open;
  *p = ~0ull;
}

std::size_t max_dynamic_smem() { return 227 * 1024; }  // H100/H200 opt-in limit

int multiprocessors() { return 132; }  // H100 SXM

}  // namespace headroom::kernels::cuda_emu
