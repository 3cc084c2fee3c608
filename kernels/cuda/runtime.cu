// The CUDA backend's runtime (runtime.h): per-process state for the current device, created on first
// use — the stream, the scratch workspace, the error word — plus the memory and graph entries of the
// table.
#include "cuda/entries.h"
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
  // Counts the frees of device memory: a graph captured at another count may hold a freed pointer.
  uint64_t memory_generation = 0;
  bool capturing = false;
  uint64_t capture_generation = 0;  // memory_generation when the capture began
};

// An executable graph and the memory generation it was captured at.
struct Graph {
  cudaGraphExec_t exec = nullptr;
  uint64_t generation = 0;
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
  ++state().memory_generation;
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
    if (s.capturing)
      fail("cuda scratch: ", bytes, " bytes asked inside a graph capture, ", s.scratch_bytes,
           " held; growing it would wait for the device (run the captured work once before capturing it)");
    ++s.memory_generation;
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

void capture_begin() {
  State& s = state();
  if (s.capturing) fail("cuda capture_begin: a graph capture is already under way");
  // Thread-local mode: an unsafe call of this thread (a synchronous copy, a device-wide wait) fails
  // the capture instead of silently running outside it.
  HEADROOM_CUDA_CHECK(cudaStreamBeginCapture(s.stream, cudaStreamCaptureModeThreadLocal));
  s.capturing = true;
  s.capture_generation = s.memory_generation;
}

void* capture_end(bool keep) {
  State& s = state();
  if (!s.capturing) fail("cuda capture_end: no graph capture is under way");
  s.capturing = false;
  cudaGraph_t graph = nullptr;
  const cudaError_t rc = cudaStreamEndCapture(s.stream, &graph);
  if (!keep || rc != cudaSuccess) {
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();  // an invalidated capture's error is reported here, not later
    if (keep) fail("cuda capture_end: the capture failed: ", cudaGetErrorName(rc), " (", cudaGetErrorString(rc), ")");
    return nullptr;
  }
  if (s.memory_generation != s.capture_generation) {
    HEADROOM_CUDA_CHECK(cudaGraphDestroy(graph));
    fail("cuda capture_end: device memory was freed inside the capture");
  }
  auto* g = new Graph{nullptr, s.capture_generation};
  const cudaError_t inst = cudaGraphInstantiate(&g->exec, graph, 0);
  HEADROOM_CUDA_CHECK(cudaGraphDestroy(graph));
  if (inst != cudaSuccess) {
    delete g;
    HEADROOM_CUDA_CHECK(inst);
  }
  return g;
}

bool graph_launch(void* graph) {
  State& s = state();
  auto* g = static_cast<Graph*>(graph);
  if (g->generation != s.memory_generation) return false;
  HEADROOM_CUDA_CHECK(cudaGraphLaunch(g->exec, s.stream));
  return true;
}

// Called from destructors: reports instead of throwing.
void graph_free(void* graph) {
  auto* g = static_cast<Graph*>(graph);
  if (g == nullptr) return;
  const cudaError_t rc = cudaGraphExecDestroy(g->exec);
  if (rc != cudaSuccess)
    std::fprintf(stderr, "headroom: cudaGraphExecDestroy failed: %s (%s)\n", cudaGetErrorName(rc),
                 cudaGetErrorString(rc));
  delete g;
}

std::size_t max_dynamic_smem() { return state().max_smem; }

int multiprocessors() { return state().sms; }

}  // namespace headroom::kernels::cuda
