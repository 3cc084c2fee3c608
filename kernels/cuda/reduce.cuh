// Reductions: sum_squares, count_nonfinite, the four RMSNorm pieces and the fused cross-entropy.
// A source fragment: compiled once by reduce.cu (nvcc), or once by the emulated test (g++).
//
// Every reduction runs in a fixed order (fixed grid, per-thread strides, tree within blocks, partials
// summed by one block), so results repeat exactly from run to run. Sums of many squares or products
// accumulate in double, as the CPU reference does.
#pragma once

#include "cuda/entries.h"
#include "cuda/runtime.h"
#include "headroom_error.h"

namespace headroom::kernels::HR_CUDA_NS {

namespace reduce {

constexpr int kThreads = 256;
constexpr int kMaxPartials = 1024;  // blocks of the first pass of a whole-buffer reduction

__global__ void sum_squares_partial(const float* x, int64_t n, double* partial) {
  __shared__ double red[33];
  double s = 0.0;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const double v = x[i];
    s += v * v;
  }
  s = block_sum(s, red);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

__global__ void nonfinite_partial(const float* x, int64_t n, unsigned long long* partial) {
  __shared__ unsigned long long red[33];
  unsigned long long c = 0;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    c += is_nonfinite(x[i]) ? 1u : 0u;
  c = block_sum(c, red);
  if (threadIdx.x == 0) partial[blockIdx.x] = c;
}

// One block adds the partials (in a fixed order) into out[0].
template <class T>
__global__ void finish_sum(const T* partial, int n, T* out) {
  __shared__ T red[33];
  T s = T(0);
  for (int i = static_cast<int>(threadIdx.x); i < n; i += static_cast<int>(blockDim.x)) s += partial[i];
  s = block_sum(s, red);
  if (threadIdx.x == 0) out[0] = s;
}

// ---- RMSNorm: one warp per row -----------------------------------------------------------------------
constexpr int kRowsPerBlock = kThreads / 32;

__device__ __forceinline__ int64_t warp_row() {
  return static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
}

__global__ void row_sumsq_kernel(const float* x, float* sumsq, int64_t rows, int64_t n) {
  const int64_t r = warp_row();
  if (r >= rows) return;  // whole warps leave together
  const unsigned lane = threadIdx.x % 32;
  const float* xr = x + r * n;
  double s = 0.0;
  for (int64_t i = lane; i < n; i += 32) s += static_cast<double>(xr[i]) * xr[i];
  s = warp_sum(s);
  if (lane == 0) sumsq[r] = static_cast<float>(s);
}

__global__ void rms_apply_kernel(const float* x, const float* w, const float* sumsq, float* y, float* rstd,
                                 int64_t rows, int64_t n, int64_t n_total, float eps) {
  const int64_t r = warp_row();
  if (r >= rows) return;
  const unsigned lane = threadIdx.x % 32;
  const float s = static_cast<float>(1.0 / sqrt(static_cast<double>(sumsq[r]) / static_cast<double>(n_total) + eps));
  if (rstd != nullptr && lane == 0) rstd[r] = s;
  const float* xr = x + r * n;
  float* yr = y + r * n;
  for (int64_t i = lane; i < n; i += 32) yr[i] = xr[i] * s * w[i];
}

// row_sumsq_kernel and rms_apply_kernel in one, in their order of operations: h's row is read back
// from the cache lines the warp has just written. y in fp32 or, for a stored GEMM input, bf16. b
// null: a's row normed alone.
template <class Y>
__global__ void add_rms_norm_kernel(const float* a, const float* b, float* h, const float* w, Y* y, float* rstd,
                                    int64_t rows, int64_t n, float eps) {
  const int64_t r = warp_row();
  if (r >= rows) return;
  const unsigned lane = threadIdx.x % 32;
  const float* ar = a + r * n;
  const float* br = b ? b + r * n : nullptr;
  float* hr = b ? h + r * n : nullptr;
  double ss = 0.0;
  for (int64_t i = lane; i < n; i += 32) {
    const float v = br ? ar[i] + br[i] : ar[i];
    if (hr) hr[i] = v;
    ss += static_cast<double>(v) * v;
  }
  const float* xr = hr ? hr : ar;  // the row normed: h, or a where nothing is added
  ss = warp_sum(ss);
  const float sumsq = static_cast<float>(ss);
  const float s = static_cast<float>(1.0 / sqrt(static_cast<double>(sumsq) / static_cast<double>(n) + eps));
  if (rstd != nullptr && lane == 0) rstd[r] = s;
  Y* yr = y + r * n;
  for (int64_t i = lane; i < n; i += 32) store_as(yr + i, xr[i] * s * w[i]);
}

// sum_i x[i]·w[i]·dy[i] over one row, by the row's warp (every lane gets the sum): rms_bwd_dot_kernel's
// and rms_bwd_kernel's, so the two give the same bits.
__device__ inline double warp_row_dot(const float* xr, const float* w, const float* dyr, int64_t n, unsigned lane) {
  double s = 0.0;
  for (int64_t i = lane; i < n; i += 32) s += static_cast<double>(xr[i]) * w[i] * dyr[i];
  return warp_sum(s);
}

__global__ void rms_bwd_dot_kernel(const float* x, const float* w, const float* dy, float* dot, int64_t rows,
                                   int64_t n) {
  const int64_t r = warp_row();
  if (r >= rows) return;
  const unsigned lane = threadIdx.x % 32;
  const double s = warp_row_dot(x + r * n, w, dy + r * n, n, lane);
  if (lane == 0) dot[r] = static_cast<float>(s);
}

// One row's dx from its rstd s and dot, by the row's warp, written or added: rms_dx_kernel's and
// rms_bwd_kernel's, so the two give the same bits.
__device__ inline void warp_row_dx(const float* xr, const float* w, const float* dyr, float s, float dot, int64_t n,
                                   int64_t n_total, float* dxr, bool accumulate, unsigned lane) {
  const float c = static_cast<float>(static_cast<double>(s) * s * s * dot / static_cast<double>(n_total));
  for (int64_t i = lane; i < n; i += 32) {
    const float g = s * w[i] * dyr[i] - c * xr[i];
    dxr[i] = accumulate ? dxr[i] + g : g;
  }
}

__global__ void rms_dx_kernel(const float* x, const float* w, const float* dy, const float* rstd, const float* dot,
                              float* dx, int64_t rows, int64_t n, int64_t n_total) {
  const int64_t r = warp_row();
  if (r >= rows) return;
  warp_row_dx(x + r * n, w, dy + r * n, rstd[r], dot[r], n, n_total, dx + r * n, false, threadIdx.x % 32);
}

// rms_bwd_dot_kernel and rms_dx_kernel in one, for whole rows (n_total = n): the warp of a row forms
// its dot as rms_bwd_dot_kernel does (the same order, the same bits), then writes or adds its dx.
__global__ void rms_bwd_kernel(const float* x, const float* w, const float* dy, const float* rstd, float* dx,
                               int64_t rows, int64_t n, bool accumulate) {
  const int64_t r = warp_row();
  if (r >= rows) return;
  const unsigned lane = threadIdx.x % 32;
  const float* xr = x + r * n;
  const float* dyr = dy + r * n;
  const auto dot = static_cast<float>(warp_row_dot(xr, w, dyr, n, lane));
  warp_row_dx(xr, w, dyr, rstd[r], dot, n, n, dx + r * n, accumulate, lane);
}

// dw partials: block (32 columns × 8 row lanes) sums dy·x·rstd over one chunk of rows into
// partial[chunk, column]; dw_finish adds the chunks in order.
__global__ void rms_dw_partial(const float* x, const float* dy, const float* rstd, int64_t rows, int64_t n,
                               int64_t chunk_rows, double* partial) {
  __shared__ double acc[8][33];
  const int64_t c = static_cast<int64_t>(blockIdx.x) * 32 + threadIdx.x;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * chunk_rows;
  const int64_t r1 = imin64(rows, r0 + chunk_rows);
  double s = 0.0;
  if (c < n)
    for (int64_t r = r0 + threadIdx.y; r < r1; r += 8)
      s += static_cast<double>(dy[r * n + c]) * x[r * n + c] * static_cast<double>(rstd[r]);
  acc[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && c < n) {
    double t = 0.0;
    for (int k = 0; k < 8; ++k) t += acc[k][threadIdx.x];
    partial[static_cast<int64_t>(blockIdx.y) * n + c] = t;
  }
}

__global__ void rms_dw_finish(const double* partial, int64_t chunks, int64_t n, float* dw) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= n) return;
  double t = 0.0;
  for (int64_t k = 0; k < chunks; ++k) t += partial[k * n + c];
  dw[c] += static_cast<float>(t);
}

// ---- cross-entropy: one block per row --------------------------------------------------------------
constexpr int kLossThreads = 512;

__global__ void cross_entropy_kernel(const float* logits, const int32_t* targets, float* losses, float* dlogits,
                                     int64_t V, float grad_scale, unsigned long long* bad_row) {
  __shared__ float fred[33];
  __shared__ double dred[33];
  const int64_t r = blockIdx.x;
  const float* x = logits + r * V;
  float* g = dlogits != nullptr ? dlogits + r * V : nullptr;
  const int32_t t = targets[r];
  if (t < 0 || t >= V) {
    // Masked row: loss 0, gradient 0. A target past the vocabulary is reported to the host, with its row.
    if (t >= V && threadIdx.x == 0)
      atomicMin(bad_row, static_cast<unsigned long long>(r) << 32 | static_cast<uint32_t>(t));
    if (threadIdx.x == 0) losses[r] = 0.f;
    if (g != nullptr)
      for (int64_t i = threadIdx.x; i < V; i += blockDim.x) g[i] = 0.f;
    return;
  }
  // fmaxf drops a NaN logit, the sum does not: a NaN anywhere gives a NaN loss (as on the CPU).
  float m = neg_inf();
  for (int64_t i = threadIdx.x; i < V; i += blockDim.x) m = fmaxf(m, x[i]);
  m = block_max(m, fred);
  double s = 0.0;
  for (int64_t i = threadIdx.x; i < V; i += blockDim.x) s += static_cast<double>(expf(x[i] - m));
  // The target's logit is read before any thread overwrites it (g may alias logits): block_sum
  // ends with a barrier.
  const float xt = x[t];
  s = block_sum(s, dred);
  if (threadIdx.x == 0) losses[r] = static_cast<float>(log(s) - (static_cast<double>(xt) - m));
  if (g != nullptr) {
    const float factor = static_cast<float>(grad_scale / s);
    for (int64_t i = threadIdx.x; i < V; i += blockDim.x) {
      const float gi = expf(x[i] - m) * factor;
      g[i] = i == t ? gi - grad_scale : gi;
    }
  }
}

}  // namespace reduce

double sum_squares(const float* x, int64_t n) {
  if (n <= 0) return 0.0;
  const dim3 grid = grid_1d(n, reduce::kThreads, reduce::kMaxPartials);
  auto* partial = static_cast<double*>(scratch(sizeof(double) * (grid.x + 1)));
  launch("sum_squares", reduce::sum_squares_partial, grid, dim3(reduce::kThreads), 0, x, n, partial);
  launch("sum_squares(finish)", reduce::finish_sum<double>, dim3(1), dim3(reduce::kThreads), 0,
         static_cast<const double*>(partial), static_cast<int>(grid.x), partial + grid.x);
  double out = 0.0;
  download(&out, partial + grid.x, sizeof out);
  return out;
}

int64_t count_nonfinite(const float* x, int64_t n) {
  if (n <= 0) return 0;
  const dim3 grid = grid_1d(n, reduce::kThreads, reduce::kMaxPartials);
  auto* partial = static_cast<unsigned long long*>(scratch(sizeof(unsigned long long) * (grid.x + 1)));
  launch("count_nonfinite", reduce::nonfinite_partial, grid, dim3(reduce::kThreads), 0, x, n, partial);
  launch("count_nonfinite(finish)", reduce::finish_sum<unsigned long long>, dim3(1), dim3(reduce::kThreads), 0,
         static_cast<const unsigned long long*>(partial), static_cast<int>(grid.x), partial + grid.x);
  unsigned long long out = 0;
  download(&out, partial + grid.x, sizeof out);
  return static_cast<int64_t>(out);
}

namespace reduce {
inline dim3 row_grid(int64_t rows) {
  const int64_t blocks = ceil_div(rows, kRowsPerBlock);
  if (blocks > 0x7fffffff) fail("cuda RMSNorm: ", rows, " rows exceed one launch");
  return dim3(static_cast<unsigned>(blocks));
}
}  // namespace reduce

void row_sumsq(const float* x, float* sumsq, int64_t rows, int64_t n) {
  if (rows <= 0) return;
  launch("row_sumsq", reduce::row_sumsq_kernel, reduce::row_grid(rows), dim3(reduce::kThreads), 0, x, sumsq, rows, n);
}

void rms_apply(const float* x, const float* w, const float* sumsq, float* y, float* rstd, int64_t rows, int64_t n,
               int64_t n_total, float eps) {
  if (rows <= 0) return;
  launch("rms_apply", reduce::rms_apply_kernel, reduce::row_grid(rows), dim3(reduce::kThreads), 0, x, w, sumsq, y, rstd,
         rows, n, n_total, eps);
}

void add_rms_norm(const float* a, const float* b, float* h, const float* w, float* y, float* rstd, int64_t rows,
                  int64_t n, float eps) {
  if (rows <= 0) return;
  launch("add_rms_norm", reduce::add_rms_norm_kernel<float>, reduce::row_grid(rows), dim3(reduce::kThreads), 0, a, b, h,
         w, y, rstd, rows, n, eps);
}
void add_rms_norm_stored_bf16(const float* a, const float* b, float* h, const float* w, void* y, float* rstd,
                              int64_t rows, int64_t n, float eps) {
  if (rows <= 0) return;
  launch("add_rms_norm (bf16 output)", reduce::add_rms_norm_kernel<uint16_t>, reduce::row_grid(rows),
         dim3(reduce::kThreads), 0, a, b, h, w, static_cast<uint16_t*>(y), rstd, rows, n, eps);
}
void add_rms_norm_stored_fp32(const float* a, const float* b, float* h, const float* w, void* y, float* rstd,
                              int64_t rows, int64_t n, float eps) {
  add_rms_norm(a, b, h, w, static_cast<float*>(y), rstd, rows, n, eps);
}

void rms_bwd_dot(const float* x, const float* w, const float* dy, float* dot, int64_t rows, int64_t n) {
  if (rows <= 0) return;
  launch("rms_bwd_dot", reduce::rms_bwd_dot_kernel, reduce::row_grid(rows), dim3(reduce::kThreads), 0, x, w, dy, dot,
         rows, n);
}

// dw += sum_r dy·x·rstd, in a fixed order (rms_dw_partial, rms_dw_finish).
inline void rms_dw(const float* x, const float* dy, const float* rstd, float* dw, int64_t rows, int64_t n) {
  const int64_t chunk_rows = imax64(256, ceil_div(rows, 65535));
  const int64_t chunks = ceil_div(rows, chunk_rows);
  auto* partial = static_cast<double*>(scratch(sizeof(double) * chunks * n));
  launch("rms_bwd (dw)", reduce::rms_dw_partial,
         dim3(static_cast<unsigned>(ceil_div(n, 32)), static_cast<unsigned>(chunks)), dim3(32, 8), 0, x, dy, rstd, rows,
         n, chunk_rows, partial);
  launch("rms_bwd (dw finish)", reduce::rms_dw_finish, grid_1d(n, reduce::kThreads, 1 << 30), dim3(reduce::kThreads), 0,
         static_cast<const double*>(partial), chunks, n, dw);
}

void rms_bwd_apply(const float* x, const float* w, const float* dy, const float* rstd, const float* dot, float* dx,
                   float* dw, int64_t rows, int64_t n, int64_t n_total) {
  if (rows <= 0 || n <= 0) return;
  // dw first: dx may alias dy, and dw still needs the incoming dy (the stream keeps the order).
  if (dw != nullptr) rms_dw(x, dy, rstd, dw, rows, n);
  launch("rms_bwd_apply(dx)", reduce::rms_dx_kernel, reduce::row_grid(rows), dim3(reduce::kThreads), 0, x, w, dy, rstd,
         dot, dx, rows, n, n_total);
}

void rms_bwd(const float* x, const float* w, const float* dy, const float* rstd, float* dx, float* dw, int64_t rows,
             int64_t n, bool accumulate) {
  if (rows <= 0 || n <= 0) return;
  // dw first, as in rms_bwd_apply: dx may alias dy.
  if (dw != nullptr) rms_dw(x, dy, rstd, dw, rows, n);
  launch("rms_bwd", reduce::rms_bwd_kernel, reduce::row_grid(rows), dim3(reduce::kThreads), 0, x, w, dy, rstd, dx, rows,
         n, accumulate);
}

void cross_entropy(const float* logits, const int32_t* targets, float* losses, float* dlogits, int64_t rows, int64_t V,
                   float grad_scale) {
  if (rows <= 0) return;
  if (rows > 0x7fffffff) fail("cuda cross_entropy: ", rows, " rows exceed one launch");
  launch("cross_entropy", reduce::cross_entropy_kernel, dim3(static_cast<unsigned>(rows)), dim3(reduce::kLossThreads),
         0, logits, targets, losses, dlogits, V, grad_scale, error_slot());
  // Reported where the host next waits (the loss's readback), not by a wait here per call.
  watch_error_slot("cuda cross_entropy: a target outside the vocabulary of " + std::to_string(V) + " entries");
}

}  // namespace headroom::kernels::HR_CUDA_NS
