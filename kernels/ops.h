// The numerical ops of Headroom behind one backend-neutral interface.
//
// A backend (cpu/, cuda/) fills an `Ops` table of plain function pointers; the model calls through the
// table and never names a backend. Every pointer is to memory of that backend (host memory for the CPU
// backend, device memory for CUDA). All tensors are dense and row-major; sizes are int64_t because
// products such as T * n_heads * head_dim pass 2^31 at long contexts.
//
// Layouts used by the attention ops (one sequence per batch row b; T is AttentionShape::Tq):
//   q   [B, T,  Hq,  dqk]      k [B, Tk, Hkv, dqk]      v [B, Tk, Hkv, dv]
//   out [B, T,  Hq,  dv]       lse [B, Hq, T]  (log-sum-exp of the scaled scores, natural log)
// Query t sits at absolute position q_pos0 + t, key j at position j. Key j is visible to query t iff
// j <= q_pos0 + t and (window == 0 or q_pos0 + t - j < window): a window counts the query itself.
// A document mask (doc_start, [B, T], int32 in the backend's memory) further hides every key before
// the query's document: key j is visible only if doc_start[b, t] <= j. Documents are contiguous runs
// of positions, so doc_start must be non-decreasing in t along each row (the kernels skip blocks of
// keys by that order); null: no document mask.
// Query head h reads KV head h / (Hq / Hkv) (GQA/MQA without materialising repeated K/V).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "headroom_error.h"

namespace headroom::kernels {

// The shape of one attention call (the layouts and the visibility rule above): batch rows, queries,
// keys, the position of query 0, query and KV heads, head widths, the sliding window (0: none), and
// the document mask (null: none).
struct AttentionShape {
  int64_t B, Tq, Tk, q_pos0, Hq, Hkv, dqk, dv, window;
  const int32_t* doc_start = nullptr;
};

// Each op's signature, written once. The table's members point to these function types, and every
// backend declares its entries with them (cpu/cpu_kernels.h, cuda/entries.h, the fp64 reference),
// so an entry that drifts from its contract fails to compile where it is declared.
namespace sig {

// --- memory ---------------------------------------------------------------------------------------
using Alloc = void*(std::size_t bytes);  // throws std::bad_alloc / std::runtime_error on failure
using Free = void(void* p);
using CopyToHost = void(void* host_dst, const void* src, std::size_t bytes);
using CopyFromHost = void(void* dst, const void* host_src, std::size_t bytes);
// Both pointers in the backend's memory; the ranges must not overlap.
using Copy = void(void* dst, const void* src, std::size_t bytes);
template <class T>
using Fill = void(T* x, T value, int64_t n);
using Synchronize = void();

// --- dense algebra --------------------------------------------------------------------------------
// The GEMMs read weights in the table's weight precision (BasicOps::weight_bytes per element: bf16
// in the bf16 CUDA tables, whose GEMMs round their operands to bf16 anyway; T elsewhere), from a
// copy the model refreshes with weight_store when the weights change instead of rounding them in
// every product.
// C[M,N] = op(A) · op(B) (+ C when accumulate). op(A) is [M,K]: A is [M,K], or [K,M] when trans_a.
// op(B) is [K,N]: B is [K,N], or [N,K] when trans_b.
template <class T>
using Matmul = void(const T* A, const T* B, T* C, int64_t M, int64_t N, int64_t K, bool trans_a, bool trans_b,
                    bool accumulate);
// C = alpha · op(A) · op(B) + beta · C on sub-matrices of larger buffers: lda, ldb and ldc are the
// row strides (elements) of A, B and C as stored, each at least its stored row's width (a head's
// columns of a [T, H·d] tensor: ld = H·d). K ≥ 1. In the CUDA tables this op is fp32 (no bf16
// rounding) in both: its callers read attention probabilities, not training products.
template <class T>
using MatmulStrided = void(const T* A, int64_t lda, const T* B, int64_t ldb, T* C, int64_t ldc, int64_t M, int64_t N,
                           int64_t K, bool trans_a, bool trans_b, T alpha, T beta);
// matmul with B in the weight precision (weight_store's output): the same product as matmul on the
// weights B was stored from, bit for bit.
template <class T>
using MatmulStored = void(const T* A, const void* B, T* C, int64_t M, int64_t N, int64_t K, bool trans_a, bool trans_b,
                          bool accumulate);
// matmul with A in the weight precision as well (an activation or a gradient several products read,
// stored once with weight_store): the same product as matmul_stored on the T values A was stored
// from.
template <class T>
using MatmulBothStored = void(const void* A, const void* B, T* C, int64_t M, int64_t N, int64_t K, bool trans_a,
                              bool trans_b, bool accumulate);
// matmul_both_stored with C written in the weight precision as well (bf16: the fp32 sum rounded to
// nearest even, as weight_store rounds), not accumulated: a product whose output only a further
// product reads (the attention output's gradient, which the attention's backward reads in its
// operand precision).
template <class T>
using MatmulToStored = void(const void* A, const void* B, void* C, int64_t M, int64_t N, int64_t K, bool trans_a,
                            bool trans_b);
template <class T>
using Axpy = void(T* y, const T* x, T a, int64_t n);  // y += a * x
// out = a + b (out may alias a or b)
template <class T>
using Add = void(T* out, const T* a, const T* b, int64_t n);
template <class T>
using Scale = void(T* x, T a, int64_t n);  // x *= a
template <class T>
using SumSquares = double(const T* x, int64_t n);  // sum of x², in double
// Counts elements that are NaN or ±Inf.
template <class T>
using CountNonfinite = int64_t(const T* x, int64_t n);

// --- embedding ------------------------------------------------------------------------------------
template <class T>
using EmbeddingFwd = void(const T* table, const int32_t* ids, T* out, int64_t n, int64_t d);
// dtable[ids[i]] += dout[i]  (accumulates)
template <class T>
using EmbeddingBwd = void(const T* dout, const int32_t* ids, T* dtable, int64_t n, int64_t d);

// --- RMSNorm, split so a tensor-parallel caller can all-reduce the per-row statistics -------------
// y = x / sqrt(S / n_total + eps) * w, with S the sum of x² over the whole logical row. A row of this
// call holds `n` of the row's `n_total` elements (n == n_total when nothing is split).
template <class T>
using RowSumsq = void(const T* x, T* sumsq, int64_t rows, int64_t n);
template <class T>
using RmsApply = void(const T* x, const T* w, const T* sumsq, T* y, T* rstd, int64_t rows, int64_t n, int64_t n_total,
                      T eps);
// h = a + b, then y = rms_norm(h) * w over whole rows (n == n_total), rstd as rms_apply: a residual add
// and the next block's input norm in one pass over h. Equal, bit for bit, to add, row_sumsq and
// rms_apply in turn. rstd may be null. b null: no add, y = rms_norm(a) * w (the first block's input
// norm), h not written (may be null).
template <class T>
using AddRmsNorm = void(const T* a, const T* b, T* h, const T* w, T* y, T* rstd, int64_t rows, int64_t n, T eps);
// add_rms_norm with y written in the weight precision (weight_store's format): the values
// add_rms_norm then weight_store would store, in one pass (a pre-norm block's stored GEMM input).
template <class T>
using AddRmsNormStored = void(const T* a, const T* b, T* h, const T* w, void* y, T* rstd, int64_t rows, int64_t n,
                              T eps);
// dot[r] = sum_i x[r,i] * w[i] * dy[r,i]   (to be all-reduced like sumsq)
template <class T>
using RmsBwdDot = void(const T* x, const T* w, const T* dy, T* dot, int64_t rows, int64_t n);
// dx = rstd*w*dy - rstd³/n_total * x * dot (overwrites dx); dw += sum_r dy * x * rstd.
// dw may be null (frozen weight).
template <class T>
using RmsBwdApply = void(const T* x, const T* w, const T* dy, const T* rstd, const T* dot, T* dx, T* dw, int64_t rows,
                         int64_t n, int64_t n_total);
// The two for rows the norm sums over whole (n_total = n: nothing to all-reduce between them), each
// row's dot formed where its dx is: one pass over x and dy fewer. With accumulate, dx += the
// gradient (a pre-norm block's residual stream gets it so); else dx is overwritten and may alias dy.
template <class T>
using RmsBwd = void(const T* x, const T* w, const T* dy, const T* rstd, T* dx, T* dw, int64_t rows, int64_t n,
                    bool accumulate);

// --- RoPE -------------------------------------------------------------------------------------------
// y [rows = B*Tq, n_heads, head_dim] from x, whose rows start ldx elements apart (≥ n_heads·head_dim:
// one part of the fused QKV product's rows); row r has position pos0 + (r % Tq). The first rot_dims
// of each head rotate as pairs (i, i + rot_dims/2) ("rotate half"), the rest are copied; cos/sin
// are [max_pos, rot_dims/2] tables (YaRN's attention factor already folded in). inverse applies the
// transposed rotation (the backward pass). In place when y == x and ldx == n_heads·head_dim; other
// overlaps are not allowed. rot_dims = 0 is a copy of the columns (the unpack of V).
template <class T>
using Rope = void(const T* x, int64_t ldx, T* y, const T* cos, const T* sin, int64_t B, int64_t Tq, int64_t pos0,
                  int64_t n_heads, int64_t head_dim, int64_t rot_dims, bool inverse);

// The backward pass's rope (inverse) from x ([B·Tq, n_heads·head_dim], contiguous) into columns of y
// in the weight precision, rows ldy elements apart (≥ n_heads·head_dim): the query or key part of
// the QKV products' stored output gradient. The same values as rope(inverse) then
// weight_store_columns, in one pass.
template <class T>
using RopeGradStored = void(const T* x, void* y, int64_t ldy, const T* cos, const T* sin, int64_t B, int64_t Tq,
                            int64_t pos0, int64_t n_heads, int64_t head_dim, int64_t rot_dims);

// --- attention --------------------------------------------------------------------------------------
// Memory linear in T: no T×Tk score matrix is ever formed.
template <class T>
using AttentionFwd = void(const T* q, const T* k, const T* v, T* out, T* lse, const AttentionShape& shape, T scale);
// Overwrites dq, dk, dv.
template <class T>
using AttentionBwd = void(const T* q, const T* k, const T* v, const T* out, const T* lse, const T* dout, T* dq, T* dk,
                          T* dv, const AttentionShape& shape, T scale);

// --- the attention's operands in their own precision ----------------------------------------------------
// The attention reads queries, keys and values in the table's operand precision, BasicOps::kv_bytes
// per element, laid out as q/k/v above: T on the CPU, in the fp32 CUDA table and under kSimt; bf16
// in the other CUDA tables, whose attention rounds them to bf16 anyway (so their results do not
// change, and the keys and values a training step keeps, or a decoding cache holds, take half the
// memory). rope_operand is rope (out of place) with y written in that precision (bf16: rounded to
// nearest even); rot_dims = 0 stores the columns as they are (the values).
template <class T>
using RopeOperand = void(const T* x, int64_t ldx, void* y, const T* cos, const T* sin, int64_t B, int64_t Tq,
                         int64_t pos0, int64_t n_heads, int64_t head_dim, int64_t rot_dims);
// A QK norm on RoPE's way: rms_apply(x, w, sumsq) then rope_operand of its output, the same bits as
// the two in turn, in one pass (the normed values are not written in T and read back). x is
// [B·Tq, n_heads·head_dim] (contiguous rows); a norm row is n consecutive elements of it (head_dim:
// headwise; n_heads·head_dim: layerwise), w [n], sumsq and rstd per norm row as rms_apply's.
template <class T>
using RmsRopeOperand = void(const T* x, const T* w, const T* sumsq, T* rstd, int64_t n, int64_t n_total, T eps, void* y,
                            const T* cos, const T* sin, int64_t B, int64_t Tq, int64_t pos0, int64_t n_heads,
                            int64_t head_dim, int64_t rot_dims);
// attention_fwd and attention_bwd with q, k, v and out in the operand precision ("cached": a
// decoding cache holds its keys and values so; training keeps all four so). The forward writes out
// rounded from its fp32 result (the bf16 tables' output projection reads it as stored: their
// weight precision is the operand precision), and the backward reads it back so, and dout too
// (the output projection's input gradient writes it so: matmul_to_stored); lse and the gradients
// stay in T.
template <class T>
using AttentionFwdCached = void(const void* q, const void* k, const void* v, void* out, T* lse,
                                const AttentionShape& shape, T scale);
template <class T>
using AttentionBwdCached = void(const void* q, const void* k, const void* v, const void* out, const T* lse,
                                const void* dout, T* dq, T* dk, T* dv, const AttentionShape& shape, T scale);

// --- the weight precision ----------------------------------------------------------------------------
// dst[0, n) = src[0, n) in the weight precision (bf16: rounded to nearest even): weight_store.
template <class T>
using StoreAs = void(void* dst, const T* src, int64_t n);
// The same for a [rows, n] block into columns of wider rows: row r of src at dst + r · ld elements
// of the storage precision (ld ≥ n). weight_store_columns packs the Q, K and V products' output
// gradients side by side for the fused QKV products' two backward GEMMs.
template <class T>
using StoreColumns = void(void* dst, int64_t ld, const T* src, int64_t rows, int64_t n);

// --- MLP ---------------------------------------------------------------------------------------------
// The gate and up projections come from one GEMM over the adjacent w_gate and w_up: each of the
// `rows` rows of gu is [gate (F) | up (F)].
// out[r, i] = silu(gate[r, i]) * up[r, i]   (out is [rows, F])
template <class T>
using SwigluFwd = void(const T* gu, T* out, int64_t rows, int64_t F);
// swiglu_fwd with out written in the weight precision, likewise (the down projection's input).
template <class T>
using SwigluFwdStored = void(const T* gu, void* out, int64_t rows, int64_t F);
// dgu = [dgate | dup] row by row (overwrites; may be gu itself).
template <class T>
using SwigluBwd = void(const T* gu, const T* dout, T* dgu, int64_t rows, int64_t F);
// swiglu_bwd with dgu written in the weight precision (not in place): the gate|up products'
// output gradient, which both their weight gradient and their input gradient read.
template <class T>
using SwigluBwdStored = void(const T* gu, const T* dout, void* dgu, int64_t rows, int64_t F);

// --- loss ----------------------------------------------------------------------------------------------
// Per-row softmax cross-entropy over V logits. targets[r] < 0 masks row r (loss 0, gradient 0).
// losses[r] receives the row's loss; when dlogits is non-null it receives
// (softmax - onehot) * grad_scale for unmasked rows (overwrites; may alias logits). A target ≥ V
// throws, naming its row: on the CPU in the call, in the CUDA tables where the host next waits for
// the device (copy_to_host, synchronize), so that a training step does not wait once per LM-head chunk.
template <class T>
using CrossEntropy = void(const T* logits, const int32_t* targets, T* losses, T* dlogits, int64_t rows, int64_t V,
                          T grad_scale);

// --- optimizer -----------------------------------------------------------------------------------------
// Decoupled AdamW with bias correction at step `step` (1-based):
//   m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g²;  p -= lr * (m̂ / (sqrt(v̂) + eps) + wd * p)
template <class T>
using Adamw = void(T* p, const T* g, T* m, T* v, int64_t n, T lr, T beta1, T beta2, T eps, T weight_decay,
                   int64_t step);

// --- CUDA graphs (null in the tables without them: the CPU's) -------------------------------------------
// Between capture_begin and capture_end(true) the work this thread enqueues is recorded, not run, into
// a graph that graph_launch enqueues again as a whole: one launch for thousands of kernels. The
// captured work must not wait for the device (host transfers, synchronize), grow the backend's
// scratch or free device memory; each throws where it happens. capture_end(false) discards the
// capture (after an exception inside it) and returns null. graph_launch enqueues the graph and
// returns true, or enqueues nothing and returns false when device memory was freed since the
// capture: a pointer it holds may be gone, and the caller captures again.
using CaptureBegin = void();
using CaptureEnd = void*(bool keep);
using GraphLaunch = bool(void* graph);
using GraphFree = void(void* graph);

}  // namespace sig

// The LM head's logits block per chunk of rows, in elements (BasicOps::logits_chunk). The host's fits
// its caches (8 MiB of fp32). A GPU's is large enough that the head's three GEMMs per chunk are not
// bound by reading its [vocab, d_model] weight and read-modify-writing its fp32 gradient once per
// chunk: their arithmetic per byte grows with the chunk's rows (about rows / 4 FLOPs per byte of the
// weight's traffic), and 2^27 elements (512 MiB of fp32) are about 1,000 rows at a vocabulary of
// 128K, 4,000 at 32K, where the 8 MiB chunk held 16 and 64.
constexpr int64_t kHostLogitsChunk = int64_t{1} << 21;
constexpr int64_t kDeviceLogitsChunk = int64_t{1} << 27;

template <class T>
struct BasicOps {
  const char* name;
  sig::Alloc* alloc;
  sig::Free* free;
  sig::CopyToHost* copy_to_host;
  sig::CopyFromHost* copy_from_host;
  sig::Copy* copy;
  sig::Fill<T>* fill;
  sig::Synchronize* synchronize;
  sig::Matmul<T>* matmul;
  int64_t weight_bytes;  // the weight precision's element size
  sig::StoreAs<T>* weight_store;
  sig::StoreColumns<T>* weight_store_columns;
  sig::MatmulStored<T>* matmul_stored;
  sig::MatmulBothStored<T>* matmul_both_stored;
  sig::MatmulToStored<T>* matmul_to_stored;
  sig::MatmulStrided<T>* matmul_strided;
  sig::Axpy<T>* axpy;
  sig::Add<T>* add;
  sig::Scale<T>* scale;
  sig::SumSquares<T>* sum_squares;
  sig::CountNonfinite<T>* count_nonfinite;
  sig::EmbeddingFwd<T>* embedding_fwd;
  sig::EmbeddingBwd<T>* embedding_bwd;
  sig::RowSumsq<T>* row_sumsq;
  sig::RmsApply<T>* rms_apply;
  sig::AddRmsNorm<T>* add_rms_norm;
  sig::AddRmsNormStored<T>* add_rms_norm_stored;
  sig::RmsBwdDot<T>* rms_bwd_dot;
  sig::RmsBwdApply<T>* rms_bwd_apply;
  sig::RmsBwd<T>* rms_bwd;
  sig::Rope<T>* rope;
  sig::RopeGradStored<T>* rope_grad_stored;
  sig::AttentionFwd<T>* attention_fwd;
  sig::AttentionBwd<T>* attention_bwd;
  int64_t kv_bytes;  // the attention's operand precision's element size (a decoding cache's)
  sig::RopeOperand<T>* rope_operand;
  sig::RmsRopeOperand<T>* rms_rope_operand;
  sig::AttentionFwdCached<T>* attention_fwd_cached;
  sig::AttentionBwdCached<T>* attention_bwd_cached;
  sig::SwigluFwd<T>* swiglu_fwd;
  sig::SwigluFwdStored<T>* swiglu_fwd_stored;
  sig::SwigluBwd<T>* swiglu_bwd;
  sig::SwigluBwdStored<T>* swiglu_bwd_stored;
  sig::CrossEntropy<T>* cross_entropy;
  int64_t logits_chunk;  // the LM head's logits block per chunk, elements (kHostLogitsChunk, kDeviceLogitsChunk)
  sig::Adamw<T>* adamw;
  sig::CaptureBegin* capture_begin;
  sig::CaptureEnd* capture_end;
  sig::GraphLaunch* graph_launch;
  sig::GraphFree* graph_free;
};

using Ops = BasicOps<float>;

// The storage entries of a table whose storage precisions are its compute type and whose memory
// the host addresses (the CPU backends): a copy, and the table's own product and attention.
template <class T>
void store_host(void* dst, const T* src, int64_t n) {
  std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(T));
}
template <class T>
void store_columns_host(void* dst, int64_t ld, const T* src, int64_t rows, int64_t n) {
  if (ld < n) fail("weight_store_columns: ld = ", ld, " is less than a row's width ", n);
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(static_cast<T*>(dst) + r * ld, src + r * n, static_cast<std::size_t>(n) * sizeof(T));
}
template <class T, sig::Matmul<T>* Mm>
void matmul_on_stored(const T* A, const void* B, T* C, int64_t M, int64_t N, int64_t K, bool trans_a, bool trans_b,
                      bool accumulate) {
  Mm(A, static_cast<const T*>(B), C, M, N, K, trans_a, trans_b, accumulate);
}
template <class T, sig::Matmul<T>* Mm>
void matmul_on_both_stored(const void* A, const void* B, T* C, int64_t M, int64_t N, int64_t K, bool trans_a,
                           bool trans_b, bool accumulate) {
  Mm(static_cast<const T*>(A), static_cast<const T*>(B), C, M, N, K, trans_a, trans_b, accumulate);
}
template <class T, sig::Matmul<T>* Mm>
void matmul_to_stored_on_host(const void* A, const void* B, void* C, int64_t M, int64_t N, int64_t K, bool trans_a,
                              bool trans_b) {
  Mm(static_cast<const T*>(A), static_cast<const T*>(B), static_cast<T*>(C), M, N, K, trans_a, trans_b, false);
}
template <class T, sig::AddRmsNorm<T>* Op>
void add_rms_norm_on_stored(const T* a, const T* b, T* h, const T* w, void* y, T* rstd, int64_t rows, int64_t n,
                            T eps) {
  Op(a, b, h, w, static_cast<T*>(y), rstd, rows, n, eps);
}
template <class T, sig::SwigluFwd<T>* Op>
void swiglu_fwd_on_stored(const T* gu, void* out, int64_t rows, int64_t F) {
  Op(gu, static_cast<T*>(out), rows, F);
}
template <class T, sig::SwigluBwd<T>* Op>
void swiglu_bwd_on_stored(const T* gu, const T* dout, void* dgu, int64_t rows, int64_t F) {
  Op(gu, dout, static_cast<T*>(dgu), rows, F);
}
template <class T, sig::AttentionFwd<T>* Fwd>
void attention_fwd_on_cache(const void* q, const void* k, const void* v, void* out, T* lse, const AttentionShape& shape,
                            T scale) {
  Fwd(static_cast<const T*>(q), static_cast<const T*>(k), static_cast<const T*>(v), static_cast<T*>(out), lse, shape,
      scale);
}
template <class T, sig::AttentionBwd<T>* Bwd>
void attention_bwd_on_cache(const void* q, const void* k, const void* v, const void* out, const T* lse,
                            const void* dout, T* dq, T* dk, T* dv, const AttentionShape& shape, T scale) {
  Bwd(static_cast<const T*>(q), static_cast<const T*>(k), static_cast<const T*>(v), static_cast<const T*>(out), lse,
      static_cast<const T*>(dout), dq, dk, dv, shape, scale);
}
template <class T, sig::Rope<T>* Op>
void rope_grad_stored_on_host(const T* x, void* y, int64_t ldy, const T* cos, const T* sin, int64_t B, int64_t Tq,
                              int64_t pos0, int64_t n_heads, int64_t head_dim, int64_t rot_dims) {
  const int64_t width = n_heads * head_dim;
  std::vector<T> rotated(static_cast<std::size_t>(B * Tq * width));
  Op(x, width, rotated.data(), cos, sin, B, Tq, pos0, n_heads, head_dim, rot_dims, true);
  store_columns_host<T>(y, ldy, rotated.data(), B * Tq, width);
}
template <class T, sig::Rope<T>* Op>
void rope_on_store(const T* x, int64_t ldx, void* y, const T* cos, const T* sin, int64_t B, int64_t Tq, int64_t pos0,
                   int64_t n_heads, int64_t head_dim, int64_t rot_dims) {
  Op(x, ldx, static_cast<T*>(y), cos, sin, B, Tq, pos0, n_heads, head_dim, rot_dims, false);
}
// rms_rope_operand's norm rows, checked by every backend: n elements of whole heads of head_dim
// that tile rows of n_heads·head_dim.
inline void check_norm_rows(int64_t n, int64_t head_dim, int64_t n_heads, const char* what) {
  const int64_t width = n_heads * head_dim;
  if (n <= 0 || head_dim <= 0 || n % head_dim != 0 || width % n != 0)
    fail(what, ": a norm row of ", n, " elements is not whole heads of ", head_dim, " tiling rows of ", width);
}
// rms_rope_operand as its two ops in turn, through host memory (the fusion saves device traffic).
template <class T, sig::RmsApply<T>* Apply, sig::Rope<T>* Op>
void rms_rope_on_host(const T* x, const T* w, const T* sumsq, T* rstd, int64_t n, int64_t n_total, T eps, void* y,
                      const T* cos, const T* sin, int64_t B, int64_t Tq, int64_t pos0, int64_t n_heads,
                      int64_t head_dim, int64_t rot_dims) {
  check_norm_rows(n, head_dim, n_heads, "rms_rope_operand");
  const int64_t width = n_heads * head_dim;
  std::vector<T> normed(static_cast<std::size_t>(B * Tq * width));
  Apply(x, w, sumsq, normed.data(), rstd, B * Tq * width / n, n, n_total, eps);
  Op(normed.data(), width, static_cast<T*>(y), cos, sin, B, Tq, pos0, n_heads, head_dim, rot_dims, false);
}

// The fp32 CPU backend: the reference for every other backend, and fast (OpenBLAS, OpenMP,
// blocked attention).
const Ops& cpu_ops();
// A plain fp64 CPU backend: obviously-correct loops (attention row by row with an online softmax,
// so still linear memory), used where fp64 matters more than speed — the finite-difference checks
// of the model's backward pass.
const BasicOps<double>& cpu_ops_f64();
// Which attention kernels the CUDA table uses (train.attention_kernel):
//   kAuto     cuDNN's fused attention where cuDNN supports the shape, the blocked attention for
//             wider or asymmetric heads cuDNN refuses, Headroom's own flash attention for decoding
//             and the rest (the choice is made per shape at run time and logged once per shape)
//   kFlash    Headroom's own flash attention always (bf16 tensor cores; fp32 with
//             HEADROOM_CUDA_PRECISION=fp32)
//   kSimt     Headroom's exact fp32 SIMT attention, also in the bf16 table: tells an attention
//             problem from rounding
//   kBlocked  blocked attention on batched bf16 cuBLASLt GEMMs always (fp32 SIMT with
//             HEADROOM_CUDA_PRECISION=fp32)
enum class AttentionKernel { kAuto, kFlash, kSimt, kBlocked };

// Throws std::runtime_error when Headroom was built without CUDA or no GPU is usable.
const Ops& cuda_ops(AttentionKernel attention = AttentionKernel::kAuto);
// cuda_ops(attention).kv_bytes, without a GPU (the memory plan): 2 in the bf16 tables except
// under kSimt, 4 in the fp32 one (HEADROOM_CUDA_PRECISION).
int cuda_kv_bytes(AttentionKernel attention);
// cuda_ops().weight_bytes, without a GPU: 2 in the bf16 tables, 4 in the fp32 one.
int cuda_weight_bytes();
// GPUs this process can use: 0 in a build without CUDA and on a machine without a driver or device.
int cuda_device_count();
// The memory of the GPU this process's CUDA calls go to (select it first: the query creates its
// context), for the memory plan: cudaMemGetInfo's total on a GPU, the arena's range on the emulated
// device. bytes < 0 when there is none (a build without CUDA, no usable GPU); source says which.
struct DeviceMemory {
  int64_t bytes = -1;
  std::string source;  // "cudaMemGetInfo total of GPU 0, NVIDIA H100 80GB HBM3 (sm_90, 79.1 GiB)"
};
DeviceMemory cuda_device_memory();

}  // namespace headroom::kernels
