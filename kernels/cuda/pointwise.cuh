// Elementwise ops: fill, axpy, add, scale, SwiGLU, AdamW, embedding lookup/scatter, RoPE, and the
// bf16 copies of operands that cuBLASLt and cuDNN read.
// A source fragment: compiled once by pointwise.cu (nvcc), or once by the emulated test (g++).
// Grid-stride loops with 64-bit indices; one thread per element (the ops are memory-bound).
#pragma once

#include "cuda/entries.h"
#include "cuda/runtime.h"
#include "headroom_error.h"

#include <cmath>
#include <type_traits>

namespace headroom::kernels::HR_CUDA_NS {

namespace pointwise {

constexpr int kThreads = 256;

#define HR_GRID_STRIDE(i, n)                                                             \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

__global__ void to_bf16_kernel(const float* x, uint16_t* y, int64_t n) { HR_GRID_STRIDE(i, n) y[i] = to_bf16(x[i]); }

__global__ void from_bf16_kernel(const uint16_t* x, float* y, int64_t n) {
  HR_GRID_STRIDE(i, n) y[i] = from_bf16(x[i]);
}

__global__ void fill_kernel(float* x, float value, int64_t n) { HR_GRID_STRIDE(i, n) x[i] = value; }
__global__ void axpy_kernel(float* y, const float* x, float a, int64_t n) { HR_GRID_STRIDE(i, n) y[i] += a * x[i]; }
__global__ void add_kernel(float* out, const float* a, const float* b, int64_t n) {
  HR_GRID_STRIDE(i, n) out[i] = a[i] + b[i];
}
__global__ void scale_kernel(float* x, float a, int64_t n) { HR_GRID_STRIDE(i, n) x[i] *= a; }

__device__ __forceinline__ float sigmoid(float g) { return 1.f / (1.f + expf(-g)); }

// Rows of gu are [gate (F) | up (F)]; element i of the output is row i / F, column i % F. out in
// fp32 or, for the down projection's stored input, bf16.
template <class Out>
__global__ void swiglu_fwd_kernel(const float* gu, Out* out, int64_t F, int64_t n) {
  HR_GRID_STRIDE(i, n) {
    const int64_t g = i / F * 2 * F + i % F;
    store_as(out + i, gu[g] * sigmoid(gu[g]) * gu[g + F]);
  }
}
// Reads everything before writing: dgu may alias gu element for element (fp32). dgu in fp32 or,
// for the gate|up products' stored input, bf16.
template <class Out>
__global__ void swiglu_bwd_kernel(const float* gu, const float* dout, Out* dgu, int64_t F, int64_t n) {
  HR_GRID_STRIDE(i, n) {
    const int64_t j = i / F * 2 * F + i % F;
    const float g = gu[j], u = gu[j + F], d = dout[i];
    const float sg = sigmoid(g);
    store_as(dgu + j, d * u * sg * (1.f + g * (1.f - sg)));
    store_as(dgu + j + F, d * g * sg);
  }
}

__global__ void adamw_kernel(float* p, const float* g, float* m, float* v, int64_t n, float lr, float beta1,
                             float beta2, float eps, float inv_bc1, float inv_sqrt_bc2, float decay) {
  HR_GRID_STRIDE(i, n) {
    const float gi = g[i];
    const float mi = beta1 * m[i] + (1.f - beta1) * gi;
    const float vi = beta2 * v[i] + (1.f - beta2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    const float update = (mi * inv_bc1) / (sqrtf(vi) * inv_sqrt_bc2 + eps);
    p[i] -= lr * update + decay * p[i];
  }
}

__global__ void embedding_fwd_kernel(const float* table, const int32_t* ids, float* out, int64_t n, int64_t d) {
  HR_GRID_STRIDE(i, n * d) {
    const int64_t r = i / d, c = i - r * d;
    out[i] = table[static_cast<int64_t>(ids[r]) * d + c];
  }
}
// Repeated tokens add into the same row: atomics (the summation order, and so the last bits, may
// differ from run to run).
__global__ void embedding_bwd_kernel(const float* dout, const int32_t* ids, float* dtable, int64_t n, int64_t d) {
  HR_GRID_STRIDE(i, n * d) {
    const int64_t r = i / d, c = i - r * d;
    atomicAdd(dtable + static_cast<int64_t>(ids[r]) * d + c, dout[i]);
  }
}

// A QK norm applied on RoPE's way (rms_rope_operand): each element of x as rms_apply_kernel writes
// it, x · rstd · w over norm rows of n elements (a multiple of head_dim, so a head lies in one row);
// w null: none. The norm row's first element's thread writes its rstd.
struct RowNorm {
  const float *w = nullptr, *sumsq = nullptr;
  float* rstd = nullptr;
  int64_t n = 1, n_total = 1;
  float eps = 0.f;
};

// One thread per rotating pair (row, head, i < half) and, out of place (copies = true), per
// unrotated element (half ≤ i < head_dim − half: element i + half). x's rows start ldx apart, y's
// ldy apart; y in fp32 or bf16 (the attention's operands as it reads them: rope_operand; the QKV
// products' stored output gradient: rope_grad_stored).
template <class Out>
__global__ void rope_kernel(const float* x, int64_t ldx, Out* y, int64_t ldy, const float* cos, const float* sin,
                            int64_t rows, int64_t T, int64_t pos0, int64_t n_heads, int64_t head_dim, int64_t half,
                            float sign, bool copies, RowNorm norm) {
  const int64_t per_head = copies ? head_dim - half : half;
  HR_GRID_STRIDE(idx, rows * n_heads * per_head) {
    const int64_t i = idx % per_head, rh = idx / per_head;
    const int64_t r = rh / n_heads, h = rh % n_heads;
    const float* xh = x + r * ldx + h * head_dim;
    Out* yh = y + r * ldy + h * head_dim;
    float rs = 1.f;
    const float* wh = nullptr;
    if (norm.w) {
      const int64_t row = rh * head_dim / norm.n, col0 = rh * head_dim % norm.n;
      rs = static_cast<float>(
          1.0 / sqrt(static_cast<double>(norm.sumsq[row]) / static_cast<double>(norm.n_total) + norm.eps));
      wh = norm.w + col0;
      if (i == 0 && col0 == 0 && norm.rstd) norm.rstd[row] = rs;
    }
    const auto at = [&](int64_t c) { return wh ? xh[c] * rs * wh[c] : xh[c]; };
    if (i >= half) {
      store_as(yh + i + half, at(i + half));
      continue;
    }
    const int64_t pos = pos0 + r % T;
    const float c = cos[pos * half + i], s = sin[pos * half + i];
    const float a = at(i), b = at(i + half);
    store_as(yh + i, a * c - sign * b * s);
    store_as(yh + i + half, b * c + sign * a * s);
  }
}

// dst row r at r · ld, in fp32 or bf16.
template <class Out>
__global__ void store_columns_kernel(Out* dst, int64_t ld, const float* src, int64_t n, int64_t count) {
  HR_GRID_STRIDE(i, count) store_as(dst + i / n * ld + i % n, src[i]);
}

#undef HR_GRID_STRIDE

}  // namespace pointwise

void round_to_bf16(const float* x, uint16_t* y, int64_t n, const char* what) {
  launch(what, pointwise::to_bf16_kernel, grid_1d(n, pointwise::kThreads), dim3(pointwise::kThreads), 0, x, y, n);
}

void widen_from_bf16(const uint16_t* x, float* y, int64_t n, const char* what) {
  launch(what, pointwise::from_bf16_kernel, grid_1d(n, pointwise::kThreads), dim3(pointwise::kThreads), 0, x, y, n);
}

void fill(float* x, float value, int64_t n) {
  if (n <= 0) return;
  launch("fill", pointwise::fill_kernel, grid_1d(n, pointwise::kThreads), dim3(pointwise::kThreads), 0, x, value, n);
}
void axpy(float* y, const float* x, float a, int64_t n) {
  if (n <= 0) return;
  launch("axpy", pointwise::axpy_kernel, grid_1d(n, pointwise::kThreads), dim3(pointwise::kThreads), 0, y, x, a, n);
}
void add(float* out, const float* a, const float* b, int64_t n) {
  if (n <= 0) return;
  launch("add", pointwise::add_kernel, grid_1d(n, pointwise::kThreads), dim3(pointwise::kThreads), 0, out, a, b, n);
}
void scale(float* x, float a, int64_t n) {
  if (n <= 0) return;
  launch("scale", pointwise::scale_kernel, grid_1d(n, pointwise::kThreads), dim3(pointwise::kThreads), 0, x, a, n);
}
void swiglu_fwd(const float* gu, float* out, int64_t rows, int64_t F) {
  const int64_t n = rows * F;
  if (n <= 0) return;
  launch("swiglu_fwd", pointwise::swiglu_fwd_kernel<float>, grid_1d(n, pointwise::kThreads), dim3(pointwise::kThreads),
         0, gu, out, F, n);
}
void swiglu_fwd_stored_bf16(const float* gu, void* out, int64_t rows, int64_t F) {
  const int64_t n = rows * F;
  if (n <= 0) return;
  launch("swiglu_fwd (bf16 output)", pointwise::swiglu_fwd_kernel<uint16_t>, grid_1d(n, pointwise::kThreads),
         dim3(pointwise::kThreads), 0, gu, static_cast<uint16_t*>(out), F, n);
}
void swiglu_fwd_stored_fp32(const float* gu, void* out, int64_t rows, int64_t F) {
  swiglu_fwd(gu, static_cast<float*>(out), rows, F);
}
void swiglu_bwd(const float* gu, const float* dout, float* dgu, int64_t rows, int64_t F) {
  const int64_t n = rows * F;
  if (n <= 0) return;
  launch("swiglu_bwd", pointwise::swiglu_bwd_kernel<float>, grid_1d(n, pointwise::kThreads), dim3(pointwise::kThreads),
         0, gu, dout, dgu, F, n);
}
void swiglu_bwd_stored_bf16(const float* gu, const float* dout, void* dgu, int64_t rows, int64_t F) {
  const int64_t n = rows * F;
  if (n <= 0) return;
  launch("swiglu_bwd (bf16 output)", pointwise::swiglu_bwd_kernel<uint16_t>, grid_1d(n, pointwise::kThreads),
         dim3(pointwise::kThreads), 0, gu, dout, static_cast<uint16_t*>(dgu), F, n);
}
void swiglu_bwd_stored_fp32(const float* gu, const float* dout, void* dgu, int64_t rows, int64_t F) {
  swiglu_bwd(gu, dout, static_cast<float*>(dgu), rows, F);
}

void adamw(float* p, const float* g, float* m, float* v, int64_t n, float lr, float beta1, float beta2, float eps,
           float weight_decay, int64_t step) {
  if (step < 1) fail("cuda adamw: step = ", step, " but steps count from 1 (bias correction)");
  if (n <= 0) return;
  // As the CPU backend: corrections in double, then rounded once.
  const double bc1 = 1.0 - std::pow(static_cast<double>(beta1), static_cast<double>(step));
  const double bc2 = 1.0 - std::pow(static_cast<double>(beta2), static_cast<double>(step));
  const float inv_bc1 = static_cast<float>(1.0 / bc1);
  const float inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bc2));
  launch("adamw", pointwise::adamw_kernel, grid_1d(n, pointwise::kThreads), dim3(pointwise::kThreads), 0, p, g, m, v, n,
         lr, beta1, beta2, eps, inv_bc1, inv_sqrt_bc2, lr * weight_decay);
}

void embedding_fwd(const float* table, const int32_t* ids, float* out, int64_t n, int64_t d) {
  if (n <= 0 || d <= 0) return;
  launch("embedding_fwd", pointwise::embedding_fwd_kernel, grid_1d(n * d, pointwise::kThreads),
         dim3(pointwise::kThreads), 0, table, ids, out, n, d);
}
void embedding_bwd(const float* dout, const int32_t* ids, float* dtable, int64_t n, int64_t d) {
  if (n <= 0 || d <= 0) return;
  launch("embedding_bwd", pointwise::embedding_bwd_kernel, grid_1d(n * d, pointwise::kThreads),
         dim3(pointwise::kThreads), 0, dout, ids, dtable, n, d);
}

namespace pointwise {
// rope (ops.h) into y (rows ldy apart) in fp32 or, out of place, bf16 (rope_operand,
// rope_grad_stored), with a QK norm on the way where norm.w is set (rms_rope_operand).
template <class Out>
void rope_into(const float* x, int64_t ldx, Out* y, int64_t ldy, const float* cos, const float* sin, int64_t B,
               int64_t T, int64_t pos0, int64_t n_heads, int64_t head_dim, int64_t rot_dims, bool inverse,
               const char* what, const RowNorm& norm = {}) {
  if (rot_dims < 0 || rot_dims % 2 != 0 || rot_dims > head_dim)
    fail("cuda ", what, ": rot_dims = ", rot_dims, " must be even and within [0, head_dim = ", head_dim, "]");
  if (pos0 < 0) fail("cuda ", what, ": pos0 = ", pos0, " is negative");
  const int64_t width = n_heads * head_dim;
  if (ldx < width || ldy < width)
    fail("cuda ", what, ": ldx = ", ldx, " or ldy = ", ldy, " is less than a row's width ", width);
  const bool in_place = static_cast<const void*>(x) == static_cast<const void*>(y);
  if (in_place && (ldx != width || ldy != width || !std::is_same_v<Out, float>))
    fail("cuda ", what, ": in place with ldx = ", ldx, ", ldy = ", ldy, " (the row's width is ", width,
         ") or a bf16 output");
  const int64_t half = rot_dims / 2, rows = B * T, per_head = in_place ? half : head_dim - half;
  if (rows == 0 || per_head == 0) return;
  launch(what, rope_kernel<Out>, grid_1d(rows * n_heads * per_head, kThreads), dim3(kThreads), 0, x, ldx, y, ldy, cos,
         sin, rows, T, pos0, n_heads, head_dim, half, inverse ? -1.f : 1.f, !in_place, norm);
}

template <class Out>
void rms_rope_into(const float* x, const float* w, const float* sumsq, float* rstd, int64_t n, int64_t n_total,
                   float eps, Out* y, const float* cos, const float* sin, int64_t B, int64_t T, int64_t pos0,
                   int64_t n_heads, int64_t head_dim, int64_t rot_dims, const char* what) {
  check_norm_rows(n, head_dim, n_heads, what);
  rope_into(x, n_heads * head_dim, y, n_heads * head_dim, cos, sin, B, T, pos0, n_heads, head_dim, rot_dims, false,
            what, RowNorm{w, sumsq, rstd, n, n_total, eps});
}
}  // namespace pointwise

void rope(const float* x, int64_t ldx, float* y, const float* cos, const float* sin, int64_t B, int64_t T, int64_t pos0,
          int64_t n_heads, int64_t head_dim, int64_t rot_dims, bool inverse) {
  pointwise::rope_into(x, ldx, y, n_heads * head_dim, cos, sin, B, T, pos0, n_heads, head_dim, rot_dims, inverse,
                       "rope");
}
void rope_operand_bf16(const float* x, int64_t ldx, void* y, const float* cos, const float* sin, int64_t B, int64_t T,
                       int64_t pos0, int64_t n_heads, int64_t head_dim, int64_t rot_dims) {
  pointwise::rope_into(x, ldx, static_cast<uint16_t*>(y), n_heads * head_dim, cos, sin, B, T, pos0, n_heads, head_dim,
                       rot_dims, false, "rope_operand (bf16)");
}
void rope_operand_fp32(const float* x, int64_t ldx, void* y, const float* cos, const float* sin, int64_t B, int64_t T,
                       int64_t pos0, int64_t n_heads, int64_t head_dim, int64_t rot_dims) {
  pointwise::rope_into(x, ldx, static_cast<float*>(y), n_heads * head_dim, cos, sin, B, T, pos0, n_heads, head_dim,
                       rot_dims, false, "rope_operand (fp32)");
}
// The backward of RoPE into the QKV products' stored output gradient (ops.h's rope_grad_stored).
void rope_grad_stored_bf16(const float* x, void* y, int64_t ldy, const float* cos, const float* sin, int64_t B,
                           int64_t T, int64_t pos0, int64_t n_heads, int64_t head_dim, int64_t rot_dims) {
  pointwise::rope_into(x, n_heads * head_dim, static_cast<uint16_t*>(y), ldy, cos, sin, B, T, pos0, n_heads, head_dim,
                       rot_dims, true, "rope_grad_stored (bf16)");
}
void rope_grad_stored_fp32(const float* x, void* y, int64_t ldy, const float* cos, const float* sin, int64_t B,
                           int64_t T, int64_t pos0, int64_t n_heads, int64_t head_dim, int64_t rot_dims) {
  pointwise::rope_into(x, n_heads * head_dim, static_cast<float*>(y), ldy, cos, sin, B, T, pos0, n_heads, head_dim,
                       rot_dims, true, "rope_grad_stored (fp32)");
}
void rms_rope_operand_bf16(const float* x, const float* w, const float* sumsq, float* rstd, int64_t n, int64_t n_total,
                           float eps, void* y, const float* cos, const float* sin, int64_t B, int64_t T, int64_t pos0,
                           int64_t n_heads, int64_t head_dim, int64_t rot_dims) {
  pointwise::rms_rope_into(x, w, sumsq, rstd, n, n_total, eps, static_cast<uint16_t*>(y), cos, sin, B, T, pos0, n_heads,
                           head_dim, rot_dims, "rms_rope_operand (bf16)");
}
void rms_rope_operand_fp32(const float* x, const float* w, const float* sumsq, float* rstd, int64_t n, int64_t n_total,
                           float eps, void* y, const float* cos, const float* sin, int64_t B, int64_t T, int64_t pos0,
                           int64_t n_heads, int64_t head_dim, int64_t rot_dims) {
  pointwise::rms_rope_into(x, w, sumsq, rstd, n, n_total, eps, static_cast<float*>(y), cos, sin, B, T, pos0, n_heads,
                           head_dim, rot_dims, "rms_rope_operand (fp32)");
}

// The storage entries (ops.h's weight_store): bf16 in the bf16 tables, fp32 copies in
// the fp32 one.
void store_bf16(void* dst, const float* src, int64_t n) {
  round_to_bf16(src, static_cast<uint16_t*>(dst), n, "store (bf16)");
}
void store_fp32(void* dst, const float* src, int64_t n) { copy(dst, src, sizeof(float) * static_cast<size_t>(n)); }

// weight_store_columns (ops.h) in the bf16 and fp32 tables.
template <class Out>
void store_columns(void* dst, int64_t ld, const float* src, int64_t rows, int64_t n, const char* what) {
  if (ld < n) fail("cuda ", what, ": ld = ", ld, " is less than a row's width ", n);
  if (rows * n <= 0) return;
  launch(what, pointwise::store_columns_kernel<Out>, grid_1d(rows * n, pointwise::kThreads), dim3(pointwise::kThreads),
         0, static_cast<Out*>(dst), ld, src, n, rows * n);
}
void store_columns_bf16(void* dst, int64_t ld, const float* src, int64_t rows, int64_t n) {
  store_columns<uint16_t>(dst, ld, src, rows, n, "store_columns (bf16)");
}
void store_columns_fp32(void* dst, int64_t ld, const float* src, int64_t rows, int64_t n) {
  store_columns<float>(dst, ld, src, rows, n, "store_columns (fp32)");
}

}  // namespace headroom::kernels::HR_CUDA_NS
