// What every kernel header of kernels/cuda includes first. Under nvcc it is CUDA itself; under a plain
// C++ compiler with HEADROOM_CUDA_EMULATE it maps the same vocabulary onto the CPU emulator
// (emu/emulator.h), so the tests can run the kernels' source on a machine without a GPU.
//
// HR_CUDA_NS names the namespace the kernels live in: `cuda` for the real backend, `cuda_emu` for
// the emulated copy, so both can be linked into one test program.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cuda/ns.h"

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#define HR_UNROLL _Pragma("unroll")
#define HR_DYNAMIC_SMEM(T, name)                                    \
  extern __shared__ __align__(16) unsigned char hr_dynamic_smem_[]; \
  T* name = reinterpret_cast<T*>(hr_dynamic_smem_)
#elif defined(HEADROOM_CUDA_EMULATE)
#include "cuda/emu/emulator.h"
#define HR_UNROLL
#define HR_DYNAMIC_SMEM(T, name) T* name = reinterpret_cast<T*>(::headroom::kernels::emu::dynamic_smem())
#else
#error "kernels/cuda headers need nvcc, or HEADROOM_CUDA_EMULATE for the CPU emulator"
#endif

namespace headroom::kernels::HR_CUDA_NS {

inline constexpr unsigned kFullMask = 0xffffffffu;

__host__ __device__ __forceinline__ int64_t imin64(int64_t a, int64_t b) { return a < b ? a : b; }
__host__ __device__ __forceinline__ int64_t imax64(int64_t a, int64_t b) { return a > b ? a : b; }
__host__ __device__ __forceinline__ int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
__host__ __device__ __forceinline__ int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

// NaN and ±Inf are the floats whose exponent bits are all ones.
__device__ __forceinline__ bool is_nonfinite(float x) { return (__float_as_uint(x) & 0x7f800000u) == 0x7f800000u; }
__device__ __forceinline__ float neg_inf() { return __uint_as_float(0xff800000u); }

// ---- bf16 -----------------------------------------------------------------------------------------
// bf16 values travel as raw bits (uint16_t) and pairs as uint32_t with the first element in the low
// half, the register layout mma.sync expects.
__device__ __forceinline__ uint16_t to_bf16(float x) {
#if defined(__CUDACC__)
  return __bfloat16_as_ushort(__float2bfloat16_rn(x));
#else
  return emu::bf16_bits(x);
#endif
}
__device__ __forceinline__ float from_bf16(uint32_t bits16) { return __uint_as_float(bits16 << 16); }
// An attention operand's element as bf16 bits: an fp32 activation rounded, a bf16 decoding cache's
// element as it is.
__device__ __forceinline__ uint16_t bf16_of(float x) { return to_bf16(x); }
__device__ __forceinline__ uint16_t bf16_of(uint16_t x) { return x; }
// x into an output in a storage precision: fp32 as it is, bf16 rounded to nearest even.
__device__ __forceinline__ void store_as(float* p, float x) { *p = x; }
__device__ __forceinline__ void store_as(uint16_t* p, float x) { *p = to_bf16(x); }
// An element in a storage precision as fp32 (exact).
__device__ __forceinline__ float value_of(float x) { return x; }
__device__ __forceinline__ float value_of(uint16_t x) { return from_bf16(x); }
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  return static_cast<uint32_t>(to_bf16(lo)) | (static_cast<uint32_t>(to_bf16(hi)) << 16);
}

// D += A·B on one warp: m16n8k16, bf16 inputs, fp32 accumulators; fragment layout in emu/emulator.h.
__device__ __forceinline__ void mma_bf16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
#if defined(__CUDACC__)
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
  emu::mma_bf16_16816(d, a, b);
#endif
}

// ---- fragments from shared memory (sm_75+) ----------------------------------------------------------
// Four 8×8 bf16 matrices in one warp-wide load (ldmatrix.x4): lane 8i + r points at row r of matrix
// i (16-byte aligned, in shared memory); r[i] receives matrix i's word at row lane/4, columns
// 2(lane%4), +1 — the mma fragment layout. Layout in emu/emulator.h.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const uint16_t* row) {
#if defined(__CUDACC__)
  const auto a = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
#else
  emu::ldmatrix(r, row, false);
#endif
}
// Two matrices (ldmatrix.x2): lanes 0-15 supply the rows; r[0], r[1] as above. The _trans form
// delivers each matrix transposed, so a tile stored [k][n] gives the B operand that a tile stored
// [n][k] gives untransposed.
__device__ __forceinline__ void ldmatrix_x2(uint32_t (&r)[2], const uint16_t* row) {
#if defined(__CUDACC__)
  const auto a = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(a));
#else
  emu::ldmatrix(r, row, false);
#endif
}
__device__ __forceinline__ void ldmatrix_x2_trans(uint32_t (&r)[2], const uint16_t* row) {
#if defined(__CUDACC__)
  const auto a = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(a));
#else
  emu::ldmatrix(r, row, true);
#endif
}
// ---- asynchronous copies (sm_80+) ------------------------------------------------------------------
// 16 bytes from global to shared memory without a register round trip (cp.async.cg); a thread's
// copies since its last commit form a group, and wait_async<N> returns once at most N of its groups
// are still in flight. The copies become visible to the other threads at the __syncthreads after the
// wait. The emulator lands a copy only at the wait that retires its group (emu/emulator.h), so a
// missing wait or barrier shows there as data that never arrived.
__device__ __forceinline__ void copy_async16(void* smem, const void* gmem) {
#if defined(__CUDACC__)
  const auto dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(gmem));
#else
  emu::copy16(smem, gmem);
#endif
}
__device__ __forceinline__ void commit_async() {
#if defined(__CUDACC__)
  asm volatile("cp.async.commit_group;\n" ::);
#else
  emu::commit_async();
#endif
}
template <int N>
__device__ __forceinline__ void wait_async() {
#if defined(__CUDACC__)
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#else
  emu::wait_async(N);
#endif
}

// ---- atomics ----------------------------------------------------------------------------------------
// dst[0] += a and dst[1] += b in global memory: one vector atomic on sm_90 and later where the pair
// is 8-byte aligned (`aligned`), else two.
__device__ __forceinline__ void atomic_add_pair(float* dst, float a, float b, bool aligned) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (aligned) {
    atomicAdd(reinterpret_cast<float2*>(dst), make_float2(a, b));
    return;
  }
#else
  (void)aligned;
#endif
  atomicAdd(dst, a);
  atomicAdd(dst + 1, b);
}

// ---- reductions -----------------------------------------------------------------------------------
template <class T>
__device__ __forceinline__ T warp_sum(T v) {
  HR_UNROLL
  for (int m = 16; m > 0; m >>= 1) v += __shfl_xor_sync(kFullMask, v, m);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  HR_UNROLL
  for (int m = 16; m > 0; m >>= 1) v = fmaxf(v, __shfl_xor_sync(kFullMask, v, m));
  return v;
}

// Sum over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the result.
// `scratch` holds 33 values of T in shared memory and may be reused right after the call returns.
template <class T>
__device__ __forceinline__ T block_sum(T v, T* scratch) {
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = warp_sum(v);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (warp == 0) {
    T w = lane < warps ? scratch[lane] : T(0);
    w = warp_sum(w);
    if (lane == 0) scratch[32] = w;
  }
  __syncthreads();
  const T r = scratch[32];
  __syncthreads();
  return r;
}
__device__ __forceinline__ float block_max(float v, float* scratch) {
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = warp_max(v);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float w = lane < warps ? scratch[lane] : neg_inf();
    w = warp_max(w);
    if (lane == 0) scratch[32] = w;
  }
  __syncthreads();
  const float r = scratch[32];
  __syncthreads();
  return r;
}

}  // namespace headroom::kernels::HR_CUDA_NS
