// Host memory for the CPU backend: "device" memory is ordinary host memory, so copies are memcpy and
// there is nothing to synchronise.
#include <cstdlib>
#include <cstring>
#include <new>

#include "cpu/cpu_kernels.h"
#include "cpu/cpu_parallel.h"

namespace headroom::kernels::cpu {

namespace {
// A cache line (and an AVX-512 vector): no two threads' slices of a buffer share a line at the start.
constexpr std::size_t kAlignment = 64;
}  // namespace

void* alloc(std::size_t bytes) {
  // aligned_alloc needs a multiple of the alignment; 0 bytes still gets a unique freeable pointer.
  const std::size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* p = std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

void free(void* p) { std::free(p); }

void copy_to_host(void* host_dst, const void* src, std::size_t bytes) {
  if (bytes > 0) std::memcpy(host_dst, src, bytes);
}

void copy_from_host(void* dst, const void* host_src, std::size_t bytes) {
  if (bytes > 0) std::memcpy(dst, host_src, bytes);
}

void copy(void* dst, const void* src, std::size_t bytes) {
  if (bytes > 0) std::memcpy(dst, src, bytes);
}

void fill(float* x, float value, int64_t n) {
#pragma omp parallel for simd if (n >= kParallelMinElements)
  for (int64_t i = 0; i < n; ++i) x[i] = value;
}

void synchronize() {}

}  // namespace headroom::kernels::cpu
