// Attention on cuBLASLt for the shapes cuDNN's fused attention refuses (heads wider than 256,
// unequal query-key and value widths): the queries go through in blocks (attention_blocks.h), and
// for each block every product is one strided-batched bf16 GEMM with fp32 accumulation over the
// B·Hkv (batch row, KV head) pairs, the G query heads of a KV head stacked as rows
// (attention_blocked_kernels.cuh):
//   forward   S = Q Kᵀ → softmax (lse, P in bf16) → O = P V
//   backward  S = Q Kᵀ → P (from lse) → dV += Pᵀ dO → dP = dO Vᵀ → dS = P ∘ (dP − D)
//             → dK += scale · dSᵀ Q → dQ = scale · dS K
// Each block's GEMMs cover only the keys its queries can see through the causal mask and the
// window (block_keys): the upper triangle is never computed. The element-wise kernels apply the
// exact mask, document masks included. dQ is written once per block and dK/dV accumulate by GEMM
// (beta = 1) into fp32 buffers: no atomics, deterministic. lse and D follow the flash kernels'
// conventions (natural-log lse of the scaled scores, D = rowsum(dO ∘ O)), so either pass composes
// with the other path's.
// A source fragment: compiled once by attention.cu (nvcc), or once by the emulated test (g++).
#pragma once

#include "cuda/attention_blocked_kernels.cuh"
#include "cuda/attention_blocks.h"
#include "cuda/entries.h"
#include "cuda/runtime.h"

namespace headroom::kernels::HR_CUDA_NS {

namespace blocked {

// The workspace, carved in the order attention_blocks.h counts it (so the memory plan's figure is
// this allocation's size).
struct Workspace {
  uint16_t *q, *k, *v, *dout;
  float* scores;
  uint16_t* probs;
  float *rows, *dk, *dv, *D;
};

inline Workspace carve(const AttentionShape& shape, int64_t block, bool backward) {
  const cuda::BlockedWorkspace n = cuda::blocked_workspace(shape, block, backward);
  const auto take = [&](Carver& c) {
    Workspace w{};
    w.q = c.take<uint16_t>(n.q);
    w.k = c.take<uint16_t>(n.k);
    w.v = c.take<uint16_t>(n.v);
    w.dout = c.take<uint16_t>(n.dout);
    w.scores = c.take<float>(n.scores);
    w.probs = c.take<uint16_t>(n.probs);
    w.rows = c.take<float>(n.rows);
    w.dk = c.take<float>(n.dk);
    w.dv = c.take<float>(n.dv);
    w.D = c.take<float>(n.D);
    return w;
  };
  Carver sizes;
  take(sizes);
  Carver parts(scratch(sizes.used()));
  return take(parts);
}

template <class Src>
void pack(const Src* src, uint16_t* dst, int64_t B, int64_t L, int64_t Hkv, int64_t G, int64_t d) {
  const int64_t dp = cuda::packed_width(d);
  launch("attention_blocked(pack bf16)", pack_grouped<Src>, grid_1d(B * Hkv * L * G * dp, 256), dim3(256), 0, src, dst,
         B, L, Hkv, G, d, dp);
}

template <class Dst>
void unpack(const float* src, Dst* dst, int64_t B, int64_t L, int64_t Hkv, int64_t G, int64_t d, int64_t t0,
            int64_t rows, int64_t stride) {
  launch("attention_blocked(unpack)", unpack_grouped<Dst>, grid_1d(B * Hkv * rows * G * d, 256), dim3(256), 0, src, dst,
         B, L, Hkv, G, d, cuda::packed_width(d), t0, rows, stride);
}

// One element-wise kernel over the block's score rows (one thread block per row).
template <class Kernel, class... Args>
void per_row(const char* name, Kernel kernel, const AttnShape& s, const ScoreBlock& k, Args... args) {
  const int64_t rows = s.B * s.Hq * k.rows;
  if (rows > 0x7fffffff) fail("cuda ", name, ": ", rows, " score rows exceed one launch");
  launch(name, kernel, dim3(static_cast<unsigned>(rows)), dim3(kRowThreads), 0, args..., s, k);
}

// A sub-matrix of a grouped operand: rows from `row` on, each of the B·Hkv matrices `stride` apart.
inline Batched<const uint16_t> at(const uint16_t* p, int64_t row, int64_t ld, int64_t stride) {
  return {p + row * ld, ld, stride};
}

// The blocks of a call, in order; `body` gets each block's geometry.
template <class Body>
void for_each_block(const AttnShape& s, int64_t block, Body body) {
  const AttentionShape& shape = s;
  const int64_t ld = cuda::score_stride(shape, block), G = s.group(), per = imin64(block, s.Tq);
  for (int64_t t0 = 0; t0 < s.Tq; t0 += block) {
    const int64_t rows = imin64(block, s.Tq - t0);
    const cuda::KeyRange keys = cuda::block_keys(shape, t0, t0 + rows);
    body(ScoreBlock{t0, rows, keys.begin, keys.size(), ld, G * per * ld});
  }
}

// One block of the backward pass: dQ of its queries (written), its share of dK and dV (accumulated
// in the workspace's fp32 buffers).
inline void backward_block(const AttnShape& s, const Workspace& w, const ScoreBlock& x, const float* lse, float* dq) {
  const int64_t T = s.Tq, Tk = s.Tk, G = s.group(), batch = s.B * s.Hkv, M = G * x.rows;
  // dQ of the block, G × min(block, T) rows per (batch row, KV head) pair, as its scores.
  const int64_t dqp = cuda::packed_width(s.dqk), dvp = cuda::packed_width(s.dv), dq_stride = x.stride / x.ld * dqp;
  if (x.keys == 0) {  // these queries see no key: their dQ is zero, dK and dV get nothing
    zero_async(w.rows, sizeof(float) * batch * dq_stride);
    return unpack(w.rows, dq, s.B, T, s.Hkv, G, s.dqk, x.t0, x.rows, dq_stride);
  }
  const Batched<const uint16_t> qb = at(w.q, x.t0 * G, dqp, T * G * dqp), kb = at(w.k, x.k0, dqp, Tk * dqp);
  const Batched<const uint16_t> dob = at(w.dout, x.t0 * G, dvp, T * G * dvp), vb = at(w.v, x.k0, dvp, Tk * dvp);
  const Batched<const uint16_t> P{w.probs, x.ld, x.stride};
  const Batched<float> S{w.scores, x.ld, x.stride};
  matmul_batched_bf16(qb, kb, S, batch, M, x.keys, dqp, false, true, 1.f, 0.f);
  per_row("attention_bwd(blocked probabilities)", probabilities, s, x, static_cast<const float*>(w.scores), w.probs,
          lse);
  matmul_batched_bf16(P, dob, {w.dv + x.k0 * dvp, dvp, Tk * dvp}, batch, x.keys, dvp, M, true, false, 1.f, 1.f);
  matmul_batched_bf16(dob, vb, S, batch, M, x.keys, dvp, false, true, 1.f, 0.f);  // dP over S
  per_row("attention_bwd(blocked dS)", score_gradients, s, x, static_cast<const float*>(w.scores), w.probs,
          static_cast<const float*>(w.D));  // dS over P
  matmul_batched_bf16(P, qb, {w.dk + x.k0 * dqp, dqp, Tk * dqp}, batch, x.keys, dqp, M, true, false, s.scale, 1.f);
  matmul_batched_bf16(P, kb, {w.rows, dqp, dq_stride}, batch, M, dqp, x.keys, false, false, s.scale, 0.f);
  unpack(w.rows, dq, s.B, T, s.Hkv, G, s.dqk, x.t0, x.rows, dq_stride);
}

// The forward on Q, K, V and out in fp32 or bf16 (the operand precision).
template <class Kv>
void forward(const Kv* q, const Kv* k, const Kv* v, Kv* out, float* lse, const AttnShape& s, int64_t block) {
  if (block <= 0) fail("cuda attention_fwd (blocked): block size ", block, " must be positive");
  if (s.B * s.Tq == 0) return;
  const int64_t B = s.B, T = s.Tq, Tk = s.Tk, Hkv = s.Hkv, G = s.group();
  const int64_t dq = cuda::packed_width(s.dqk), dv = cuda::packed_width(s.dv), batch = B * Hkv;
  const Workspace w = carve(s, block, false);
  pack(q, w.q, B, T, Hkv, G, s.dqk);
  pack(k, w.k, B, Tk, Hkv, 1, s.dqk);
  pack(v, w.v, B, Tk, Hkv, 1, s.dv);
  const int64_t out_stride = G * imin64(block, T) * dv;
  for_each_block(s, block, [&](const ScoreBlock& x) {
    const int64_t M = G * x.rows;
    if (x.keys > 0)
      matmul_batched_bf16(at(w.q, x.t0 * G, dq, T * G * dq), at(w.k, x.k0, dq, Tk * dq), {w.scores, x.ld, x.stride},
                          batch, M, x.keys, dq, false, true, 1.f, 0.f);
    per_row("attention_fwd(blocked softmax)", softmax_rows, s, x, static_cast<const float*>(w.scores), w.probs, lse);
    if (x.keys > 0)
      matmul_batched_bf16({w.probs, x.ld, x.stride}, at(w.v, x.k0, dv, Tk * dv), {w.rows, dv, out_stride}, batch, M, dv,
                          x.keys, false, false, 1.f, 0.f);
    else
      zero_async(w.rows, sizeof(float) * batch * out_stride);
    unpack(w.rows, out, B, T, Hkv, G, s.dv, x.t0, x.rows, out_stride);
  });
}

}  // namespace blocked

// The entries with an explicit block size (entries.h's take attention_block()); the emulated test
// runs small blocks so that short sequences span several.
void attention_fwd_blocked_with(const float* q, const float* k, const float* v, float* out, float* lse,
                                const AttentionShape& shape, float scale, int64_t block) {
  const AttnShape s{shape, scale};
  validate_attention(s, "attention_fwd");
  blocked::forward(q, k, v, out, lse, s, block);
}

namespace blocked {
// Q, K, V, out and dout in fp32 or bf16 (the operand precision).
template <class Kv>
void backward(const Kv* q, const Kv* k, const Kv* v, const Kv* out, const float* lse, const Kv* dout, float* dq,
              float* dk, float* dv, const AttnShape& s, int64_t block) {
  if (block <= 0) fail("cuda attention_bwd (blocked): block size ", block, " must be positive");
  const AttentionShape& shape = s;
  const int64_t B = s.B, T = s.Tq, Tk = s.Tk, Hkv = s.Hkv, G = s.group();
  if (B * T == 0 || Tk == 0) {  // nothing visible: every gradient is zero
    zero_async(dq, sizeof(float) * B * T * s.Hq * s.dqk);
    zero_async(dk, sizeof(float) * B * Tk * Hkv * s.dqk);
    zero_async(dv, sizeof(float) * B * Tk * Hkv * s.dv);
    return;
  }
  const int64_t dqp = cuda::packed_width(s.dqk), dvp = cuda::packed_width(s.dv), batch = B * Hkv;
  const Workspace w = carve(shape, block, true);
  launch("attention_bwd(blocked row dots)", attention_row_dots<Kv>,
         dim3(static_cast<unsigned>(ceil_div(B * T * s.Hq, 8))), dim3(256), 0, out, dout, w.D, s);
  pack(q, w.q, B, T, Hkv, G, s.dqk);
  pack(k, w.k, B, Tk, Hkv, 1, s.dqk);
  pack(v, w.v, B, Tk, Hkv, 1, s.dv);
  pack(dout, w.dout, B, T, Hkv, G, s.dv);
  zero_async(w.dk, sizeof(float) * batch * Tk * dqp);
  zero_async(w.dv, sizeof(float) * batch * Tk * dvp);
  for_each_block(s, block, [&](const ScoreBlock& x) { backward_block(s, w, x, lse, dq); });
  unpack(w.dk, dk, B, Tk, Hkv, 1, s.dqk, 0, Tk, Tk * dqp);
  unpack(w.dv, dv, B, Tk, Hkv, 1, s.dv, 0, Tk, Tk * dvp);
}
}  // namespace blocked

void attention_bwd_blocked_with(const float* q, const float* k, const float* v, const float* out, const float* lse,
                                const float* dout, float* dq, float* dk, float* dv, const AttentionShape& shape,
                                float scale, int64_t block) {
  const AttnShape s{shape, scale};
  validate_attention(s, "attention_bwd");
  blocked::backward(q, k, v, out, lse, dout, dq, dk, dv, s, block);
}

void attention_fwd_blocked(const float* q, const float* k, const float* v, float* out, float* lse,
                           const AttentionShape& shape, float scale) {
  attention_fwd_blocked_with(q, k, v, out, lse, shape, scale, cuda::attention_block());
}

void attention_bwd_blocked(const float* q, const float* k, const float* v, const float* out, const float* lse,
                           const float* dout, float* dq, float* dk, float* dv, const AttentionShape& shape,
                           float scale) {
  attention_bwd_blocked_with(q, k, v, out, lse, dout, dq, dk, dv, shape, scale, cuda::attention_block());
}

void attention_fwd_cached_blocked(const void* q, const void* k, const void* v, void* out, float* lse,
                                  const AttentionShape& shape, float scale) {
  const AttnShape s{shape, scale};
  validate_attention(s, "attention_fwd");
  blocked::forward(static_cast<const uint16_t*>(q), static_cast<const uint16_t*>(k), static_cast<const uint16_t*>(v),
                   static_cast<uint16_t*>(out), lse, s, cuda::attention_block());
}

void attention_bwd_cached_blocked(const void* q, const void* k, const void* v, const void* out, const float* lse,
                                  const void* dout, float* dq, float* dk, float* dv, const AttentionShape& shape,
                                  float scale) {
  const AttnShape s{shape, scale};
  validate_attention(s, "attention_bwd");
  blocked::backward(static_cast<const uint16_t*>(q), static_cast<const uint16_t*>(k), static_cast<const uint16_t*>(v),
                    static_cast<const uint16_t*>(out), lse, static_cast<const uint16_t*>(dout), dq, dk, dv, s,
                    cuda::attention_block());
}

}  // namespace headroom::kernels::HR_CUDA_NS
