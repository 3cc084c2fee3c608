// Flash attention on tensor cores: mma.sync m16n8k16, bf16 operands, fp32 accumulators and softmax
// statistics (FlashAttention-2 schedule). The bf16 table's attention.
// A source fragment: compiled once by attention.cu (nvcc), or once by the emulated test (g++).
//
// Operands. The fp32 inputs are first rounded to bf16 copies in the scratch workspace, head-major and
// zero-padded to multiples of 64 in both sequence and width ([B, H, Lp, dp]). Padding makes every
// tile load a full, 16-byte-aligned 64-column row, and zeros contribute nothing (no NaN from
// garbage). The forward reads a bf16 decoding cache in place instead (KvView), the tile loads
// storing zeros past its last key and its width (Extent). Fragments come from shared memory by
// ldmatrix (rows padded to 72 elements: the eight 16-byte rows of a matrix fall in distinct banks),
// transposed on the load where a product needs a tile the other way round (V in P·V; Q, dO and K
// in the backward's dK, dV and dQ), so each operand has one copy.
//
// Forward: a block = 64 query rows of one head (4 warps × 16 rows) and one slice of DVT output
// columns; it walks the visible 64-key blocks; S = Q·Kᵀ accumulates over 64-wide chunks of dqk (Q
// stays in shared memory when dqk <= 256, else it is re-read per chunk), the online softmax runs in
// the log2 domain on the S fragments, P is re-packed from accumulator to A-operand registers (no
// shared-memory round trip) and O += P·V. Output widths above 256 are split across blocks, each
// recomputing S (accumulators stay within registers up to dv = 1024).
//
// Backward, streamed (for the heads too wide for attention_mma_bwd.cuh, which keeps K and V in
// shared memory): a block = 64 keys of one KV head and batch row, owning dK and dV of those keys
// (accumulated in place in the fp32 outputs, which only it touches); for every query head of the GQA
// group and every visible 64-query block it recomputes Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ, forms Pᵀ and dSᵀ,
// then dV += Pᵀ·dO, dK += scale·dSᵀ·Q (A operands from registers) and dQ += scale·dS·K (dS through
// shared memory), dQ added atomically in fp32. Everything is chunked by 64 columns, so any width works.
#pragma once

#include "cuda/attention_common.cuh"
#include "cuda/mma_fragments.cuh"
#include "cuda/runtime.h"

namespace headroom::kernels::HR_CUDA_NS {

namespace mma {

constexpr int kThreads = 128;  // 4 warps
constexpr std::size_t kTileBytes = sizeof(uint16_t) * kTile * kLdS;
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

#if defined(__CUDACC__)
using Vec16 = uint4;
#else
struct alignas(16) Vec16 {
  uint32_t x, y, z, w;
};
#endif

// How much of a tile's source exists: rows [0, rows) and columns [0, cols); the rest of the tile
// reads as zero. Packed operands are padded (all of it); a decoding cache read in place ends at its
// last key and at its head width (a multiple of 8: whole 16-byte segments).
struct Extent {
  int64_t rows = kTile, cols = kTile;
  __device__ bool has(int r, int seg) const { return r < rows && seg * 8 < cols; }
};

// Copies `rows` rows of 64 bf16 (src row stride src_ld elements) into a [rows][kLdS] tile.
__device__ __forceinline__ void load_rows(uint16_t* dst, const uint16_t* src, int64_t src_ld, int rows, Extent e = {}) {
  for (int i = threadIdx.x; i < rows * 8; i += kThreads) {
    const int r = i >> 3, seg = i & 7;
    Vec16 v = {0u, 0u, 0u, 0u};
    if (e.has(r, seg)) v = *reinterpret_cast<const Vec16*>(src + r * src_ld + seg * 8);
    *reinterpret_cast<Vec16*>(dst + r * kLdS + seg * 8) = v;
  }
}

// ---- bf16 operand copies (of fp32 or bf16) ---------------------------------------------------------------------
// dst[b, h, l, c] (dims [B, H, Lp, dp]) = src[b, l, h, c] (dims [B, L, H, d]), zero outside.
template <class Src>
__global__ void pack_heads(const Src* src, uint16_t* dst, int64_t B, int64_t L, int64_t H, int64_t d, int64_t Lp,
                           int64_t dp) {
  const int64_t n = B * H * Lp * dp;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t c = i % dp, r = i / dp, l = r % Lp, bh = r / Lp, h = bh % H, b = bh / H;
    dst[i] = (l < L && c < d) ? bf16_of(src[((b * L + l) * H + h) * d + c]) : uint16_t{0};
  }
}

struct Dims {
  int64_t Tp, Tkp, dqkp, dvp;
};

// ---- forward ----------------------------------------------------------------------------------------------
// Shared memory of a forward block. Streamed: Q (every chunk when resident, else one), one K chunk
// and the V tile. Pipelined (Q resident and two stages fit): Q, then per stage a whole key block's
// K chunks and its V tile, the next block's in flight (cp.async) while one is computed.
inline std::size_t fwd_smem_bytes(const Dims& d, int dvt, bool q_resident, bool pipelined = false) {
  const int64_t chunks = d.dqkp / kTile, q_tiles = q_resident ? chunks : 1;
  const std::size_t v_tile = sizeof(uint16_t) * dvt * kLdS;
  if (pipelined) return kTileBytes * q_tiles + 2 * (kTileBytes * chunks + v_tile);
  return kTileBytes * (q_tiles + 1) + v_tile;
}

// One key block's scores sacc (raw Q·Kᵀ of this warp's 16 rows) into the online softmax: masked,
// scaled to the log2 domain, the running maximum m and sum l updated, o rescaled and O += P·V with
// V from Vs: DVT / 64 tiles [64 keys][64 output columns].
template <int NT>
__device__ __forceinline__ void softmax_pv(float (&sacc)[8][4], float (&o)[NT][4], float (&m)[2], float (&l)[2],
                                           const AttnShape& s, int64_t b, int64_t t0, int64_t nq, int64_t j0,
                                           const int64_t (&row)[2], float scale_log2, const uint16_t* Vs) {
  const int tq = (threadIdx.x % 32) & 3;
  // Blocks wholly visible to every row skip the mask test.
  const bool full = j0 >= s.key_begin(b, t0 + nq - 1) && j0 + kTile <= s.key_end(t0);
  float mx[2] = {neg_inf(), neg_inf()};
  HR_UNROLL
  for (int n = 0; n < 8; ++n) HR_UNROLL
  for (int e = 0; e < 4; ++e) {
    const int64_t t = row[e >> 1], j = j0 + n * 8 + 2 * tq + (e & 1);
    float x = sacc[n][e] * scale_log2;
    if (!full && !(t < s.Tq && s.visible(b, t, j))) x = neg_inf();
    sacc[n][e] = x;
    mx[e >> 1] = fmaxf(mx[e >> 1], x);
  }
  float alpha[2], mu[2];
  HR_UNROLL
  for (int i = 0; i < 2; ++i) {
    mx[i] = fmaxf(mx[i], __shfl_xor_sync(kFullMask, mx[i], 1));
    mx[i] = fmaxf(mx[i], __shfl_xor_sync(kFullMask, mx[i], 2));
    const float mn = fmaxf(m[i], mx[i]);
    mu[i] = mn == neg_inf() ? 0.f : mn;  // nothing visible yet: keep exp2 away from -inf - -inf
    alpha[i] = exp2f(m[i] - mu[i]);
    m[i] = mn;
  }
  float ls[2] = {0.f, 0.f};
  HR_UNROLL
  for (int n = 0; n < 8; ++n) HR_UNROLL
  for (int e = 0; e < 4; ++e) {
    const float p = exp2f(sacc[n][e] - mu[e >> 1]);
    sacc[n][e] = p;
    ls[e >> 1] += p;
  }
  // Row sums stay per-thread partials (alpha is uniform over the quad); reduced at the end.
  l[0] = l[0] * alpha[0] + ls[0];
  l[1] = l[1] * alpha[1] + ls[1];
  HR_UNROLL
  for (int n = 0; n < NT; ++n) {
    o[n][0] *= alpha[0];
    o[n][1] *= alpha[0];
    o[n][2] *= alpha[1];
    o[n][3] *= alpha[1];
  }
  HR_UNROLL
  for (int kk = 0; kk < 4; ++kk) {
    uint32_t a[4];
    acc_to_a(a, sacc[2 * kk], sacc[2 * kk + 1]);
    HR_UNROLL
    for (int n = 0; n < NT; ++n) {
      uint32_t bb[2];
      load_b<BLayout::kKN>(bb, Vs + (n / 8) * kTile * kLdS, (n % 8) * 8, kk * 16);
      mma_bf16(o[n], a, bb);
    }
  }
}

// The same in flight until waited for (the zeros outside the extent are stored at once: the tile
// is free when its load is issued).
__device__ __forceinline__ void load_rows_async(uint16_t* dst, const uint16_t* src, int64_t src_ld, int rows,
                                                Extent e = {}) {
  for (int i = threadIdx.x; i < rows * 8; i += kThreads) {
    const int r = i >> 3, seg = i & 7;
    if (e.has(r, seg))
      copy_async16(dst + r * kLdS + seg * 8, src + r * src_ld + seg * 8);
    else
      *reinterpret_cast<Vec16*>(dst + r * kLdS + seg * 8) = Vec16{0u, 0u, 0u, 0u};
  }
}

// Where the forward reads K or V: element (b, g, key, col) at p[b·batch + g·head + key·ld + col],
// keys from `keys` and columns from `width` on read as zero. A packed copy is [B, Hkv, Tkp, dp]
// (padded: nothing past it); a bf16 decoding cache is read in place as [B, Tk, Hkv, d].
struct KvView {
  const uint16_t* p;
  int64_t batch, head, ld, keys, width;
  // Rows [j0, j0 + 64) and columns [c0, c0 + 64) of head g in batch row b, and how much of them exists.
  __device__ const uint16_t* at(int64_t b, int64_t g, int64_t j0, int64_t c0) const {
    return p + b * batch + g * head + j0 * ld + c0;
  }
  __device__ Extent extent(int64_t j0, int64_t c0) const { return {keys - j0, width - c0}; }
};

// How a forward launch divides its work: output slices of DVT columns, and splits of each query
// block's visible key blocks (split-key decoding: few queries over many keys would otherwise fill a
// handful of blocks). With splits > 1 each split writes its own normalised out and lse (split i at
// out + i·out_split, lse + i·lse_split), merged by merge_splits.
struct FwdGrid {
  int slices = 1, splits = 1;
  int64_t out_split = 0, lse_split = 0;
};

// grid (n_q_blocks · slices · splits, Hq, B). qb [B,Hq,Tp,dqkp]; K and V as their views say; out in
// fp32 or bf16 (the operand precision), rounded from the fp32 result.
template <int DVT, class Out>
__global__ __launch_bounds__(kThreads) void fwd_kernel(const uint16_t* qb, KvView kv, KvView vv, Out* out, float* lse,
                                                       AttnShape s, Dims d, FwdGrid grid, bool q_resident,
                                                       bool pipelined) {
  constexpr int NT = DVT / 8;  // n8 tiles of output columns per warp
  constexpr int64_t tile = kTile * kLdS;
  HR_DYNAMIC_SMEM(uint16_t, smem);
  const int64_t chunks = d.dqkp / kTile;
  const int64_t q_tiles = q_resident ? chunks : 1;
  uint16_t* Qs = smem;                 // q_tiles × [64][kLdS]
  uint16_t* Ks = Qs + q_tiles * tile;  // streamed: [64][kLdS]; pipelined: 2 × (chunks K tiles, V tile)
  uint16_t* Vs = Ks + tile;            // streamed: DVT / 64 tiles [64 keys][kLdS]
  constexpr int v_tiles = DVT / kTile;
  const int64_t stage_elems = (chunks + v_tiles) * tile;

  const int64_t n_qblocks = d.Tp / kTile;
  const int split = static_cast<int>(blockIdx.x % grid.splits);
  const int64_t work = blockIdx.x / grid.splits;
  const int64_t qblk = n_qblocks - 1 - work / grid.slices;  // the costliest (causal) blocks first
  const int slice = static_cast<int>(work % grid.slices);
  const int64_t h = blockIdx.y, b = blockIdx.z, g = h / s.group();
  const int64_t t0 = qblk * kTile, c_out0 = static_cast<int64_t>(slice) * DVT;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, gq = lane >> 2, tq = lane & 3;
  const int64_t nq = imin64(kTile, s.Tq - t0);
  const uint16_t* qhead = qb + ((b * s.Hq + h) * d.Tp + t0) * d.dqkp;
  // The slice's V tiles within the padded width; those past it stay zero (set once, never loaded).
  const int v_loaded = static_cast<int>(imin64(DVT, d.dvp - c_out0) / kTile);
  const auto zero_v_past_width = [&](uint16_t* v) {
    for (int i = threadIdx.x; i < (v_tiles - v_loaded) * tile; i += kThreads) v[v_loaded * tile + i] = 0;
  };

  float o[NT][4];
  HR_UNROLL
  for (int n = 0; n < NT; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
  float m[2] = {neg_inf(), neg_inf()}, l[2] = {0.f, 0.f};
  const int64_t row[2] = {t0 + warp * 16 + gq, t0 + warp * 16 + gq + 8};
  const float scale_log2 = s.scale * kLog2e;

  const int64_t j_begin = s.key_begin(b, t0), j_end = s.key_end(t0 + nq - 1);
  // This split's share of the visible key blocks (a split left without any writes out = 0, lse = -inf).
  const int64_t kb_all = j_begin / kTile, n_kb = imax64(ceil_div(j_end, kTile) - kb_all, 0);
  const int64_t per_split = ceil_div(n_kb, grid.splits);
  const int64_t kb_first = kb_all + imin64(n_kb, split * per_split);
  const int64_t kb_end = kb_all + imin64(n_kb, (split + 1) * per_split);
  if (pipelined) {
    for (int st = 0; st < 2; ++st) zero_v_past_width(Ks + st * stage_elems + chunks * tile);
    const auto issue = [&](int64_t kblk, int st) {
      uint16_t* k = Ks + st * stage_elems;
      const int64_t j0 = kblk * kTile;
      for (int64_t c = 0; c < chunks; ++c)
        load_rows_async(k + c * tile, kv.at(b, g, j0, c * kTile), kv.ld, kTile, kv.extent(j0, c * kTile));
      for (int c = 0; c < v_loaded; ++c) {
        const int64_t c0 = c_out0 + c * kTile;
        load_rows_async(k + (chunks + c) * tile, vv.at(b, g, j0, c0), vv.ld, kTile, vv.extent(j0, c0));
      }
      commit_async();
    };
    if (kb_first < kb_end) {  // Q in one group with the first key block
      for (int64_t c = 0; c < chunks; ++c) load_rows_async(Qs + c * tile, qhead + c * kTile, d.dqkp, kTile);
      issue(kb_first, 0);
    }
    for (int64_t kblk = kb_first; kblk < kb_end; ++kblk) {
      const int st = static_cast<int>((kblk - kb_first) & 1);
      if (kblk + 1 < kb_end) {
        issue(kblk + 1, st ^ 1);
        wait_async<1>();
      } else {
        wait_async<0>();
      }
      __syncthreads();  // this block's K and V (and Q) have landed for every thread
      const uint16_t* k = Ks + st * stage_elems;
      float sacc[8][4];
      zero(sacc);
      for (int64_t c = 0; c < chunks; ++c) mma_tiles(sacc, Qs + c * tile, k + c * tile);
      softmax_pv(sacc, o, m, l, s, b, t0, nq, kblk * kTile, row, scale_log2, k + chunks * tile);
      __syncthreads();  // this stage is free for the block after next
    }
  } else {
    zero_v_past_width(Vs);
    if (q_resident)
      for (int64_t c = 0; c < chunks; ++c) load_rows(Qs + c * tile, qhead + c * kTile, d.dqkp, kTile);
    for (int64_t kblk = kb_first; kblk < kb_end; ++kblk) {
      const int64_t j0 = kblk * kTile;
      float sacc[8][4];
      zero(sacc);
      for (int64_t c = 0; c < chunks; ++c) {
        __syncthreads();  // the previous users of Ks / Qs / Vs are done
        load_rows(Ks, kv.at(b, g, j0, c * kTile), kv.ld, kTile, kv.extent(j0, c * kTile));
        if (!q_resident) load_rows(Qs, qhead + c * kTile, d.dqkp, kTile);
        if (c == 0)
          for (int cv = 0; cv < v_loaded; ++cv) {
            const int64_t c0 = c_out0 + cv * kTile;
            load_rows(Vs + cv * tile, vv.at(b, g, j0, c0), vv.ld, kTile, vv.extent(j0, c0));
          }
        __syncthreads();
        mma_tiles(sacc, q_resident ? Qs + c * tile : Qs, Ks);
      }
      softmax_pv(sacc, o, m, l, s, b, t0, nq, j0, row, scale_log2, Vs);
    }
  }
  HR_UNROLL
  for (int i = 0; i < 2; ++i) {
    l[i] += __shfl_xor_sync(kFullMask, l[i], 1);
    l[i] += __shfl_xor_sync(kFullMask, l[i], 2);
  }
  // A query that sees no key: out = 0, lse = -inf. A split writes its own part.
  out += static_cast<int64_t>(blockIdx.x % grid.splits) * grid.out_split;
  lse += static_cast<int64_t>(blockIdx.x % grid.splits) * grid.lse_split;
  HR_UNROLL
  for (int i = 0; i < 2; ++i) {
    if (row[i] >= s.Tq) continue;
    const float inv = l[i] > 0.f ? 1.f / l[i] : 0.f;
    Out* orow = out + s.o_at(b, row[i], h);
    HR_UNROLL
    for (int n = 0; n < NT; ++n) {
      const int64_t col = c_out0 + n * 8 + 2 * tq;
      if (col < s.dv) store_as(orow + col, o[n][2 * i] * inv);
      if (col + 1 < s.dv) store_as(orow + col + 1, o[n][2 * i + 1] * inv);
    }
    if (slice == 0 && tq == 0) lse[s.stat_at(b, h, row[i])] = l[i] > 0.f ? (m[i] + log2f(l[i])) * kLn2 : neg_inf();
  }
}

// The splits of a split-key forward (FwdGrid) into out and lse: lse = log Σᵢ exp(lseᵢ) and
// out = Σᵢ exp(lseᵢ − lse) · outᵢ; a query no split saw anything for gets out = 0, lse = -inf.
// One thread per output element; out as fwd_kernel's.
template <class Out>
__global__ void merge_splits(const float* part_out, const float* part_lse, Out* out, float* lse, AttnShape s,
                             FwdGrid grid) {
  const int64_t n = s.B * s.Tq * s.Hq * s.dv;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t c = i % s.dv, r = i / s.dv, h = r % s.Hq, bt = r / s.Hq;
    const int64_t at = s.stat_at(bt / s.Tq, h, bt % s.Tq);
    float m = neg_inf();
    for (int k = 0; k < grid.splits; ++k) m = fmaxf(m, part_lse[k * grid.lse_split + at]);
    float sum = 0.f, acc = 0.f;
    if (m != neg_inf())
      for (int k = 0; k < grid.splits; ++k) {
        const float w = expf(part_lse[k * grid.lse_split + at] - m);
        sum += w;
        acc += w * part_out[k * grid.out_split + i];
      }
    store_as(out + i, sum > 0.f ? acc / sum : 0.f);
    if (c == 0) lse[at] = sum > 0.f ? m + logf(sum) : neg_inf();
  }
}

// ---- backward ---------------------------------------------------------------------------------------------
struct BwdOperands {
  const uint16_t *qb, *kb, *vb, *dob;  // [B,Hq,Tp,dqkp] [B,Hkv,Tkp,dqkp] [B,Hkv,Tkp,dvp] [B,Hq,Tp,dvp]
  const float *lse, *D;                // [B,Hq,T]
  float *dq, *dk, *dv;                 // ops.h layouts; zeroed before the launch
};

// rows key[0], key[1] of a [Tk, H, width] gradient += factor · acc (columns col0 + 0..63).
__device__ __forceinline__ void add_key_rows(const float (&acc)[8][4], float* grad, int64_t width, int64_t col0,
                                             float factor, int64_t b, int64_t g, const int64_t (&key)[2],
                                             const AttnShape& s, bool is_v) {
  const int tq = (threadIdx.x % 32) & 3;
  HR_UNROLL
  for (int i = 0; i < 2; ++i) {
    if (key[i] >= s.Tk) continue;
    float* dst = grad + (is_v ? s.v_at(b, key[i], g) : s.k_at(b, key[i], g));
    HR_UNROLL
    for (int n = 0; n < 8; ++n) {
      const int64_t col = col0 + n * 8 + 2 * tq;
      if (col < width) dst[col] += factor * acc[n][2 * i];
      if (col + 1 < width) dst[col + 1] += factor * acc[n][2 * i + 1];
    }
  }
}

// Pᵀ = exp2(Sᵀ·scale·log2e − lse·log2e) where visible (a query with lse = -inf saw no key and has
// no gradient) and dSᵀ = Pᵀ ∘ (dPᵀ − D), over the 64 keys `key` of this warp's rows and the query
// block at t0 (L2: lse·log2e, Dq: D per query). dS also goes to shared memory untransposed
// ([query][key], for dQ), and Pᵀ, dSᵀ into A-operand registers (pa, dsa).
__device__ __forceinline__ void gradient_tiles(float (&st)[8][4], float (&dpt)[8][4], uint32_t (&pa)[4][4],
                                               uint32_t (&dsa)[4][4], uint16_t* dS, const float* L2, const float* Dq,
                                               const AttnShape& s, int64_t b, int64_t t0, const int64_t (&key)[2],
                                               float scale_log2) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, gq = lane >> 2, tq = lane & 3;
  HR_UNROLL
  for (int n = 0; n < 8; ++n) HR_UNROLL
  for (int e = 0; e < 4; ++e) {
    const int qi = n * 8 + 2 * tq + (e & 1);
    const int64_t t = t0 + qi, j = key[e >> 1];
    const float lq = L2[qi];
    const bool vis = t < s.Tq && lq != neg_inf() && s.visible(b, t, j);
    const float p = vis ? exp2f(st[n][e] * scale_log2 - lq) : 0.f;
    const float ds = p * (dpt[n][e] - Dq[qi]);
    st[n][e] = p;
    dpt[n][e] = ds;
    dS[qi * kLdS + warp * 16 + gq + (e >> 1) * 8] = to_bf16(ds);
  }
  HR_UNROLL
  for (int kk = 0; kk < 4; ++kk) {
    acc_to_a(pa[kk], st[2 * kk], st[2 * kk + 1]);
    acc_to_a(dsa[kk], dpt[2 * kk], dpt[2 * kk + 1]);
  }
}

// dQ of this warp's 16 queries (block at t0, head h), columns col0 + 0..63, += scale · acc: pairs of
// columns as one atomic where the rows start 8-byte aligned (an even dqk).
__device__ __forceinline__ void add_dq(const float (&acc)[8][4], float* dq, const AttnShape& s, int64_t b, int64_t h,
                                       int64_t t0, int64_t col0) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, gq = lane >> 2, tq = lane & 3;
  const bool pairs_aligned = s.dqk % 2 == 0;
  HR_UNROLL
  for (int i = 0; i < 2; ++i) {
    const int64_t t = t0 + warp * 16 + gq + 8 * i;
    if (t >= s.Tq) continue;
    float* dst = dq + s.q_at(b, t, h);
    HR_UNROLL
    for (int n = 0; n < 8; ++n) {
      const int64_t col = col0 + n * 8 + 2 * tq;
      if (col + 1 < s.dqk)
        atomic_add_pair(dst + col, s.scale * acc[n][2 * i], s.scale * acc[n][2 * i + 1], pairs_aligned);
      else if (col < s.dqk)
        atomicAdd(dst + col, s.scale * acc[n][2 * i]);
    }
  }
}

constexpr std::size_t kBwdSmemBytes = 3 * kTileBytes + 2 * kTile * sizeof(float);

// grid (Tkp / 64, Hkv, B).
__global__ __launch_bounds__(kThreads) void bwd_kernel(BwdOperands x, AttnShape s, Dims d) {
  HR_DYNAMIC_SMEM(uint16_t, smem);
  uint16_t* At = smem;                                       // [64][kLdS]: K or V chunk (rows = keys)
  uint16_t* Bt = At + kTile * kLdS;                          // [64][kLdS]: Q / dO chunk, then K chunk (for dQ)
  uint16_t* dSs = Bt + kTile * kLdS;                         // [64 queries][kLdS keys]: dS (not transposed), bf16
  float* L2 = reinterpret_cast<float*>(dSs + kTile * kLdS);  // [64] lse · log2(e) per query
  float* Dq = L2 + kTile;                                    // [64] D per query

  const int64_t j0 = static_cast<int64_t>(blockIdx.x) * kTile;
  const int64_t g = blockIdx.y, b = blockIdx.z;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, gq = lane >> 2;
  const int tid = threadIdx.x;
  const int64_t nk = imin64(kTile, s.Tk - j0);
  const int64_t key[2] = {j0 + warp * 16 + gq, j0 + warp * 16 + gq + 8};
  const int64_t ck = d.dqkp / kTile, cv = d.dvp / kTile;
  const float scale_log2 = s.scale * kLog2e;
  const uint16_t* khead = x.kb + (b * s.Hkv + g) * d.Tkp * d.dqkp + j0 * d.dqkp;
  const uint16_t* vhead = x.vb + (b * s.Hkv + g) * d.Tkp * d.dvp + j0 * d.dvp;

  const int64_t t_begin = s.query_begin(j0), t_end = s.query_end(b, j0 + nk - 1);
  for (int64_t hl = 0; hl < s.group(); ++hl) {
    const int64_t h = g * s.group() + hl;
    const int64_t bh = b * s.Hq + h;
    for (int64_t qblk = t_begin / kTile; qblk < ceil_div(t_end, kTile); ++qblk) {
      const int64_t t0 = qblk * kTile;
      // Sᵀ (rows = keys, cols = queries) over dqk chunks, then dPᵀ over dv chunks.
      float st[8][4], dpt[8][4];
      zero(st);
      zero(dpt);
      const uint16_t* qrows = x.qb + (bh * d.Tp + t0) * d.dqkp;
      for (int64_t c = 0; c < ck; ++c) {
        __syncthreads();  // the previous users of At / Bt / L2 / Dq are done
        load_rows(At, khead + c * kTile, d.dqkp, kTile);
        load_rows(Bt, qrows + c * kTile, d.dqkp, kTile);
        if (c == 0 && tid < kTile) {
          const int64_t t = t0 + tid;
          const float lse = t < s.Tq ? x.lse[s.stat_at(b, h, t)] : neg_inf();
          L2[tid] = lse == neg_inf() ? neg_inf() : lse * kLog2e;
          Dq[tid] = t < s.Tq ? x.D[s.stat_at(b, h, t)] : 0.f;
        }
        __syncthreads();
        mma_tiles(st, At, Bt);
      }
      const uint16_t* dorows = x.dob + (bh * d.Tp + t0) * d.dvp;
      for (int64_t c = 0; c < cv; ++c) {
        __syncthreads();
        load_rows(At, vhead + c * kTile, d.dvp, kTile);
        load_rows(Bt, dorows + c * kTile, d.dvp, kTile);
        __syncthreads();
        mma_tiles(dpt, At, Bt);
      }
      uint32_t pa[4][4], dsa[4][4];
      gradient_tiles(st, dpt, pa, dsa, dSs, L2, Dq, s, b, t0, key, scale_log2);
      // dV += Pᵀ·dO and dK += scale·dSᵀ·Q, 64 output columns at a time (dO and Q chunks transposed
      // on the load), added to the fp32 outputs this block owns.
      for (int64_t c = 0; c < cv; ++c) {
        __syncthreads();
        load_rows(Bt, dorows + c * kTile, d.dvp, kTile);
        __syncthreads();
        float acc[8][4];
        zero(acc);
        mma_regs<BLayout::kKN>(acc, pa, Bt);
        add_key_rows(acc, x.dv, s.dv, c * kTile, 1.f, b, g, key, s, true);
      }
      for (int64_t c = 0; c < ck; ++c) {
        __syncthreads();
        load_rows(Bt, qrows + c * kTile, d.dqkp, kTile);
        __syncthreads();
        float acc[8][4];
        zero(acc);
        mma_regs<BLayout::kKN>(acc, dsa, Bt);
        add_key_rows(acc, x.dk, s.dqk, c * kTile, s.scale, b, g, key, s, false);
      }
      // dQ += scale·dS·K: rows = this warp's 16 queries, A from dS in shared memory, B from the K
      // chunk transposed on the load.
      for (int64_t c = 0; c < ck; ++c) {
        __syncthreads();
        load_rows(Bt, khead + c * kTile, d.dqkp, kTile);
        __syncthreads();
        float acc[8][4];
        zero(acc);
        mma_tiles<BLayout::kKN>(acc, dSs, Bt);
        add_dq(acc, x.dq, s, b, h, t0, c * kTile);
      }
    }
  }
}

}  // namespace mma

}  // namespace headroom::kernels::HR_CUDA_NS
