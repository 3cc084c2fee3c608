// Exact fp32 flash attention on CUDA cores (the fp32 table's attention, and the reference the
// tensor-core kernels are compared with on a GPU). Online softmax, memory linear in T, any head
// widths (K/V tiles are streamed in chunks of kChunk columns; Q rows and the output accumulators of
// one query tile stay in shared memory, 16·(dqk + dv) floats). GQA reads the shared KV head directly.
// A source fragment: compiled once by attention.cu (nvcc), or once by the emulated test (g++).
#pragma once

#include "cuda/attention_common.cuh"
#include "cuda/runtime.h"

namespace headroom::kernels::HR_CUDA_NS {

namespace simt {

constexpr int kThreads = 128;  // 4 warps
constexpr int kBQ = 16;        // query rows per tile
constexpr int kBK = 32;        // keys per tile (one per lane)
constexpr int kChunk = 128;    // columns of a K/V/Q/dO chunk held in shared memory
constexpr int kLd = kChunk + 1;
constexpr int kPLd = kBK + 1;

inline std::size_t fwd_smem_bytes(const AttnShape& s) {
  return sizeof(float) * (kBQ * s.dqk + kBQ * s.dv + kBK * kLd + kBQ * kPLd + 2 * kBQ) + sizeof(double) * kBQ;
}

// grid (ceil(T / kBQ), Hq, B)
__global__ __launch_bounds__(kThreads) void fwd_kernel(const float* q, const float* k, const float* v, float* out,
                                                       float* lse, AttnShape s) {
  HR_DYNAMIC_SMEM(float, smem);
  float* Qs = smem;                                      // [kBQ][dqk]
  float* Os = Qs + kBQ * s.dqk;                          // [kBQ][dv]
  float* KV = Os + kBQ * s.dv;                           // [kBK][kLd]
  float* P = KV + kBK * kLd;                             // [kBQ][kPLd]
  float* alpha = P + kBQ * kPLd;                         // [kBQ]
  float* mrow = alpha + kBQ;                             // [kBQ]
  double* lrow = reinterpret_cast<double*>(mrow + kBQ);  // [kBQ]; offset is a multiple of 8 bytes

  const int64_t t0 = static_cast<int64_t>(blockIdx.x) * kBQ;
  const int64_t h = blockIdx.y, b = blockIdx.z, g = h / s.group();
  const int64_t nq = imin64(kBQ, s.Tq - t0);
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;

  for (int64_t i = tid; i < kBQ * s.dqk; i += kThreads) {
    const int64_t r = i / s.dqk, c = i - r * s.dqk;
    Qs[i] = r < nq ? q[s.q_at(b, t0 + r, h) + c] : 0.f;
  }
  for (int64_t i = tid; i < kBQ * s.dv; i += kThreads) Os[i] = 0.f;
  if (tid < kBQ) {
    mrow[tid] = neg_inf();
    lrow[tid] = 0.0;
  }
  __syncthreads();

  const int64_t j_begin = s.key_begin(b, t0), j_end = s.key_end(t0 + nq - 1);
  for (int64_t j0 = j_begin; j0 < j_end; j0 += kBK) {
    const int64_t nk = imin64(kBK, j_end - j0);
    // Scores: lane = key, rows warp, warp + 4, warp + 8, warp + 12.
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
    for (int64_t c0 = 0; c0 < s.dqk; c0 += kChunk) {
      const int64_t cw = imin64(kChunk, s.dqk - c0);
      __syncthreads();
      for (int64_t i = tid; i < kBK * cw; i += kThreads) {
        const int64_t jj = i / cw, cc = i - jj * cw;
        KV[jj * kLd + cc] = jj < nk ? k[s.k_at(b, j0 + jj, g) + c0 + cc] : 0.f;
      }
      __syncthreads();
      for (int64_t cc = 0; cc < cw; ++cc) {
        const float kv = KV[lane * kLd + cc];
        HR_UNROLL
        for (int i = 0; i < 4; ++i) acc[i] += Qs[(warp + 4 * i) * s.dqk + c0 + cc] * kv;
      }
    }
    HR_UNROLL
    for (int i = 0; i < 4; ++i) {
      const int r = warp + 4 * i;
      const bool vis = r < nq && lane < nk && s.visible(b, t0 + r, j0 + lane);
      P[r * kPLd + lane] = vis ? acc[i] * s.scale : neg_inf();
    }
    __syncthreads();
    // Online softmax: warp w owns rows 4w..4w+3, lane = key.
    for (int i = 0; i < 4; ++i) {
      const int r = warp * 4 + i;
      const float sc = P[r * kPLd + lane];
      const float mo = mrow[r];
      const float mn = fmaxf(mo, warp_max(sc));
      float p = 0.f, a = 1.f;
      if (mn != neg_inf()) {
        p = expf(sc - mn);
        a = expf(mo - mn);  // 0 on the row's first visible tile
      }
      const float ps = warp_sum(p);
      P[r * kPLd + lane] = p;
      // Every lane has read mrow[r] above; the shuffles converge the warp but order no shared
      // memory, so lane 0's write waits for the warp (compute-sanitizer's racecheck saw the race).
      __syncwarp();
      if (lane == 0) {
        alpha[r] = a;
        mrow[r] = mn;
        lrow[r] = lrow[r] * a + ps;
      }
    }
    // O = O·alpha + P·V, V streamed in column chunks; thread = column.
    for (int64_t c0 = 0; c0 < s.dv; c0 += kChunk) {
      const int64_t cw = imin64(kChunk, s.dv - c0);
      __syncthreads();
      for (int64_t i = tid; i < kBK * cw; i += kThreads) {
        const int64_t jj = i / cw, cc = i - jj * cw;
        KV[jj * kLd + cc] = jj < nk ? v[s.v_at(b, j0 + jj, g) + c0 + cc] : 0.f;
      }
      __syncthreads();
      for (int64_t cc = tid; cc < cw; cc += kThreads)
        for (int r = 0; r < kBQ; ++r) {
          float o = Os[r * s.dv + c0 + cc] * alpha[r];
          for (int jj = 0; jj < kBK; ++jj) o += P[r * kPLd + jj] * KV[jj * kLd + cc];
          Os[r * s.dv + c0 + cc] = o;
        }
    }
    __syncthreads();
  }
  // A query that sees no key: out = 0, lse = -inf.
  for (int64_t i = tid; i < nq * s.dv; i += kThreads) {
    const int64_t r = i / s.dv, c = i - r * s.dv;
    const double L = lrow[r];
    const float inv = L > 0.0 ? static_cast<float>(1.0 / L) : 0.f;
    out[s.o_at(b, t0 + r, h) + c] = Os[i] * inv;
  }
  if (tid < nq) {
    const double L = lrow[tid];
    lse[s.stat_at(b, h, t0 + tid)] = L > 0.0 ? static_cast<float>(mrow[tid] + log(L)) : neg_inf();
  }
}

constexpr std::size_t kBwdSmemBytes = sizeof(float) * (kBQ * kLd + kBK * kLd + 2 * kBQ * kPLd + 2 * kBQ);

// grid (ceil(Tk / kBK), Hkv, B). The block owns dK, dV of its keys (accumulated in place in global
// memory, zeroed before the launch) and adds its dQ contributions atomically.
__global__ __launch_bounds__(kThreads) void bwd_kernel(const float* q, const float* k, const float* v, const float* lse,
                                                       const float* D, const float* dout, float* dq, float* dk,
                                                       float* dv, AttnShape s) {
  HR_DYNAMIC_SMEM(float, smem);
  float* QC = smem;            // [kBQ][kLd]: a chunk of Q or dO rows
  float* KC = QC + kBQ * kLd;  // [kBK][kLd]: a chunk of K or V rows
  float* P = KC + kBK * kLd;   // [kBQ][kPLd]
  float* dS = P + kBQ * kPLd;  // [kBQ][kPLd]
  float* L = dS + kBQ * kPLd;  // [kBQ]
  float* Dr = L + kBQ;         // [kBQ]

  const int64_t j0 = static_cast<int64_t>(blockIdx.x) * kBK;
  const int64_t g = blockIdx.y, b = blockIdx.z;
  const int64_t nk = imin64(kBK, s.Tk - j0);
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int64_t t_begin = s.query_begin(j0), t_end = s.query_end(b, j0 + nk - 1);

  for (int64_t hl = 0; hl < s.group(); ++hl) {
    const int64_t h = g * s.group() + hl;
    for (int64_t t0 = t_begin; t0 < t_end; t0 += kBQ) {
      const int64_t nq = imin64(kBQ, t_end - t0);
      // S (lane = key, rows warp + 4i) and dP, both reduced over streamed column chunks.
      float sacc[4] = {0.f, 0.f, 0.f, 0.f}, pacc[4] = {0.f, 0.f, 0.f, 0.f};
      for (int pass = 0; pass < 2; ++pass) {
        const float* rows = pass == 0 ? q : dout;
        const float* keys = pass == 0 ? k : v;
        const int64_t width = pass == 0 ? s.dqk : s.dv;
        float* acc = pass == 0 ? sacc : pacc;
        for (int64_t c0 = 0; c0 < width; c0 += kChunk) {
          const int64_t cw = imin64(kChunk, width - c0);
          __syncthreads();
          for (int64_t i = tid; i < kBQ * cw; i += kThreads) {
            const int64_t r = i / cw, cc = i - r * cw;
            QC[r * kLd + cc] = r < nq ? rows[(pass == 0 ? s.q_at(b, t0 + r, h) : s.o_at(b, t0 + r, h)) + c0 + cc] : 0.f;
          }
          for (int64_t i = tid; i < kBK * cw; i += kThreads) {
            const int64_t jj = i / cw, cc = i - jj * cw;
            KC[jj * kLd + cc] =
                jj < nk ? keys[(pass == 0 ? s.k_at(b, j0 + jj, g) : s.v_at(b, j0 + jj, g)) + c0 + cc] : 0.f;
          }
          if (pass == 0 && c0 == 0 && tid < kBQ) {
            L[tid] = tid < nq ? lse[s.stat_at(b, h, t0 + tid)] : neg_inf();
            Dr[tid] = tid < nq ? D[s.stat_at(b, h, t0 + tid)] : 0.f;
          }
          __syncthreads();
          for (int64_t cc = 0; cc < cw; ++cc) {
            const float kv = KC[lane * kLd + cc];
            HR_UNROLL
            for (int i = 0; i < 4; ++i) acc[i] += QC[(warp + 4 * i) * kLd + cc] * kv;
          }
        }
      }
      // P = exp(S·scale - lse) where visible; dS = P (dP - D). A query that saw no key has lse = -inf
      // and no gradient.
      HR_UNROLL
      for (int i = 0; i < 4; ++i) {
        const int r = warp + 4 * i;
        const bool vis = r < nq && lane < nk && L[r] != neg_inf() && s.visible(b, t0 + r, j0 + lane);
        const float p = vis ? expf(sacc[i] * s.scale - L[r]) : 0.f;
        P[r * kPLd + lane] = p;
        dS[r * kPLd + lane] = p * (pacc[i] - Dr[r]);
      }
      // dV += Pᵀ dO and dK += scale dSᵀ Q: thread = column, all kBK keys.
      for (int pass = 0; pass < 2; ++pass) {
        const float* rows = pass == 0 ? dout : q;
        const float* coef = pass == 0 ? P : dS;
        const int64_t width = pass == 0 ? s.dv : s.dqk;
        const float factor = pass == 0 ? 1.f : s.scale;
        for (int64_t c0 = 0; c0 < width; c0 += kChunk) {
          const int64_t cw = imin64(kChunk, width - c0);
          __syncthreads();
          for (int64_t i = tid; i < kBQ * cw; i += kThreads) {
            const int64_t r = i / cw, cc = i - r * cw;
            QC[r * kLd + cc] = r < nq ? rows[(pass == 0 ? s.o_at(b, t0 + r, h) : s.q_at(b, t0 + r, h)) + c0 + cc] : 0.f;
          }
          __syncthreads();
          for (int64_t cc = tid; cc < cw; cc += kThreads)
            for (int jj = 0; jj < nk; ++jj) {
              float a = 0.f;
              for (int r = 0; r < kBQ; ++r) a += coef[r * kPLd + jj] * QC[r * kLd + cc];
              float* dst = pass == 0 ? dv + s.v_at(b, j0 + jj, g) : dk + s.k_at(b, j0 + jj, g);
              dst[c0 + cc] += factor * a;
            }
        }
      }
      // dQ += scale dS K: thread = column, all query rows of the tile, atomically (other key blocks
      // add to the same rows).
      for (int64_t c0 = 0; c0 < s.dqk; c0 += kChunk) {
        const int64_t cw = imin64(kChunk, s.dqk - c0);
        __syncthreads();
        for (int64_t i = tid; i < kBK * cw; i += kThreads) {
          const int64_t jj = i / cw, cc = i - jj * cw;
          KC[jj * kLd + cc] = jj < nk ? k[s.k_at(b, j0 + jj, g) + c0 + cc] : 0.f;
        }
        __syncthreads();
        for (int64_t cc = tid; cc < cw; cc += kThreads)
          for (int r = 0; r < nq; ++r) {
            float a = 0.f;
            for (int jj = 0; jj < kBK; ++jj) a += dS[r * kPLd + jj] * KC[jj * kLd + cc];
            atomicAdd(dq + s.q_at(b, t0 + r, h) + c0 + cc, s.scale * a);
          }
      }
    }
  }
}

}  // namespace simt

}  // namespace headroom::kernels::HR_CUDA_NS
