// Attention backward, FlashAttention-2 style: probabilities are recomputed block by block from the
// forward's lse (P = exp(S - lse)), with D = rowsum(dout ∘ out) and dS = P ∘ (dP - D). Work is split
// by (batch, KV head): every query head of a GQA group adds into the same dK/dV rows, and one task
// owning the whole group makes that accumulation race-free; the same task is the only writer of its
// heads' dq rows. When there are fewer (batch, KV head) pairs than threads, each pair's key blocks are
// also split into chunks of equal work whose dq contributions go to private buffers summed at the end.
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

struct BwdTensors {
  const float *q, *k, *v, *out, *lse, *dout, *D;
  float *dk, *dv;
};

// Where a task adds its dq: rows t at dq + t * ld, query head hl of the group at + hl * dqk.
struct DqTarget {
  float* dq;
  int64_t ld;
};

// One tile's blocks, rows of s.bk.
struct Scratch {
  float scores[kLargeBlock * kLargeBlock];  // S, then P
  float dp[kLargeBlock * kLargeBlock];      // dP, then dS
};

// S → P = exp(S - lse) in place (masked scores are -inf and give 0), dP → dS = P (dP - D) in place. A
// query that saw no key (lse = -inf) has no gradient. Rows run over the full -inf-padded BK width
// (a fixed trip count vectorises best); the products read only the first nk columns.
template <int64_t BK>
[[gnu::always_inline]] inline void probs_and_dscores_rows(Scratch& sc, int64_t nq, const float* lse, const float* D) {
  for (int64_t i = 0; i < nq; ++i) {
    float* p = sc.scores + i * BK;
    float* ds = sc.dp + i * BK;
    const float L = lse[i], Di = D[i];
    if (L == kNegInf) {
      std::fill(p, p + BK, 0.f);
      std::fill(ds, ds + BK, 0.f);
      continue;
    }
#pragma omp simd
    for (int64_t j = 0; j < BK; ++j) {
      p[j] = fast_exp(p[j] - L);
      ds[j] = p[j] * (ds[j] - Di);
    }
  }
}

HEADROOM_SIMD_CLONES
void probs_and_dscores_small(Scratch& sc, int64_t nq, const float* lse, const float* D) {
  probs_and_dscores_rows<kSmallBlock>(sc, nq, lse, D);
}
HEADROOM_SIMD_CLONES
void probs_and_dscores_large(Scratch& sc, int64_t nq, const float* lse, const float* D) {
  probs_and_dscores_rows<kLargeBlock>(sc, nq, lse, D);
}

void probs_and_dscores(const Shape& s, Scratch& sc, int64_t nq, const float* lse, const float* D) {
  if (s.bk == kLargeBlock)
    probs_and_dscores_large(sc, nq, lse, D);
  else
    probs_and_dscores_small(sc, nq, lse, D);
}

// D[b, h, t] = dout · out for one token row, the softmax-backward correction term.
std::vector<float> output_dots(const Shape& s, const float* out, const float* dout) {
  std::vector<float> D(static_cast<std::size_t>(s.B * s.Hq * s.Tq));
#pragma omp parallel for collapse(2)
  for (int64_t b = 0; b < s.B; ++b)
    for (int64_t t = 0; t < s.Tq; ++t)
      for (int64_t h = 0; h < s.Hq; ++h) {
        const float* o = out + s.o_at(b, t, h);
        const float* d = dout + s.o_at(b, t, h);
        double acc = 0.0;
#pragma omp simd reduction(+ : acc)
        for (int64_t c = 0; c < s.dv; ++c) acc += static_cast<double>(o[c]) * d[c];
        D[s.stat_at(b, h, t)] = static_cast<float>(acc);
      }
  return D;
}

void zero_rows(float* X, int64_t ld, int64_t rows, int64_t cols) {
  for (int64_t i = 0; i < rows; ++i) std::fill(X + i * ld, X + i * ld + cols, 0.f);
}

// One (query block, key block) tile of one query head: recompute P, then the three gradient products.
void backward_tile(const Shape& s, const BwdTensors& x, int64_t b, int64_t h, int64_t t0, int64_t nq, int64_t j0,
                   int64_t nk, float* dq_rows, int64_t ld_dq, Scratch& sc) {
  const int64_t g = h / s.group();
  const float* Q = x.q + s.q_at(b, t0, h);
  const float* dO = x.dout + s.o_at(b, t0, h);
  const float* K = x.k + s.k_at(b, j0, g);
  const float* V = x.v + s.v_at(b, j0, g);
  attention::block_gemm(false, true, nq, nk, s.dqk, s.scale, Q, s.ld_q(), K, s.ld_k(), 0.f, sc.scores, s.bk);
  attention::mask_block(s, sc.scores, s.bk, b, t0, nq, j0, nk);
  attention::block_gemm(false, true, nq, nk, s.dv, 1.f, dO, s.ld_o(), V, s.ld_v(), 0.f, sc.dp, s.bk);
  probs_and_dscores(s, sc, nq, x.lse + s.stat_at(b, h, t0), x.D + s.stat_at(b, h, t0));
  // dV += Pᵀ dO,  dK += scale dSᵀ Q,  dQ += scale dS K
  attention::block_gemm(true, false, nk, s.dv, nq, 1.f, sc.scores, s.bk, dO, s.ld_o(), 1.f, x.dv + s.v_at(b, j0, g),
                        s.ld_v());
  attention::block_gemm(true, false, nk, s.dqk, nq, s.scale, sc.dp, s.bk, Q, s.ld_q(), 1.f, x.dk + s.k_at(b, j0, g),
                        s.ld_k());
  attention::block_gemm(false, false, nq, s.dqk, nk, s.scale, sc.dp, s.bk, K, s.ld_k(), 1.f, dq_rows, ld_dq);
}

// Key blocks [kb_begin, kb_end) of KV head g in batch row b, for every query head of the group and
// every query block that sees them. Owns (overwrites) dK and dV of those keys.
void backward_keys(const Shape& s, const BwdTensors& x, int64_t b, int64_t g, int64_t kb_begin, int64_t kb_end,
                   DqTarget dq, Scratch& sc) {
  for (int64_t kb = kb_begin; kb < kb_end; ++kb) {
    const int64_t j0 = kb * s.bk, nk = std::min(s.bk, s.Tk - j0);
    zero_rows(x.dk + s.k_at(b, j0, g), s.ld_k(), nk, s.dqk);
    zero_rows(x.dv + s.v_at(b, j0, g), s.ld_v(), nk, s.dv);
    const int64_t t_begin = s.query_begin(j0), t_end = s.query_end(b, j0 + nk - 1);
    for (int64_t hl = 0; hl < s.group(); ++hl)
      for (int64_t t0 = t_begin; t0 < t_end; t0 += s.bq)
        backward_tile(s, x, b, g * s.group() + hl, t0, std::min(s.bq, t_end - t0), j0, nk,
                      dq.dq + t0 * dq.ld + hl * s.dqk, dq.ld, sc);
  }
}

// Boundaries of `parts` contiguous key-block ranges with about equal work (query rows that see each
// block, so causal and windowed masks balance too; batch row 0's documents stand for every row's).
// Returns parts + 1 block indices.
std::vector<int64_t> split_key_blocks(const Shape& s, int64_t parts) {
  const int64_t blocks = (s.Tk + s.bk - 1) / s.bk;
  std::vector<double> prefix(static_cast<std::size_t>(blocks + 1), 0.0);
  for (int64_t kb = 0; kb < blocks; ++kb) {
    const int64_t j0 = kb * s.bk, j_last = std::min(s.Tk, j0 + s.bk) - 1;
    const int64_t rows = std::max<int64_t>(0, s.query_end(0, j_last) - s.query_begin(j0));
    prefix[kb + 1] = prefix[kb] + 1.0 + static_cast<double>(rows);  // +1: zeroing dK/dV is work too
  }
  std::vector<int64_t> bounds{0};
  int64_t kb = 0;
  for (int64_t p = 1; p < parts; ++p) {
    const double target = prefix[blocks] * static_cast<double>(p) / static_cast<double>(parts);
    while (kb < blocks && prefix[kb] < target) ++kb;
    bounds.push_back(kb);
  }
  bounds.push_back(blocks);
  return bounds;
}

// Chunks per (batch, KV head): enough tasks to occupy every thread, and no more, since each chunk
// costs a private copy of dq. Those copies together may take 1 GiB or 4 × dq, whichever is larger
// (a long sequence on a wide node trades some threads for memory, not the other way round).
int64_t chunks_per_pair(const Shape& s) {
  const int64_t pairs = s.B * s.Hkv, threads = omp_get_max_threads();
  const int64_t blocks = (s.Tk + s.bk - 1) / s.bk;
  if (pairs >= threads || blocks <= 1) return 1;
  const int64_t dq_bytes = std::max<int64_t>(1, s.B * s.Tq * s.Hq * s.dqk * int64_t{sizeof(float)});
  const int64_t by_memory = std::max<int64_t>(4, (int64_t{1} << 30) / dq_bytes);
  return std::max<int64_t>(1, std::min({blocks, (threads + pairs - 1) / pairs, by_memory}));
}

void reduce_private_dq(const Shape& s, const std::vector<float>& priv, int64_t chunks, float* dq) {
  const int64_t per_task = s.Tq * s.group() * s.dqk;
#pragma omp parallel for collapse(2)
  for (int64_t b = 0; b < s.B; ++b)
    for (int64_t t = 0; t < s.Tq; ++t)
      for (int64_t h = 0; h < s.Hq; ++h) {
        float* dst = dq + s.q_at(b, t, h);
        std::fill(dst, dst + s.dqk, 0.f);
        const int64_t g = h / s.group(), hl = h % s.group();
        for (int64_t c = 0; c < chunks; ++c) {
          const float* src = priv.data() + ((b * s.Hkv + g) * chunks + c) * per_task + (t * s.group() + hl) * s.dqk;
#pragma omp simd
          for (int64_t i = 0; i < s.dqk; ++i) dst[i] += src[i];
        }
      }
}

}  // namespace

void attention_bwd(const float* q, const float* k, const float* v, const float* out, const float* lse,
                   const float* dout, float* dq, float* dk, float* dv, const AttentionShape& shape, float scale) {
  const Shape s = attention::with_blocks({shape, scale});
  attention::validate(s, "attention_bwd");
  const std::vector<float> D = output_dots(s, out, dout);
  const BwdTensors x{q, k, v, out, lse, dout, D.data(), dk, dv};
  const int64_t chunks = chunks_per_pair(s);
  const std::vector<int64_t> bounds = split_key_blocks(s, chunks);
  const int64_t per_task = s.Tq * s.group() * s.dqk;  // dq rows of one (batch, KV head) pair
  // One chunk writes dq directly (zeroed here); several write private buffers reduced afterwards.
  std::vector<float> priv;
  if (chunks == 1)
    fill(dq, 0.f, s.B * s.Tq * s.Hq * s.dqk);
  else
    priv.assign(static_cast<std::size_t>(s.B * s.Hkv * chunks * per_task), 0.f);
  std::vector<Scratch> scratch(static_cast<std::size_t>(omp_get_max_threads()));
  const int64_t tasks = s.B * s.Hkv * chunks;
  {
    SerialBlasScope serial_blas;
#pragma omp parallel for schedule(dynamic)
    for (int64_t task = 0; task < tasks; ++task) {
      const int64_t c = task % chunks, pair = task / chunks, b = pair / s.Hkv, g = pair % s.Hkv;
      const DqTarget target = chunks == 1 ? DqTarget{dq + s.q_at(b, 0, g * s.group()), s.ld_q()}
                                          : DqTarget{priv.data() + task * per_task, s.group() * s.dqk};
      backward_keys(s, x, b, g, bounds[c], bounds[c + 1], target, scratch[omp_get_thread_num()]);
    }
  }
  if (chunks > 1) reduce_private_dq(s, priv, chunks, dq);
}

}  // namespace headroom::kernels::cpu
