// runtime.h for the CPU emulator: "device" memory is host memory and launches run at once.
#pragma once

#include "cuda/emu/emulator.h"
#include "cuda/runtime.h"
#include "headroom_error.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

namespace headroom::kernels::cuda_emu {

inline void* alloc(std::size_t bytes) {
  const std::size_t rounded = (bytes + 255) / 256 * 256;
  void* p = std::aligned_alloc(256, rounded == 0 ? 256 : rounded);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
inline void free(void* p) { std::free(p); }
inline void copy_to_host(void* dst, const void* src, std::size_t bytes) {
  if (bytes) std::memcpy(dst, src, bytes);
}
inline void copy_from_host(void* dst, const void* src, std::size_t bytes) {
  if (bytes) std::memcpy(dst, src, bytes);
}
inline void synchronize() {}
inline void* scratch(std::size_t bytes) {
  static std::vector<unsigned char> buf;
  // Fresh contents each time, NaN-patterned, so a kernel that reads scratch it did not write fails.
  buf.assign(bytes + 256, 0xFF);
  return reinterpret_cast<void*>((reinterpret_cast<std::uintptr_t>(buf.data()) + 255) &
                                 ~std::uintptr_t{255});
}
inline void zero_async(void* p, std::size_t bytes) {
  if (bytes) std::memset(p, 0, bytes);
}
inline void download(void* dst, const void* src, std::size_t bytes) {
  if (bytes) std::memcpy(dst, src, bytes);
}
inline unsigned long long* error_slot() {
  static unsigned long long slot = ~0ull;
  return &slot;
}
inline void reset_error_slot() { *error_slot() = ~0ull; }
inline std::size_t max_dynamic_smem() { return 227 * 1024; }  // H100/H200 opt-in limit

template <class Kernel, class... Args>
void launch(const char* name, Kernel kernel, dim3 grid, dim3 block, std::size_t smem, Args... args) {
  if (grid.y > 65535 || grid.z > 65535) fail("emulated launch of ", name, ": grid too large in y/z");
  if (smem > max_dynamic_smem())
    fail("emulated launch of ", name, ": needs ", smem, " bytes of shared memory, more than ",
         max_dynamic_smem());
  const std::function<void()> body = [&] { kernel(args...); };
  emu::run_grid(grid, block, smem, body);
}

}  // namespace headroom::kernels::cuda_emu
