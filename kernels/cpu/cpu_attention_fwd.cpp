// Attention forward as blocked online softmax (FlashAttention-2 schedule): each task owns one query
// block of one head, streams over the key blocks its queries can see, and keeps only a running max and
// sum per row, so memory is linear in T and a sliding window costs O(T · window).
#include <omp.h>

#include <cmath>
#include <limits>
#include <vector>

#include "cpu/cpu_attention.h"
#include "cpu/cpu_kernels.h"
#include "cpu/cpu_math.h"

namespace headroom::kernels::cpu {

namespace {

using attention::kLargeBlock;
using attention::kSmallBlock;
using attention::Shape;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Per-thread working set of one query block (rows of s.bk scores).
struct RowStats {
  float max[kLargeBlock];
  double sum[kLargeBlock];  // over up to 10^6 keys: float would drift
  float rescale[kLargeBlock];
  float scores[kLargeBlock * kLargeBlock];
};

// Replaces a masked score block by exp(score - new running max) and folds it into the running
// (max, sum); rescale[i] is what row i's output accumulator must be multiplied by to follow the max.
// Rows are walked over the full BK width (mask_block pads them with -inf, which exp maps to 0): a
// compile-time trip count lets GCC vectorise the max reduction, which it leaves scalar otherwise.
template <int64_t BK>
[[gnu::always_inline]] inline void online_softmax_rows(RowStats& st, int64_t nq) {
  for (int64_t i = 0; i < nq; ++i) {
    float* row = st.scores + i * BK;
    float block_max = kNegInf;
#pragma omp simd reduction(max : block_max)
    for (int64_t j = 0; j < BK; ++j) block_max = row[j] > block_max ? row[j] : block_max;
    if (block_max == kNegInf) {  // nothing visible in this block (yet): keep the row's state
      std::fill(row, row + BK, 0.f);
      st.rescale[i] = 1.f;
      continue;
    }
    const float new_max = std::max(st.max[i], block_max);
    st.rescale[i] = fast_exp(st.max[i] - new_max);  // 0 on the row's first visible block
    float block_sum = 0.f;
#pragma omp simd reduction(+ : block_sum)
    for (int64_t j = 0; j < BK; ++j) {
      row[j] = fast_exp(row[j] - new_max);
      block_sum += row[j];
    }
    st.sum[i] = st.sum[i] * st.rescale[i] + block_sum;
    st.max[i] = new_max;
  }
}

HEADROOM_SIMD_CLONES
void online_softmax_small(RowStats& st, int64_t nq) { online_softmax_rows<kSmallBlock>(st, nq); }
HEADROOM_SIMD_CLONES
void online_softmax_large(RowStats& st, int64_t nq) { online_softmax_rows<kLargeBlock>(st, nq); }

void online_softmax_block(const Shape& s, RowStats& st, int64_t nq) {
  if (s.bk == kLargeBlock)
    online_softmax_large(st, nq);
  else
    online_softmax_small(st, nq);
}

void scale_rows(float* X, int64_t ld, int64_t rows, int64_t cols, const float* factor) {
  for (int64_t i = 0; i < rows; ++i) {
    if (factor[i] == 1.f) continue;
    float* x = X + i * ld;
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) x[c] *= factor[i];
  }
}

// Divides each output row by its softmax sum and records lse; a query that sees no key at all (only
// possible with q_pos0 past the keys and a window) gets out = 0 and lse = -inf.
void finish_rows(const RowStats& st, float* O, int64_t ld, int64_t nq, int64_t dv, float* lse) {
  for (int64_t i = 0; i < nq; ++i) {
    float* o = O + i * ld;
    const bool empty = st.sum[i] == 0.0;
    const float inv = empty ? 0.f : static_cast<float>(1.0 / st.sum[i]);
#pragma omp simd
    for (int64_t c = 0; c < dv; ++c) o[c] *= inv;
    lse[i] = empty ? kNegInf : static_cast<float>(st.max[i] + std::log(st.sum[i]));
  }
}

struct FwdTensors {
  const float *q, *k, *v;
  float *out, *lse;
};

void forward_block(const Shape& s, const FwdTensors& x, int64_t b, int64_t h, int64_t t0, RowStats& st) {
  const int64_t nq = std::min(s.bq, s.Tq - t0);
  const int64_t g = h / s.group();
  const float* Q = x.q + s.q_at(b, t0, h);
  float* O = x.out + s.o_at(b, t0, h);
  for (int64_t i = 0; i < nq; ++i) {
    std::fill(O + i * s.ld_o(), O + i * s.ld_o() + s.dv, 0.f);
    st.max[i] = kNegInf;
    st.sum[i] = 0.0;
  }
  // key_begin/key_end grow with t, so the block's visible keys run from its first query's first key
  // to its last query's last key; blocks outside (earlier documents too) are never touched.
  const int64_t j_begin = s.key_begin(b, t0), j_end = s.key_end(t0 + nq - 1);
  for (int64_t j0 = j_begin; j0 < j_end; j0 += s.bk) {
    const int64_t nk = std::min(s.bk, j_end - j0);
    attention::block_gemm(false, true, nq, nk, s.dqk, s.scale, Q, s.ld_q(), x.k + s.k_at(b, j0, g), s.ld_k(), 0.f,
                          st.scores, s.bk);
    attention::mask_block(s, st.scores, s.bk, b, t0, nq, j0, nk);
    online_softmax_block(s, st, nq);
    scale_rows(O, s.ld_o(), nq, s.dv, st.rescale);
    attention::block_gemm(false, false, nq, s.dv, nk, 1.f, st.scores, s.bk, x.v + s.v_at(b, j0, g), s.ld_v(), 1.f, O,
                          s.ld_o());
  }
  finish_rows(st, O, s.ld_o(), nq, s.dv, x.lse + s.stat_at(b, h, t0));
}

}  // namespace

void attention_fwd(const float* q, const float* k, const float* v, float* out, float* lse, const AttentionShape& shape,
                   float scale) {
  const Shape s = attention::with_blocks({shape, scale});
  attention::validate(s, "attention_fwd");
  if (attention::decode_splits_keys(s)) return attention::decode_forward(s, q, k, v, out, lse);
  const FwdTensors x{q, k, v, out, lse};
  const int64_t q_blocks = (s.Tq + s.bq - 1) / s.bq, tasks = s.B * s.Hq * q_blocks;
  std::vector<RowStats> stats(static_cast<std::size_t>(omp_get_max_threads()));
  SerialBlasScope serial_blas;
#pragma omp parallel for schedule(dynamic)
  for (int64_t task = 0; task < tasks; ++task) {
    // Under a causal mask later query blocks see more keys: hand them out first so the cheap ones
    // fill the tail.
    const int64_t qb = q_blocks - 1 - task % q_blocks, bh = task / q_blocks;
    forward_block(s, x, bh / s.Hq, bh % s.Hq, qb * s.bq, stats[omp_get_thread_num()]);
  }
}

}  // namespace headroom::kernels::cpu
