// The CUDA op tables (ops.h declares cuda_ops()).
//
//   cuda_ops(a)      the training table: bf16 tensor-core GEMMs (cuBLASLt, fp32 accumulate and
//                    output) and bf16 attention (fp32 softmax statistics and accumulators) by the
//                    kernels `a` names (ops.h: cuDNN where it supports the shape, the own flash
//                    attention, or the exact SIMT one); every other op in fp32. With
//                    HEADROOM_CUDA_PRECISION=fp32 in the environment it returns cuda_ops_fp32().
//   cuda_ops_bf16(a) that bf16 table, whatever the environment says.
//   cuda_ops_fp32()  exact fp32 everywhere (cuBLASLt CUBLAS_COMPUTE_32F without TF32, SIMT flash
//                    attention): agrees with cpu_ops() to fp32 rounding; for validation.
//
// All three throw headroom::Error when no GPU is usable. Every pointer handed to them is device
// memory of the current device (cudaSetDevice before the first call; see
// parallel::select_local_gpu in src/parallel/nccl_comm.h). Every op is enqueued on one stream
// (kernels/cuda/stream.h) and returns without waiting, except copy_to_host, copy_from_host,
// synchronize, sum_squares, count_nonfinite and cross_entropy, which wait for it.
#pragma once

#include "ops.h"

namespace headroom::kernels {

const Ops& cuda_ops_bf16(AttentionKernel attention = AttentionKernel::kAuto);
const Ops& cuda_ops_fp32();

}  // namespace headroom::kernels
