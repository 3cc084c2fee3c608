// Which tokens of a micro-batch one rank computes, as data.
//
// Context parallelism (parallel.cp) cuts each window of T_full tokens into 2·cp chunks of
// T_full / (2·cp) and gives rank r chunks r and 2·cp−1−r ("zig-zag"): under a causal mask the
// early chunk's queries see few keys and the late one's many, so every rank gets the same share of
// the attention work. The rank's T_len = T_full / cp tokens of a window are its chunks in order:
// two segments, each at its own global position (cp = 1: one segment, the whole window).
// Sequence parallelism (parallel.sequence_parallel) then splits the rank's B·T_len rows (window-major)
// into tp contiguous blocks for the residual stream: block tp_rank is this rank's.
#pragma once

#include "model/model.h"

#include <cstdint>

namespace headroom::model {

struct TokenLayout {
  int64_t T_full = 0;
  int cp = 1, cp_rank = 0;
  int sp = 1, sp_rank = 0;  // tensor-parallel ranks that split the residual rows (1: no split)
  int64_t pos0 = 0;         // position of the window's first token (decoding after a cached prefix)

  int64_t T_len() const { return T_full / cp; }
  int segments() const { return cp == 1 ? 1 : 2; }
  int64_t segment_len() const { return T_full / (cp == 1 ? 1 : 2 * cp); }
  // Global position of the first token of segment s.
  int64_t segment_pos0(int s) const { return pos0 + chunk_of(s) * segment_len(); }
  // The chunk (of 2·cp) that segment s holds, and the rank and segment that hold chunk c.
  int64_t chunk_of(int s) const { return cp == 1 ? 0 : (s == 0 ? cp_rank : 2 * cp - 1 - cp_rank); }
  int owner_rank(int64_t c) const { return static_cast<int>(c < cp ? c : 2 * cp - 1 - c); }
  int owner_segment(int64_t c) const { return c < cp ? 0 : 1; }
  // Context parallelism's sliding-window layers exchange only the keys a window reaches: the last
  // window − 1 rows of each chunk ("halo"), which the next chunk's first queries see. The halo's
  // rows, or 0 when the layer gathers whole windows (no window, one rank, or a window longer than a
  // chunk).
  int64_t halo(int64_t window) const { return cp > 1 && window > 1 && window - 1 <= segment_len() ? window - 1 : 0; }
  // Keys of segment s's attention call when its keys are its chunk after the previous chunk's halo:
  // the call's first key sits at position segment_pos0(s) − halo_before(s).
  int64_t halo_before(int s, int64_t window) const { return chunk_of(s) > 0 ? halo(window) : 0; }
  // Global position of local token t of a window.
  int64_t position(int64_t t) const { return segment_pos0(static_cast<int>(t / segment_len())) + t % segment_len(); }
  // Offset of the log-sum-exp block [Hq, segment_len] of window b, segment s.
  int64_t lse_at(int64_t b, int s, int64_t Hq) const { return (b * segments() + s) * Hq * segment_len(); }
  int64_t res_rows(int64_t B) const { return B * T_len() / sp; }
  int64_t res_row0(int64_t B) const { return sp_rank * res_rows(B); }
};

// The model's layout for windows of T tokens: its cp ranks (m.cp) and, under sequence parallelism,
// its tp ranks.
template <class T>
TokenLayout token_layout(const Model<T>& m, int64_t T_full) {
  return {T_full, m.cp.size, m.cp.rank, m.tp.sequence_parallel ? m.tp.size : 1, m.tp.sequence_parallel ? m.tp.rank : 0,
          0};
}

// Refuses a layout the window or micro-batch cannot be cut into, naming the keys.
void check_layout(const TokenLayout& l, int64_t B);

// This rank's tokens of B whole windows: local[b·T_len + t] = full[b·T_full + position(t)].
void take_local(const TokenLayout& l, int64_t B, const int32_t* full, int32_t* local);

}  // namespace headroom::model
