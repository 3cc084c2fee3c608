// The tensor-core flash attention's backward pass with K and V resident in shared memory and dK, dV
// accumulated in registers across all the queries that see a block of keys (FlashAttention-2's
// backward schedule), the query-side tiles double-buffered through cp.async.
// A source fragment: compiled once by attention.cu (nvcc), or once by the emulated test (g++).
//
// A block = 64 keys of one KV head and batch row and one column slice: SW chunks of 64 columns of
// dK (and dQ) and of dV. It loads its keys' K and V (all chunks: the scores need every column) into
// shared memory once. Then, for every query head of the GQA group and every visible 64-query block,
// it recomputes Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ, forms Pᵀ and dSᵀ in registers, adds dV += Pᵀ·dO and
// dK += dSᵀ·Q to the slice's accumulators (registers, SW × 2 × 32 floats per thread), and
// dQ += scale·dS·K (dS through shared memory) atomically in fp32; the second operands of those three
// are the slice's chunks of the same dO, Q and K tiles, transposed by ldmatrix on the load. The next
// query block's Q and dO tiles are in flight (cp.async) while one is computed, when two stages fit in
// shared memory; the accumulators reach the fp32 outputs once, at the end.
//
// Slices recompute the scores: a d128 head in one slice of SW = 2 does no extra work. Heads whose
// resident tiles do not fit shared memory run attention_mma.cuh's streamed backward
// (resident_bwd_launch decides).
#pragma once

#include "cuda/attention_mma.cuh"

namespace headroom::kernels::HR_CUDA_NS {

namespace mma {

// Chunks of 64 columns per slice: the dK and dV accumulators of two chunks (128 floats per thread)
// are what the registers hold beside the score tiles.
constexpr int kSliceChunks = 2;

// The shared memory of one block, in [64][kLdS] bf16 tiles, and its launch.
struct ResidentBwd {
  int64_t chunks_qk = 0, chunks_v = 0, slices = 0;
  int stages = 0;  // 2: double-buffered, 1: single, 0: does not fit (the streamed kernel runs)
  std::size_t smem = 0;
};

inline std::size_t resident_bwd_smem(int64_t chunks_qk, int64_t chunks_v, int stages) {
  const int64_t resident = chunks_qk + chunks_v;            // K, V
  const int64_t per_stage = chunks_qk + chunks_v;           // Q, dO
  const int64_t tiles = resident + stages * per_stage + 1;  // + dS
  return kTileBytes * static_cast<std::size_t>(tiles) + sizeof(float) * 2 * kTile * static_cast<std::size_t>(stages);
}

// The most stages up to max_stages that fit max_smem (0: none).
inline ResidentBwd resident_bwd_launch(const Dims& d, std::size_t max_smem, int max_stages) {
  ResidentBwd r;
  r.chunks_qk = d.dqkp / kTile;
  r.chunks_v = d.dvp / kTile;
  r.slices = ceil_div(r.chunks_qk > r.chunks_v ? r.chunks_qk : r.chunks_v, kSliceChunks);
  for (int st = max_stages; st >= 1; --st)
    if (resident_bwd_smem(r.chunks_qk, r.chunks_v, st) <= max_smem) {
      r.stages = st;
      r.smem = resident_bwd_smem(r.chunks_qk, r.chunks_v, st);
      break;
    }
  return r;
}

// Where a block's tiles live in shared memory.
struct ResidentTiles {
  uint16_t *k, *v, *ds;  // resident: chunks_qk, chunks_v tiles; dS one tile
  uint16_t* stage0;      // per stage: Q (chunks_qk), dO (chunks_v)
  float* stats0;         // per stage: lse·log2(e) [64], D [64]
  int64_t per_stage;     // elements
};

__device__ __forceinline__ ResidentTiles carve(uint16_t* smem, const ResidentBwd& r) {
  constexpr int64_t tile = kTile * kLdS;
  ResidentTiles t;
  t.k = smem;
  t.v = t.k + r.chunks_qk * tile;
  t.ds = t.v + r.chunks_v * tile;
  t.stage0 = t.ds + tile;
  t.per_stage = (r.chunks_qk + r.chunks_v) * tile;
  t.stats0 = reinterpret_cast<float*>(t.stage0 + r.stages * t.per_stage);
  return t;
}

// grid (Tkp / 64, Hkv · slices, B).
__global__ __launch_bounds__(kThreads) void bwd_resident_kernel(BwdOperands x, AttnShape s, Dims d, ResidentBwd r) {
  constexpr int64_t tile = kTile * kLdS;
  HR_DYNAMIC_SMEM(uint16_t, smem);
  const ResidentTiles sm = carve(smem, r);
  const int64_t j0 = static_cast<int64_t>(blockIdx.x) * kTile;
  const int64_t g = blockIdx.y / r.slices, slice = blockIdx.y % r.slices, b = blockIdx.z;
  const int64_t c0 = slice * kSliceChunks;  // the slice's first chunk of dK/dQ and of dV columns
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, gq = lane >> 2;
  const int tid = threadIdx.x;
  const int64_t nk = imin64(kTile, s.Tk - j0);
  const int64_t key[2] = {j0 + warp * 16 + gq, j0 + warp * 16 + gq + 8};
  const float scale_log2 = s.scale * kLog2e;
  const int64_t t_begin = s.query_begin(j0), t_end = s.query_end(b, j0 + nk - 1);
  const int64_t qb_begin = t_begin / kTile, n_qblocks = t_end > t_begin ? ceil_div(t_end, kTile) - qb_begin : 0;
  const int64_t items = s.group() * n_qblocks;  // (query head, query block) pairs
  if (items == 0) return;                       // dK and dV stay as zeroed

  // The resident tiles: this block's keys' K and V.
  const uint16_t* khead = x.kb + ((b * s.Hkv + g) * d.Tkp + j0) * d.dqkp;
  const uint16_t* vhead = x.vb + ((b * s.Hkv + g) * d.Tkp + j0) * d.dvp;
  for (int64_t c = 0; c < r.chunks_qk; ++c) load_rows_async(sm.k + c * tile, khead + c * kTile, d.dqkp, kTile);
  for (int64_t c = 0; c < r.chunks_v; ++c) load_rows_async(sm.v + c * tile, vhead + c * kTile, d.dvp, kTile);
  commit_async();

  const auto item_head = [&](int64_t it) { return g * s.group() + it / n_qblocks; };
  const auto item_t0 = [&](int64_t it) { return (qb_begin + it % n_qblocks) * kTile; };
  // Item it's query-side tiles and statistics into stage st (one cp.async group).
  const auto issue = [&](int64_t it, int st) {
    const int64_t h = item_head(it), t0 = item_t0(it), bh = b * s.Hq + h;
    uint16_t* q = sm.stage0 + st * sm.per_stage;
    uint16_t* dO = q + r.chunks_qk * tile;
    for (int64_t c = 0; c < r.chunks_qk; ++c)
      load_rows_async(q + c * tile, x.qb + (bh * d.Tp + t0) * d.dqkp + c * kTile, d.dqkp, kTile);
    for (int64_t c = 0; c < r.chunks_v; ++c)
      load_rows_async(dO + c * tile, x.dob + (bh * d.Tp + t0) * d.dvp + c * kTile, d.dvp, kTile);
    if (tid < kTile) {
      float* stats = sm.stats0 + st * 2 * kTile;
      const int64_t t = t0 + tid;
      const float lse = t < s.Tq ? x.lse[s.stat_at(b, h, t)] : neg_inf();
      stats[tid] = lse == neg_inf() ? neg_inf() : lse * kLog2e;
      stats[kTile + tid] = t < s.Tq ? x.D[s.stat_at(b, h, t)] : 0.f;
    }
    commit_async();
  };

  float dk[kSliceChunks][8][4], dv[kSliceChunks][8][4];
  HR_UNROLL
  for (int i = 0; i < kSliceChunks; ++i) {
    zero(dk[i]);
    zero(dv[i]);
  }
  issue(0, 0);
  for (int64_t it = 0; it < items; ++it) {
    const int st = r.stages == 2 ? static_cast<int>(it & 1) : 0;
    if (r.stages == 2 && it + 1 < items) {
      issue(it + 1, st ^ 1);
      wait_async<1>();
    } else {
      wait_async<0>();
    }
    __syncthreads();  // every thread's copies for this item (and the resident ones) have landed
    const int64_t h = item_head(it), t0 = item_t0(it);
    const uint16_t* q = sm.stage0 + st * sm.per_stage;
    const uint16_t* dO = q + r.chunks_qk * tile;
    const float* L2 = sm.stats0 + st * 2 * kTile;
    const float* Dq = L2 + kTile;

    float sacc[8][4], dpt[8][4];
    zero(sacc);
    zero(dpt);
    for (int64_t c = 0; c < r.chunks_qk; ++c) mma_tiles(sacc, sm.k + c * tile, q + c * tile);
    for (int64_t c = 0; c < r.chunks_v; ++c) mma_tiles(dpt, sm.v + c * tile, dO + c * tile);
    uint32_t pa[4][4], dsa[4][4];
    gradient_tiles(sacc, dpt, pa, dsa, sm.ds, L2, Dq, s, b, t0, key, scale_log2);
    HR_UNROLL
    for (int i = 0; i < kSliceChunks; ++i) {
      if (c0 + i < r.chunks_v) mma_regs<BLayout::kKN>(dv[i], pa, dO + (c0 + i) * tile);
      if (c0 + i < r.chunks_qk) mma_regs<BLayout::kKN>(dk[i], dsa, q + (c0 + i) * tile);
    }
    __syncthreads();  // dS complete
    // dQ += scale·dS·K: rows = this warp's 16 queries, A from dS, B from the resident K.
    HR_UNROLL
    for (int i = 0; i < kSliceChunks; ++i) {
      if (c0 + i >= r.chunks_qk) continue;
      float acc[8][4];
      zero(acc);
      mma_tiles<BLayout::kKN>(acc, sm.ds, sm.k + (c0 + i) * tile);
      add_dq(acc, x.dq, s, b, h, t0, (c0 + i) * kTile);
    }
    __syncthreads();  // this stage and dS are free for the next item's loads
    if (r.stages == 1 && it + 1 < items) issue(it + 1, 0);
  }
  HR_UNROLL
  for (int i = 0; i < kSliceChunks; ++i) {
    if (c0 + i < r.chunks_v) add_key_rows(dv[i], x.dv, s.dv, (c0 + i) * kTile, 1.f, b, g, key, s, true);
    if (c0 + i < r.chunks_qk) add_key_rows(dk[i], x.dk, s.dqk, (c0 + i) * kTile, s.scale, b, g, key, s, false);
  }
}

}  // namespace mma

}  // namespace headroom::kernels::HR_CUDA_NS
