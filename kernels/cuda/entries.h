// The CUDA backend's entry points, one per Ops member (contracts in ops.h), plus the two GEMM and
// attention flavours the two tables pick from. Internal to kernels/: callers use cuda_ops() /
// cuda_ops_fp32() (cuda_tables.h). Declared in HR_CUDA_NS so the emulated test links both copies.
#pragma once

#include "cuda/ns.h"

#include <cstddef>
#include <cstdint>

namespace headroom::kernels::HR_CUDA_NS {

void* alloc(std::size_t bytes);
void free(void* p);
void copy_to_host(void* host_dst, const void* src, std::size_t bytes);
void copy_from_host(void* dst, const void* host_src, std::size_t bytes);
void synchronize();
void fill(float* x, float value, int64_t n);

// bf16 operands (rounded from the fp32 inputs), fp32 accumulation and output.
void matmul_bf16(const float* A, const float* B, float* C, int64_t M, int64_t N, int64_t K,
                 bool trans_a, bool trans_b, bool accumulate);
// fp32 operands and accumulation, TF32 off.
void matmul_fp32(const float* A, const float* B, float* C, int64_t M, int64_t N, int64_t K,
                 bool trans_a, bool trans_b, bool accumulate);
void axpy(float* y, const float* x, float a, int64_t n);
void add(float* out, const float* a, const float* b, int64_t n);
void scale(float* x, float a, int64_t n);
double sum_squares(const float* x, int64_t n);
int64_t count_nonfinite(const float* x, int64_t n);

void embedding_fwd(const float* table, const int32_t* ids, float* out, int64_t n, int64_t d);
void embedding_bwd(const float* dout, const int32_t* ids, float* dtable, int64_t n, int64_t d);

void row_sumsq(const float* x, float* sumsq, int64_t rows, int64_t n);
void rms_apply(const float* x, const float* w, const float* sumsq, float* y, float* rstd,
               int64_t rows, int64_t n, int64_t n_total, float eps);
void rms_bwd_dot(const float* x, const float* w, const float* dy, float* dot, int64_t rows,
                 int64_t n);
void rms_bwd_apply(const float* x, const float* w, const float* dy, const float* rstd,
                   const float* dot, float* dx, float* dw, int64_t rows, int64_t n,
                   int64_t n_total);

void rope(float* x, const float* cos, const float* sin, int64_t B, int64_t T, int64_t pos0,
          int64_t n_heads, int64_t head_dim, int64_t rot_dims, bool inverse);

// Flash attention. _bf16: tensor-core (mma.sync) kernels on bf16 copies of q/k/v, fp32 softmax
// statistics and accumulators. _fp32: exact fp32 SIMT kernels.
void attention_fwd_bf16(const float* q, const float* k, const float* v, float* out, float* lse,
                        int64_t B, int64_t T, int64_t Tk, int64_t q_pos0, int64_t Hq, int64_t Hkv,
                        int64_t dqk, int64_t dv, int64_t window, float scale);
void attention_fwd_fp32(const float* q, const float* k, const float* v, float* out, float* lse,
                        int64_t B, int64_t T, int64_t Tk, int64_t q_pos0, int64_t Hq, int64_t Hkv,
                        int64_t dqk, int64_t dv, int64_t window, float scale);
void attention_bwd_bf16(const float* q, const float* k, const float* v, const float* out,
                        const float* lse, const float* dout, float* dq, float* dk, float* dv,
                        int64_t B, int64_t T, int64_t Tk, int64_t q_pos0, int64_t Hq, int64_t Hkv,
                        int64_t dqk, int64_t dv_dim, int64_t window, float scale);
void attention_bwd_fp32(const float* q, const float* k, const float* v, const float* out,
                        const float* lse, const float* dout, float* dq, float* dk, float* dv,
                        int64_t B, int64_t T, int64_t Tk, int64_t q_pos0, int64_t Hq, int64_t Hkv,
                        int64_t dqk, int64_t dv_dim, int64_t window, float scale);

void swiglu_fwd(const float* gate, const float* up, float* out, int64_t n);
void swiglu_bwd(const float* gate, const float* up, const float* dout, float* dgate, float* dup,
                int64_t n);

// Rows with a target >= V are reported after the kernel: the op waits for the stream and throws
// headroom::Error naming the first such row (the CPU backend throws before computing).
void cross_entropy(const float* logits, const int32_t* targets, float* losses, float* dlogits,
                   int64_t rows, int64_t V, float grad_scale);

void adamw(float* p, const float* g, float* m, float* v, int64_t n, float lr, float beta1,
           float beta2, float eps, float weight_decay, int64_t step);

}  // namespace headroom::kernels::HR_CUDA_NS
