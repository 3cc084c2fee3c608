#include "cuda/attention_blocks.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "headroom_error.h"

namespace headroom::kernels::cuda {

int64_t attention_block() {
  static const int64_t block = [] {
    const char* e = std::getenv("HEADROOM_ATTENTION_BLOCK");
    if (e == nullptr || *e == '\0') return kDefaultAttentionBlock;
    char* end = nullptr;
    const long long v = std::strtoll(e, &end, 10);
    if (*end != '\0' || v <= 0 || v % 16 != 0 || v > (1 << 20))
      fail("HEADROOM_ATTENTION_BLOCK = '", e, "': expected a positive multiple of 16 (queries per block)");
    return static_cast<int64_t>(v);
  }();
  return block;
}

int64_t packed_width(int64_t d) { return (d + 7) / 8 * 8; }

KeyRange block_keys(const AttentionShape& s, int64_t t0, int64_t t1) {
  // The block's last query sees up to its own position; its first query no further back than the
  // window reaches.
  const int64_t end = std::min(s.Tk, s.q_pos0 + t1);
  const int64_t begin = s.window > 0 ? std::max<int64_t>(0, s.q_pos0 + t0 - s.window + 1) : 0;
  return {begin, end};
}

int64_t score_stride(const AttentionShape& s, int64_t block) {
  int64_t widest = 0;
  for (int64_t t0 = 0; t0 < s.Tq; t0 += block)
    widest = std::max(widest, block_keys(s, t0, std::min(s.Tq, t0 + block)).size());
  return std::max<int64_t>(8, (widest + 7) / 8 * 8);
}

BlockedWorkspace blocked_workspace(const AttentionShape& s, int64_t block, bool backward) {
  const int64_t dq = packed_width(s.dqk), dv = packed_width(s.dv), rows = s.B * s.Hq * std::min(block, s.Tq);
  BlockedWorkspace w{};
  w.q = s.B * s.Tq * s.Hq * dq;
  w.k = s.B * s.Tk * s.Hkv * dq;
  w.v = s.B * s.Tk * s.Hkv * dv;
  w.scores = rows * score_stride(s, block);
  w.probs = w.scores;
  w.rows = rows * (backward ? dq : dv);
  if (backward) {
    w.dout = s.B * s.Tq * s.Hq * dv;
    w.dk = w.k;
    w.dv = w.v;
    w.D = s.B * s.Hq * s.Tq;
  }
  return w;
}

int64_t blocked_workspace_bytes(const AttentionShape& s, int64_t block, bool backward, int64_t align) {
  const BlockedWorkspace w = blocked_workspace(s, block, backward);
  const auto part = [align](int64_t n, int64_t bytes) { return (n * bytes + align - 1) / align * align; };
  return part(w.q, 2) + part(w.k, 2) + part(w.v, 2) + part(w.dout, 2) + part(w.scores, 4) + part(w.probs, 2) +
         part(w.rows, 4) + part(w.dk, 4) + part(w.dv, 4) + part(w.D, 4);
}

}  // namespace headroom::kernels::cuda
