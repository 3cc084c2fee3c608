#include "model/activations.h"

#include <algorithm>
#include <limits>

namespace headroom::model {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// Saturating: the memory plan counts absurd configurations with this same carving, and a size
// that overflows must stay "too large" instead of wrapping into a plausible one.
int64_t mul(int64_t a, int64_t b) {
  int64_t r = 0;
  return a == kMax || b == kMax || __builtin_mul_overflow(a, b, &r) ? kMax : r;
}
int64_t add(int64_t a, int64_t b) {
  int64_t r = 0;
  return a == kMax || b == kMax || __builtin_add_overflow(a, b, &r) ? kMax : r;
}

// Two passes over the same layout: the first counts, the second hands out pointers.
template <class T>
struct Carver {
  T* base = nullptr;
  int64_t used = 0;
  T* take(int64_t n) {
    T* p = base ? base + used : nullptr;
    used = add(used, n == kMax ? kMax : (n + 15) / 16 * 16);  // 64-byte alignment for float
    return p;
  }
};

// T elements that hold `bytes`.
template <class T>
int64_t floats_for(int64_t bytes) {
  return bytes == kMax ? kMax : (bytes + int64_t{sizeof(T)} - 1) / int64_t{sizeof(T)};
}

template <class T>
std::byte* take_stored(Carver<T>& cv, int64_t n, int64_t bytes) {
  return reinterpret_cast<std::byte*>(cv.take(floats_for<T>(mul(n, bytes))));
}

template <class T>
void carve_mlp(const config::ModelConfig& c, int64_t BT, LayerActs<T>& l, int64_t stored_bytes, Carver<T>& cv) {
  l.gu = cv.take(mul(BT, mul(2, c.d_ff)));
  l.act = stored_bytes ? nullptr : cv.take(mul(BT, c.d_ff));
  l.act_op = stored_bytes ? take_stored(cv, mul(BT, c.d_ff), stored_bytes) : nullptr;
}

// The blocks one layer keeps (or, under recompute, shares): everything but x_in.
// kv_bytes: the attention's operand precision's element size (the keys and values).
template <class T>
void carve_layer(const config::ModelConfig& c, const TokenLayout& lay, int64_t B, LayerActs<T>& l, bool mlp,
                 int64_t stored_bytes, int64_t kv_bytes, Carver<T>& cv) {
  const int64_t BT = mul(B, lay.T_len()), R = lay.res_rows(B), d = c.d_model;
  const int64_t Q = config::q_width(c), K = config::k_width(c), VD = config::v_width(c), A = config::attn_out_width(c);
  const bool pre = c.norm_order == config::NormOrder::kPre, qk = c.qk_norm != config::QkNorm::kNone;
  const bool split = lay.sp > 1;  // the normed inputs are gathered into buffers of their own
  const int64_t qk_rows = c.qk_norm == config::QkNorm::kHead ? mul(BT, c.n_heads) : BT;
  const int64_t k_rows = c.qk_norm == config::QkNorm::kHead ? mul(BT, c.n_kv_heads) : BT;
  // The normed inputs in T where they are not stored in the weight precision (a_op, m_op) instead:
  // their producers write the stored copy directly (add_rms_norm_stored).
  const auto normed = [&] { return stored_bytes ? nullptr : cv.take(mul(BT, d)); };
  l.a_in = pre || split ? normed() : l.x_in;
  l.a_op = stored_bytes ? take_stored(cv, mul(BT, d), stored_bytes) : nullptr;
  l.a_rstd = cv.take(R);
  l.q_pre = qk ? cv.take(mul(BT, Q)) : nullptr;
  l.k_pre = qk ? cv.take(mul(BT, K)) : nullptr;
  l.q_rstd = qk ? cv.take(qk_rows) : nullptr;
  l.k_rstd = qk ? cv.take(k_rows) : nullptr;
  l.q = reinterpret_cast<std::byte*>(cv.take(mul(BT, Q)));  // T's size (LayerActs::q)
  l.k = take_stored(cv, mul(BT, K), kv_bytes);
  l.v = take_stored(cv, mul(BT, VD), kv_bytes);
  l.att = reinterpret_cast<std::byte*>(cv.take(mul(BT, A)));  // T's size (LayerActs::att)
  l.lse = cv.take(mul(mul(B, c.n_heads), lay.T_len()));
  l.o = cv.take(mul(R, d));
  l.h_mid = cv.take(mul(R, d));
  l.m_in = pre || split ? normed() : l.h_mid;
  l.m_op = stored_bytes ? take_stored(cv, mul(BT, d), stored_bytes) : nullptr;
  l.m_rstd = cv.take(R);
  if (mlp) carve_mlp(c, BT, l, stored_bytes, cv);
  l.dn = cv.take(mul(R, d));
}

template <class T>
void carve_context(const config::ModelConfig& c, const TokenLayout& lay, int64_t B, int64_t kv_bytes,
                   ContextBuffers<T>& x, Carver<T>& cv) {
  if (lay.cp == 1) return;
  const int64_t K = config::k_width(c), VD = config::v_width(c), rows = mul(B, lay.T_full);
  x.k = take_stored(cv, mul(rows, K), kv_bytes);
  x.v = take_stored(cv, mul(rows, VD), kv_bytes);
  x.dk = cv.take(mul(rows, K));
  x.dv = cv.take(mul(rows, VD));
  x.stage = cv.take(mul(rows, std::max(K, VD)));
  x.call_dk = cv.take(mul(lay.T_full, K));
  x.call_dv = cv.take(mul(lay.T_full, VD));
}

// stored_bytes: the weight precision's element size where the GEMM inputs are kept in it, else 0.
template <class T>
void carve(const config::ModelConfig& c, const TokenLayout& lay, int64_t B, config::Recompute rc, int64_t stored_bytes,
           int64_t kv_bytes, int64_t logits_chunk, Activations<T>& a, Carver<T>& cv) {
  const int64_t BT = mul(B, lay.T_len()), R = lay.res_rows(B), d = c.d_model, F = c.d_ff;
  const int64_t Q = config::q_width(c), K = config::k_width(c), VD = config::v_width(c), A = config::attn_out_width(c);
  a.resid.assign(static_cast<size_t>(c.n_layers + 1), nullptr);
  for (auto& r : a.resid) r = cv.take(mul(R, d));
  a.layers.assign(static_cast<size_t>(c.n_layers), LayerActs<T>{});
  a.dx = cv.take(mul(BT, d));
  // dact also holds the attention backward's stored att_op and its packed qkv_grad_op (larger only
  // for narrow MLPs); dx the stored out_grad_op (always smaller).
  const int64_t packed_bytes = stored_bytes > 0 ? stored_bytes : static_cast<int64_t>(sizeof(T));
  a.dact = cv.take(std::max({mul(BT, F), floats_for<T>(mul(mul(BT, A), stored_bytes)),
                             floats_for<T>(mul(mul(BT, add(add(Q, K), VD)), packed_bytes))}));
  a.qkv_grad_op = reinterpret_cast<std::byte*>(a.dact);
  if (stored_bytes > 0) a.out_grad_op = reinterpret_cast<std::byte*>(a.dx);
  if (stored_bytes > 0 && kv_bytes != stored_bytes) a.att_op = reinterpret_cast<std::byte*>(a.dact);
  // Post-norm without sequence parallelism feeds the layer's input itself to the projections.
  const bool own_a_in = c.norm_order == config::NormOrder::kPre || lay.sp > 1;
  // Under recompute the layers share one set of blocks (full) or one MLP block (selective).
  LayerActs<T> shared{};
  if (rc == config::Recompute::kFull) carve_layer(c, lay, B, shared, true, stored_bytes, kv_bytes, cv);
  if (rc == config::Recompute::kSelective) carve_mlp(c, BT, shared, stored_bytes, cv);
  for (long i = 0; i < c.n_layers; ++i) {
    LayerActs<T>& l = a.layers[static_cast<size_t>(i)];
    if (rc == config::Recompute::kFull) l = shared;
    l.x_in = a.resid[static_cast<size_t>(i)];
    if (rc == config::Recompute::kFull) {
      if (!own_a_in) l.a_in = l.x_in;
      continue;
    }
    carve_layer(c, lay, B, l, rc != config::Recompute::kSelective, stored_bytes, kv_bytes, cv);
    if (rc == config::Recompute::kSelective) l.gu = shared.gu, l.act = shared.act, l.act_op = shared.act_op;
  }
  carve_context(c, lay, B, kv_bytes, a.context, cv);
  a.partial = lay.sp > 1 ? cv.take(mul(BT, d)) : nullptr;
  a.xf = cv.take(mul(R, d));
  a.f_rstd = cv.take(R);
  a.losses = cv.take(R);
  if (logits_chunk <= 0) fail("the LM head's logits chunk must be positive, not ", logits_chunk, " elements");
  a.chunk_rows = std::clamp<int64_t>(logits_chunk / std::max<long>(c.vocab_size, 1), 1, std::max<int64_t>(R, 1));
  a.logits = cv.take(mul(a.chunk_rows, c.vocab_size));
  a.head_x = cv.take(mul(a.chunk_rows, d));
  a.head_dx = cv.take(mul(a.chunk_rows, d));
  a.dh = cv.take(mul(R, d));
  a.dres = lay.sp > 1 ? cv.take(mul(R, d)) : a.dx;
  // The output gradients' rows gathered in T (sequence parallelism; a stored copy is gathered
  // instead where there is one: out_grad_op).
  a.dfull = lay.sp > 1 && stored_bytes == 0 ? cv.take(mul(BT, d)) : nullptr;
  a.dbranch = cv.take(mul(R, d));
  // The attention backward's gradients and the gate|up products' stored output gradient (dgu_op)
  // are never live at once (a layer's MLP backward is done with dgu_op before its attention
  // backward starts): one region, as large as the larger, dgu_op at its start.
  const int64_t region0 = cv.used;
  a.dq = cv.take(mul(BT, Q));
  a.dq_pre = cv.take(mul(BT, Q));
  a.dk = cv.take(mul(BT, K));
  a.dk_pre = cv.take(mul(BT, K));
  a.dv = cv.take(mul(BT, VD));
  a.datt = reinterpret_cast<std::byte*>(cv.take(mul(BT, A)));
  for (auto& l : a.layers) l.qkv = a.dq;  // the region is at least Q + K + VD wide
  if (stored_bytes > 0) {
    const int64_t dgu = mul(mul(BT, mul(2, c.d_ff)), stored_bytes),
                  region = mul(cv.used - region0, static_cast<int64_t>(sizeof(T)));
    if (dgu > region) take_stored(cv, dgu - region, 1);  // contiguous with the region
    a.dgu_op = reinterpret_cast<std::byte*>(a.dq);
  }
  a.stat = cv.take(mul(BT, std::max<int64_t>(c.n_heads, 1)));
  a.dot = cv.take(mul(BT, std::max<int64_t>(c.n_heads, 1)));
}

// ids, targets, document starts and the head's rows and targets; with cp, the windowed calls'
// document starts.
int64_t index_ints(const TokenLayout& lay, int64_t B) {
  const int64_t rows = mul(B, lay.T_len());
  return add(mul(5, rows), lay.cp > 1 ? rows : 0);
}

template <class T>
using IntBuffer = kernels::Buffer<int32_t, kernels::BasicOps<T>>;

}  // namespace

ActivationFloats activation_floats(const config::ModelConfig& local, const TokenLayout& layout, int64_t B,
                                   config::Recompute recompute, int weight_bytes, int kv_bytes, int64_t logits_chunk) {
  Activations<float> a;
  Carver<float> count;
  carve(local, layout, B, recompute, weight_bytes < 4 ? weight_bytes : 0, kv_bytes, logits_chunk, a, count);
  Carver<float> logits;
  logits.take(mul(a.chunk_rows, local.vocab_size));
  return {count.used, logits.used, index_ints(layout, B)};
}

template <class T>
Activations<T> make_activations(const config::ModelConfig& c, const kernels::BasicOps<T>& ops,
                                const TokenLayout& layout, int64_t B, config::Recompute recompute) {
  check_layout(layout, B);
  Activations<T> a;
  a.B = B;
  a.T_len = layout.T_len();
  a.layout = layout;
  a.recompute = recompute;
  a.rows = B * a.T_len;
  a.res_rows = layout.res_rows(B);
  const int64_t stored_bytes = ops.weight_bytes < int64_t{sizeof(T)} ? ops.weight_bytes : 0;
  Carver<T> count;
  carve(c, layout, B, recompute, stored_bytes, ops.kv_bytes, ops.logits_chunk, a, count);
  a.arena = kernels::Buffer<T, kernels::BasicOps<T>>(ops, count.used);
  Carver<T> hand_out{a.arena.get(), 0};
  carve(c, layout, B, recompute, stored_bytes, ops.kv_bytes, ops.logits_chunk, a, hand_out);
  a.ids = IntBuffer<T>(ops, a.rows);
  a.targets = IntBuffer<T>(ops, a.rows);
  a.doc_start = IntBuffer<T>(ops, a.rows);
  if (layout.cp > 1) a.doc_start_window = IntBuffer<T>(ops, a.rows);
  a.head_rows = IntBuffer<T>(ops, a.rows);
  a.head_targets = IntBuffer<T>(ops, a.rows);
  return a;
}

#define HEADROOM_ACTIVATIONS_INSTANTIATE(T)                                                            \
  template Activations<T> make_activations<T>(const config::ModelConfig&, const kernels::BasicOps<T>&, \
                                              const TokenLayout&, int64_t, config::Recompute);
HEADROOM_ACTIVATIONS_INSTANTIATE(float)
HEADROOM_ACTIVATIONS_INSTANTIATE(double)
#undef HEADROOM_ACTIVATIONS_INSTANTIATE

}  // namespace headroom::model
