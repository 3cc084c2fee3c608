// Softmax cross-entropy per row, the loss of next-token prediction.
#include <algorithm>
#include <cmath>
#include <limits>

#include "cpu/cpu_kernels.h"
#include "cpu/cpu_math.h"
#include "headroom_error.h"

namespace headroom::kernels::cpu {

namespace {

HEADROOM_SIMD_CLONES
float row_max(const float* x, int64_t n) {
  float m = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : m)
  for (int64_t i = 0; i < n; ++i) m = std::max(m, x[i]);
  return m;
}

// sum_i exp(x_i - shift), in double: a 10^5-word vocabulary's sum in float loses ~4 digits.
HEADROOM_SIMD_CLONES
double sum_exp(const float* x, float shift, int64_t n) {
  double s = 0.0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) s += fast_exp(x[i] - shift);
  return s;
}

// g_i = exp(x_i - shift) and their sum, in double as sum_exp: one exp per logit when the gradient
// is wanted too. x and g may be the same buffer (element i is read, then written).
HEADROOM_SIMD_CLONES
double exp_and_sum(const float* x, float* g, float shift, int64_t n) {
  double s = 0.0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) {
    const float e = fast_exp(x[i] - shift);
    g[i] = e;
    s += e;
  }
  return s;
}

HEADROOM_SIMD_CLONES
void scale_row(float* g, float factor, int64_t n) {
  for (int64_t i = 0; i < n; ++i) g[i] *= factor;
}

void check_targets(const int32_t* targets, int64_t rows, int64_t V) {
  for (int64_t r = 0; r < rows; ++r)
    if (targets[r] >= V)
      fail("cpu cross_entropy: row ", r, " has target ", targets[r], " but the vocabulary has ", V, " entries");
}

}  // namespace

void cross_entropy(const float* logits, const int32_t* targets, float* losses, float* dlogits, int64_t rows, int64_t V,
                   float grad_scale) {
  // Validated before the parallel region: an exception cannot leave an OpenMP thread.
  check_targets(targets, rows, V);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = logits + r * V;
    float* g = dlogits != nullptr ? dlogits + r * V : nullptr;
    const int32_t t = targets[r];
    if (t < 0) {
      losses[r] = 0.f;
      if (g != nullptr) std::fill(g, g + V, 0.f);
      continue;
    }
    // A NaN logit slips past the max (std::max drops it) but not the sum: the loss comes out NaN, as
    // the stability monitor needs. Likewise an infinite logit gives inf - inf = NaN.
    const float m = row_max(x, V);
    // Read the target's logit before g (possibly the same memory) is overwritten.
    const double x_t = x[t];
    const double sum = g != nullptr ? exp_and_sum(x, g, m, V) : sum_exp(x, m, V);
    losses[r] = static_cast<float>(std::log(sum) - (x_t - m));
    if (g != nullptr) {
      // Normalising by the double sum, not exp(x - lse) with a rounded lse, keeps 1e-7 relative.
      scale_row(g, static_cast<float>(grad_scale / sum), V);
      g[t] -= grad_scale;
    }
  }
}

}  // namespace headroom::kernels::cpu
