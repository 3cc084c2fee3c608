#include "cuda/attention_choice.h"

#include "cuda/attention_blocks.h"

namespace headroom::kernels::cuda {

namespace {

constexpr int64_t kMinCudnn = 90000;  // the graph API of cudnn_graph.h as used here (cuDNN 9)

AttentionChoice own(const std::string& why) { return {AttentionPath::kFlash, "own flash attention: " + why}; }
AttentionChoice blocked(const std::string& why) {
  return {AttentionPath::kBlocked, "blocked attention on cuBLASLt: " + why};
}

std::string widths(const AttentionCall& c) { return std::to_string(c.dqk) + "/" + std::to_string(c.dv); }

std::string version_text(int64_t v) {
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

// cuDNN's head-width limits for fused attention: 256 on Hopper and newer; on Ampere/Ada 256 for
// the forward pass and 128 for the backward pass.
int64_t width_limit(int sm, bool backward) { return sm >= 90 || !backward ? 256 : 128; }

}  // namespace

AttentionChoice choose_attention(const AttentionCall& c, const CudnnSupport& s) {
  if (c.B * c.Tq == 0 || c.Tk == 0) return own("nothing to attend");
  // After a cached prefix or a context-parallel segment's earlier chunks: wide heads with enough
  // queries on the blocked GEMMs (cuDNN takes no query offset here); decoding, a few queries against
  // a long cache, on flash, one pass over the keys; narrower heads on flash as well.
  if ((c.q_pos0 != 0 || c.Tq != c.Tk) && blocked_after_prefix(c.Tq, c.dqk, c.dv))
    return blocked("head widths " + widths(c) + " exceed " + std::to_string(kCudnnWidest) + ", " +
                   std::to_string(c.Tq) + " queries after " + std::to_string(c.q_pos0) + " positions");
  if (c.q_pos0 != 0 || c.Tq != c.Tk)
    return own("queries after a cached prefix (q_pos0 = " + std::to_string(c.q_pos0) + ", " + std::to_string(c.Tq) +
               " queries, " + std::to_string(c.Tk) + " keys)");
  // Wider heads: no cuDNN takes them, and the GEMMs' arithmetic intensity grows with the width.
  if (c.dqk > kCudnnWidest || c.dv > kCudnnWidest)
    return blocked("head widths " + widths(c) + " exceed " + std::to_string(kCudnnWidest) +
                   ", the widest cuDNN's fused attention takes");
  if (s.version == 0) return own("cuDNN is not part of this build");
  if (s.version < kMinCudnn)
    return own("cuDNN " + version_text(s.version) + " is older than " + version_text(kMinCudnn));
  if (s.sm < 80) return own("cuDNN's fused attention needs sm_80 or newer, this GPU is sm_" + std::to_string(s.sm));
  // cuDNN expresses packed documents only as a ragged batch (one sequence per document, aligned
  // query and key ranges), not as a bound per query within a window or a context-parallel segment.
  if (c.doc_start) return own("a document mask (cuDNN's fused attention takes no per-query first key)");
  if (c.dqk % 8 != 0 || c.dv % 8 != 0)
    return own("head widths " + std::to_string(c.dqk) + "/" + std::to_string(c.dv) + " are not multiples of 8");
  const int64_t limit = width_limit(s.sm, c.backward);
  if (c.dqk > limit || c.dv > limit)
    return blocked("head widths " + widths(c) + " exceed cuDNN's " + std::to_string(limit) + " for the " +
                   (c.backward ? "backward" : "forward") + " pass on sm_" + std::to_string(s.sm));
  // Unequal query-key and value widths: cuDNN documents only d_qk = 192 with d_v = 128 (Hopper).
  if (c.dqk != c.dv && !(s.sm >= 90 && c.dqk == 192 && c.dv == 128))
    return blocked("query-key width " + std::to_string(c.dqk) + " differs from value width " + std::to_string(c.dv) +
                   " (cuDNN documents only 192/128)");
  return {AttentionPath::kCudnn,
          "cuDNN " + version_text(s.version) + " fused attention (sm_" + std::to_string(s.sm) + ")"};
}

std::string decision_key(const AttentionCall& c) {
  return std::string(c.backward ? "backward" : "forward") + ", heads " + std::to_string(c.Hq) + "/" +
         std::to_string(c.Hkv) + " (query/KV), widths " + std::to_string(c.dqk) + "/" + std::to_string(c.dv) +
         " (qk/v), " + (c.window > 0 ? "window " + std::to_string(c.window) : std::string("causal")) +
         (c.q_pos0 == 0 && c.Tq == c.Tk ? "" : ", after a cached prefix") + (c.doc_start ? ", document mask" : "") +
         (c.B * c.Tq == 0 || c.Tk == 0 ? ", empty" : "");
}

}  // namespace headroom::kernels::cuda
