// The mask geometry and layouts of ops.h's attention, shared by the SIMT (fp32) and tensor-core
// (bf16) flash-attention kernels. Query t sits at position q_pos0 + t, key j at j; key j is visible
// to query t iff j <= q_pos0 + t and (window == 0 or q_pos0 + t - j < window) and, under a document
// mask, doc_start[b, t] <= j.
#pragma once

#include "cuda/simt.h"
#include "headroom_error.h"
#include "ops.h"

namespace headroom::kernels::HR_CUDA_NS {

// The call's shape and scale, passed to the kernels by value.
struct AttnShape : AttentionShape {
  float scale;

  __host__ __device__ int64_t group() const { return Hq / Hkv; }
  // The first key of query t's document in batch row b (0 without a document mask).
  __host__ __device__ int64_t doc_begin(int64_t b, int64_t t) const { return doc_start ? doc_start[b * Tq + t] : 0; }
  // Keys visible to query t of row b: [key_begin(b, t), key_end(t)); empty when begin >= end. Both
  // grow with t (doc_start is non-decreasing), so a tile's first query has its first key.
  __host__ __device__ int64_t key_begin(int64_t b, int64_t t) const {
    const int64_t w = q_pos0 + t - window + 1, in_window = window > 0 && w > 0 ? w : 0;
    const int64_t d = doc_begin(b, t);
    return d > in_window ? d : in_window;
  }
  __host__ __device__ int64_t key_end(int64_t t) const {
    const int64_t e = q_pos0 + t + 1;
    return e < Tk ? e : Tk;
  }
  __host__ __device__ bool visible(int64_t b, int64_t t, int64_t j) const {
    return j < Tk && j <= q_pos0 + t && (window == 0 || q_pos0 + t - j < window) && doc_begin(b, t) <= j;
  }
  // Queries of row b that see key j: [query_begin(j), query_end(b, j)). The document mask ends them
  // at the first query whose document starts after j (a binary search over the ordered starts).
  __host__ __device__ int64_t query_begin(int64_t j) const {
    const int64_t b = j - q_pos0;
    return b < 0 ? 0 : (b > Tq ? Tq : b);
  }
  __host__ __device__ int64_t query_end(int64_t b, int64_t j) const {
    const int64_t e = j + window - q_pos0;
    const int64_t in_window = window == 0 ? Tq : (e < 0 ? 0 : (e > Tq ? Tq : e));
    if (!doc_start) return in_window;
    int64_t lo = 0, hi = in_window;  // the first t in [0, in_window) with doc_begin(b, t) > j
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (doc_begin(b, mid) <= j)
        lo = mid + 1;
      else
        hi = mid;
    }
    return lo;
  }
  // Element offsets in the ops.h layouts.
  __host__ __device__ int64_t q_at(int64_t b, int64_t t, int64_t h) const { return ((b * Tq + t) * Hq + h) * dqk; }
  __host__ __device__ int64_t o_at(int64_t b, int64_t t, int64_t h) const { return ((b * Tq + t) * Hq + h) * dv; }
  __host__ __device__ int64_t k_at(int64_t b, int64_t j, int64_t g) const { return ((b * Tk + j) * Hkv + g) * dqk; }
  __host__ __device__ int64_t v_at(int64_t b, int64_t j, int64_t g) const { return ((b * Tk + j) * Hkv + g) * dv; }
  __host__ __device__ int64_t stat_at(int64_t b, int64_t h, int64_t t) const { return (b * Hq + h) * Tq + t; }
};

inline void validate_attention(const AttnShape& s, const char* op) {
  if (s.B < 0 || s.Tq < 0 || s.Tk < 0 || s.q_pos0 < 0)
    fail("cuda ", op, ": negative size or offset (B = ", s.B, ", Tq = ", s.Tq, ", Tk = ", s.Tk, ", q_pos0 = ", s.q_pos0,
         ")");
  if (s.Hq <= 0 || s.Hkv <= 0 || s.Hq % s.Hkv != 0)
    fail("cuda ", op, ": Hq = ", s.Hq, " must be a positive multiple of Hkv = ", s.Hkv);
  if (s.dqk <= 0 || s.dv <= 0) fail("cuda ", op, ": head dims must be positive (dqk = ", s.dqk, ", dv = ", s.dv, ")");
  if (s.window < 0) fail("cuda ", op, ": window = ", s.window, " is negative");
  if (s.Hq > 65535 || s.Hkv > 65535 || s.B > 65535)
    fail("cuda ", op, ": B = ", s.B, ", Hq = ", s.Hq, " must stay within a grid dimension (65535)");
}

// D[b, h, t] = dout · out over the row (the softmax backward's correction), accumulated in double;
// out and dout in fp32 or in the operand precision (bf16). One warp per (b, t, h) row.
template <class O>
__global__ void attention_row_dots(const O* out, const O* dout, float* D, AttnShape s) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (row >= s.B * s.Tq * s.Hq) return;
  const unsigned lane = threadIdx.x % 32;
  const int64_t h = row % s.Hq, bt = row / s.Hq, t = bt % s.Tq, b = bt / s.Tq;
  const O* o = out + row * s.dv;
  const O* d = dout + row * s.dv;
  double acc = 0.0;
  for (int64_t c = lane; c < s.dv; c += 32) acc += static_cast<double>(value_of(o[c])) * value_of(d[c]);
  acc = warp_sum(acc);
  if (lane == 0) D[s.stat_at(b, h, t)] = static_cast<float>(acc);
}

}  // namespace headroom::kernels::HR_CUDA_NS
