// SwiGLU gating of the MLP: out = silu(gate) * up, silu(g) = g * sigmoid(g).
#include "cpu/cpu_kernels.h"
#include "cpu/cpu_math.h"
#include "cpu/cpu_parallel.h"

namespace headroom::kernels::cpu {

namespace {

HEADROOM_SIMD_CLONES
void swiglu_fwd_range(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = gate[i] * sigmoid(gate[i]) * up[i];
}

// d silu/dg = sig(g) (1 + g (1 - sig(g))). Reads everything before writing, so dgate/dup may alias
// gate/up element for element.
HEADROOM_SIMD_CLONES
void swiglu_bwd_range(const float* gate, const float* up, const float* dout, float* dgate, float* dup, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i], u = up[i], d = dout[i];
    const float sg = sigmoid(g);
    dgate[i] = d * u * sg * (1.f + g * (1.f - sg));
    dup[i] = d * g * sg;
  }
}

// Chunks of a few thousand elements: large enough for the clone dispatch to vanish, small enough to
// balance threads.
constexpr int64_t kChunk = 4096;

}  // namespace

void swiglu_fwd(const float* gate, const float* up, float* out, int64_t n) {
  const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for if (n >= kParallelMinElements)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t i0 = c * kChunk, len = std::min(kChunk, n - i0);
    swiglu_fwd_range(gate + i0, up + i0, out + i0, len);
  }
}

void swiglu_bwd(const float* gate, const float* up, const float* dout, float* dgate, float* dup, int64_t n) {
  const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for if (n >= kParallelMinElements)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t i0 = c * kChunk, len = std::min(kChunk, n - i0);
    swiglu_bwd_range(gate + i0, up + i0, dout + i0, dgate + i0, dup + i0, len);
  }
}

}  // namespace headroom::kernels::cpu
