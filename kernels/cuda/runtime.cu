// The CUDA backend's runtime (runtime.h): per-process state for the current device, created on first
// use — the stream, the scratch workspace, the error word — plus the memory entries of the table.
#include "cuda/runtime.h"
#include "cuda/stream.h"

#include <cstdio>

namespace headroom::kernels::cuda {

namespace {

struct State {
  int device = -1;
  cudaStream_t stream = nullptr;
  void* scratch = nullptr;
  std::size_t scratch_bytes = 0;
  unsigned long long* error = nullptr;
  std::string watched;  // what an armed error slot reports (watch_error_slot); empty: not armed
  std::size_t max_smem = 0;
  int sms = 0;
};

// Never destroyed: at process exit the CUDA runtime may already be gone.
State& state() {
  static State* s = [] {
    auto* st = new State;
    HEADROOM_CUDA_CHECK(cudaGetDevice(&st->device));
    HEADROOM_CUDA_CHECK(cudaStreamCreateWithFlags(&st->stream, cudaStreamNonBlocking));
    HEADROOM_CUDA_CHECK(cudaMalloc(&st->error, sizeof(unsigned long long)));
    HEADROOM_CUDA_CHECK(cudaMemset(st->error, 0xFF, sizeof(unsigned long long)));
    int smem = 0;
    HEADROOM_CUDA_CHECK(cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, st->device));
    st->max_smem = static_cast<std::size_t>(smem);
    HEADROOM_CUDA_CHECK(cudaDeviceGetAttribute(&st->sms, cudaDevAttrMultiProcessorCount, st->device));
    HEADROOM_CUDA_CHECK(cudaDeviceSynchronize());
    return st;
  }();
  return *s;
}

}  // namespace

cudaStream_t stream() { return state().stream; }

void* alloc(std::size_t bytes) {
  state();
  void* p = nullptr;
  const cudaError_t rc = cudaMalloc(&p, bytes == 0 ? 256 : bytes);
  if (rc != cudaSuccess) {
    cudaGetLastError();
    std::size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    cudaGetLastError();
    fail("cuda alloc: cudaMalloc of ", bytes, " bytes failed: ", cudaGetErrorString(rc), " (", free_b >> 20,
         " MiB free of ", total_b >> 20, " MiB)");
  }
  return p;
}

// Called from destructors (Buffer): reports instead of throwing.
void free(void* p) {
  if (p == nullptr) return;
  const cudaError_t rc = cudaFree(p);
  if (rc != cudaSuccess)
    std::fprintf(stderr, "headroom: cudaFree failed: %s (%s)\n", cudaGetErrorName(rc), cudaGetErrorString(rc));
}

// After the stream is idle: the armed error slot's report, if a kernel wrote one.
void check_error_slot() {
  State& s = state();
  if (s.watched.empty()) return;
  const std::string what = std::move(s.watched);
  s.watched.clear();
  unsigned long long word = 0;
  HEADROOM_CUDA_CHECK(cudaMemcpy(&word, s.error, sizeof word, cudaMemcpyDeviceToHost));
  if (word == ~0ull) return;
  HEADROOM_CUDA_CHECK(cudaMemset(s.error, 0xFF, sizeof word));
  fail(what, " (row ", word >> 32, ": ", static_cast<int32_t>(word & 0xffffffffu), ")");
}

void copy_to_host(void* host_dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  HEADROOM_CUDA_CHECK(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, state().stream));
  HEADROOM_CUDA_CHECK(cudaStreamSynchronize(state().stream));
  check_error_slot();
}

void copy_from_host(void* dst, const void* host_src, std::size_t bytes) {
  if (bytes == 0) return;
  HEADROOM_CUDA_CHECK(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, state().stream));
  HEADROOM_CUDA_CHECK(cudaStreamSynchronize(state().stream));
}

void copy(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  HEADROOM_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, state().stream));
}

void synchronize() {
  HEADROOM_CUDA_CHECK(cudaStreamSynchronize(state().stream));
  check_error_slot();
}

void* scratch(std::size_t bytes) {
  State& s = state();
  if (bytes > s.scratch_bytes) {
    // Work already enqueued may still read the old workspace.
    HEADROOM_CUDA_CHECK(cudaStreamSynchronize(s.stream));
    if (s.scratch) HEADROOM_CUDA_CHECK(cudaFree(s.scratch));
    s.scratch = nullptr;
    s.scratch_bytes = 0;
    const std::size_t grown = bytes + bytes / 4 + (std::size_t{1} << 20);
    s.scratch = alloc(grown);
    s.scratch_bytes = grown;
  }
  return s.scratch;
}

void zero_async(void* p, std::size_t bytes) {
  if (bytes == 0) return;
  HEADROOM_CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, state().stream));
}

void download(void* host_dst, const void* src, std::size_t bytes) { copy_to_host(host_dst, src, bytes); }

unsigned long long* error_slot() { return state().error; }

void watch_error_slot(const std::string& what) { state().watched = what; }

std::size_t max_dynamic_smem() { return state().max_smem; }

int multiprocessors() { return state().sms; }

}  // namespace headroom::kernels::cuda
