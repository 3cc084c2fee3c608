#include "model/layer.h"

#include "parallel/comm.h"
#include "util/error.h"

#include <cmath>
#include <cstddef>
#include <type_traits>
#include <vector>

namespace headroom::model {
namespace {

// train.profile_steps' regions (util/region_timer.h) that the attention block enters twice. With
// train.recompute full the recomputed forward counts in the forward regions.
constexpr const char* kFwdProjections = "forward: norms and Q/K/V/output projections";
constexpr const char* kBwdProjections = "backward: norms and Q/K/V/output projections";

// Model dimensions of one block as this tensor-parallel rank sees them, named once.
struct Dims {
  int64_t BT, R, d, F, Hq, Hkv, dqk, dv, Q, K, VD, A;  // R: residual rows (BT unless sequence-parallel)
  int64_t Q_total, K_total;  // whole-layer QK widths (layerwise QK norm normalises over these)
  bool pre, sliding;
  config::QkNorm qk_norm;
  int64_t window, rot;
  double eps;
};

template <class T>
Dims dims(const Model<T>& m, long i, int64_t BT, int64_t R) {
  const auto& c = m.local;
  const bool sliding = is_sliding(c, i);
  return {BT,
          R,
          c.d_model,
          c.d_ff,
          c.n_heads,
          c.n_kv_heads,
          c.head_dim_qk,
          c.head_dim_v,
          config::q_width(c),
          config::k_width(c),
          config::v_width(c),
          config::attn_out_width(c),
          config::q_width(m.cfg),
          config::k_width(m.cfg),
          c.norm_order == config::NormOrder::kPre,
          sliding,
          c.qk_norm,
          sliding ? c.window : 0,
          m.rope[sliding ? 1 : 0].rot_dims,
          c.norm_eps};
}

// The three products of a linear layer y = x · wᵀ (w is [out, in], as stored), the weight read from
// the GEMMs' copy.
template <class T>
void linear(const Model<T>& m, const T* x, const std::byte* w, T* y, int64_t rows, int64_t out, int64_t in) {
  m.ops->matmul_stored(x, stored_weight(m, w), y, rows, out, in, false, true, false);
}
// The same with x stored in the weight precision (an operand(): a_in, m_in or act).
template <class T>
void linear(const Model<T>& m, const std::byte* x, const std::byte* w, T* y, int64_t rows, int64_t out, int64_t in) {
  m.ops->matmul_both_stored(x, stored_weight(m, w), y, rows, out, in, false, true, false);
}
// dx = dy · w, dy as stored (an operand(): Activations::dgu_op and the other stored gradients).
template <class T>
void linear_input_grad(const Model<T>& m, const std::byte* dy, const std::byte* w, T* dx, int64_t rows, int64_t out,
                       int64_t in) {
  m.ops->matmul_both_stored(dy, stored_weight(m, w), dx, rows, in, out, false, false, false);
}
// dw += dyᵀ · x (weight gradients accumulate over micro-batches), both as stored.
template <class T>
void linear_weight_grad(const kernels::BasicOps<T>& ops, const std::byte* dy, const std::byte* x, T* dw, int64_t rows,
                        int64_t out, int64_t in) {
  ops.matmul_both_stored(dy, x, dw, out, in, rows, true, false, true);
}

// A GEMM input that several products read (a_in, m_in, act into LayerActs::a_op, m_op, act_op; in
// the backward pass the output gradients and att into Activations' out_grad_op, att_op):
// stored once into its copy in the weight precision where there is one (rounded to bf16 once
// instead of in each product), else read as it is. stored_operand: the same input later, as stored.
template <class T>
const std::byte* operand(const Model<T>& m, const T* x, std::byte* copy, int64_t n) {
  if (!copy) return reinterpret_cast<const std::byte*>(x);
  m.ops->weight_store(copy, x, n);
  return copy;
}
template <class T>
const std::byte* stored_operand(const T* x, const std::byte* copy) {
  return copy ? copy : reinterpret_cast<const std::byte*>(x);
}

// Layerwise QK norm normalises each token's whole [heads · dqk] vector; headwise normalises each
// head's dqk slice with one shared weight — the same kernel over a different row shape.
// With tensor parallelism a layerwise row is split over the TP group: its statistics are summed
// there, and divided by the number of ranks holding the same KV head (kv_rep) so a shared head
// counts once.
struct NormRows {
  int64_t rows, n, n_total;
  parallel::Comm* comm;  // null: the row is whole on this rank
  int64_t replication;
};
template <class T>
NormRows qk_rows(const Model<T>& m, const Dims& s, bool keys) {
  const int64_t heads = keys ? s.Hkv : s.Hq;
  if (s.qk_norm != config::QkNorm::kLayer) return {s.BT * heads, s.dqk, s.dqk, nullptr, 1};
  return {s.BT, heads * s.dqk, keys ? s.K_total : s.Q_total, m.tp.comm, keys ? m.kv_rep : 1};
}

template <class T>
void reduce_rows(T* stat, const NormRows& r, const kernels::BasicOps<T>& ops) {
  if (!r.comm) return;
  r.comm->allreduce_sum(stat, r.rows);
  if (r.replication > 1) ops.scale(stat, T(1) / static_cast<T>(r.replication), r.rows);
}

// A QK norm applied on RoPE's way (rope_segments): rms_apply's rule over norm rows of n elements
// of the [rows, heads · dqk] input, weight w, statistics sumsq, rstd written. Where RoPE writes T
// (a decoding call on a kCompute cache) the normed values go through `scratch` ([rows, heads · dqk]);
// in the operand precision they never leave the kernel (rms_rope_operand).
template <class T>
struct NormOnTheWay {
  const T* w;
  const T* sumsq;
  T* rstd;
  int64_t n, n_total;
  T eps;
  T* scratch;

  // The same for the input's rows from `row` on (a context-parallel segment's).
  NormOnTheWay from_row(int64_t row, int64_t width) const {
    const int64_t norm_row = row * width / n;
    return {w, sumsq + norm_row, rstd + norm_row, n, n_total, eps, scratch + row * width};
  }
};

// The statistics of a QK norm of x into stat (summed over the tp group where a layerwise row is
// split), and the norm for rope_segments to apply.
template <class T>
NormOnTheWay<T> qk_norm_statistics(const Model<T>& m, const Dims& s, const T* x, const T* w, T* rstd, T* stat,
                                   T* scratch, bool keys) {
  const NormRows r = qk_rows(m, s, keys);
  m.ops->row_sumsq(x, stat, r.rows, r.n);
  reduce_rows(stat, r, *m.ops);
  return {w, stat, rstd, r.n, r.n_total, static_cast<T>(s.eps), scratch};
}

template <class T>
void qk_norm_backward(const Model<T>& m, const Dims& s, const T* x, const T* w, const T* rstd, const T* dy, T* dx,
                      T* dw, T* dot, bool keys) {
  const NormRows r = qk_rows(m, s, keys);
  if (!r.comm && r.n == r.n_total) return m.ops->rms_bwd(x, w, dy, rstd, dx, dw, r.rows, r.n, false);
  m.ops->rms_bwd_dot(x, w, dy, dot, r.rows, r.n);
  reduce_rows(dot, r, *m.ops);
  m.ops->rms_bwd_apply(x, w, dy, rstd, dot, dx, dw, r.rows, r.n, r.n_total);
}

// An all-gather of one equal block per rank, back to back in x (rank r's at r · block).
template <class W>
void allgather_blocks(parallel::Comm& comm, W* x, int64_t block) {
  std::vector<int64_t> displs(static_cast<size_t>(comm.size()));
  for (int r = 0; r < comm.size(); ++r) displs[static_cast<size_t>(r)] = r * block;
  const std::vector<int64_t> counts(static_cast<size_t>(comm.size()), block);
  comm.allgather(x, counts.data(), displs.data());
}
// The same for blocks of `block` words of `word` bytes: context parallelism moves keys and values
// in the operand precision (16 or 32 bits) and gradients in fp32; the fp64 model exists for
// single-rank gradient checks.
inline void allgather_words(parallel::Comm& comm, std::byte* x, int64_t block, int64_t word) {
  if (word == 2) return allgather_blocks(comm, reinterpret_cast<std::uint16_t*>(x), block);
  if (word == 4) return allgather_blocks(comm, reinterpret_cast<float*>(x), block);
  fail("context parallelism runs in fp32 only (it moves 16- or 32-bit words, not ", 8 * word, "-bit ones)");
}

// Sequence parallelism's two collectives over the tp group. gather_rows: this rank's res_rows rows
// sit at its slot of `full` ([rows, n]); afterwards every slot holds its rank's rows. scatter_rows:
// a row-parallel product's partial sums [rows, n] become this rank's rows of the sum [res_rows, n].
// Like context parallelism's, they move fp32 (the training precision; where the GEMM inputs are
// stored in bf16, gather_stored_rows moves those instead); the fp64 model exists for single-rank
// gradient checks.
template <class T>
void gather_rows(const Model<T>& m, T* full, int64_t res_rows, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    allgather_blocks(*m.tp.comm, full, res_rows * n);
  } else {
    fail("sequence parallelism runs in fp32 only");
  }
}
// gather_rows on the stored form ([rows, n] in the weight precision, 16-bit words).
template <class T>
void gather_stored_rows(const Model<T>& m, std::byte* full, int64_t res_rows, int64_t n) {
  if (m.ops->weight_bytes != 2) fail("sequence parallelism gathers stored rows of 16-bit words only");
  allgather_blocks(*m.tp.comm, reinterpret_cast<std::uint16_t*>(full), res_rows * n);
}
template <class T>
void scatter_rows(const Model<T>& m, const T* partial, T* mine, int64_t res_rows, int64_t n) {
  if constexpr (std::is_same_v<T, float>)
    m.tp.comm->reduce_scatter_sum(partial, mine, res_rows * n);
  else
    fail("sequence parallelism runs in fp32 only");
}

// Where the rows of a call live: whole on this rank, or split over the tp ranks (sequence
// parallelism) with this rank's at row0.
struct RowSplit {
  bool split = false;
  int64_t row0 = 0;
};

// A whole input of the column-parallel products, or a whole output gradient of the row-parallel
// ones, as their products read it (an operand()), from this rank's rows `mine` ([R, d] in T; null:
// already in their slot of `copy`), gathered over the tp ranks when the rows are split. Where there
// is a copy in the weight precision, the rows are stored into their slot and the copy is gathered
// in that precision (half the traffic of gathering T, the same values); else they are gathered in T
// into `full` ([BT, d]; mine may be its slot).
template <class T>
const std::byte* whole_rows(const Model<T>& m, const Dims& s, const RowSplit& rs, const T* mine, T* full,
                            std::byte* copy) {
  if (copy) {
    if (mine) m.ops->weight_store(stored_slot(copy, rs.row0 * s.d, *m.ops), mine, s.R * s.d);
    if (rs.split) gather_stored_rows(m, copy, s.R, s.d);
    return copy;
  }
  if (!rs.split) return reinterpret_cast<const std::byte*>(mine);
  T* slot = full + rs.row0 * s.d;
  if (slot != mine) m.ops->copy(slot, mine, static_cast<size_t>(s.R * s.d) * sizeof(T));
  gather_rows(m, full, s.R, s.d);
  return reinterpret_cast<const std::byte*>(full);
}

// The sum of a row-parallel product's partial sums over the tp ranks (Megatron's g): all-reduced
// in place, or reduce-scattered from `partial` into this rank's rows `out` when the rows are split.
template <class T>
void row_output(const Model<T>& m, const Dims& s, const RowSplit& rs, T* partial, T* out) {
  if (rs.split) return scatter_rows(m, partial, out, s.R, s.d);
  if (m.tp.comm) m.tp.comm->allreduce_sum(partial, s.BT * s.d);
}

// RoPE from x (rows ldx apart) into y: in T, or in the operand precision (the queries, keys and
// values as the attention reads them); with a QK norm on the way where `norm` is set (x then
// contiguous).
template <class T>
void rope_rows(const Model<T>& m, bool operand_precision, const T* x, int64_t ldx, std::byte* y, const T* cos,
               const T* sin, int64_t B, int64_t len, int64_t pos0, int64_t heads, int64_t head_dim, int64_t rot,
               bool inverse, const NormOnTheWay<T>* norm = nullptr) {
  const auto& ops = *m.ops;
  if (norm && operand_precision)
    return ops.rms_rope_operand(x, norm->w, norm->sumsq, norm->rstd, norm->n, norm->n_total, norm->eps, y, cos, sin, B,
                                len, pos0, heads, head_dim, rot);
  if (norm) {
    const int64_t width = heads * head_dim;
    ops.rms_apply(x, norm->w, norm->sumsq, norm->scratch, norm->rstd, B * len * width / norm->n, norm->n, norm->n_total,
                  norm->eps);
    x = norm->scratch, ldx = width;
  }
  if (operand_precision) return ops.rope_operand(x, ldx, y, cos, sin, B, len, pos0, heads, head_dim, rot);
  ops.rope(x, ldx, reinterpret_cast<T*>(y), cos, sin, B, len, pos0, heads, head_dim, rot, inverse);
}

// Columns [0, width) of x's rows (ldx apart) into y ([rows, width], in T or the operand precision):
// RoPE with nothing to rotate.
template <class T>
void copy_columns(const Model<T>& m, const T* x, int64_t ldx, void* y, int64_t rows, int64_t width,
                  bool operand_precision = false) {
  rope_rows<T>(m, operand_precision, x, ldx, static_cast<std::byte*>(y), nullptr, nullptr, 1, rows, 0, 1, width, 0,
               false);
}

// --- the attention of one block over its tokens' segments -------------------------------------------

// A call's queries: B windows of T_len tokens in `layout`'s segments; keys either the call's own
// (context: buffers to gather them over the cp ranks) or a decoding cache.
template <class T>
struct Attend {
  int64_t B;
  TokenLayout layout;
  const CachedKeys* cache;  // decoding: the layer's cache; null: the call's own keys
  Activations<T>* a;        // training: the micro-batch (context buffers, row maps)
};

// f(row, B, len, pos0) for each of a call's runs of consecutive positions: its first row, windows,
// tokens per window and first position (the whole call, or each window's context-parallel segments).
template <class T, class F>
void for_each_segment(const Attend<T>& at, F f) {
  const TokenLayout& lay = at.layout;
  if (lay.segments() == 1) return f(0, at.B, lay.T_len(), lay.segment_pos0(0));
  const int64_t C = lay.segment_len();
  for (int64_t b = 0; b < at.B; ++b)
    for (int seg = 0; seg < lay.segments(); ++seg) f(b * lay.T_len() + seg * C, 1, C, lay.segment_pos0(seg));
}

// RoPE over a call's segments, from x (rows ldx apart: a part of the fused QKV product's output,
// or y itself in place) into y ([rows, heads · dqk]; in T or the operand precision), with a QK norm
// on the way where `norm` is set.
template <class T>
void rope_segments(const Model<T>& m, const Dims& s, const Attend<T>& at, const T* x, int64_t ldx, void* y,
                   int64_t heads, bool inverse, bool operand_precision = false, const NormOnTheWay<T>* norm = nullptr) {
  const int64_t width = heads * s.dqk;
  if (s.rot == 0 && !norm) {
    if (x != y) copy_columns(m, x, ldx, y, s.BT, width, operand_precision);
    return;
  }
  const int kind = s.sliding ? 1 : 0;
  const int64_t row_bytes = width * (operand_precision ? m.ops->kv_bytes : int64_t{sizeof(T)});
  for_each_segment(at, [&](int64_t row, int64_t B, int64_t len, int64_t pos0) {
    const NormOnTheWay<T> rows_norm = norm ? norm->from_row(row, width) : NormOnTheWay<T>{};
    rope_rows(m, operand_precision, x + row * ldx, ldx, static_cast<std::byte*>(y) + row * row_bytes,
              m.rope_cos[kind].get(), m.rope_sin[kind].get(), B, len, pos0, heads, s.dqk, s.rot, inverse,
              norm ? &rows_norm : nullptr);
  });
}

// The backward pass's RoPE over a call's segments, from the attention's gradient dx ([rows, heads ·
// dqk]) into columns of the QKV products' stored output gradient y (rows ld elements apart, in the
// weight precision): the inverse rotation and the store in one pass (rope_grad_stored).
template <class T>
void rope_grad_segments(const Model<T>& m, const Dims& s, const Attend<T>& at, const T* dx, std::byte* y, int64_t ld,
                        int64_t heads) {
  const auto& ops = *m.ops;
  const int64_t width = heads * s.dqk;
  if (s.rot == 0) return ops.weight_store_columns(y, ld, dx, s.BT, width);
  const int kind = s.sliding ? 1 : 0;
  for_each_segment(at, [&](int64_t row, int64_t B, int64_t len, int64_t pos0) {
    ops.rope_grad_stored(dx + row * width, y + row * ld * ops.weight_bytes, ld, m.rope_cos[kind].get(),
                         m.rope_sin[kind].get(), B, len, pos0, heads, s.dqk, s.rot);
  });
}

// Rows of whole windows between the cp ranks' rank-major blocks ([cp][B·T_len] rows: what the
// collectives move) and position order ([B][T_full]), `row` bytes each: a chunk (a zig-zag
// segment's contiguous rows) per copy.
template <class T>
void reorder_chunks(const Model<T>& m, const Activations<T>& a, const void* from, void* to, int64_t row,
                    bool to_windows) {
  const TokenLayout& lay = a.layout;
  const int64_t C = lay.segment_len();
  for (int64_t b = 0; b < a.B; ++b)
    for (int64_t c = 0; c < 2 * lay.cp; ++c) {
      const int64_t staged = (lay.owner_rank(c) * a.B + b) * lay.T_len() + lay.owner_segment(c) * C;
      const int64_t ordered = b * lay.T_full + c * C;
      m.ops->copy(static_cast<std::byte*>(to) + (to_windows ? ordered : staged) * row,
                  static_cast<const std::byte*>(from) + (to_windows ? staged : ordered) * row,
                  static_cast<size_t>(C * row));
    }
}

// The keys (or values) of whole windows in position order from every cp rank's rows `mine`
// ([B·T_len, width]) into `out` ([B·T_full, width]), in the operand precision.
template <class T>
void gather_context(const Model<T>& m, const Activations<T>& a, const std::byte* mine, std::byte* out, int64_t width) {
  const int64_t word = m.ops->kv_bytes, block = a.rows * width;
  auto* stage = reinterpret_cast<std::byte*>(a.context.stage);
  m.ops->copy(stage + m.cp.rank * block * word, mine, static_cast<size_t>(block * word));
  allgather_words(*m.cp.comm, stage, block, word);
  reorder_chunks(m, a, stage, out, width * word, true);
}

// The inverse for gradients (in T): whole windows summed over the cp ranks, this rank's rows into
// `mine`.
template <class T>
void scatter_context(const Model<T>& m, const Activations<T>& a, const T* whole, T* mine, int64_t width) {
  if constexpr (std::is_same_v<T, float>) {
    reorder_chunks(m, a, whole, a.context.stage, width * int64_t{sizeof(T)}, false);
    m.cp.comm->reduce_scatter_sum(a.context.stage, mine, a.rows * width);
  } else {
    fail("context parallelism runs in fp32 only");
  }
}

// Sliding-window layers under context parallelism (TokenLayout::halo): each rank sends the last H
// (halo) rows of its chunks' keys (values) to every cp rank, and attends each of its chunks over the
// previous chunk's halo and the chunk itself, laid out [B][2][H + C] in `out` (the whole-window
// buffer, which is larger). Every move is a contiguous block: no row maps. The stage holds
// [cp][B][2][H] rows of `row` bytes (keys in the operand precision, gradients in T): each rank's
// halos, in its slot.
template <class T>
std::byte* halo_slot(const Activations<T>& a, void* stage, int64_t H, int rank, int64_t b, int seg, int64_t row) {
  return static_cast<std::byte*>(stage) + (rank * a.B * 2 + b * 2 + seg) * H * row;
}

template <class T>
void exchange_halos(const Model<T>& m, const Activations<T>& a, void* stage, int64_t H, int64_t width, int64_t word) {
  allgather_words(*m.cp.comm, static_cast<std::byte*>(stage), a.B * 2 * H * width, word);
}

// The keys (values) in the operand precision.
template <class T>
void gather_window_keys(const Model<T>& m, const Activations<T>& a, int64_t H, const std::byte* mine, std::byte* out,
                        int64_t width) {
  const TokenLayout& lay = a.layout;
  const int64_t C = lay.segment_len(), word = m.ops->kv_bytes, row = width * word;
  const auto bytes = [&](int64_t rows) { return static_cast<size_t>(rows * row); };
  T* stage = a.context.stage;
  for (int64_t b = 0; b < a.B; ++b)
    for (int seg = 0; seg < 2; ++seg)
      m.ops->copy(halo_slot(a, stage, H, lay.cp_rank, b, seg, row), mine + (b * lay.T_len() + seg * C + C - H) * row,
                  bytes(H));
  exchange_halos(m, a, stage, H, width, word);
  for (int64_t b = 0; b < a.B; ++b)
    for (int seg = 0; seg < 2; ++seg) {
      std::byte* dst = out + (b * 2 + seg) * (H + C) * row;
      const int64_t c = lay.chunk_of(seg);
      if (c > 0)
        m.ops->copy(dst, halo_slot(a, stage, H, lay.owner_rank(c - 1), b, lay.owner_segment(c - 1), row), bytes(H));
      m.ops->copy(dst + H * row, mine + (b * lay.T_len() + seg * C) * row, bytes(C));
    }
}

// Where segment seg's call finds its keys in gather_window_keys' layout (rows of `row` bytes): after
// the halo when its chunk is the window's first (which has none).
template <class T>
const std::byte* window_keys(const Activations<T>& a, const std::byte* keys, int64_t H, int64_t b, int seg,
                             int64_t row) {
  const int64_t C = a.layout.segment_len(), skip = a.layout.chunk_of(seg) > 0 ? 0 : H;
  return keys + ((b * 2 + seg) * (H + C) + skip) * row;
}

// One backward call's key (value) gradients, [halo_before + C] rows: the chunk's own rows go to
// this rank's rows of `grad`, the halo's to this rank's slot of `stage`, for the halo's owner.
template <class T>
void place_window_grads(const Model<T>& m, const Activations<T>& a, int64_t H, const T* call, T* grad, T* stage,
                        int64_t b, int seg, int64_t width) {
  const TokenLayout& lay = a.layout;
  const int64_t C = lay.segment_len(), before = lay.chunk_of(seg) > 0 ? H : 0, row = width * int64_t{sizeof(T)};
  m.ops->copy(grad + (b * lay.T_len() + seg * C) * width, call + before * width, static_cast<size_t>(C * row));
  if (before > 0) m.ops->copy(halo_slot(a, stage, H, lay.cp_rank, b, seg, row), call, static_cast<size_t>(H * row));
}

// After every rank placed its halos' gradients: each chunk's last H rows receive what the next
// chunk's queries sent back (the window's last chunk has no next).
template <class T>
void add_halo_grads(const Model<T>& m, const Activations<T>& a, int64_t H, T* grad, T* stage, int64_t width) {
  const TokenLayout& lay = a.layout;
  const int64_t C = lay.segment_len(), row = width * int64_t{sizeof(T)};
  exchange_halos(m, a, stage, H, width, sizeof(T));
  for (int64_t b = 0; b < a.B; ++b)
    for (int seg = 0; seg < 2; ++seg) {
      const int64_t next = lay.chunk_of(seg) + 1;
      if (next == 2 * lay.cp) continue;
      T* rows = grad + (b * lay.T_len() + seg * C + C - H) * width;
      const auto* sent =
          reinterpret_cast<const T*>(halo_slot(a, stage, H, lay.owner_rank(next), b, lay.owner_segment(next), row));
      m.ops->add(rows, rows, sent, H * width);
    }
}

// One attention call's shape: B rows of Tq queries at positions pos0.. against keys 0 .. pos0 + Tq,
// the queries' document starts at `docs` (null: no document mask).
kernels::AttentionShape call_shape(const Dims& s, int64_t B, int64_t Tq, int64_t pos0, const int32_t* docs) {
  return {.B = B,
          .Tq = Tq,
          .Tk = pos0 + Tq,
          .q_pos0 = pos0,
          .Hq = s.Hq,
          .Hkv = s.Hkv,
          .dqk = s.dqk,
          .dv = s.dv,
          .window = s.window,
          .doc_start = docs};
}

// The document starts of the micro-batch's rows from `row` on; null without a document mask (and when
// decoding, which has no micro-batch).
template <class T>
const int32_t* documents(const Attend<T>& at, int64_t row) {
  return at.a && at.a->documents_masked ? at.a->doc_start.get() + row : nullptr;
}

// The document starts of the micro-batch's rows from `row` on, relative to the first key of a
// windowed call (halo); null without a document mask.
template <class T>
const int32_t* window_documents(const Attend<T>& at, int64_t row) {
  return at.a->documents_masked ? at.a->doc_start_window.get() + row : nullptr;
}

// Where one context-parallel call (window b, segment seg, its queries from `row`) finds its keys
// and values, the position of its first query among them, and its queries' document starts.
// Keys and values in the operand precision.
struct SegmentKeys {
  const std::byte *k, *v;
  int64_t q_pos0;
  const int32_t* docs;
};

template <class T>
SegmentKeys segment_keys(const Model<T>& m, const Dims& s, const Attend<T>& at, int64_t H, int64_t b, int seg,
                         int64_t row) {
  const Activations<T>& a = *at.a;
  const ContextBuffers<T>& x = a.context;
  const TokenLayout& lay = at.layout;
  const int64_t word = m.ops->kv_bytes;
  if (H > 0)
    return {window_keys(a, x.k, H, b, seg, s.K * word), window_keys(a, x.v, H, b, seg, s.VD * word),
            lay.halo_before(seg, s.window), window_documents(at, row)};
  return {x.k + b * lay.T_full * s.K * word, x.v + b * lay.T_full * s.VD * word, lay.segment_pos0(seg),
          documents(at, row)};
}

// The keys and values this rank's queries attend over: the halos and its own chunks (sliding-window
// layers whose window fits a chunk), else whole windows.
template <class T>
void gather_keys(const Model<T>& m, const Dims& s, const Activations<T>& a, int64_t H, const LayerActs<T>& l) {
  const ContextBuffers<T>& x = a.context;
  if (H > 0) {
    gather_window_keys(m, a, H, l.k, x.k, s.K);
    gather_window_keys(m, a, H, l.v, x.v, s.VD);
  } else {
    gather_context(m, a, l.k, x.k, s.K);
    gather_context(m, a, l.v, x.v, s.VD);
  }
}

// Where a call's queries, keys and values go: the layer's (training), or, decoding, its queries to
// the layer's and its keys and values to the cache's rows from kv.row on. In the attention's
// operand precision (the table's: rope_operand writes them), or in T (a kCompute cache, whose
// observers read queries and keys back).
struct Operands {
  std::byte *q, *k, *v;
  bool operand_precision;
};

template <class T>
Operands operands_out(const Model<T>& m, const Dims& s, const Attend<T>& at, const LayerActs<T>& l) {
  if (!at.cache) return {l.q, l.k, l.v, true};
  const CachedKeys& c = *at.cache;
  const int64_t word = c.table ? m.ops->kv_bytes : int64_t{sizeof(T)};
  return {l.q, static_cast<std::byte*>(c.k) + c.row * s.K * word, static_cast<std::byte*>(c.v) + c.row * s.VD * word,
          c.table};
}

// Decoding: the queries over the cache, which holds the call's keys and values already.
template <class T>
void attend_cache(const Model<T>& m, const CachedKeys& kv, LayerActs<T>& l, const kernels::AttentionShape& shape,
                  T scale) {
  if (kv.table) return m.ops->attention_fwd_cached(l.q, kv.k, kv.v, l.att, l.lse, shape, scale);
  m.ops->attention_fwd(reinterpret_cast<const T*>(l.q), static_cast<const T*>(kv.k), static_cast<const T*>(kv.v),
                       reinterpret_cast<T*>(l.att), l.lse, shape, scale);
}

template <class T>
void attention_forward(const Model<T>& m, const Dims& s, const Attend<T>& at, LayerActs<T>& l) {
  const auto& ops = *m.ops;
  const TokenLayout& lay = at.layout;
  const T scale = static_cast<T>(config::attention_scale(s.dqk));
  if (lay.cp == 1) {  // one segment: the whole window, or a decoding chunk after its cached prefix
    const int64_t pos0 = lay.segment_pos0(0), T_len = lay.T_len();
    // Positions relative to the first key: RoPE is in the keys already, and the causal and window
    // masks depend only on differences.
    const int64_t key_pos0 = at.cache ? at.cache->key_pos0 : 0;
    const kernels::AttentionShape shape = call_shape(s, at.B, T_len, pos0 - key_pos0, documents(at, 0));
    if (at.cache) return attend_cache(m, *at.cache, l, shape, scale);
    ops.attention_fwd_cached(l.q, l.k, l.v, l.att, l.lse, shape, scale);
    return;
  }
  const int64_t H = lay.halo(s.window), C = lay.segment_len();
  gather_keys(m, s, *at.a, H, l);
  for (int64_t b = 0; b < at.B; ++b)
    for (int seg = 0; seg < lay.segments(); ++seg) {
      const int64_t row = b * lay.T_len() + seg * C;
      const SegmentKeys sk = segment_keys(m, s, at, H, b, seg, row);
      ops.attention_fwd_cached(l.q + row * s.Q * ops.kv_bytes, sk.k, sk.v, l.att + row * s.A * ops.kv_bytes,
                               l.lse + lay.lse_at(b, seg, s.Hq), call_shape(s, 1, C, sk.q_pos0, sk.docs), scale);
    }
}

// a.dq, a.dk, a.dv from a.datt (overwritten).
template <class T>
void attention_backward(const Model<T>& m, const Dims& s, const Attend<T>& at, const LayerActs<T>& l) {
  const auto& ops = *m.ops;
  Activations<T>& a = *at.a;
  const TokenLayout& lay = at.layout;
  const T scale = static_cast<T>(config::attention_scale(s.dqk));
  if (lay.cp == 1) {
    ops.attention_bwd_cached(l.q, l.k, l.v, l.att, l.lse, a.datt, a.dq, a.dk, a.dv,
                             call_shape(s, at.B, lay.T_len(), 0, documents(at, 0)), scale);
    return;
  }
  // The forward's gathered keys and values were overwritten by later layers: gather again. The
  // key and value gradients collect in x.dk / x.dv: whole windows in position order, or each rank's
  // halos' gradients in its slot (the windowed exchange).
  ContextBuffers<T>& x = a.context;
  const int64_t H = lay.halo(s.window), C = lay.segment_len();
  gather_keys(m, s, a, H, l);
  if (H == 0) {
    ops.fill(x.dk, T(0), at.B * lay.T_full * s.K);
    ops.fill(x.dv, T(0), at.B * lay.T_full * s.VD);
  }
  for (int64_t b = 0; b < at.B; ++b)
    for (int seg = 0; seg < lay.segments(); ++seg) {
      const int64_t row = b * lay.T_len() + seg * C;
      const SegmentKeys sk = segment_keys(m, s, at, H, b, seg, row);
      ops.attention_bwd_cached(l.q + row * s.Q * ops.kv_bytes, sk.k, sk.v, l.att + row * s.A * ops.kv_bytes,
                               l.lse + lay.lse_at(b, seg, s.Hq), a.datt + row * s.A * ops.kv_bytes, a.dq + row * s.Q,
                               x.call_dk, x.call_dv, call_shape(s, 1, C, sk.q_pos0, sk.docs), scale);
      if (H > 0) {
        place_window_grads(m, a, H, x.call_dk, a.dk, x.dk, b, seg, s.K);
        place_window_grads(m, a, H, x.call_dv, a.dv, x.dv, b, seg, s.VD);
        continue;
      }
      const int64_t Tk = sk.q_pos0 + C;
      T *dk = x.dk + b * lay.T_full * s.K, *dv = x.dv + b * lay.T_full * s.VD;
      ops.add(dk, dk, x.call_dk, Tk * s.K);
      ops.add(dv, dv, x.call_dv, Tk * s.VD);
    }
  if (H > 0) {
    add_halo_grads(m, a, H, a.dk, x.dk, s.K);
    add_halo_grads(m, a, H, a.dv, x.dv, s.VD);
  } else {
    scatter_context(m, a, x.dk, a.dk, s.K);
    scatter_context(m, a, x.dv, a.dv, s.VD);
  }
}

// h = a + b and the norm `n` of h (a pre-norm block's residual add and the next norm; b null: the
// norm of a alone, the first block's input norm), n's output in T or, where n says, in its stored
// copy.
template <class T>
void add_and_norm(const kernels::BasicOps<T>& ops, const T* a, const T* b, T* h, const NextNorm<T>& n, const Dims& s) {
  const auto eps = static_cast<T>(s.eps);
  if (n.y_stored)
    ops.add_rms_norm_stored(a, b, h, n.w, n.y_stored, n.rstd, s.R, s.d, eps);
  else
    ops.add_rms_norm(a, b, h, n.w, n.y, n.rstd, s.R, s.d, eps);
}

// Whether elements of `bytes` bytes (the attention output or its gradient) are in the weight precision,
// which the GEMMs read as stored; else they must be in T, which the GEMMs round.
template <class T>
bool in_weight_precision(const kernels::BasicOps<T>& ops, int64_t bytes, const char* what) {
  if (bytes == ops.weight_bytes) return true;
  if (bytes != int64_t{sizeof(T)})
    fail(what, "'s ", bytes, "-byte elements are neither the weights' (", ops.weight_bytes,
         " bytes) nor the compute type's");
  return false;
}

// The output projection y = att · woᵀ. att holds the attention's output in its operand precision
// (or in T: a decoding call on a kCompute cache, operand_precision false): read as stored where
// that is the weight precision (the bf16 tables, the CPU), else as T (kSimt's fp32 output in a bf16
// table, a kCompute cache's call), which the product rounds.
template <class T>
void output_projection(const Model<T>& m, const Dims& s, const std::byte* att, bool operand_precision,
                       const std::byte* wo, T* y) {
  const auto& ops = *m.ops;
  const int64_t bytes = operand_precision ? ops.kv_bytes : int64_t{sizeof(T)};
  if (in_weight_precision(ops, bytes, "the attention output")) return linear(m, att, wo, y, s.BT, s.d, s.A);
  linear(m, reinterpret_cast<const T*>(att), wo, y, s.BT, s.d, s.A);
}

// datt = o_grad · wo in the attention's operand precision, what its backward reads: written so by
// the product where that is the weight precision (the bf16 tables, the CPU), else in T (kSimt's
// fp32 operands in a bf16 table).
template <class T>
void attention_output_grad(const Model<T>& m, const Dims& s, const std::byte* o_grad, const std::byte* wo,
                           std::byte* datt) {
  const auto& ops = *m.ops;
  if (in_weight_precision(ops, ops.kv_bytes, "the attention output's gradient"))
    return ops.matmul_to_stored(o_grad, stored_weight(m, wo), datt, s.BT, s.A, s.d, false, false);
  linear_input_grad(m, o_grad, wo, reinterpret_cast<T*>(datt), s.BT, s.d, s.A);
}

// --- the block -------------------------------------------------------------------------------------

template <class T>
void attention_block(Model<T>& m, const Dims& s, const RowSplit& rs, const Attend<T>& at, long i, LayerActs<T>& l,
                     T* partial, T* stat, bool input_normed = false) {
  const auto& ops = *m.ops;
  const auto& w = m.w[static_cast<size_t>(i)];
  const auto& sw = m.sw[static_cast<size_t>(i)];
  const bool qk = s.qk_norm != config::QkNorm::kNone;
  mark(m.timer, kFwdProjections);
  // Pre-norm: this rank's rows of the normed input, written by the previous block's output add or
  // here (into their slot of the stored copy where there is one). Post-norm: the residual rows.
  if (s.pre && !input_normed)
    add_and_norm<T>(ops, l.x_in, nullptr, nullptr,
                    {w.attn_norm, rows_slot(l.a_in, rs.row0 * s.d), l.a_rstd, stored_slot(l.a_op, rs.row0 * s.d, ops)},
                    s);
  const T* mine = s.pre ? rows_slot(l.a_in, rs.row0 * s.d) : l.x_in;
  const std::byte* a_in = whole_rows(m, s, rs, mine, l.a_in, l.a_op);
  // One GEMM over [wq; wk; wv] (adjacent: make_model), its output unpacked into q, k and v, with
  // RoPE on the way where no QK norm comes between: stored as the attention reads them (its operand
  // precision), the keys and values into a decoding cache directly.
  const int64_t QKV = s.Q + s.K + s.VD;
  linear(m, a_in, sw.wq, l.qkv, s.BT, QKV, s.d);
  const Operands out = operands_out(m, s, at, l);
  copy_columns(m, l.qkv + s.Q + s.K, QKV, out.v, s.BT, s.VD, out.operand_precision);
  if (!qk) {
    rope_segments(m, s, at, l.qkv, QKV, out.q, s.Hq, false, out.operand_precision);
    rope_segments(m, s, at, l.qkv + s.Q, QKV, out.k, s.Hkv, false, out.operand_precision);
  } else {
    // The queries and keys before the norm, kept for its backward; the norm applied on RoPE's way
    // (its scratch, where it needs one, over the product's output, which is read out by now).
    copy_columns(m, l.qkv, QKV, l.q_pre, s.BT, s.Q);
    copy_columns(m, l.qkv + s.Q, QKV, l.k_pre, s.BT, s.K);
    const NormOnTheWay<T> qn = qk_norm_statistics(m, s, l.q_pre, w.q_norm, l.q_rstd, stat, l.qkv, false);
    rope_segments(m, s, at, l.q_pre, s.Q, out.q, s.Hq, false, out.operand_precision, &qn);
    const NormOnTheWay<T> kn = qk_norm_statistics(m, s, l.k_pre, w.k_norm, l.k_rstd, stat, l.qkv, true);
    rope_segments(m, s, at, l.k_pre, s.K, out.k, s.Hkv, false, out.operand_precision, &kn);
  }
  mark(m.timer, "forward: attention (kernel and context-parallel exchange)");
  attention_forward(m, s, at, l);
  mark(m.timer, kFwdProjections);
  T* o_sum = rs.split ? partial : l.o;
  output_projection(m, s, l.att, out.operand_precision, sw.wo, o_sum);
  row_output(m, s, rs, o_sum, l.o);
  if (s.pre) {
    // The residual add and the MLP's input norm in one pass over h_mid (mlp_block only gathers or
    // stores), the norm's output into its stored copy where it can.
    add_and_norm(ops, l.x_in, l.o, l.h_mid,
                 {w.mlp_norm, rows_slot(l.m_in, rs.row0 * s.d), l.m_rstd, stored_slot(l.m_op, rs.row0 * s.d, ops)}, s);
  } else {
    rms_forward(ops, l.o, w.attn_norm, l.h_mid, l.a_rstd, stat, s.R, s.d, s.eps);
    ops.axpy(l.h_mid, l.x_in, T(1), s.R * s.d);
  }
}

// gu and act from the MLP's input m_in as stored; returns act as the down projection reads it
// (written in the weight precision where it is stored so).
template <class T>
const std::byte* mlp_products(const Model<T>& m, const Dims& s, long i, LayerActs<T>& l, const std::byte* m_in) {
  const auto& sw = m.sw[static_cast<size_t>(i)];
  linear(m, m_in, sw.w_gate, l.gu, s.BT, 2 * s.F, s.d);  // w_up follows w_gate (make_model)
  if (l.act_op) {
    m.ops->swiglu_fwd_stored(l.gu, l.act_op, s.BT, s.F);
    return l.act_op;
  }
  m.ops->swiglu_fwd(l.gu, l.act, s.BT, s.F);
  return reinterpret_cast<const std::byte*>(l.act);
}

template <class T>
void mlp_block(Model<T>& m, const Dims& s, const RowSplit& rs, long i, LayerActs<T>& l, T* x_out, T* partial, T* stat,
               const NextNorm<T>& next = {}) {
  const auto& ops = *m.ops;
  const auto& w = m.w[static_cast<size_t>(i)];
  const auto& sw = m.sw[static_cast<size_t>(i)];
  mark(m.timer, "forward: MLP");
  // Pre-norm: this rank's rows normed by attention_block (into their slot of the stored copy where
  // there is one). Post-norm: the residual rows.
  const T* mine = s.pre ? rows_slot(l.m_in, rs.row0 * s.d) : l.h_mid;
  const std::byte* act = mlp_products(m, s, i, l, whole_rows(m, s, rs, mine, l.m_in, l.m_op));
  T* dn_sum = rs.split ? partial : l.dn;
  linear(m, act, sw.w_down, dn_sum, s.BT, s.d, s.F);
  row_output(m, s, rs, dn_sum, l.dn);
  if (s.pre && next.w) {
    add_and_norm(ops, l.h_mid, l.dn, x_out, next, s);
  } else if (s.pre) {
    ops.add(x_out, l.h_mid, l.dn, s.R * s.d);
  } else {
    rms_forward(ops, l.dn, w.mlp_norm, x_out, l.m_rstd, stat, s.R, s.d, s.eps);
    ops.axpy(x_out, l.h_mid, T(1), s.R * s.d);
  }
}

template <class T>
RowSplit row_split(const Activations<T>& a) {
  return {a.layout.sp > 1, a.layout.res_row0(a.B)};
}

// The input gradient of the column-parallel products (a.dx, partial over the tp ranks) completed
// into this rank's residual rows (a.dres), then through the block's input norm into a.dh.
template <class T>
void column_input_grad(Model<T>& m, const Dims& s, const RowSplit& rs, Activations<T>& a, const T* x, const T* w,
                       const T* rstd, T* dw) {
  const auto& ops = *m.ops;
  row_output(m, s, rs, a.dx, a.dres);
  if (s.pre) {
    ops.rms_bwd(x, w, a.dres, rstd, a.dh, dw, s.R, s.d, true);
  } else {
    ops.axpy(a.dh, a.dres, T(1), s.R * s.d);
  }
}

template <class T>
void mlp_backward(Model<T>& m, const Dims& s, const RowSplit& rs, long i, LayerActs<T>& l, Activations<T>& a) {
  const auto& ops = *m.ops;
  const auto& w = m.w[static_cast<size_t>(i)];
  const auto& sw = m.sw[static_cast<size_t>(i)];
  const auto& g = m.g[static_cast<size_t>(i)];
  const std::byte* m_in = stored_operand(l.m_in, l.m_op);
  const std::byte* act =
      a.recompute == config::Recompute::kSelective ? mlp_products(m, s, i, l, m_in) : stored_operand(l.act, l.act_op);
  // out = h_mid + branch. d(branch output) is dh (pre) or through the output norm (post).
  const T* d_dn = a.dh;
  if (!s.pre) {
    ops.rms_bwd(l.dn, w.mlp_norm, a.dh, l.m_rstd, a.dbranch, g.mlp_norm, s.R, s.d, false);
    d_dn = a.dbranch;
  }
  const std::byte* dn_grad = whole_rows(m, s, rs, d_dn, a.dfull, a.out_grad_op);
  linear_weight_grad(ops, dn_grad, act, g.w_down, s.BT, s.d, s.F);
  linear_input_grad(m, dn_grad, sw.w_down, a.dact, s.BT, s.d, s.F);
  // [dgate | dup]: stored once where the GEMM inputs are (both products below read it), else in
  // place (the backward pass is gu's last reader). Then w_gate's and w_up's gradients, and the input's.
  if (a.dgu_op)
    ops.swiglu_bwd_stored(l.gu, a.dact, a.dgu_op, s.BT, s.F);
  else
    ops.swiglu_bwd(l.gu, a.dact, l.gu, s.BT, s.F);
  const std::byte* dgu = a.dgu_op ? a.dgu_op : reinterpret_cast<const std::byte*>(l.gu);
  linear_weight_grad(ops, dgu, m_in, g.w_gate, s.BT, 2 * s.F, s.d);
  linear_input_grad(m, dgu, sw.w_gate, a.dx, s.BT, 2 * s.F, s.d);
  column_input_grad(m, s, rs, a, l.h_mid, w.mlp_norm, l.m_rstd, g.mlp_norm);
}

template <class T>
void attention_block_backward(Model<T>& m, const Dims& s, const RowSplit& rs, const Attend<T>& at, long i,
                              LayerActs<T>& l, Activations<T>& a) {
  const auto& ops = *m.ops;
  const auto& w = m.w[static_cast<size_t>(i)];
  const auto& sw = m.sw[static_cast<size_t>(i)];
  const auto& g = m.g[static_cast<size_t>(i)];
  const bool qk = s.qk_norm != config::QkNorm::kNone;
  // a.dh is d loss / d h_mid.
  mark(m.timer, kBwdProjections);
  const T* d_o = a.dh;
  if (!s.pre) {
    ops.rms_bwd(l.o, w.attn_norm, a.dh, l.a_rstd, a.dbranch, g.attn_norm, s.R, s.d, false);
    d_o = a.dbranch;
  }
  const std::byte* o_grad = whole_rows(m, s, rs, d_o, a.dfull, a.out_grad_op);
  // The attention output as wo's gradient reads it: as written (the weight precision: LayerActs::att),
  // else stored into att_op.
  const std::byte* att = a.att_op ? operand(m, reinterpret_cast<const T*>(l.att), a.att_op, s.BT * s.A) : l.att;
  linear_weight_grad(ops, o_grad, att, g.wo, s.BT, s.d, s.A);
  attention_output_grad(m, s, o_grad, sw.wo, a.datt);
  mark(m.timer, "backward: attention (kernel and context-parallel exchange)");
  attention_backward(m, s, at, l);
  mark(m.timer, kBwdProjections);
  // The projections' output gradients side by side, stored once, for the fused product's weight
  // gradient (into the adjacent g.wq, g.wk, g.wv) and input gradient: without a QK norm, the query
  // and key gradients go there on RoPE's way back.
  const int64_t QKV = s.Q + s.K + s.VD;
  std::byte* dqkv = a.qkv_grad_op;
  if (qk) {
    rope_segments(m, s, at, a.dq, s.Q, a.dq, s.Hq, true);
    rope_segments(m, s, at, a.dk, s.K, a.dk, s.Hkv, true);
    qk_norm_backward(m, s, l.q_pre, w.q_norm, l.q_rstd, a.dq, a.dq_pre, g.q_norm, a.dot, false);
    qk_norm_backward(m, s, l.k_pre, w.k_norm, l.k_rstd, a.dk, a.dk_pre, g.k_norm, a.dot, true);
    ops.weight_store_columns(dqkv, QKV, a.dq_pre, s.BT, s.Q);
    ops.weight_store_columns(stored_slot(dqkv, s.Q, ops), QKV, a.dk_pre, s.BT, s.K);
  } else {
    rope_grad_segments(m, s, at, a.dq, dqkv, QKV, s.Hq);
    rope_grad_segments(m, s, at, a.dk, stored_slot(dqkv, s.Q, ops), QKV, s.Hkv);
  }
  ops.weight_store_columns(stored_slot(dqkv, s.Q + s.K, ops), QKV, a.dv, s.BT, s.VD);
  linear_weight_grad(ops, dqkv, stored_operand(l.a_in, l.a_op), g.wq, s.BT, QKV, s.d);
  linear_input_grad(m, dqkv, sw.wq, a.dx, s.BT, QKV, s.d);
  // Ranks sharing a KV head each added that head's input gradient only for their own query
  // heads, so the sum over the group is exact.
  column_input_grad(m, s, rs, a, l.x_in, w.attn_norm, l.a_rstd, g.attn_norm);
}

template <class T>
Attend<T> training_attend(Activations<T>& a) {
  return {a.B, a.layout, nullptr, &a};
}

}  // namespace

template <class T>
void rms_forward(const kernels::BasicOps<T>& ops, const T* x, const T* w, T* y, T* rstd, T* stat, int64_t rows,
                 int64_t n, double eps) {
  ops.row_sumsq(x, stat, rows, n);
  ops.rms_apply(x, w, stat, y, rstd, rows, n, n, static_cast<T>(eps));
}

template <class T>
void layer_forward(Model<T>& m, long i, LayerActs<T>& l, T* x_out, int64_t TT, int64_t pos0, const CachedKeys& kv,
                   T* stat) {
  const Dims s = dims(m, i, TT, TT);
  TokenLayout lay{TT};
  lay.pos0 = pos0;
  const Attend<T> at{1, lay, &kv, nullptr};
  T* no_partial = nullptr;  // rows are whole: row-parallel sums are all-reduced in place
  attention_block(m, s, RowSplit{}, at, i, l, no_partial, stat);
  mlp_block(m, s, RowSplit{}, i, l, x_out, no_partial, stat);
}

template <class T>
void layer_forward(Model<T>& m, long i, LayerActs<T>& l, T* x_out, Activations<T>& a, const NextNorm<T>& next,
                   bool input_normed) {
  const Dims s = dims(m, i, a.rows, a.res_rows);
  const RowSplit rs = row_split(a);
  attention_block(m, s, rs, training_attend(a), i, l, a.partial, a.stat, input_normed);
  mlp_block(m, s, rs, i, l, x_out, a.partial, a.stat, next);
}

template <class T>
void layer_backward(Model<T>& m, long i, LayerActs<T>& l, Activations<T>& a) {
  // Full recomputation runs the block again (its output, equal to the kept next input, goes to
  // scratch that the backward pass overwrites before reading).
  if (a.recompute == config::Recompute::kFull) layer_forward(m, i, l, a.dbranch, a);
  const Dims s = dims(m, i, a.rows, a.res_rows);
  const RowSplit rs = row_split(a);
  mark(m.timer, "backward: MLP");
  mlp_backward(m, s, rs, i, l, a);
  attention_block_backward(m, s, rs, training_attend(a), i, l, a);
}

#define HEADROOM_LAYER_INSTANTIATE(T)                                                                                  \
  template void rms_forward<T>(const kernels::BasicOps<T>&, const T*, const T*, T*, T*, T*, int64_t, int64_t, double); \
  template void layer_forward<T>(Model<T>&, long, LayerActs<T>&, T*, int64_t, int64_t, const CachedKeys&, T*);         \
  template void layer_forward<T>(Model<T>&, long, LayerActs<T>&, T*, Activations<T>&, const NextNorm<T>&, bool);       \
  template void layer_backward<T>(Model<T>&, long, LayerActs<T>&, Activations<T>&);
HEADROOM_LAYER_INSTANTIATE(float)
HEADROOM_LAYER_INSTANTIATE(double)
#undef HEADROOM_LAYER_INSTANTIATE

}  // namespace headroom::model
