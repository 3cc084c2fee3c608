// Fills an Ops table (ops.h) with the CUDA backend's entries: bf16 tensor-core GEMMs and attention,
// or exact fp32 ones. Shared by cuda_ops.cpp, the emulated device and the emulated test.
#pragma once

#include "cuda/entries.h"
#include "cuda/precision.h"
#include "headroom_error.h"
#include "ops.h"

namespace headroom::kernels::HR_CUDA_NS {

// The attention entries: fp32 tables always use the exact SIMT kernels; a bf16 table uses cuDNN
// where it supports the shape (kAuto), the blocked attention on cuBLASLt (kBlocked), the own
// tensor-core kernels (kFlash) or the SIMT ones (kSimt).
inline sig::AttentionFwd<float>* attention_fwd_entry(bool bf16, AttentionKernel a) {
  if (!bf16 || a == AttentionKernel::kSimt) return HR_CUDA_NS::attention_fwd_fp32;
  if (a == AttentionKernel::kBlocked) return HR_CUDA_NS::attention_fwd_blocked;
  return a == AttentionKernel::kAuto ? HR_CUDA_NS::attention_fwd_auto : HR_CUDA_NS::attention_fwd_bf16;
}
inline sig::AttentionBwd<float>* attention_bwd_entry(bool bf16, AttentionKernel a) {
  if (!bf16 || a == AttentionKernel::kSimt) return HR_CUDA_NS::attention_bwd_fp32;
  if (a == AttentionKernel::kBlocked) return HR_CUDA_NS::attention_bwd_blocked;
  return a == AttentionKernel::kAuto ? HR_CUDA_NS::attention_bwd_auto : HR_CUDA_NS::attention_bwd_bf16;
}

inline sig::AttentionFwdCached<float>* attention_fwd_cached_entry(bool bf16, AttentionKernel a) {
  if (!cuda_precision::bf16_cache(bf16, a)) return HR_CUDA_NS::attention_fwd_cached_fp32;
  if (a == AttentionKernel::kBlocked) return HR_CUDA_NS::attention_fwd_cached_blocked;
  return a == AttentionKernel::kAuto ? HR_CUDA_NS::attention_fwd_cached_auto : HR_CUDA_NS::attention_fwd_cached_bf16;
}

inline sig::AttentionBwdCached<float>* attention_bwd_cached_entry(bool bf16, AttentionKernel a) {
  if (!cuda_precision::bf16_cache(bf16, a)) return HR_CUDA_NS::attention_bwd_cached_fp32;
  if (a == AttentionKernel::kBlocked) return HR_CUDA_NS::attention_bwd_cached_blocked;
  return a == AttentionKernel::kAuto ? HR_CUDA_NS::attention_bwd_cached_auto : HR_CUDA_NS::attention_bwd_cached_bf16;
}

inline Ops make_table(const char* name, bool bf16, AttentionKernel attention = AttentionKernel::kFlash) {
  Ops t{};
  t.name = name;
  t.alloc = HR_CUDA_NS::alloc;
  t.free = HR_CUDA_NS::free;
  t.copy_to_host = HR_CUDA_NS::copy_to_host;
  t.copy_from_host = HR_CUDA_NS::copy_from_host;
  t.copy = HR_CUDA_NS::copy;
  t.fill = HR_CUDA_NS::fill;
  t.synchronize = HR_CUDA_NS::synchronize;
  t.matmul = bf16 ? HR_CUDA_NS::matmul_bf16 : HR_CUDA_NS::matmul_fp32;
  t.weight_bytes = cuda_precision::weight_bytes(bf16);
  t.weight_store = bf16 ? HR_CUDA_NS::store_bf16 : HR_CUDA_NS::store_fp32;
  t.weight_store_columns = bf16 ? HR_CUDA_NS::store_columns_bf16 : HR_CUDA_NS::store_columns_fp32;
  t.matmul_stored = bf16 ? HR_CUDA_NS::matmul_bf16_stored : HR_CUDA_NS::matmul_fp32_stored;
  t.matmul_both_stored = bf16 ? HR_CUDA_NS::matmul_bf16_both_stored : HR_CUDA_NS::matmul_fp32_both_stored;
  t.matmul_to_stored = bf16 ? HR_CUDA_NS::matmul_bf16_to_stored : HR_CUDA_NS::matmul_fp32_to_stored;
  t.matmul_strided = HR_CUDA_NS::matmul_strided;
  t.axpy = HR_CUDA_NS::axpy;
  t.add = HR_CUDA_NS::add;
  t.scale = HR_CUDA_NS::scale;
  t.sum_squares = HR_CUDA_NS::sum_squares;
  t.count_nonfinite = HR_CUDA_NS::count_nonfinite;
  t.embedding_fwd = HR_CUDA_NS::embedding_fwd;
  t.embedding_bwd = HR_CUDA_NS::embedding_bwd;
  t.row_sumsq = HR_CUDA_NS::row_sumsq;
  t.rms_apply = HR_CUDA_NS::rms_apply;
  t.rms_bwd_dot = HR_CUDA_NS::rms_bwd_dot;
  t.rms_bwd_apply = HR_CUDA_NS::rms_bwd_apply;
  t.rms_bwd = HR_CUDA_NS::rms_bwd;
  t.add_rms_norm = HR_CUDA_NS::add_rms_norm;
  t.add_rms_norm_stored = bf16 ? HR_CUDA_NS::add_rms_norm_stored_bf16 : HR_CUDA_NS::add_rms_norm_stored_fp32;
  t.rope = HR_CUDA_NS::rope;
  t.rope_grad_stored = bf16 ? HR_CUDA_NS::rope_grad_stored_bf16 : HR_CUDA_NS::rope_grad_stored_fp32;
  t.attention_fwd = attention_fwd_entry(bf16, attention);
  t.attention_bwd = attention_bwd_entry(bf16, attention);
  t.kv_bytes = cuda_precision::kv_bytes(bf16, attention);
  t.rope_operand = t.kv_bytes == 2 ? HR_CUDA_NS::rope_operand_bf16 : HR_CUDA_NS::rope_operand_fp32;
  t.rms_rope_operand = t.kv_bytes == 2 ? HR_CUDA_NS::rms_rope_operand_bf16 : HR_CUDA_NS::rms_rope_operand_fp32;
  t.attention_fwd_cached = attention_fwd_cached_entry(bf16, attention);
  t.attention_bwd_cached = attention_bwd_cached_entry(bf16, attention);
  t.swiglu_fwd = HR_CUDA_NS::swiglu_fwd;
  t.swiglu_fwd_stored = bf16 ? HR_CUDA_NS::swiglu_fwd_stored_bf16 : HR_CUDA_NS::swiglu_fwd_stored_fp32;
  t.swiglu_bwd = HR_CUDA_NS::swiglu_bwd;
  t.swiglu_bwd_stored = bf16 ? HR_CUDA_NS::swiglu_bwd_stored_bf16 : HR_CUDA_NS::swiglu_bwd_stored_fp32;
  t.cross_entropy = HR_CUDA_NS::cross_entropy;
  t.logits_chunk = kDeviceLogitsChunk;
  t.adamw = HR_CUDA_NS::adamw;
  t.capture_begin = HR_CUDA_NS::capture_begin;
  t.capture_end = HR_CUDA_NS::capture_end;
  t.graph_launch = HR_CUDA_NS::graph_launch;
  t.graph_free = HR_CUDA_NS::graph_free;
  return t;
}

// The tables cuda_ops() hands out, one per precision and attention choice, built on first use
// (the names of the first call stay: each build has one caller).
struct TableNames {
  const char* automatic;  // bf16, kAuto
  const char* flash;      // bf16, kFlash
  const char* simt;       // bf16, kSimt
  const char* fp32;
  const char* blocked;  // bf16, kBlocked
};
inline const Ops& table_for(const TableNames& n, bool bf16, AttentionKernel a) {
  static const Ops fp32 = make_table(n.fp32, false);
  static const Ops automatic = make_table(n.automatic, true, AttentionKernel::kAuto);
  static const Ops flash = make_table(n.flash, true, AttentionKernel::kFlash);
  static const Ops simt = make_table(n.simt, true, AttentionKernel::kSimt);
  static const Ops blocked = make_table(n.blocked, true, AttentionKernel::kBlocked);
  if (!bf16) return fp32;
  switch (a) {
    case AttentionKernel::kAuto:
      return automatic;
    case AttentionKernel::kFlash:
      return flash;
    case AttentionKernel::kBlocked:
      return blocked;
    case AttentionKernel::kSimt:
      break;
  }
  return simt;
}

}  // namespace headroom::kernels::HR_CUDA_NS
