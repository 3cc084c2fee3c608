// The CPU backend's entry points, one per `Ops` member, declared with ops.h's signatures (where the
// contracts are). Internal to kernels/: the model reaches them only through cpu_ops().
#pragma once

#include "ops.h"

namespace headroom::kernels::cpu {

sig::Alloc alloc;
sig::Free free;
sig::CopyToHost copy_to_host;
sig::CopyFromHost copy_from_host;
sig::Copy copy;
sig::Fill<float> fill;
sig::Synchronize synchronize;

sig::Matmul<float> matmul;
sig::MatmulStrided<float> matmul_strided;
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

sig::AttentionFwd<float> attention_fwd;
sig::AttentionBwd<float> attention_bwd;

sig::SwigluFwd<float> swiglu_fwd;
sig::SwigluBwd<float> swiglu_bwd;

sig::CrossEntropy<float> cross_entropy;

sig::Adamw<float> adamw;

}  // namespace headroom::kernels::cpu
