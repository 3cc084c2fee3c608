// In-place vector updates (gradient accumulation, loss scaling).
#include "cpu/cpu_kernels.h"
#include "cpu/cpu_parallel.h"

namespace headroom::kernels::cpu {

void axpy(float* y, const float* x, float a, int64_t n) {
#pragma omp parallel for simd if (n >= kParallelMinElements)
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

void add(float* out, const float* a, const float* b, int64_t n) {
#pragma omp parallel for simd if (n >= kParallelMinElements)
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

void scale(float* x, float a, int64_t n) {
#pragma omp parallel for simd if (n >= kParallelMinElements)
  for (int64_t i = 0; i < n; ++i) x[i] *= a;
}

}  // namespace headroom::kernels::cpu
