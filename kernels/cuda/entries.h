// The CUDA backend's entry points, one per Ops member, declared with ops.h's signatures (where the
// contracts are), plus the two GEMM and attention flavours the two tables pick from. Internal to kernels/: callers use cuda_ops() /
// cuda_ops_fp32() (cuda_tables.h). Declared in HR_CUDA_NS so the emulated test links both copies.
#pragma once

#include "cuda/ns.h"
#include "ops.h"

namespace headroom::kernels::HR_CUDA_NS {

sig::Alloc alloc;
sig::Free free;
sig::CopyToHost copy_to_host;
sig::CopyFromHost copy_from_host;
sig::Copy copy;
sig::Synchronize synchronize;
sig::Fill<float> fill;
// CUDA graphs: stream capture on the backend's stream, executable graphs launched on it. Freeing
// device memory (free, the scratch's growth) makes every earlier graph stale.
sig::CaptureBegin capture_begin;
sig::CaptureEnd capture_end;
sig::GraphLaunch graph_launch;
sig::GraphFree graph_free;

// bf16 operands (rounded from the fp32 inputs), fp32 accumulation and output.
sig::Matmul<float> matmul_bf16;
// fp32 operands and accumulation, TF32 off.
sig::Matmul<float> matmul_fp32;
// matmul_bf16 with B already bf16 (weight_store's), matmul_fp32 with B fp32: ops.h's matmul_stored.
sig::MatmulStored<float> matmul_bf16_stored;
sig::MatmulStored<float> matmul_fp32_stored;
// The same with A stored too: ops.h's matmul_both_stored.
sig::MatmulBothStored<float> matmul_bf16_both_stored;
sig::MatmulBothStored<float> matmul_fp32_both_stored;
// The same with C in the operands' precision: bf16 rounded from the fp32 sum (ops.h's
// matmul_to_stored), or fp32.
sig::MatmulToStored<float> matmul_bf16_to_stored;
sig::MatmulToStored<float> matmul_fp32_to_stored;
// ops.h's weight_store: rounded to bf16, or copied in fp32.
sig::StoreAs<float> store_bf16;
sig::StoreAs<float> store_fp32;
sig::StoreColumns<float> store_columns_bf16;
sig::StoreColumns<float> store_columns_fp32;
// fp32 like matmul_fp32, in both tables.
sig::MatmulStrided<float> matmul_strided;

// One operand of matmul_batched_bf16: matrix n of the batch starts at p + n·stride; rows are ld
// elements apart (both in elements).
template <class T>
struct Batched {
  T* p;
  int64_t ld, stride;
};
// C[n] = alpha · op(A[n]) · op(B[n]) + beta · C[n] for every n < batch, shapes as sig::Matmul's:
// bf16 operands (raw bits), fp32 accumulation and output. C is not read when beta = 0. The blocked
// attention's GEMMs (attention_blocked.cuh); the emulator runs it on sgemm.
void matmul_batched_bf16(Batched<const uint16_t> A, Batched<const uint16_t> B, Batched<float> C, int64_t batch,
                         int64_t M, int64_t N, int64_t K, bool trans_a, bool trans_b, float alpha, float beta);
sig::Axpy<float> axpy;
sig::Add<float> add;
sig::Scale<float> scale;
sig::SumSquares<float> sum_squares;
sig::CountNonfinite<float> count_nonfinite;

sig::EmbeddingFwd<float> embedding_fwd;
sig::EmbeddingBwd<float> embedding_bwd;

sig::RowSumsq<float> row_sumsq;
sig::RmsApply<float> rms_apply;
sig::RmsBwdDot<float> rms_bwd_dot;
sig::AddRmsNorm<float> add_rms_norm;
sig::RmsBwdApply<float> rms_bwd_apply;
sig::RmsBwd<float> rms_bwd;

sig::Rope<float> rope;
// rope into the attention's operand precision (ops.h's rope_operand): bf16, or fp32 (the fp32 table
// and kSimt).
sig::RopeOperand<float> rope_operand_bf16;
sig::RopeOperand<float> rope_operand_fp32;
// The backward of rope into the weight precision's columns (ops.h's rope_grad_stored): bf16, or
// fp32 (the fp32 table).
sig::RopeGradStored<float> rope_grad_stored_bf16;
sig::RopeGradStored<float> rope_grad_stored_fp32;
// The same with a QK norm on the way (ops.h's rms_rope_operand).
sig::RmsRopeOperand<float> rms_rope_operand_bf16;
sig::RmsRopeOperand<float> rms_rope_operand_fp32;

// Flash attention. _bf16: tensor-core (mma.sync) kernels on bf16 copies of q/k/v, fp32 softmax
// statistics and accumulators. _fp32: exact fp32 SIMT kernels.
sig::AttentionFwd<float> attention_fwd_bf16;
sig::AttentionFwd<float> attention_fwd_fp32;
sig::AttentionBwd<float> attention_bwd_bf16;
sig::AttentionBwd<float> attention_bwd_fp32;
// attention_fwd_bf16 pipelined (K/V blocks by cp.async, two stages) only when max_stages >= 2 and
// it fits, else streamed, and each query block's keys split into `splits` parts merged by their
// log-sum-exp (0: as many as split-key decoding picks; the decoding-cache entries take 0, the entry
// above 2 stages and 1 split). For the tests and bench_gpu.
void attention_fwd_bf16_with(const float* q, const float* k, const float* v, float* out, float* lse,
                             const AttentionShape& shape, float scale, int max_stages, int splits = 1);
// attention_bwd_bf16 with at most max_stages query-side buffers in the K/V-resident backward
// (attention_mma_bwd.cuh; 0: the streamed backward of attention_mma.cuh), for the tests. The entry
// above takes 2, or what fits.
void attention_bwd_bf16_with(const float* q, const float* k, const float* v, const float* out, const float* lse,
                             const float* dout, float* dq, float* dk, float* dv, const AttentionShape& shape,
                             float scale, int max_stages);
// The stages that backward takes at these head widths on this device (0: it runs streamed).
int attention_bwd_resident_stages(int64_t dqk, int64_t dv, int max_stages);
// Blocked attention on batched bf16 GEMMs (attention_blocked.cuh): any width, bf16 operands, fp32
// scores and softmax statistics.
sig::AttentionFwd<float> attention_fwd_blocked;
sig::AttentionBwd<float> attention_bwd_blocked;
// The same with an explicit number of queries per block (the entries above use attention_block()).
void attention_fwd_blocked_with(const float* q, const float* k, const float* v, float* out, float* lse,
                                const AttentionShape& shape, float scale, int64_t block);
void attention_bwd_blocked_with(const float* q, const float* k, const float* v, const float* out, const float* lse,
                                const float* dout, float* dq, float* dk, float* dv, const AttentionShape& shape,
                                float scale, int64_t block);
// cuDNN's fused attention where it supports the shape (attention_choice.h), else the blocked or the
// _bf16 kernels.
sig::AttentionFwd<float> attention_fwd_auto;
sig::AttentionBwd<float> attention_bwd_auto;

// Q/K/V in the operand precision (ops.h: training's, and a decoding cache's K/V): the bf16 tables
// keep them in bf16 and attend through the same paths as their attention_fwd/_bwd (the cached
// entries' Q/K/V are bf16 bits); the fp32 table and kSimt keep fp32.
sig::AttentionFwdCached<float> attention_fwd_cached_auto;
sig::AttentionFwdCached<float> attention_fwd_cached_bf16;
sig::AttentionFwdCached<float> attention_fwd_cached_blocked;
sig::AttentionFwdCached<float> attention_fwd_cached_fp32;
sig::AttentionBwdCached<float> attention_bwd_cached_auto;
sig::AttentionBwdCached<float> attention_bwd_cached_bf16;
sig::AttentionBwdCached<float> attention_bwd_cached_blocked;
sig::AttentionBwdCached<float> attention_bwd_cached_fp32;
// Into how many parts the decoding-cache entries' flash path splits the keys of this call
// (split-key decoding: calls with one query block over many keys; 1: not split).
int attention_decode_splits(const AttentionShape& shape);

sig::SwigluFwd<float> swiglu_fwd;
// The stored-output entries (ops.h) per weight precision: bf16 in the bf16 tables, fp32 in the fp32 one.
sig::SwigluFwdStored<float> swiglu_fwd_stored_bf16;
sig::SwigluFwdStored<float> swiglu_fwd_stored_fp32;
sig::AddRmsNormStored<float> add_rms_norm_stored_bf16;
sig::AddRmsNormStored<float> add_rms_norm_stored_fp32;
sig::SwigluBwd<float> swiglu_bwd;
sig::SwigluBwdStored<float> swiglu_bwd_stored_bf16;
sig::SwigluBwdStored<float> swiglu_bwd_stored_fp32;

// Rows with a target >= V are reported after the kernel: the op waits for the stream and throws
// headroom::Error naming the first such row (the CPU backend throws before computing).
sig::CrossEntropy<float> cross_entropy;

sig::Adamw<float> adamw;

}  // namespace headroom::kernels::HR_CUDA_NS
