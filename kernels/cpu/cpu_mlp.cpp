// SwiGLU gating of the MLP: out = silu(gate) * up, silu(g) = g * sigmoid(g), over rows [gate | up].
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

}  // namespace

// One row at a time: the gate and up halves of a row are the two inputs of the element-wise form.
void swiglu_fwd(const float* gu, float* out, int64_t rows, int64_t F) {
#pragma omp parallel for if (rows * F >= kParallelMinElements)
  for (int64_t r = 0; r < rows; ++r) swiglu_fwd_range(gu + r * 2 * F, gu + r * 2 * F + F, out + r * F, F);
}

void swiglu_bwd(const float* gu, const float* dout, float* dgu, int64_t rows, int64_t F) {
#pragma omp parallel for if (rows * F >= kParallelMinElements)
  for (int64_t r = 0; r < rows; ++r)
    swiglu_bwd_range(gu + r * 2 * F, gu + r * 2 * F + F, dout + r * F, dgu + r * 2 * F, dgu + r * 2 * F + F, F);
}

}  // namespace headroom::kernels::cpu
