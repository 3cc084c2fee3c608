// RMSNorm split into per-row statistics and their application, so a tensor-parallel caller holding a
// slice of each row can all-reduce `sumsq` (forward) and `dot` (backward) in between.
#include <algorithm>
#include <cmath>

#include "cpu/cpu_kernels.h"
#include "cpu/cpu_parallel.h"

namespace headroom::kernels::cpu {

namespace {

// Row sums of up to ~10^4 products accumulate in double: the result feeds a reciprocal square root
// and the backward's rstd³ term, where float sums would cost the 1e-6 agreement the tests ask for.
double row_dot(const float* a, const float* b, const float* c, int64_t n) {
  double s = 0.0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(a[i]) * b[i] * c[i];
  return s;
}

}  // namespace

namespace {

// One row of row_sumsq and of rms_apply: the fused add_rms_norm runs the same two, so it rounds as
// they do.
float sumsq_of(const float* xr, int64_t n) {
  double s = 0.0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(xr[i]) * xr[i];
  return static_cast<float>(s);
}

void apply_row(const float* xr, const float* w, float sumsq, float* yr, float* rstd, int64_t n, int64_t n_total,
               float eps) {
  const float s = static_cast<float>(1.0 / std::sqrt(static_cast<double>(sumsq) / static_cast<double>(n_total) + eps));
  if (rstd != nullptr) *rstd = s;
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) yr[i] = xr[i] * s * w[i];
}

}  // namespace

void row_sumsq(const float* x, float* sumsq, int64_t rows, int64_t n) {
#pragma omp parallel for if (rows * n >= kParallelMinElements)
  for (int64_t r = 0; r < rows; ++r) sumsq[r] = sumsq_of(x + r * n, n);
}

// rstd may be null when nothing will run backward (decoding).
void rms_apply(const float* x, const float* w, const float* sumsq, float* y, float* rstd, int64_t rows, int64_t n,
               int64_t n_total, float eps) {
#pragma omp parallel for if (rows * n >= kParallelMinElements)
  for (int64_t r = 0; r < rows; ++r)
    apply_row(x + r * n, w, sumsq[r], y + r * n, rstd != nullptr ? rstd + r : nullptr, n, n_total, eps);
}

// Row by row, so h's row is still in cache when it is squared and normed.
void add_rms_norm(const float* a, const float* b, float* h, const float* w, float* y, float* rstd, int64_t rows,
                  int64_t n, float eps) {
#pragma omp parallel for if (rows * n >= kParallelMinElements)
  for (int64_t r = 0; r < rows; ++r) {
    const float* ar = a + r * n;
    if (b != nullptr) {
      const float* br = b + r * n;
      float* hr = h + r * n;
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) hr[i] = ar[i] + br[i];
      ar = hr;
    }
    apply_row(ar, w, sumsq_of(ar, n), y + r * n, rstd != nullptr ? rstd + r : nullptr, n, n, eps);
  }
}

void rms_bwd_dot(const float* x, const float* w, const float* dy, float* dot, int64_t rows, int64_t n) {
#pragma omp parallel for if (rows * n >= kParallelMinElements)
  for (int64_t r = 0; r < rows; ++r) dot[r] = static_cast<float>(row_dot(x + r * n, w, dy + r * n, n));
}

namespace {

// One row's dx from its rstd s and dot, written or added (rms_dx, rms_bwd: the same bits).
void dx_row(const float* xr, const float* w, const float* dyr, float s, float dot, int64_t n, int64_t n_total,
            float* dxr, bool accumulate) {
  const float c = static_cast<float>(static_cast<double>(s) * s * s * dot / n_total);
  if (accumulate) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) dxr[i] += s * w[i] * dyr[i] - c * xr[i];
  } else {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) dxr[i] = s * w[i] * dyr[i] - c * xr[i];
  }
}

void rms_dx(const float* x, const float* w, const float* dy, const float* rstd, const float* dot, float* dx,
            int64_t rows, int64_t n, int64_t n_total) {
#pragma omp parallel for if (rows * n >= kParallelMinElements)
  for (int64_t r = 0; r < rows; ++r) dx_row(x + r * n, w, dy + r * n, rstd[r], dot[r], n, n_total, dx + r * n, false);
}

// dw sums over all rows (tokens): threads take disjoint column slices and walk every row, so there is
// no cross-thread reduction, and each column accumulates in double (10^5 tokens per step).
void rms_dw(const float* x, const float* dy, const float* rstd, float* dw, int64_t rows, int64_t n) {
  constexpr int64_t kColumns = 64;
  const int64_t slices = (n + kColumns - 1) / kColumns;
#pragma omp parallel for if (rows * n >= kParallelMinElements)
  for (int64_t sl = 0; sl < slices; ++sl) {
    const int64_t c0 = sl * kColumns, width = std::min(n, c0 + kColumns) - c0;
    double acc[kColumns] = {};
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = x + r * n + c0;
      const float* dyr = dy + r * n + c0;
      const double s = rstd[r];
#pragma omp simd
      for (int64_t i = 0; i < width; ++i) acc[i] += static_cast<double>(dyr[i]) * xr[i] * s;
    }
    for (int64_t i = 0; i < width; ++i) dw[c0 + i] += static_cast<float>(acc[i]);
  }
}

}  // namespace

void rms_bwd_apply(const float* x, const float* w, const float* dy, const float* rstd, const float* dot, float* dx,
                   float* dw, int64_t rows, int64_t n, int64_t n_total) {
  // dw first: dx may alias dy (an in-place backward), and dw still needs the incoming dy.
  if (dw != nullptr) rms_dw(x, dy, rstd, dw, rows, n);
  rms_dx(x, w, dy, rstd, dot, dx, rows, n, n_total);
}

void rms_bwd(const float* x, const float* w, const float* dy, const float* rstd, float* dx, float* dw, int64_t rows,
             int64_t n, bool accumulate) {
  if (dw != nullptr) rms_dw(x, dy, rstd, dw, rows, n);
#pragma omp parallel for if (rows * n >= kParallelMinElements)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    const float* dyr = dy + r * n;
    dx_row(xr, w, dyr, rstd[r], static_cast<float>(row_dot(xr, w, dyr, n)), n, n, dx + r * n, accumulate);
  }
}

}  // namespace headroom::kernels::cpu
