// The emulated runtime's memory and graph entries (runtime.h), on the device arena: copies check
// which side each pointer is on, and open the arena only for their own duration; a graph is the
// work enqueued during its capture, run again in order when it is launched.
#include "cuda/emu/runtime_emu.h"
#include "cuda/entries.h"

#include <cstring>
#include <memory>
#include <vector>

namespace headroom::kernels::cuda_emu {

namespace {

// Counts the frees of device memory: a graph captured at another count may hold a freed pointer.
uint64_t& memory_generation() {
  static uint64_t generation = 0;
  return generation;
}

// A graph: the work recorded by enqueue during its capture, and the memory generation then.
struct Graph {
  std::vector<std::function<void()>> work;
  uint64_t generation = 0;
};

// The capture under way on this thread, or null.
std::unique_ptr<Graph>& capturing() {
  static thread_local std::unique_ptr<Graph> graph;
  return graph;
}

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
  if (capturing()) fail("emulated ", call, ": the host waits for the device inside a graph capture");
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

void* alloc(std::size_t bytes) { return arena_alloc(bytes); }

void free(void* p) {
  if (p != nullptr) ++memory_generation();
  arena_free(p);
}

void enqueue(std::function<void()> work) {
  if (capturing())
    capturing()->work.push_back(std::move(work));
  else
    work();
}

void capture_begin() {
  if (capturing()) fail("emulated capture_begin: a graph capture is already under way");
  capturing() = std::make_unique<Graph>();
  capturing()->generation = memory_generation();
}

void* capture_end(bool keep) {
  if (!capturing()) fail("emulated capture_end: no graph capture is under way");
  std::unique_ptr<Graph> graph = std::move(capturing());
  if (!keep) return nullptr;
  if (graph->generation != memory_generation())
    fail("emulated capture_end: device memory was freed inside the capture");
  return graph.release();
}

bool graph_launch(void* graph) {
  auto* g = static_cast<Graph*>(graph);
  if (g->generation != memory_generation()) return false;
  for (const auto& work : g->work) enqueue(work);
  return true;
}

void graph_free(void* graph) { delete static_cast<Graph*>(graph); }

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
  enqueue([=] {
    const DeviceAccess open;
    if (bytes) std::memmove(dst, src, bytes);
  });
}

void synchronize() {
  require_may_wait("synchronize");
  check_error_slot();
}

void* scratch(std::size_t bytes) {
  static void* buf = nullptr;
  static std::size_t have = 0;
  if (bytes > have) {
    if (capturing())
      fail("emulated scratch: ", bytes, " bytes asked inside a graph capture, ", have,
           " held; growing it would wait for the device (run the captured work once before capturing it)");
    free(buf);
    have = bytes + bytes / 4 + (std::size_t{1} << 20);
    buf = arena_alloc(have);
  }
  // Fresh contents each time, NaN-patterned, so a kernel that reads scratch it did not write fails.
  enqueue([p = buf, bytes] {
    const DeviceAccess open;
    std::memset(p, 0xFF, bytes);
  });
  return buf;
}

void zero_async(void* p, std::size_t bytes) {
  require_device(p, "zero_async", "the buffer");
  enqueue([=] {
    const DeviceAccess open;
    if (bytes) std::memset(p, 0, bytes);
  });
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
