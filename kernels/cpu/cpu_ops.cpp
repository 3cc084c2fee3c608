// The CPU backend's table: host memory, OpenBLAS for products, OpenMP for everything else.
#include "cpu/cpu_kernels.h"
#include "ops.h"

namespace headroom::kernels {

const Ops& cpu_ops() {
  static const Ops table{
      .name = "cpu",
      .alloc = cpu::alloc,
      .free = cpu::free,
      .copy_to_host = cpu::copy_to_host,
      .copy_from_host = cpu::copy_from_host,
      .copy = cpu::copy,
      .fill = cpu::fill,
      .synchronize = cpu::synchronize,
      .matmul = cpu::matmul,
      .weight_bytes = sizeof(float),
      .weight_store = store_host<float>,
      .weight_store_columns = store_columns_host<float>,
      .matmul_stored = matmul_on_stored<float, cpu::matmul>,
      .matmul_both_stored = matmul_on_both_stored<float, cpu::matmul>,
      .matmul_to_stored = matmul_to_stored_on_host<float, cpu::matmul>,
      .matmul_strided = cpu::matmul_strided,
      .axpy = cpu::axpy,
      .add = cpu::add,
      .scale = cpu::scale,
      .sum_squares = cpu::sum_squares,
      .count_nonfinite = cpu::count_nonfinite,
      .embedding_fwd = cpu::embedding_fwd,
      .embedding_bwd = cpu::embedding_bwd,
      .row_sumsq = cpu::row_sumsq,
      .rms_apply = cpu::rms_apply,
      .add_rms_norm = cpu::add_rms_norm,
      .add_rms_norm_stored = add_rms_norm_on_stored<float, cpu::add_rms_norm>,
      .rms_bwd_dot = cpu::rms_bwd_dot,
      .rms_bwd_apply = cpu::rms_bwd_apply,
      .rms_bwd = cpu::rms_bwd,
      .rope = cpu::rope,
      .rope_grad_stored = rope_grad_stored_on_host<float, cpu::rope>,
      .attention_fwd = cpu::attention_fwd,
      .attention_bwd = cpu::attention_bwd,
      .kv_bytes = sizeof(float),
      .rope_operand = rope_on_store<float, cpu::rope>,
      .rms_rope_operand = rms_rope_on_host<float, cpu::rms_apply, cpu::rope>,
      .attention_fwd_cached = attention_fwd_on_cache<float, cpu::attention_fwd>,
      .attention_bwd_cached = attention_bwd_on_cache<float, cpu::attention_bwd>,
      .swiglu_fwd = cpu::swiglu_fwd,
      .swiglu_fwd_stored = swiglu_fwd_on_stored<float, cpu::swiglu_fwd>,
      .swiglu_bwd = cpu::swiglu_bwd,
      .swiglu_bwd_stored = swiglu_bwd_on_stored<float, cpu::swiglu_bwd>,
      .cross_entropy = cpu::cross_entropy,
      .logits_chunk = kHostLogitsChunk,
      .adamw = cpu::adamw,
      .capture_begin = nullptr,
      .capture_end = nullptr,
      .graph_launch = nullptr,
      .graph_free = nullptr,
  };
  return table;
}

}  // namespace headroom::kernels
