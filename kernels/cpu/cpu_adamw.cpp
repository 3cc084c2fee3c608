// AdamW with bias correction and decoupled weight decay (Loshchilov & Hutter), as in PyTorch.
#include <cmath>

#include "cpu/cpu_kernels.h"
#include "cpu/cpu_parallel.h"
#include "headroom_error.h"

namespace headroom::kernels::cpu {

void adamw(float* p, const float* g, float* m, float* v, int64_t n, float lr, float beta1, float beta2, float eps,
           float weight_decay, int64_t step) {
  if (step < 1) fail("cpu adamw: step = ", step, " but steps count from 1 (bias correction)");
  // 1 - beta^step in double: with beta2 = 0.999 at step 1 the float difference keeps only ~4 digits.
  const double bc1 = 1.0 - std::pow(static_cast<double>(beta1), static_cast<double>(step));
  const double bc2 = 1.0 - std::pow(static_cast<double>(beta2), static_cast<double>(step));
  const float inv_bc1 = static_cast<float>(1.0 / bc1);
  const float inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bc2));
  const float decay = lr * weight_decay;
#pragma omp parallel for simd if (n >= kParallelMinElements)
  for (int64_t i = 0; i < n; ++i) {
    const float gi = g[i];
    const float mi = beta1 * m[i] + (1.f - beta1) * gi;
    const float vi = beta2 * v[i] + (1.f - beta2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    const float update = (mi * inv_bc1) / (std::sqrt(vi) * inv_sqrt_bc2 + eps);
    p[i] -= lr * update + decay * p[i];
  }
}

}  // namespace headroom::kernels::cpu
