// The fp64 reference backend (cpu_ops_f64): each op as the plainest loop that implements ops.h,
// single-threaded, no BLAS. It exists so the finite-difference checks of the model can run in
// double precision; the fast fp32 kernels are checked against fp64 references in their own tests.
#include "ops.h"
#include "headroom_error.h"
#include "matmul_strides.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <vector>

namespace headroom::kernels {
namespace {

using D = double;

void* alloc(std::size_t bytes) {
  void* p = std::malloc(bytes ? bytes : 1);
  if (!p) throw std::bad_alloc();
  return p;
}
void release(void* p) { std::free(p); }
void copy_bytes(void* dst, const void* src, std::size_t bytes) { std::memcpy(dst, src, bytes); }
void fill(D* x, D v, int64_t n) { std::fill(x, x + n, v); }
void synchronize() {}

void matmul_strided(const D* A, int64_t lda, const D* B, int64_t ldb, D* C, int64_t ldc, int64_t M, int64_t N,
                    int64_t K, bool ta, bool tb, D alpha, D beta) {
  check_matmul_strides("cpu-f64-reference", M, N, K, ta, tb, lda, ldb, ldc);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      D s = 0;
      for (int64_t k = 0; k < K; ++k)
        s += (ta ? A[k * lda + i] : A[i * lda + k]) * (tb ? B[j * ldb + k] : B[k * ldb + j]);
      // beta == 0 overwrites (BLAS's rule): old contents, NaNs included, never leak in.
      C[i * ldc + j] = beta == 0 ? alpha * s : alpha * s + beta * C[i * ldc + j];
    }
}
void matmul(const D* A, const D* B, D* C, int64_t M, int64_t N, int64_t K, bool ta, bool tb, bool acc) {
  if (K == 0) {
    if (!acc) std::fill(C, C + M * N, D{0});
    return;
  }
  matmul_strided(A, ta ? M : K, B, tb ? K : N, C, N, M, N, K, ta, tb, 1, acc ? 1 : 0);
}
void axpy(D* y, const D* x, D a, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}
void add(D* out, const D* a, const D* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}
void scale(D* x, D a, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] *= a;
}
double sum_squares(const D* x, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += x[i] * x[i];
  return s;
}
int64_t count_nonfinite(const D* x, int64_t n) {
  return std::count_if(x, x + n, [](D v) { return !std::isfinite(v); });
}

void embedding_fwd(const D* table, const int32_t* ids, D* out, int64_t n, int64_t d) {
  for (int64_t i = 0; i < n; ++i) std::copy(table + ids[i] * d, table + (ids[i] + 1) * d, out + i * d);
}
void embedding_bwd(const D* dout, const int32_t* ids, D* dtable, int64_t n, int64_t d) {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < d; ++j) dtable[ids[i] * d + j] += dout[i * d + j];
}

void row_sumsq(const D* x, D* s, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r) s[r] = sum_squares(x + r * n, n);
}
void rms_apply(const D* x, const D* w, const D* s, D* y, D* rstd, int64_t rows, int64_t n, int64_t n_total, D eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const D rs = 1.0 / std::sqrt(s[r] / static_cast<D>(n_total) + eps);
    if (rstd) rstd[r] = rs;
    for (int64_t i = 0; i < n; ++i) y[r * n + i] = x[r * n + i] * rs * w[i];
  }
}
void add_rms_norm(const D* a, const D* b, D* h, const D* w, D* y, D* rstd, int64_t rows, int64_t n, D eps) {
  if (b)
    for (int64_t i = 0; i < rows * n; ++i) h[i] = a[i] + b[i];
  const D* x = b ? h : a;
  std::vector<D> s(static_cast<size_t>(rows));
  row_sumsq(x, s.data(), rows, n);
  rms_apply(x, w, s.data(), y, rstd, rows, n, n, eps);
}
void rms_bwd_dot(const D* x, const D* w, const D* dy, D* dot, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r) {
    dot[r] = 0;
    for (int64_t i = 0; i < n; ++i) dot[r] += x[r * n + i] * w[i] * dy[r * n + i];
  }
}
void rms_bwd_apply(const D* x, const D* w, const D* dy, const D* rstd, const D* dot, D* dx, D* dw, int64_t rows,
                   int64_t n, int64_t n_total) {
  for (int64_t r = 0; r < rows; ++r) {
    const D rs = rstd[r], c = rs * rs * rs / static_cast<D>(n_total) * dot[r];
    for (int64_t i = 0; i < n; ++i) {
      dx[r * n + i] = rs * w[i] * dy[r * n + i] - c * x[r * n + i];
      if (dw) dw[i] += dy[r * n + i] * x[r * n + i] * rs;
    }
  }
}
// rms_bwd_dot and rms_bwd_apply in turn, then added to dx when accumulating.
void rms_bwd(const D* x, const D* w, const D* dy, const D* rstd, D* dx, D* dw, int64_t rows, int64_t n,
             bool accumulate) {
  std::vector<D> dot(static_cast<size_t>(rows)), g(static_cast<size_t>(rows * n));
  rms_bwd_dot(x, w, dy, dot.data(), rows, n);
  rms_bwd_apply(x, w, dy, rstd, dot.data(), g.data(), dw, rows, n, n);
  for (int64_t i = 0; i < rows * n; ++i)
    dx[i] = accumulate ? dx[i] + g[static_cast<size_t>(i)] : g[static_cast<size_t>(i)];
}

void rope(const D* x, int64_t ldx, D* y, const D* cos, const D* sin, int64_t B, int64_t T, int64_t pos0, int64_t H,
          int64_t hd, int64_t rot, bool inverse) {
  const int64_t half = rot / 2;
  for (int64_t r = 0; r < B * T; ++r)
    for (int64_t h = 0; h < H; ++h) {
      const D* u = x + r * ldx + h * hd;
      D* v = y + (r * H + h) * hd;
      const int64_t p = pos0 + r % T;
      for (int64_t i = 0; i < half; ++i) {
        const D c = cos[p * half + i], s = inverse ? -sin[p * half + i] : sin[p * half + i];
        const D a = u[i], b = u[i + half];
        v[i] = a * c - b * s;
        v[i + half] = b * c + a * s;
      }
      for (int64_t i = rot; i < hd; ++i) v[i] = u[i];
    }
}

// ops.h's visibility rule for query t of batch row b.
bool visible(const AttentionShape& s, int64_t b, int64_t t, int64_t j) {
  const int64_t qpos = s.q_pos0 + t;
  return j <= qpos && (s.window == 0 || qpos - j < s.window) && (!s.doc_start || s.doc_start[b * s.Tq + t] <= j);
}

// Query row by row with an online softmax over the keys: memory O(dv), never O(Tk).
void attention_fwd(const D* q, const D* k, const D* v, D* out, D* lse, const AttentionShape& shape, D scale) {
  const int64_t B = shape.B, T = shape.Tq, Tk = shape.Tk, Hq = shape.Hq, Hkv = shape.Hkv, dqk = shape.dqk,
                dv = shape.dv;
  const int64_t group = Hq / Hkv;
  std::vector<D> acc(static_cast<size_t>(dv));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h)
      for (int64_t t = 0; t < T; ++t) {
        const D* qr = q + ((b * T + t) * Hq + h) * dqk;
        D m = -std::numeric_limits<D>::infinity(), l = 0;
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t j = 0; j < Tk; ++j) {
          if (!visible(shape, b, t, j)) continue;
          const D* kr = k + ((b * Tk + j) * Hkv + h / group) * dqk;
          D s = 0;
          for (int64_t i = 0; i < dqk; ++i) s += qr[i] * kr[i];
          s *= scale;
          const D m_new = std::max(m, s), corr = std::exp(m - m_new), p = std::exp(s - m_new);
          const D* vr = v + ((b * Tk + j) * Hkv + h / group) * dv;
          for (int64_t i = 0; i < dv; ++i) acc[static_cast<size_t>(i)] = acc[static_cast<size_t>(i)] * corr + p * vr[i];
          l = l * corr + p;
          m = m_new;
        }
        D* o = out + ((b * T + t) * Hq + h) * dv;
        for (int64_t i = 0; i < dv; ++i) o[i] = l > 0 ? acc[static_cast<size_t>(i)] / l : 0;
        lse[(b * Hq + h) * T + t] = l > 0 ? m + std::log(l) : -std::numeric_limits<D>::infinity();
      }
}

void attention_bwd(const D* q, const D* k, const D* v, const D* out, const D* lse, const D* dout, D* dq, D* dk, D* dvv,
                   const AttentionShape& shape, D scale) {
  const int64_t B = shape.B, T = shape.Tq, Tk = shape.Tk, Hq = shape.Hq, Hkv = shape.Hkv, dqk = shape.dqk,
                dv = shape.dv;
  const int64_t group = Hq / Hkv;
  std::fill(dq, dq + B * T * Hq * dqk, 0.0);
  std::fill(dk, dk + B * Tk * Hkv * dqk, 0.0);
  std::fill(dvv, dvv + B * Tk * Hkv * dv, 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h)
      for (int64_t t = 0; t < T; ++t) {
        const int64_t row = (b * T + t) * Hq + h;
        const D L = lse[(b * Hq + h) * T + t];
        if (!std::isfinite(L)) continue;
        D delta = 0;  // rowsum(dout ∘ out)
        for (int64_t i = 0; i < dv; ++i) delta += dout[row * dv + i] * out[row * dv + i];
        for (int64_t j = 0; j < Tk; ++j) {
          if (!visible(shape, b, t, j)) continue;
          const int64_t kv = (b * Tk + j) * Hkv + h / group;
          D s = 0;
          for (int64_t i = 0; i < dqk; ++i) s += q[row * dqk + i] * k[kv * dqk + i];
          const D p = std::exp(s * scale - L);
          D dp = 0;
          for (int64_t i = 0; i < dv; ++i) {
            dp += dout[row * dv + i] * v[kv * dv + i];
            dvv[kv * dv + i] += p * dout[row * dv + i];
          }
          const D ds = p * (dp - delta) * scale;
          for (int64_t i = 0; i < dqk; ++i) {
            dq[row * dqk + i] += ds * k[kv * dqk + i];
            dk[kv * dqk + i] += ds * q[row * dqk + i];
          }
        }
      }
}

D silu(D g) { return g / (1 + std::exp(-g)); }
void swiglu_fwd(const D* gu, D* out, int64_t rows, int64_t F) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < F; ++i) out[r * F + i] = silu(gu[r * 2 * F + i]) * gu[r * 2 * F + F + i];
}
void swiglu_bwd(const D* gu, const D* dout, D* dgu, int64_t rows, int64_t F) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < F; ++i) {
      const D gi = gu[r * 2 * F + i], ui = gu[r * 2 * F + F + i], di = dout[r * F + i];
      const D sig = 1 / (1 + std::exp(-gi));
      dgu[r * 2 * F + F + i] = di * gi * sig;
      dgu[r * 2 * F + i] = di * ui * sig * (1 + gi * (1 - sig));
    }
}

void cross_entropy(const D* logits, const int32_t* targets, D* losses, D* dlogits, int64_t rows, int64_t V,
                   D grad_scale) {
  for (int64_t r = 0; r < rows; ++r) {
    const D* x = logits + r * V;
    const int32_t t = targets[r];
    if (t >= V) fail("cross_entropy: target ", t, " outside the vocabulary of ", V);
    if (t < 0) {
      losses[r] = 0;
      if (dlogits) std::fill(dlogits + r * V, dlogits + (r + 1) * V, 0.0);
      continue;
    }
    const D m = *std::max_element(x, x + V);
    D z = 0;
    for (int64_t i = 0; i < V; ++i) z += std::exp(x[i] - m);
    const D lz = m + std::log(z);
    losses[r] = lz - x[t];
    if (!dlogits) continue;
    for (int64_t i = 0; i < V; ++i) dlogits[r * V + i] = (std::exp(x[i] - lz) - (i == t ? 1.0 : 0.0)) * grad_scale;
  }
}

void adamw(D* p, const D* g, D* m, D* v, int64_t n, D lr, D b1, D b2, D eps, D wd, int64_t step) {
  if (step < 1) fail("adamw: step must be ≥ 1, got ", step);
  const D c1 = 1 - std::pow(b1, static_cast<D>(step)), c2 = 1 - std::pow(b2, static_cast<D>(step));
  for (int64_t i = 0; i < n; ++i) {
    m[i] = b1 * m[i] + (1 - b1) * g[i];
    v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
    p[i] -= lr * ((m[i] / c1) / (std::sqrt(v[i] / c2) + eps) + wd * p[i]);
  }
}

}  // namespace

const BasicOps<double>& cpu_ops_f64() {
  static const BasicOps<double> table{
      .name = "cpu-f64-reference",
      .alloc = alloc,
      .free = release,
      .copy_to_host = copy_bytes,
      .copy_from_host = copy_bytes,
      .copy = copy_bytes,
      .fill = fill,
      .synchronize = synchronize,
      .matmul = matmul,
      .weight_bytes = sizeof(double),
      .weight_store = store_host<double>,
      .weight_store_columns = store_columns_host<double>,
      .matmul_stored = matmul_on_stored<double, matmul>,
      .matmul_both_stored = matmul_on_both_stored<double, matmul>,
      .matmul_to_stored = matmul_to_stored_on_host<double, matmul>,
      .matmul_strided = matmul_strided,
      .axpy = axpy,
      .add = add,
      .scale = scale,
      .sum_squares = sum_squares,
      .count_nonfinite = count_nonfinite,
      .embedding_fwd = embedding_fwd,
      .embedding_bwd = embedding_bwd,
      .row_sumsq = row_sumsq,
      .rms_apply = rms_apply,
      .add_rms_norm = add_rms_norm,
      .add_rms_norm_stored = add_rms_norm_on_stored<D, add_rms_norm>,
      .rms_bwd_dot = rms_bwd_dot,
      .rms_bwd_apply = rms_bwd_apply,
      .rms_bwd = rms_bwd,
      .rope = rope,
      .rope_grad_stored = rope_grad_stored_on_host<double, rope>,
      .attention_fwd = attention_fwd,
      .attention_bwd = attention_bwd,
      .kv_bytes = sizeof(double),
      .rope_operand = rope_on_store<double, rope>,
      .rms_rope_operand = rms_rope_on_host<double, rms_apply, rope>,
      .attention_fwd_cached = attention_fwd_on_cache<double, attention_fwd>,
      .attention_bwd_cached = attention_bwd_on_cache<double, attention_bwd>,
      .swiglu_fwd = swiglu_fwd,
      .swiglu_fwd_stored = swiglu_fwd_on_stored<D, swiglu_fwd>,
      .swiglu_bwd = swiglu_bwd,
      .swiglu_bwd_stored = swiglu_bwd_on_stored<D, swiglu_bwd>,
      .cross_entropy = cross_entropy,
      .logits_chunk = kHostLogitsChunk,
      .adamw = adamw,
      .capture_begin = nullptr,
      .capture_end = nullptr,
      .graph_launch = nullptr,
      .graph_free = nullptr,
  };
  return table;
}

}  // namespace headroom::kernels
