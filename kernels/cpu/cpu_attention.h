// What the forward and backward attention kernels share: the mask geometry, tensor offsets, block
// sizes and the block-level sgemm. Layouts and the visibility rule are those of ops.h.
#pragma once

#include <algorithm>
#include <cstdint>

#include "cpu/cpu_blas.h"
#include "ops.h"

namespace headroom::kernels::cpu::attention {

// Score blocks are bq × bk (query rows × keys); query blocks are also the forward's unit of parallel
// work. Heads of width ≥ 64 take 256 × 256: their block products then run nearer the sgemm rate
// (bench_attention, 2 threads, width 64, forward / backward as % of sgemm: T = 4096: 75 / 64 with
// 128-blocks, 78 / 66 with 256; T = 65536: 75 / 63 and 85 / 68; with 64-blocks the forward at
// T = 4096 ran at ~61% on one thread). Narrower heads keep 64 × 64, where one block's scores, probabilities and dP
// (3 × 16 KiB) stay in L1: larger blocks gain a few per cent there and would change the rounding of
// every toy model's recorded runs. The softmax loops are compiled for both sizes (fixed trip counts
// vectorise).
inline constexpr int64_t kSmallBlock = 64;
inline constexpr int64_t kLargeBlock = 256;
inline constexpr int64_t kLargeBlockMinWidth = 64;

// The call's shape with what the kernels derive from it.
struct Shape : AttentionShape {
  float scale;
  int64_t bq = kSmallBlock, bk = kSmallBlock;  // set by with_blocks()

  int64_t group() const { return Hq / Hkv; }

  // The first key of query t's document in batch row b (0 without a document mask).
  int64_t doc_begin(int64_t b, int64_t t) const { return doc_start ? doc_start[b * Tq + t] : 0; }
  // Keys visible to query t of row b are [key_begin(b, t), key_end(t)); empty when begin >= end.
  // Both grow with t (doc_start is non-decreasing), so a block's first query has its first key.
  int64_t key_begin(int64_t b, int64_t t) const {
    const int64_t in_window = window > 0 ? std::max<int64_t>(0, q_pos0 + t - window + 1) : 0;
    return std::max(in_window, doc_begin(b, t));
  }
  int64_t key_end(int64_t t) const { return std::min(Tk, q_pos0 + t + 1); }
  // Queries of row b that see key j are [query_begin(j), query_end(b, j)): the document mask ends
  // them at the first query whose document starts after j.
  int64_t query_begin(int64_t j) const { return std::clamp<int64_t>(j - q_pos0, 0, Tq); }
  int64_t query_end(int64_t b, int64_t j) const {
    const int64_t in_window = window > 0 ? std::clamp<int64_t>(j + window - q_pos0, 0, Tq) : Tq;
    if (!doc_start) return in_window;
    const int32_t* row = doc_start + b * Tq;
    return std::min<int64_t>(in_window, std::upper_bound(row, row + Tq, j) - row);
  }

  // Element offsets of row starts; the leading dimension of each tensor is its row stride over t / j.
  int64_t q_at(int64_t b, int64_t t, int64_t h) const { return ((b * Tq + t) * Hq + h) * dqk; }
  int64_t o_at(int64_t b, int64_t t, int64_t h) const { return ((b * Tq + t) * Hq + h) * dv; }
  int64_t k_at(int64_t b, int64_t j, int64_t g) const { return ((b * Tk + j) * Hkv + g) * dqk; }
  int64_t v_at(int64_t b, int64_t j, int64_t g) const { return ((b * Tk + j) * Hkv + g) * dv; }
  int64_t stat_at(int64_t b, int64_t h, int64_t t) const { return (b * Hq + h) * Tq + t; }
  int64_t ld_q() const { return Hq * dqk; }
  int64_t ld_o() const { return Hq * dv; }
  int64_t ld_k() const { return Hkv * dqk; }
  int64_t ld_v() const { return Hkv * dv; }
};

// The shape with the block sizes its head widths take.
inline Shape with_blocks(Shape s) {
  const int64_t b = std::min(s.dqk, s.dv) >= kLargeBlockMinWidth ? kLargeBlock : kSmallBlock;
  s.bq = s.bk = b;
  return s;
}

// Fails with the offending value unless the shape is one the kernels handle.
void validate(const Shape& s, const char* op);

// Row-major C = alpha op(A) op(B) + beta C on one block (dimensions were range-checked by validate).
inline void block_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* A,
                       int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              static_cast<blasint>(m), static_cast<blasint>(n), static_cast<blasint>(k), alpha, A,
              static_cast<blasint>(lda), B, static_cast<blasint>(ldb), beta, C, static_cast<blasint>(ldc));
}

// Decoding (one query per head) against at least this many visible keys takes decode_forward, split
// over the keys; shorter contexts keep the per-head path, whose rounding every recorded toy run
// (≤ 1024 tokens) was decoded with.
inline constexpr int64_t kDecodeMinKeys = 2048;
bool decode_splits_keys(const Shape& s);
// The forward of such a shape (cpu_attention_decode.cpp): the per-head path's outputs and lse, up to
// rounding (another summation order).
void decode_forward(const Shape& s, const float* q, const float* k, const float* v, float* out, float* lse);

// Sets the scores of a [nq, nk] block (row b, queries t0.., keys j0..) that the mask hides to -inf, so that
// exp() turns them into exact zeros, and pads each row with -inf from column nk up to ld (= s.bk).
void mask_block(const Shape& s, float* S, int64_t ld, int64_t b, int64_t t0, int64_t nq, int64_t j0, int64_t nk);

}  // namespace headroom::kernels::cpu::attention
