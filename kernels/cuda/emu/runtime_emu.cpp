// The emulated runtime's memory entries (runtime.h), on the device arena: copies check which side
// each pointer is on, and open the arena only for their own duration.
#include "cuda/emu/runtime_emu.h"

#include <cstring>

namespace headroom::kernels::cuda_emu {

void* alloc(std::size_t bytes) { return arena_alloc(bytes); }
void free(void* p) { arena_free(p); }

namespace {

// What the armed error slot reports (watch_error_slot); empty: not armed.
std::string& watched() {
  static std::string what;
  return what;
}

// Host transfers and waits refused while positive (NoHostWaits).
int& no_waits() {
  static thread_local int depth = 0;
  return depth;
}

void require_may_wait(const char* call) {
  if (no_waits() > 0) fail("emulated ", call, ": the host waits for the device inside a region that must not");
}

// The armed error slot's report, if a kernel wrote one (the emulated stream is always idle).
void check_error_slot() {
  if (watched().empty()) return;
  const std::string what = std::move(watched());
  watched().clear();
  unsigned long long* slot = error_slot();
  const DeviceAccess open;
  const unsigned long long word = *slot;
  if (word == ~0ull) return;
  *slot = ~0ull;
  fail(what, " (row ", word >> 32, ": ", static_cast<int32_t>(word & 0xffffffffu), ")");
}

}  // namespace

NoHostWaits::NoHostWaits() { ++no_waits(); }
NoHostWaits::~NoHostWaits() { --no_waits(); }

void copy_to_host(void* host_dst, const void* src, std::size_t bytes) {
  require_may_wait("copy_to_host");
  require_host(host_dst, "copy_to_host", "the destination");
  require_device(src, "copy_to_host", "the source");
  {
    const DeviceAccess open;
    if (bytes) std::memcpy(host_dst, src, bytes);
  }
  check_error_slot();
}

void copy_from_host(void* dst, const void* host_src, std::size_t bytes) {
  require_may_wait("copy_from_host");
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

void synchronize() {
  require_may_wait("synchronize");
  check_error_slot();
}

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

void watch_error_slot(const std::string& what) { watched() = what; }

std::size_t max_dynamic_smem() { return 227 * 1024; }  // H100/H200 opt-in limit

int multiprocessors() { return 132; }  // H100 SXM

}  // namespace headroom::kernels::cuda_emu
