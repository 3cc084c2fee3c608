// cuDNN's fused attention (scaled dot-product attention through the graph API of cudnn_graph.h),
// behind the attention entries of ops.h: fp32 tensors in ops.h's layouts in, fp32 out; bf16
// operands inside (as the own tensor-core kernels), fp32 softmax statistics.
// cudnn_attention.cu on the GPU build; emu/cudnn_emu.cpp (no cuDNN) on the emulated one.
#pragma once

#include "cuda/attention_choice.h"
#include "cuda/ns.h"

#include <cstdint>
#include <string>

namespace headroom::kernels::HR_CUDA_NS {

// This device's compute capability and the cuDNN library's version (0 without cuDNN).
cuda::CudnnSupport cudnn_support();

// Enqueue the call on cuDNN. Returns false, with the reason in *why and nothing written, when
// cuDNN refuses the graph (no engine for it) or 64 shapes have graphs already (each compiles
// kernels at run time); the refusal is remembered per shape. Failures while running a plan throw
// headroom::Error naming the call.
bool cudnn_attention_fwd(const cuda::AttentionCall& c, float scale, const float* q, const float* k, const float* v,
                         float* out, float* lse, std::string* why);
// The same on bf16 Q, K, V and out (the operand precision: ops.h's rope_operand, attention_*_cached).
bool cudnn_attention_fwd(const cuda::AttentionCall& c, float scale, const uint16_t* q, const uint16_t* k,
                         const uint16_t* v, uint16_t* out, float* lse, std::string* why);
bool cudnn_attention_bwd(const cuda::AttentionCall& c, float scale, const float* q, const float* k, const float* v,
                         const float* out, const float* lse, const float* dout, float* dq, float* dk, float* dv,
                         std::string* why);
// The same on bf16 Q, K, V, out and dout.
bool cudnn_attention_bwd(const cuda::AttentionCall& c, float scale, const uint16_t* q, const uint16_t* k,
                         const uint16_t* v, const uint16_t* out, const float* lse, const uint16_t* dout, float* dq,
                         float* dk, float* dv, std::string* why);

}  // namespace headroom::kernels::HR_CUDA_NS
