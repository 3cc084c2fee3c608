// The memory-bound kernels of the blocked attention (attention_blocked.cuh): operand packing, the
// softmax over a block's materialised scores, dS = P ∘ (dP − D), and the scatter of results back
// into ops.h's layouts. The GEMMs between them are cuBLASLt's (matmul_batched_bf16).
// A source fragment: compiled once by attention.cu (nvcc), or once by the emulated test (g++).
//
// Grouped layout. The operands are bf16 copies [B, Hkv, L, G, dp]: for each KV head g, its G query
// heads interleaved position by position (for K and V, G = 1), width zero-padded to dp (a multiple
// of 8). That is ops.h's own order of the heads of a group, so a block of queries of all G heads is
// one contiguous [G · rows, dp] matrix and one GEMM against the shared K serves the whole group.
#pragma once

#include "cuda/attention_common.cuh"
#include "cuda/runtime.h"

namespace headroom::kernels::HR_CUDA_NS {

namespace blocked {

constexpr int kRowThreads = 128;  // threads per score row in the softmax kernels

// One block of queries as the element-wise kernels see it: query rows [t0, t0 + rows) of every
// head, their scores against keys [k0, k0 + keys) in column c = key − k0, rows ld apart, the
// matrices of the B·Hkv (batch row, KV head) pairs `stride` elements apart. Row r of a matrix is
// query t0 + r / G of head g·G + r % G.
struct ScoreBlock {
  int64_t t0, rows, k0, keys, ld, stride;
};

// dst[b, g, l, j, c] (dims [B, Hkv, L, G, dp]) = src[b, l, g·G + j, c] (ops.h: [B, L, Hkv·G, d]),
// as bf16 (src fp32, or bf16: a decoding cache), zero for c ≥ d.
template <class Src>
__global__ void pack_grouped(const Src* src, uint16_t* dst, int64_t B, int64_t L, int64_t Hkv, int64_t G, int64_t d,
                             int64_t dp) {
  const int64_t n = B * Hkv * L * G * dp;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t c = i % dp, r = i / dp, j = r % G, bgl = r / G, l = bgl % L, bg = bgl / L;
    const int64_t g = bg % Hkv, b = bg / Hkv;
    dst[i] = c < d ? bf16_of(src[((b * L + l) * Hkv * G + g * G + j) * d + c]) : uint16_t{0};
  }
}

// The inverse for fp32 results of positions [t0, t0 + rows): dst[b, t0 + r, g·G + j, c] (ops.h's
// [B, L, Hkv·G, d]) = src[(b·Hkv + g)·stride + (r·G + j)·dp + c], dst in fp32 or (the forward's
// output in the operand precision) bf16.
template <class Dst>
__global__ void unpack_grouped(const float* src, Dst* dst, int64_t B, int64_t L, int64_t Hkv, int64_t G, int64_t d,
                               int64_t dp, int64_t t0, int64_t rows, int64_t stride) {
  const int64_t n = B * Hkv * rows * G * d;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t c = i % d, x = i / d, j = x % G, bgr = x / G, r = bgr % rows, bg = bgr / rows;
    const int64_t g = bg % Hkv, b = bg / Hkv;
    store_as(dst + ((b * L + t0 + r) * Hkv * G + g * G + j) * d + c, src[bg * stride + (r * G + j) * dp + c]);
  }
}

// The score row a thread block works on (one row per block) and the columns its query can see:
// [lo, hi), from the mask geometry of attention_common.cuh (causal, window, document).
struct ScoreRow {
  int64_t b, h, t, offset, lo, hi;
};

__device__ __forceinline__ ScoreRow score_row(const AttnShape& s, const ScoreBlock& k) {
  const int64_t G = s.group(), R = blockIdx.x, per = G * k.rows;
  const int64_t bg = R / per, r = R % per, b = bg / s.Hkv, g = bg % s.Hkv, t = k.t0 + r / G;
  const int64_t lo = imin64(imax64(s.key_begin(b, t) - k.k0, 0), k.keys);
  const int64_t hi = imin64(imax64(s.key_end(t) - k.k0, lo), k.keys);
  return {b, g * G + r % G, t, bg * k.stride + r * k.ld, lo, hi};
}

// Forward: P = exp(scale·S − lse) over the visible columns (0 elsewhere) in bf16, and the row's
// lse = max + log Σ exp(scale·S − max) of the scaled scores (natural log, ops.h), in fp32; a query
// that sees no key gets lse = −inf and P = 0, so its output is 0. One thread block per row.
__global__ void softmax_rows(const float* S, uint16_t* P, float* lse, AttnShape s, ScoreBlock k) {
  __shared__ float red[33];
  const ScoreRow w = score_row(s, k);
  const float* x = S + w.offset;
  float m = neg_inf();
  for (int64_t c = w.lo + threadIdx.x; c < w.hi; c += blockDim.x) m = fmaxf(m, x[c] * s.scale);
  m = block_max(m, red);
  float sum = 0.f;
  if (m != neg_inf())
    for (int64_t c = w.lo + threadIdx.x; c < w.hi; c += blockDim.x) sum += expf(x[c] * s.scale - m);
  sum = block_sum(sum, red);
  const float l = m == neg_inf() ? neg_inf() : m + logf(sum);
  uint16_t* p = P + w.offset;
  for (int64_t c = threadIdx.x; c < k.keys; c += blockDim.x)
    p[c] = c >= w.lo && c < w.hi && l != neg_inf() ? to_bf16(expf(x[c] * s.scale - l)) : uint16_t{0};
  if (threadIdx.x == 0) lse[s.stat_at(w.b, w.h, w.t)] = l;
}

// Backward: P again from S and the forward pass's lse (the same convention, so the two compose).
__global__ void probabilities(const float* S, uint16_t* P, const float* lse, AttnShape s, ScoreBlock k) {
  const ScoreRow w = score_row(s, k);
  const float l = lse[s.stat_at(w.b, w.h, w.t)];
  const float* x = S + w.offset;
  uint16_t* p = P + w.offset;
  for (int64_t c = threadIdx.x; c < k.keys; c += blockDim.x)
    p[c] = c >= w.lo && c < w.hi && l != neg_inf() ? to_bf16(expf(x[c] * s.scale - l)) : uint16_t{0};
}

// dS = P ∘ (dP − D) over the row (the softmax backward; D = rowsum(dO ∘ O)), in place of P. The
// scale of the scores is applied by the GEMMs that read dS (their alpha).
__global__ void score_gradients(const float* dP, uint16_t* PdS, const float* D, AttnShape s, ScoreBlock k) {
  const ScoreRow w = score_row(s, k);
  const float d = D[s.stat_at(w.b, w.h, w.t)];
  const float* x = dP + w.offset;
  uint16_t* p = PdS + w.offset;
  for (int64_t c = threadIdx.x; c < k.keys; c += blockDim.x) p[c] = to_bf16(from_bf16(p[c]) * (x[c] - d));
}

}  // namespace blocked

}  // namespace headroom::kernels::HR_CUDA_NS
