// The geometry of the blocked attention on cuBLASLt (attention_blocked.cuh): the queries of a call
// go through in blocks of `block` positions; for each block the scores S of every query head against
// the keys the block can see are materialised in the scratch workspace ([group heads × queries,
// keys], fp32, and their probabilities in bf16), so the workspace grows with the block, not with the
// square of the sequence. Plain host code without a CUDA header: the kernels size their workspace
// with these functions, and so does the memory plan (src/app/memory_plan.cpp), so the two agree.
#pragma once

#include <cstdint>

#include "ops.h"

namespace headroom::kernels::cuda {

// Queries per block unless HEADROOM_ATTENTION_BLOCK says otherwise. 256: the score GEMM's M is
// group × 256 ≥ 256 rows, two of cuBLASLt's widest Hopper tiles (128 or 256 rows), so the GEMMs
// run at full tile efficiency; a block computes keys up to its last query, so the part of the
// diagonal block the causal mask discards is 256 / (2·T) of the work (3% at 4K, 0.4% at 32K); and
// the workspace is 6 bytes × heads × 256 × keys (48 MiB per query head at 32K keys, beside
// gigabytes of activations). Smaller blocks mean more launches per call (each block is 4 launches
// forward and 8 backward), larger ones more workspace and more of the diagonal wasted. The GPU script times 128, 256 and 512 (validation/gpu/run_gpu_checks.sh).
constexpr int64_t kDefaultAttentionBlock = 256;

// The widest head cuDNN's fused attention takes on any GPU (Hopper, both passes).
constexpr int64_t kCudnnWidest = 256;

// Calls after a cached prefix (evaluate's later prefill chunks) or a context-parallel segment's
// earlier chunks (q_pos0 > 0, Tq < Tk) with heads wider than cuDNN's 256 go to the blocked attention
// from this many queries on (train.attention_kernel = auto): below it the score GEMMs' M, group ×
// Tq rows, is thinner than one of cuBLASLt's Hopper tiles (64 rows and more), and one pass over the
// keys (the flash kernels) is the better decoder. Set from the tile shapes; not yet timed.
constexpr int64_t kMinBlockedQueries = 64;

// Whether auto sends such a call to the blocked attention (attention_choice.cpp; the memory plan
// sizes its workspace by the same rule).
inline bool blocked_after_prefix(int64_t Tq, int64_t dqk, int64_t dv) {
  return Tq >= kMinBlockedQueries && (dqk > kCudnnWidest || dv > kCudnnWidest);
}

// The block size in use: HEADROOM_ATTENTION_BLOCK (a positive multiple of 16) or the default.
// Throws headroom::Error naming the variable on any other value.
int64_t attention_block();

// Head widths as packed for the GEMMs: a multiple of 8 bf16 elements, so every row starts
// 16-byte aligned (cuBLASLt's fast kernels need it), zero-padded.
int64_t packed_width(int64_t d);

// Keys [begin, end) that query rows [t0, t1) can see through the causal mask and the window. A
// document mask hides more keys inside the range; it is applied element-wise, not here (the host
// never reads doc_start, which lives in device memory).
struct KeyRange {
  int64_t begin, end;
  int64_t size() const { return end > begin ? end - begin : 0; }
};
KeyRange block_keys(const AttentionShape& s, int64_t t0, int64_t t1);

// The row stride of the score buffers: the widest key range of any block, rounded up to 8.
int64_t score_stride(const AttentionShape& s, int64_t block);

// Element counts of each part of the workspace, in the order the kernels carve it.
struct BlockedWorkspace {
  int64_t q, k, v, dout;  // bf16 packed copies, grouped by KV head (dout: backward only)
  int64_t scores;         // fp32 S, then dP in the backward pass: [B·Hq·block, score_stride]
  int64_t probs;          // bf16 P, then dS in the backward pass
  int64_t rows;           // fp32 O (forward) or dQ (backward) of one block, packed width
  int64_t dk, dv, D;      // backward only: fp32 dK and dV accumulators, D = rowsum(dO∘O)
};
BlockedWorkspace blocked_workspace(const AttentionShape& s, int64_t block, bool backward);

// Bytes of that workspace, each part aligned to `align` bytes as the kernels' Carver aligns them.
int64_t blocked_workspace_bytes(const AttentionShape& s, int64_t block, bool backward, int64_t align = 256);

}  // namespace headroom::kernels::cuda
