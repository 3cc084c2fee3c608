// Whole-buffer reductions: gradient norms for clipping and the stability monitor's NaN/Inf count.
#include <bit>
#include <cstdint>

#include "cpu/cpu_kernels.h"
#include "cpu/cpu_parallel.h"

namespace headroom::kernels::cpu {

// Norms of 10^8-element gradients lose digits in float; the sum is carried in double.
double sum_squares(const float* x, int64_t n) {
  double s = 0.0;
#pragma omp parallel for simd reduction(+ : s) if (n >= kParallelMinElements)
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(x[i]) * x[i];
  return s;
}

// NaN and ±Inf are exactly the floats whose exponent bits are all ones. Testing the bits instead of
// std::isfinite keeps the loop vectorisable and right even if someone compiles with -ffinite-math-only.
int64_t count_nonfinite(const float* x, int64_t n) {
  constexpr uint32_t exponent = 0x7f800000u;
  int64_t count = 0;
#pragma omp parallel for simd reduction(+ : count) if (n >= kParallelMinElements)
  for (int64_t i = 0; i < n; ++i) count += (std::bit_cast<uint32_t>(x[i]) & exponent) == exponent;
  return count;
}

}  // namespace headroom::kernels::cpu
