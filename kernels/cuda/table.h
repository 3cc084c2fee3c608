// Fills an Ops table (ops.h) with the CUDA backend's entries: bf16 tensor-core GEMMs and attention,
// or exact fp32 ones. Shared by cuda_ops.cpp and the emulated test.
#pragma once

#include "cuda/entries.h"
#include "ops.h"

namespace headroom::kernels::HR_CUDA_NS {

inline Ops make_table(const char* name, bool bf16) {
  Ops t{};
  t.name = name;
  t.alloc = HR_CUDA_NS::alloc;
  t.free = HR_CUDA_NS::free;
  t.copy_to_host = HR_CUDA_NS::copy_to_host;
  t.copy_from_host = HR_CUDA_NS::copy_from_host;
  t.fill = HR_CUDA_NS::fill;
  t.synchronize = HR_CUDA_NS::synchronize;
  t.matmul = bf16 ? HR_CUDA_NS::matmul_bf16 : HR_CUDA_NS::matmul_fp32;
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
  t.rope = HR_CUDA_NS::rope;
  t.attention_fwd = bf16 ? HR_CUDA_NS::attention_fwd_bf16 : HR_CUDA_NS::attention_fwd_fp32;
  t.attention_bwd = bf16 ? HR_CUDA_NS::attention_bwd_bf16 : HR_CUDA_NS::attention_bwd_fp32;
  t.swiglu_fwd = HR_CUDA_NS::swiglu_fwd;
  t.swiglu_bwd = HR_CUDA_NS::swiglu_bwd;
  t.cross_entropy = HR_CUDA_NS::cross_entropy;
  t.adamw = HR_CUDA_NS::adamw;
  return t;
}

}  // namespace headroom::kernels::HR_CUDA_NS
