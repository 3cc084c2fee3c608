// The emulated GPU's memory (device_arena.h).
#include "cuda/emu/device_arena.h"

#include <execinfo.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <unordered_map>
#include <vector>

#include "headroom_error.h"

namespace headroom::kernels::cuda_emu {

namespace {

constexpr std::size_t kAlign = 256;
// What DeviceAccess opens and closes, in whole 2 MiB pages of a 2 MiB-aligned range: with
// transparent huge pages, mprotect then changes one entry per 2 MiB instead of 512, and that
// toggle, at every device call, was half of the emulated tests' time.
constexpr std::size_t kPage = std::size_t{2} << 20;

struct Arena {
  unsigned char* base = nullptr;
  std::size_t reserved = 0;
  std::size_t top = 0;     // bytes cut from the range so far
  std::size_t mapped = 0;  // top rounded up to pages: what DeviceAccess opens
  int depth = 0;
  std::map<std::uintptr_t, std::size_t> live;                         // address -> rounded size
  std::unordered_map<std::size_t, std::vector<std::uintptr_t>> idle;  // rounded size -> freed blocks
  struct sigaction previous {};
};

void on_segv(int sig, siginfo_t* info, void* context);

Arena& arena() {
  static Arena* a = [] {
    auto* s = new Arena;  // never destroyed: device frees may come from static destructors
    // The range is only reserved: NORESERVE and PROT_NONE cost no memory until pages are opened.
    // Smaller ranges where the address space is limited (ulimit -v).
    for (std::size_t mib : {65536, 16384, 4096, 1024, 256}) {
      const std::size_t bytes = mib << 20;
      void* p = mmap(nullptr, bytes + kPage, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (p != MAP_FAILED) {
        const auto u = reinterpret_cast<std::uintptr_t>(p);
        s->base = reinterpret_cast<unsigned char*>((u + kPage - 1) / kPage * kPage);
        s->reserved = bytes;
        // Huge pages where the kernel grants them (a hint: without them only the speed differs).
        madvise(s->base, bytes, MADV_HUGEPAGE);
        break;
      }
    }
    if (s->base == nullptr)
      fail("emulated device: cannot reserve even 256 MiB of address space for device memory (ulimit -v?)");
    struct sigaction act {};
    act.sa_sigaction = on_segv;
    act.sa_flags = SA_SIGINFO;
    sigemptyset(&act.sa_mask);
    if (sigaction(SIGSEGV, &act, &s->previous) != 0) fail("emulated device: sigaction(SIGSEGV) failed");
    return s;
  }();
  return *a;
}

bool in_range(const Arena& a, const void* p) {
  const auto u = reinterpret_cast<std::uintptr_t>(p), b = reinterpret_cast<std::uintptr_t>(a.base);
  return u >= b && u < b + a.reserved;
}

// The live allocation holding p: {start, size}, or {0, 0}.
std::pair<std::uintptr_t, std::size_t> holder(const Arena& a, const void* p) {
  const auto u = reinterpret_cast<std::uintptr_t>(p);
  auto it = a.live.upper_bound(u);
  if (it == a.live.begin()) return {0, 0};
  --it;
  if (u >= it->first + it->second) return {0, 0};
  return {it->first, it->second};
}

void protect(unsigned char* from, std::size_t bytes, int prot) {
  if (bytes != 0 && mprotect(from, bytes, prot) != 0)
    fail("emulated device: mprotect of ", bytes, " bytes of device memory failed");
}

void write_err(const char* s) {
  std::size_t n = 0;
  while (s[n] != '\0') ++n;
  [[maybe_unused]] const ssize_t w = write(STDERR_FILENO, s, n);
}

// A host load or store of device memory: say so, show the host stack, abort. Any other fault goes
// to the handler that was there before (MPI's, or the default one).
void on_segv(int sig, siginfo_t* info, void* context) {
  Arena& a = arena();
  if (!in_range(a, info->si_addr)) {
    sigaction(SIGSEGV, &a.previous, nullptr);
    if ((a.previous.sa_flags & SA_SIGINFO) && a.previous.sa_sigaction != nullptr)
      a.previous.sa_sigaction(sig, info, context);
    return;  // the default action takes the re-executed fault
  }
  char line[320];
  const auto [start, size] = holder(a, info->si_addr);
  if (size != 0)
    std::snprintf(line, sizeof line,
                  "emulated device: the host read or wrote device memory at %p, %zu bytes into a "
                  "device allocation of %zu bytes at %p, outside any device call (a device pointer "
                  "used as a host one; copy it to the host first). Host call stack:\n",
                  info->si_addr, static_cast<std::size_t>(reinterpret_cast<std::uintptr_t>(info->si_addr) - start),
                  size, reinterpret_cast<void*>(start));
  else
    std::snprintf(line, sizeof line,
                  "emulated device: the host touched the device address range at %p, in no live "
                  "allocation (freed device memory?). Host call stack:\n",
                  info->si_addr);
  write_err(line);
  void* frames[48];
  backtrace_symbols_fd(frames, backtrace(frames, 48), STDERR_FILENO);
  signal(SIGABRT, SIG_DFL);
  abort();
}

}  // namespace

void* arena_alloc(std::size_t bytes) {
  Arena& a = arena();
  const std::size_t rounded = bytes == 0 ? kAlign : (bytes + kAlign - 1) / kAlign * kAlign;
  std::uintptr_t p = 0;
  auto idle = a.idle.find(rounded);
  if (idle != a.idle.end() && !idle->second.empty()) {
    p = idle->second.back();
    idle->second.pop_back();
  } else {
    if (rounded > a.reserved - a.top)
      fail("emulated device: out of device memory (", bytes, " bytes asked, ", a.reserved - a.top, " of the ",
           a.reserved >> 20, " MiB range left)");
    p = reinterpret_cast<std::uintptr_t>(a.base) + a.top;
    a.top += rounded;
    const std::size_t mapped = (a.top + kPage - 1) / kPage * kPage;
    if (a.depth > 0) protect(a.base + a.mapped, mapped - a.mapped, PROT_READ | PROT_WRITE);
    a.mapped = mapped;
  }
  a.live.emplace(p, rounded);
  return reinterpret_cast<void*>(p);
}

void arena_free(void* p) {
  if (p == nullptr) return;
  Arena& a = arena();
  const auto it = a.live.find(reinterpret_cast<std::uintptr_t>(p));
  if (it == a.live.end())
    fail("emulated device: free of ", p,
         in_range(a, p) ? ", which is not the start of a live device allocation" : ", a host pointer");
  a.idle[it->second].push_back(it->first);
  a.live.erase(it);
}

bool on_device(const void* p) {
  const Arena& a = arena();
  return in_range(a, p) && holder(a, p).second != 0;
}

void require_device(const void* p, const char* call, const char* what) {
  if (p == nullptr || on_device(p)) return;
  if (in_range(arena(), p)) fail(call, ": ", what, " (", p, ") points into freed device memory");
  fail(call, ": ", what, " (", p,
       ") is a host pointer; the emulated device only accepts memory "
       "from its alloc (a real GPU would fault or read garbage here)");
}

void require_host(const void* p, const char* call, const char* what) {
  if (p == nullptr || !in_range(arena(), p)) return;
  fail(call, ": ", what, " (", p, ") is device memory where a host buffer belongs");
}

DeviceAccess::DeviceAccess() {
  Arena& a = arena();
  if (a.depth++ == 0) protect(a.base, a.mapped, PROT_READ | PROT_WRITE);
}

DeviceAccess::~DeviceAccess() {
  Arena& a = arena();
  if (--a.depth == 0 && a.mapped != 0) mprotect(a.base, a.mapped, PROT_NONE);
}

std::size_t arena_capacity() { return arena().reserved; }

std::size_t arena_live_bytes() {
  std::size_t n = 0;
  for (const auto& [p, size] : arena().live) n += size;
  return n;
}

}  // namespace headroom::kernels::cuda_emu
