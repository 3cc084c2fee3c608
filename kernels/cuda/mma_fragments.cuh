// Warp-level tensor-core products on 64-wide bf16 tiles in shared memory: mma.sync m16n8k16 with
// bf16 operands and fp32 accumulators, fragments loaded by ldmatrix. The flash attention's building
// blocks (attention_mma.cuh, attention_mma_bwd.cuh); all inline, so a test can include them.
// Tiles are [rows][kLdS] bf16, 64 columns used; rows padded to 72 elements so the eight 16-byte rows
// one ldmatrix matrix reads fall in distinct banks.
#pragma once

#include "cuda/simt.h"

namespace headroom::kernels::HR_CUDA_NS {

namespace mma {

constexpr int kTile = 64;  // rows and columns of a tile (query rows, keys, columns per chunk)
constexpr int kLdS = 72;   // shared-memory row stride in bf16 elements (64 + 8)

// A fragment of rows [row0, row0 + 16), k-slice [k0, k0 + 16) of a [*][kLdS] tile, by one ldmatrix:
// matrix i is a[i] of the mma layout, rows +8·(i & 1), columns +8·(i >> 1).
__device__ __forceinline__ void load_a(uint32_t (&a)[4], const uint16_t* tile, int row0, int k0) {
  const int lane = threadIdx.x % 32, i = lane >> 3, r = lane & 7;
  ldmatrix_x4(a, tile + (row0 + r + 8 * (i & 1)) * kLdS + k0 + 8 * (i >> 1));
}

// How a tile holds a product's B operand: kNK stored [n][k] (rows = the product's columns, read as
// they are), kKN stored [k][n] (rows = the reduction index, transposed by the load). kKN lets the
// same Q, K, V and dO tiles serve the products that need them the other way round.
enum class BLayout { kNK, kKN };

// The B fragment of one n8 tile (columns [n0, n0 + 8)), k-slice [k0, k0 + 16), by one ldmatrix.x2:
// matrix i is b[i], k +8·i. (An x4 over two n8 tiles would halve the loads, but its four registers
// in flight make the resident backward spill.)
template <BLayout L>
__device__ __forceinline__ void load_b(uint32_t (&b)[2], const uint16_t* tile, int n0, int k0) {
  const int lane = threadIdx.x % 32, i = (lane >> 3) & 1, r = lane & 7;
  if constexpr (L == BLayout::kNK)
    ldmatrix_x2(b, tile + (n0 + r) * kLdS + k0 + 8 * i);
  else
    ldmatrix_x2_trans(b, tile + (k0 + r + 8 * i) * kLdS + n0);
}
// The accumulators of two neighbouring n8 tiles (2kk, 2kk+1) as the A fragment of k-slice kk.
__device__ __forceinline__ void acc_to_a(uint32_t (&a)[4], const float (&c0)[4], const float (&c1)[4]) {
  a[0] = pack_bf16(c0[0], c0[1]);
  a[1] = pack_bf16(c0[2], c0[3]);
  a[2] = pack_bf16(c1[0], c1[1]);
  a[3] = pack_bf16(c1[2], c1[3]);
}

// acc[n] += A·B over one 64-wide k chunk: A = rows [16·warp, +16) of tile At ([rows][k]), B from
// tile Bt (8 n8 tiles = 64 columns) laid out as L says.
template <BLayout L = BLayout::kNK>
__device__ __forceinline__ void mma_tiles(float (&acc)[8][4], const uint16_t* At, const uint16_t* Bt) {
  const int warp = threadIdx.x / 32;
  HR_UNROLL
  for (int kk = 0; kk < 4; ++kk) {
    uint32_t a[4];
    load_a(a, At, warp * 16, kk * 16);
    HR_UNROLL
    for (int n = 0; n < 8; ++n) {
      uint32_t bb[2];
      load_b<L>(bb, Bt, n * 8, kk * 16);
      mma_bf16(acc[n], a, bb);
    }
  }
}
// The same with the A operand already in registers (four k-slices of 16).
template <BLayout L = BLayout::kNK>
__device__ __forceinline__ void mma_regs(float (&acc)[8][4], const uint32_t (&a)[4][4], const uint16_t* Bt) {
  HR_UNROLL
  for (int kk = 0; kk < 4; ++kk) HR_UNROLL
  for (int n = 0; n < 8; ++n) {
    uint32_t bb[2];
    load_b<L>(bb, Bt, n * 8, kk * 16);
    mma_bf16(acc[n], a[kk], bb);
  }
}
__device__ __forceinline__ void zero(float (&acc)[8][4]) {
  HR_UNROLL
  for (int n = 0; n < 8; ++n) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.f;
}

}  // namespace mma

}  // namespace headroom::kernels::HR_CUDA_NS
