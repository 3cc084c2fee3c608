// Which kernels run one attention call of the bf16 CUDA table when train.attention_kernel = auto:
// cuDNN's fused attention where cuDNN supports the shape; the blocked attention on cuBLASLt
// (attention_blocked.cuh) for training shapes cuDNN refuses for their widths (wider than 256, or
// asymmetric widths it does not document); the own flash attention for queries after a cached
// prefix (decoding), document masks up to width 256, and builds without cuDNN up to width 256.
// Plain host logic with no CUDA header, so the rules are unit-tested on machines without a GPU
// (test_attention_choice).
//
// These are the rules known before a graph is built; cuDNN may still refuse a graph (its engine
// heuristics find no engine), and then the caller falls back to the own kernels and says why.
#pragma once

#include <cstdint>
#include <string>

#include "ops.h"

namespace headroom::kernels::cuda {

// One call of ops.h's attention_fwd / attention_bwd (the names of ops.h).
struct AttentionCall : AttentionShape {
  bool backward;
};

// What cuDNN's support depends on besides the shape.
struct CudnnSupport {
  int sm = 0;           // compute capability, major * 10 + minor (90 = Hopper)
  int64_t version = 0;  // cudnnGetVersion() (91900 = 9.19.0); 0: no cuDNN in this build
};

enum class AttentionPath { kCudnn, kBlocked, kFlash };

struct AttentionChoice {
  AttentionPath path;
  std::string reason;  // for the log: which kernels, and why these
};

AttentionChoice choose_attention(const AttentionCall& c, const CudnnSupport& s);

// What the choice depends on, as text: calls with the same key get the same choice (the sequence
// lengths matter only through T == Tk and q_pos0 == 0), so the log has one line per key.
std::string decision_key(const AttentionCall& c);

}  // namespace headroom::kernels::cuda
