// The CUDA backend's runtime: device memory, the one stream every op runs on, a stream-ordered scratch
// workspace, and the checked kernel launch. Real implementation: runtime.cu; the CPU emulator's:
// emu/runtime_emu.h.
//
// Ordering: every op enqueues its work on stream() and returns; work is ordered by the stream, so
// buffers (and the scratch workspace) can be reused by the next op without waiting. Results reach
// the host only through copy_to_host / download (which wait), or synchronize().
#pragma once

#include "cuda/simt.h"

#include <cstddef>
#include <cstdint>
#include <string>

#if defined(__CUDACC__)
#include "cuda/cuda_check.h"
#include "cuda/stream.h"
#include "headroom_error.h"
#endif

namespace headroom::kernels::HR_CUDA_NS {

// ---- the memory entries of the op table (ops.h) -----------------------------------------------------
void* alloc(std::size_t bytes);  // alloc(0) returns a unique pointer that free() accepts
void free(void* p);
void copy_to_host(void* host_dst, const void* src, std::size_t bytes);    // waits for the stream
void copy_from_host(void* dst, const void* host_src, std::size_t bytes);  // host buffer reusable on return
void copy(void* dst, const void* src, std::size_t bytes);                 // device to device, enqueued
void synchronize();

// ---- for the ops ------------------------------------------------------------------------------------
// One workspace shared by all ops. The pointer is valid until the next scratch() call: an op that
// needs several buffers asks once for their total and carves it (carve below).
void* scratch(std::size_t bytes);
void zero_async(void* p, std::size_t bytes);
// bf16 copies (round to nearest even) and back, enqueued; `what` names the launch in errors.
// In pointwise.cuh.
void round_to_bf16(const float* x, uint16_t* y, int64_t n, const char* what);
void widen_from_bf16(const uint16_t* x, float* y, int64_t n, const char* what);
// Copies device → host and waits.
void download(void* host_dst, const void* src, std::size_t bytes);
// A device word for errors found inside kernels (cross_entropy's out-of-range targets): ~0ull when
// clear; a kernel atomicMin's (row << 32 | the row's bad value) into it, so the first row's report
// wins. No op waits to read it: watch_error_slot arms the check with what the op reports, and the
// next call that waits for the stream (copy_to_host, download, synchronize) reads the word and,
// when it is set, clears it and throws `what` with the row and value.
unsigned long long* error_slot();
void watch_error_slot(const std::string& what);
// Largest dynamic shared memory one block may use (opt-in), bytes.
std::size_t max_dynamic_smem();
// Streaming multiprocessors of the device (how many blocks run at once, to a factor).
int multiprocessors();

// Aligned sub-buffers of one scratch() allocation.
class Carver {
 public:
  static constexpr std::size_t kAlign = 256;
  // First pass: sizes only (base == nullptr); second pass: real pointers.
  explicit Carver(void* base = nullptr) : base_(static_cast<unsigned char*>(base)) {}
  template <class T>
  T* take(std::size_t count) {
    const std::size_t off = used_;
    used_ += (count * sizeof(T) + kAlign - 1) / kAlign * kAlign;
    return base_ ? reinterpret_cast<T*>(base_ + off) : nullptr;
  }
  std::size_t used() const { return used_; }

 private:
  unsigned char* base_;
  std::size_t used_ = 0;
};

inline dim3 grid_1d(int64_t n, int64_t threads, int64_t max_blocks = 8192) {
  int64_t b = ceil_div(n, threads);
  if (b < 1) b = 1;
  if (b > max_blocks) b = max_blocks;
  return dim3(static_cast<unsigned>(b));
}

#if defined(__CUDACC__)
// Launches on stream() and checks the launch (configuration errors surface here; faults inside the
// kernel surface at the next checked call that waits).
template <class Kernel, class... Args>
void launch(const char* name, Kernel kernel, dim3 grid, dim3 block, std::size_t smem, Args... args) {
  if (grid.y > 65535 || grid.z > 65535)
    fail("CUDA launch of ", name, ": grid ", grid.x, "×", grid.y, "×", grid.z, " exceeds 65535 in y or z");
  if (smem > 48 * 1024) {
    if (smem > max_dynamic_smem())
      fail("CUDA launch of ", name, ": needs ", smem, " bytes of shared memory, the device allows ",
           max_dynamic_smem());
    HEADROOM_CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  }
  kernel<<<grid, block, smem, stream()>>>(args...);
  HEADROOM_CUDA_LAUNCHED(name);
}
#endif

}  // namespace headroom::kernels::HR_CUDA_NS

#if !defined(__CUDACC__)
#include "cuda/emu/runtime_emu.h"
#endif
