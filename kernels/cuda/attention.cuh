// The attention entries of the tables: shape checks, operand packing, launches, and the choice
// between cuDNN's fused attention, the blocked attention on cuBLASLt (attention_blocked.cuh) and
// the own flash kernels (attention_*_auto).
// A source fragment: compiled once by attention.cu (nvcc), or once by the emulated test (g++).
#pragma once

#include "cuda/attention_mma.cuh"
#include "cuda/attention_mma_bwd.cuh"
#include "cuda/attention_simt.cuh"
#include "cuda/cudnn_attention.h"
#include "cuda/entries.h"
#include "cuda/runtime.h"

#include <cstdio>
#include <mutex>
#include <set>
#include <string>

namespace headroom::kernels::HR_CUDA_NS {

namespace attention {

// out = 0 and lse = -inf for every query (no key visible at all); out in fp32 or bf16.
template <class Out>
void empty_forward(Out* out, float* lse, const AttnShape& s) {
  zero_async(out, sizeof(Out) * s.B * s.Tq * s.Hq * s.dv);
  fill(lse, -INFINITY, s.B * s.Hq * s.Tq);
}

template <class O>
void row_dots(const O* out, const O* dout, float* D, const AttnShape& s) {
  const int64_t rows = s.B * s.Tq * s.Hq;
  launch("attention_bwd(row dots)", attention_row_dots<O>, dim3(static_cast<unsigned>(ceil_div(rows, 8))), dim3(256), 0,
         out, dout, D, s);
}

// The path for one call: cuDNN when the rules allow it (attention_choice.h). Each decision is
// logged once per process, shape and path (stderr), so a run says which kernels its layers use.
inline cuda::AttentionChoice choose(const cuda::AttentionCall& c) {
  static const cuda::CudnnSupport support = cudnn_support();
  return cuda::choose_attention(c, support);
}

inline void log_once(const cuda::AttentionCall& c, const cuda::AttentionChoice& choice) {
  static std::mutex m;
  static std::set<std::string> said;
  const std::string key = cuda::decision_key(c);
  const std::lock_guard<std::mutex> lock(m);
  // Once per shape and path: a reason may name the call's positions, which change every decoding step.
  if (said.insert(key + "|" + std::to_string(static_cast<int>(choice.path))).second)
    std::fprintf(stderr, "headroom: attention %s: %s\n", key.c_str(), choice.reason.c_str());
}

// The path that runs the call: kCudnn when the rules send it to cuDNN and cuDNN took the graph
// (`cudnn` ran it); else the kernels the caller must run, the flash ones when cuDNN refused a graph
// the rules gave it. Either way the decision is logged once per shape.
template <class Cudnn>
cuda::AttentionPath run_path(const cuda::AttentionCall& c, Cudnn cudnn) {
  cuda::AttentionChoice choice = choose(c);
  if (choice.path == cuda::AttentionPath::kCudnn) {
    std::string why;
    if (cudnn(&why)) {
      log_once(c, choice);
      return choice.path;
    }
    choice = {cuda::AttentionPath::kFlash, "own flash attention: cuDNN refused the graph (" + why + ")"};
  }
  log_once(c, choice);
  return choice.path;
}

inline void check_grid(const AttnShape& s, int64_t blocks, const char* op) {
  if (blocks > 0x7fffffff) fail("cuda ", op, ": ", blocks, " blocks exceed one launch");
  (void)s;
}

void simt_forward(const float* q, const float* k, const float* v, float* out, float* lse, const AttnShape& s) {
  const std::size_t smem = simt::fwd_smem_bytes(s);
  if (smem > max_dynamic_smem())
    fail("cuda attention_fwd (fp32): head widths dqk = ", s.dqk, ", dv = ", s.dv, " need ", smem,
         " bytes of shared memory per block; the device allows ", max_dynamic_smem());
  const int64_t qt = ceil_div(s.Tq, simt::kBQ);
  check_grid(s, qt, "attention_fwd");
  launch("attention_fwd(simt)", simt::fwd_kernel,
         dim3(static_cast<unsigned>(qt), static_cast<unsigned>(s.Hq), static_cast<unsigned>(s.B)), dim3(simt::kThreads),
         smem, q, k, v, out, lse, s);
}

void simt_backward(const float* q, const float* k, const float* v, const float* out, const float* lse,
                   const float* dout, float* dq, float* dk, float* dv, const AttnShape& s) {
  auto* D = static_cast<float*>(scratch(sizeof(float) * s.B * s.Hq * s.Tq));
  row_dots(out, dout, D, s);
  const int64_t kt = ceil_div(s.Tk, simt::kBK);
  check_grid(s, kt, "attention_bwd");
  launch("attention_bwd(simt)", simt::bwd_kernel,
         dim3(static_cast<unsigned>(kt), static_cast<unsigned>(s.Hkv), static_cast<unsigned>(s.B)),
         dim3(simt::kThreads), simt::kBwdSmemBytes, q, k, v, lse, static_cast<const float*>(D), dout, dq, dk, dv, s);
}

inline mma::Dims padded(const AttnShape& s) {
  return {round_up(s.Tq, mma::kTile), round_up(s.Tk, mma::kTile), round_up(s.dqk, mma::kTile),
          round_up(s.dv, mma::kTile)};
}

template <class Src>
void pack(const Src* src, uint16_t* dst, int64_t B, int64_t L, int64_t H, int64_t d, int64_t Lp, int64_t dp) {
  launch("attention(pack bf16)", mma::pack_heads<Src>, grid_1d(B * H * Lp * dp, 256), dim3(256), 0, src, dst, B, L, H,
         d, Lp, dp);
}

// The flash forward: pipelined (K and V blocks in flight by cp.async) where Q is resident and two
// stages fit, unless max_stages < 2; streamed otherwise.
template <int DVT, class Out>
void launch_mma_forward(const uint16_t* qb, const mma::KvView& kv, const mma::KvView& vv, Out* out, float* lse,
                        const AttnShape& s, const mma::Dims& d, const mma::FwdGrid& grid, int max_stages) {
  const bool q_resident = d.dqkp <= 256;
  const bool pipelined = q_resident && max_stages >= 2 && mma::fwd_smem_bytes(d, DVT, true, true) <= max_dynamic_smem();
  const std::size_t smem = mma::fwd_smem_bytes(d, DVT, q_resident, pipelined);
  const int64_t blocks = d.Tp / mma::kTile * grid.slices * grid.splits;
  check_grid(s, blocks, "attention_fwd");
  launch(pipelined ? "attention_fwd(mma, pipelined)" : "attention_fwd(mma)", mma::fwd_kernel<DVT, Out>,
         dim3(static_cast<unsigned>(blocks), static_cast<unsigned>(s.Hq), static_cast<unsigned>(s.B)),
         dim3(mma::kThreads), smem, qb, kv, vv, out, lse, s, d, grid, q_resident, pipelined);
}

// Output columns per forward block (fwd_kernel's DVT): the padded width up to 256.
inline int fwd_columns(const mma::Dims& d) { return d.dvp <= 64 ? 64 : d.dvp <= 128 ? 128 : 256; }
// Output slices per query block: the padded width in fwd_columns.
inline int fwd_slices(const mma::Dims& d) { return static_cast<int>(ceil_div(d.dvp, fwd_columns(d))); }

// Split-key decoding: into how many parts to split the keys of a call with one query block
// (decoding after a cached prefix: a few blocks for the whole device) so that it gives the device two
// blocks per multiprocessor, each part keeping at least four key blocks (the merge's extra pass
// stays small). Calls with more query blocks (training, prefill) are not split: their results stay
// the same bits whichever entry runs them.
inline int decode_splits(const AttnShape& s, const mma::Dims& d) {
  if (d.Tp > mma::kTile) return 1;
  const int64_t blocks = fwd_slices(d) * s.Hq * s.B;
  const int64_t wanted = ceil_div(2 * static_cast<int64_t>(multiprocessors()), blocks);
  const int64_t most = d.Tkp / mma::kTile / 4;
  return static_cast<int>(imax64(1, imin64(wanted, most)));
}

// The backward overwrites its gradients: zero them (the kernels accumulate), and say whether there
// is anything to compute.
inline bool zero_gradients(float* dq, float* dk, float* dv, const AttnShape& s) {
  zero_async(dq, sizeof(float) * s.B * s.Tq * s.Hq * s.dqk);
  zero_async(dk, sizeof(float) * s.B * s.Tk * s.Hkv * s.dqk);
  zero_async(dv, sizeof(float) * s.B * s.Tk * s.Hkv * s.dv);
  return s.B * s.Tq != 0 && s.Tk != 0;
}

}  // namespace attention

void attention_fwd_fp32(const float* q, const float* k, const float* v, float* out, float* lse,
                        const AttentionShape& shape, float scale) {
  const AttnShape s{shape, scale};
  validate_attention(s, "attention_fwd");
  if (s.B * s.Tq == 0) return;
  if (s.Tk == 0) return attention::empty_forward(out, lse, s);
  attention::simt_forward(q, k, v, out, lse, s);
}

namespace attention {

// A bf16 decoding cache ([B, Tk, Hkv, width]) as the forward reads it in place: possible where every
// 64-column chunk of a row starts 16-byte aligned (cp.async's unit), i.e. an aligned cache and widths
// that are multiples of 8. Else (and for fp32 activations) the operands are packed first.
inline bool cache_in_place(const void* k, const void* v, const AttnShape& s) {
  const auto aligned = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
  return aligned(k) && aligned(v) && s.dqk % 8 == 0 && s.dv % 8 == 0;
}
inline bool cache_in_place(const float*, const float*, const AttnShape&) { return false; }

inline mma::KvView packed_view(const uint16_t* p, const AttnShape& s, int64_t Tkp, int64_t dp) {
  return {p, s.Hkv * Tkp * dp, Tkp * dp, dp, Tkp, dp};
}
inline mma::KvView cache_view(const void* p, const AttnShape& s, int64_t width) {
  return {static_cast<const uint16_t*>(p), s.Tk * s.Hkv * width, width, s.Hkv * width, s.Tk, width};
}

// The tensor-core forward on Q, K and V in fp32 or in bf16 (the operand precision: training's, or a
// decoding cache's K and V, read in place where cache_in_place says so), out in the same precision.
// splits: how many parts each query block's keys are split into (1: none; 0: decode_splits decides).
template <class Kv>
void flash_forward(const Kv* q, const Kv* k, const Kv* v, Kv* out, float* lse, const AttnShape& s, int max_stages = 2,
                   int splits = 1) {
  if (s.B * s.Tq == 0) return;
  if (s.Tk == 0) return empty_forward(out, lse, s);
  const int64_t B = s.B, T = s.Tq, Tk = s.Tk, Hq = s.Hq, Hkv = s.Hkv, dqk = s.dqk, dv = s.dv;
  const mma::Dims d = padded(s);
  const int dvt = fwd_columns(d);
  mma::FwdGrid grid;
  grid.slices = fwd_slices(d);
  grid.splits = splits > 0 ? splits : decode_splits(s, d);
  grid.out_split = B * T * Hq * dv;
  grid.lse_split = B * Hq * T;
  const int64_t parted = grid.splits > 1 ? grid.splits : 0;
  const bool in_place = cache_in_place(k, v, s);
  const int64_t packed_k = in_place ? 0 : B * Hkv * d.Tkp * d.dqkp, packed_v = in_place ? 0 : B * Hkv * d.Tkp * d.dvp;
  Carver sizes;
  sizes.take<uint16_t>(B * Hq * d.Tp * d.dqkp);
  sizes.take<uint16_t>(packed_k);
  sizes.take<uint16_t>(packed_v);
  sizes.take<float>(parted * grid.out_split);
  sizes.take<float>(parted * grid.lse_split);
  Carver parts(scratch(sizes.used()));
  uint16_t* qb = parts.take<uint16_t>(B * Hq * d.Tp * d.dqkp);
  uint16_t* kb = parts.take<uint16_t>(packed_k);
  uint16_t* vb = parts.take<uint16_t>(packed_v);
  float* part_out = parted ? parts.take<float>(parted * grid.out_split) : nullptr;
  float* part_lse = parted ? parts.take<float>(parted * grid.lse_split) : lse;
  pack(q, qb, B, T, Hq, dqk, d.Tp, d.dqkp);
  if (!in_place) {
    pack(k, kb, B, Tk, Hkv, dqk, d.Tkp, d.dqkp);
    pack(v, vb, B, Tk, Hkv, dv, d.Tkp, d.dvp);
  }
  const mma::KvView kv = in_place ? cache_view(k, s, dqk) : packed_view(kb, s, d.Tkp, d.dqkp);
  const mma::KvView vv = in_place ? cache_view(v, s, dv) : packed_view(vb, s, d.Tkp, d.dvp);
  // The splits' parts in fp32 (merged into out), else out itself.
  const auto run = [&](auto* o) {
    if (dvt == 64)
      launch_mma_forward<64>(qb, kv, vv, o, part_lse, s, d, grid, max_stages);
    else if (dvt == 128)
      launch_mma_forward<128>(qb, kv, vv, o, part_lse, s, d, grid, max_stages);
    else
      launch_mma_forward<256>(qb, kv, vv, o, part_lse, s, d, grid, max_stages);
  };
  if (!parted) return run(out);
  run(part_out);
  launch("attention_fwd(merge splits)", mma::merge_splits<Kv>, grid_1d(grid.out_split, 256), dim3(256), 0,
         static_cast<const float*>(part_out), static_cast<const float*>(part_lse), out, lse, s, grid);
}

}  // namespace attention

void attention_fwd_bf16_with(const float* q, const float* k, const float* v, float* out, float* lse,
                             const AttentionShape& shape, float scale, int max_stages, int splits) {
  const AttnShape s{shape, scale};
  validate_attention(s, "attention_fwd");
  attention::flash_forward(q, k, v, out, lse, s, max_stages, splits);
}

void attention_fwd_bf16(const float* q, const float* k, const float* v, float* out, float* lse,
                        const AttentionShape& shape, float scale) {
  attention_fwd_bf16_with(q, k, v, out, lse, shape, scale, 2);
}

void attention_bwd_fp32(const float* q, const float* k, const float* v, const float* out, const float* lse,
                        const float* dout, float* dq, float* dk, float* dv, const AttentionShape& shape, float scale) {
  const AttnShape s{shape, scale};
  validate_attention(s, "attention_bwd");
  if (!attention::zero_gradients(dq, dk, dv, s)) return;
  attention::simt_backward(q, k, v, out, lse, dout, dq, dk, dv, s);
}

namespace attention {
// The tensor-core backward on Q, K, V, out and dout in fp32 or bf16 (the operand precision).
template <class Kv>
void flash_backward(const Kv* q, const Kv* k, const Kv* v, const Kv* out, const float* lse, const Kv* dout, float* dq,
                    float* dk, float* dv, const AttnShape& s, int max_stages) {
  if (!zero_gradients(dq, dk, dv, s)) return;
  const int64_t B = s.B, T = s.Tq, Tk = s.Tk, Hq = s.Hq, Hkv = s.Hkv, dqk = s.dqk, dv_dim = s.dv;
  const mma::Dims d = padded(s);
  const int64_t nq = B * Hq * d.Tp, nk = B * Hkv * d.Tkp;
  Carver sizes;
  sizes.take<uint16_t>(nq * d.dqkp);  // qb
  sizes.take<uint16_t>(nk * d.dqkp);  // kb
  sizes.take<uint16_t>(nk * d.dvp);   // vb
  sizes.take<uint16_t>(nq * d.dvp);   // dob
  sizes.take<float>(B * Hq * T);      // D
  Carver parts(scratch(sizes.used()));
  uint16_t* qb = parts.take<uint16_t>(nq * d.dqkp);
  uint16_t* kb = parts.take<uint16_t>(nk * d.dqkp);
  uint16_t* vb = parts.take<uint16_t>(nk * d.dvp);
  uint16_t* dob = parts.take<uint16_t>(nq * d.dvp);
  float* D = parts.take<float>(B * Hq * T);
  row_dots(out, dout, D, s);
  pack(q, qb, B, T, Hq, dqk, d.Tp, d.dqkp);
  pack(k, kb, B, Tk, Hkv, dqk, d.Tkp, d.dqkp);
  pack(v, vb, B, Tk, Hkv, dv_dim, d.Tkp, d.dvp);
  pack(dout, dob, B, T, Hq, dv_dim, d.Tp, d.dvp);
  const mma::BwdOperands x{qb, kb, vb, dob, lse, D, dq, dk, dv};
  const mma::ResidentBwd r = mma::resident_bwd_launch(d, max_dynamic_smem(), max_stages);
  if (r.stages > 0) {
    launch("attention_bwd(mma, resident)", mma::bwd_resident_kernel,
           dim3(static_cast<unsigned>(d.Tkp / mma::kTile), static_cast<unsigned>(Hkv * r.slices),
                static_cast<unsigned>(B)),
           dim3(mma::kThreads), r.smem, x, s, d, r);
    return;
  }
  launch("attention_bwd(mma)", mma::bwd_kernel,
         dim3(static_cast<unsigned>(d.Tkp / mma::kTile), static_cast<unsigned>(Hkv), static_cast<unsigned>(B)),
         dim3(mma::kThreads), mma::kBwdSmemBytes, x, s, d);
}
}  // namespace attention

void attention_bwd_bf16_with(const float* q, const float* k, const float* v, const float* out, const float* lse,
                             const float* dout, float* dq, float* dk, float* dv, const AttentionShape& shape,
                             float scale, int max_stages) {
  const AttnShape s{shape, scale};
  validate_attention(s, "attention_bwd");
  attention::flash_backward(q, k, v, out, lse, dout, dq, dk, dv, s, max_stages);
}

int attention_bwd_resident_stages(int64_t dqk, int64_t dv, int max_stages) {
  const mma::Dims d{mma::kTile, mma::kTile, round_up(dqk, mma::kTile), round_up(dv, mma::kTile)};
  return mma::resident_bwd_launch(d, max_dynamic_smem(), max_stages).stages;
}

void attention_bwd_bf16(const float* q, const float* k, const float* v, const float* out, const float* lse,
                        const float* dout, float* dq, float* dk, float* dv, const AttentionShape& shape, float scale) {
  attention_bwd_bf16_with(q, k, v, out, lse, dout, dq, dk, dv, shape, scale, 2);
}

// train.attention_kernel = auto: cuDNN where it supports the shape and accepts the graph, the
// blocked attention where the rules choose it, the own tensor-core kernels elsewhere. Q, K, V and
// out in fp32 (attention_*_auto) or bf16 (the operand precision: attention_*_cached_auto).
namespace attention {
// The blocked forward (attention_blocked.cuh) through its entries.
inline void blocked_forward(const float* q, const float* k, const float* v, float* out, float* lse,
                            const AttnShape& s) {
  attention_fwd_blocked(q, k, v, out, lse, s, s.scale);
}
inline void blocked_forward(const uint16_t* q, const uint16_t* k, const uint16_t* v, uint16_t* out, float* lse,
                            const AttnShape& s) {
  attention_fwd_cached_blocked(q, k, v, out, lse, s, s.scale);
}

// splits as flash_forward takes them, for the flash path.
template <class Kv>
void auto_forward(const Kv* q, const Kv* k, const Kv* v, Kv* out, float* lse, const AttnShape& s, int splits) {
  const AttentionShape& shape = s;
  const cuda::AttentionCall c{shape, false};
  const cuda::AttentionPath p =
      run_path(c, [&](std::string* why) { return cudnn_attention_fwd(c, s.scale, q, k, v, out, lse, why); });
  if (p == cuda::AttentionPath::kCudnn) return;
  if (p == cuda::AttentionPath::kBlocked) return blocked_forward(q, k, v, out, lse, s);
  flash_forward(q, k, v, out, lse, s, 2, splits);
}
}  // namespace attention

void attention_fwd_auto(const float* q, const float* k, const float* v, float* out, float* lse,
                        const AttentionShape& shape, float scale) {
  const AttnShape s{shape, scale};
  validate_attention(s, "attention_fwd");
  attention::auto_forward(q, k, v, out, lse, s, 1);
}

namespace attention {
inline void blocked_backward(const float* q, const float* k, const float* v, const float* out, const float* lse,
                             const float* dout, float* dq, float* dk, float* dv, const AttnShape& s) {
  attention_bwd_blocked(q, k, v, out, lse, dout, dq, dk, dv, s, s.scale);
}
inline void blocked_backward(const uint16_t* q, const uint16_t* k, const uint16_t* v, const uint16_t* out,
                             const float* lse, const uint16_t* dout, float* dq, float* dk, float* dv,
                             const AttnShape& s) {
  attention_bwd_cached_blocked(q, k, v, out, lse, dout, dq, dk, dv, s, s.scale);
}

template <class Kv>
void auto_backward(const Kv* q, const Kv* k, const Kv* v, const Kv* out, const float* lse, const Kv* dout, float* dq,
                   float* dk, float* dv, const AttnShape& s) {
  const AttentionShape& shape = s;
  const cuda::AttentionCall c{shape, true};
  const cuda::AttentionPath p = run_path(
      c, [&](std::string* why) { return cudnn_attention_bwd(c, s.scale, q, k, v, out, lse, dout, dq, dk, dv, why); });
  if (p == cuda::AttentionPath::kCudnn) return;
  if (p == cuda::AttentionPath::kBlocked) return blocked_backward(q, k, v, out, lse, dout, dq, dk, dv, s);
  flash_backward(q, k, v, out, lse, dout, dq, dk, dv, s, 2);
}
}  // namespace attention

void attention_bwd_auto(const float* q, const float* k, const float* v, const float* out, const float* lse,
                        const float* dout, float* dq, float* dk, float* dv, const AttentionShape& shape, float scale) {
  const AttnShape s{shape, scale};
  validate_attention(s, "attention_bwd");
  attention::auto_backward(q, k, v, out, lse, dout, dq, dk, dv, s);
}

// The entries on Q, K, V and out in the operand precision (ops.h's *_cached: training's, and a
// decoding cache's): bf16 in the bf16 tables, fp32 under kSimt and in the fp32 table.
namespace attention {
inline const uint16_t* bf16_bits(const void* p) { return static_cast<const uint16_t*>(p); }
inline uint16_t* bf16_bits(void* p) { return static_cast<uint16_t*>(p); }
}  // namespace attention

void attention_fwd_cached_auto(const void* q, const void* k, const void* v, void* out, float* lse,
                               const AttentionShape& shape, float scale) {
  const AttnShape s{shape, scale};
  validate_attention(s, "attention_fwd");
  attention::auto_forward(attention::bf16_bits(q), attention::bf16_bits(k), attention::bf16_bits(v),
                          attention::bf16_bits(out), lse, s, 0);
}
void attention_fwd_cached_bf16(const void* q, const void* k, const void* v, void* out, float* lse,
                               const AttentionShape& shape, float scale) {
  const AttnShape s{shape, scale};
  validate_attention(s, "attention_fwd");
  attention::flash_forward(attention::bf16_bits(q), attention::bf16_bits(k), attention::bf16_bits(v),
                           attention::bf16_bits(out), lse, s, 2, 0);
}
int attention_decode_splits(const AttentionShape& shape) {
  const AttnShape s{shape, 1.f};
  return attention::decode_splits(s, attention::padded(s));
}

void attention_fwd_cached_fp32(const void* q, const void* k, const void* v, void* out, float* lse,
                               const AttentionShape& shape, float scale) {
  attention_fwd_fp32(static_cast<const float*>(q), static_cast<const float*>(k), static_cast<const float*>(v),
                     static_cast<float*>(out), lse, shape, scale);
}

void attention_bwd_cached_auto(const void* q, const void* k, const void* v, const void* out, const float* lse,
                               const void* dout, float* dq, float* dk, float* dv, const AttentionShape& shape,
                               float scale) {
  const AttnShape s{shape, scale};
  validate_attention(s, "attention_bwd");
  attention::auto_backward(attention::bf16_bits(q), attention::bf16_bits(k), attention::bf16_bits(v),
                           attention::bf16_bits(out), lse, attention::bf16_bits(dout), dq, dk, dv, s);
}
void attention_bwd_cached_bf16(const void* q, const void* k, const void* v, const void* out, const float* lse,
                               const void* dout, float* dq, float* dk, float* dv, const AttentionShape& shape,
                               float scale) {
  const AttnShape s{shape, scale};
  validate_attention(s, "attention_bwd");
  attention::flash_backward(attention::bf16_bits(q), attention::bf16_bits(k), attention::bf16_bits(v),
                            attention::bf16_bits(out), lse, attention::bf16_bits(dout), dq, dk, dv, s, 2);
}
void attention_bwd_cached_fp32(const void* q, const void* k, const void* v, const void* out, const float* lse,
                               const void* dout, float* dq, float* dk, float* dv, const AttentionShape& shape,
                               float scale) {
  attention_bwd_fp32(static_cast<const float*>(q), static_cast<const float*>(k), static_cast<const float*>(v),
                     static_cast<const float*>(out), lse, static_cast<const float*>(dout), dq, dk, dv, shape, scale);
}

}  // namespace headroom::kernels::HR_CUDA_NS
