#include "model/activations.h"

#include <algorithm>

namespace headroom::model {
namespace {

// Two passes over the same layout: the first counts, the second hands out pointers.
template <class T>
struct Carver {
  T* base = nullptr;
  int64_t used = 0;
  T* take(int64_t n) {
    T* p = base ? base + used : nullptr;
    used += (n + 15) / 16 * 16;  // 64-byte alignment for float
    return p;
  }
};

template <class T>
void carve(const config::ModelConfig& c, int64_t B, int64_t TT, Activations<T>& a, Carver<T>& cv) {
  const int64_t BT = B * TT, d = c.d_model, F = c.d_ff;
  const int64_t Q = config::q_width(c), K = config::k_width(c), VD = config::v_width(c), A = config::attn_out_width(c);
  const bool pre = c.norm_order == config::NormOrder::kPre, qk = c.qk_norm != config::QkNorm::kNone;
  const int64_t qk_rows = c.qk_norm == config::QkNorm::kHead ? BT * c.n_heads : BT;
  const int64_t k_rows = c.qk_norm == config::QkNorm::kHead ? BT * c.n_kv_heads : BT;
  a.resid.assign(static_cast<size_t>(c.n_layers + 1), nullptr);
  for (auto& r : a.resid) r = cv.take(BT * d);
  a.layers.assign(static_cast<size_t>(c.n_layers), LayerActs<T>{});
  for (long i = 0; i < c.n_layers; ++i) {
    LayerActs<T>& l = a.layers[static_cast<size_t>(i)];
    l.x_in = a.resid[static_cast<size_t>(i)];
    l.a_in = pre ? cv.take(BT * d) : l.x_in;
    l.a_rstd = cv.take(BT);
    l.q_pre = qk ? cv.take(BT * Q) : nullptr;
    l.k_pre = qk ? cv.take(BT * K) : nullptr;
    l.q_rstd = qk ? cv.take(qk_rows) : nullptr;
    l.k_rstd = qk ? cv.take(k_rows) : nullptr;
    l.q = cv.take(BT * Q);
    l.k = cv.take(BT * K);
    l.v = cv.take(BT * VD);
    l.att = cv.take(BT * A);
    l.lse = cv.take(B * c.n_heads * TT);
    l.o = cv.take(BT * d);
    l.h_mid = cv.take(BT * d);
    l.m_in = pre ? cv.take(BT * d) : l.h_mid;
    l.m_rstd = cv.take(BT);
    l.gate = cv.take(BT * F);
    l.up = cv.take(BT * F);
    l.act = cv.take(BT * F);
    l.dn = cv.take(BT * d);
  }
  a.xf = cv.take(BT * d);
  a.f_rstd = cv.take(BT);
  a.losses = cv.take(BT);
  a.chunk_rows = std::clamp<int64_t>((int64_t{1} << 21) / c.vocab_size, 1, BT);
  a.logits = cv.take(a.chunk_rows * c.vocab_size);
  a.head_x = cv.take(a.chunk_rows * d);
  a.head_dx = cv.take(a.chunk_rows * d);
  a.dh = cv.take(BT * d);
  a.dx = cv.take(BT * d);
  a.dbranch = cv.take(BT * d);
  a.dff1 = cv.take(BT * F);
  a.dff2 = cv.take(BT * F);
  a.dff3 = cv.take(BT * F);
  a.dq = cv.take(BT * Q);
  a.dq_pre = cv.take(BT * Q);
  a.dk = cv.take(BT * K);
  a.dk_pre = cv.take(BT * K);
  a.dv = cv.take(BT * VD);
  a.datt = cv.take(BT * A);
  a.stat = cv.take(BT * std::max<int64_t>(c.n_heads, 1));
  a.dot = cv.take(BT * std::max<int64_t>(c.n_heads, 1));
}

}  // namespace

template <class T>
Activations<T> make_activations(const config::ModelConfig& c, const kernels::BasicOps<T>& ops,
                                int64_t B, int64_t T_len) {
  Activations<T> a;
  a.B = B;
  a.T_len = T_len;
  Carver<T> count;
  carve(c, B, T_len, a, count);
  a.arena = kernels::Buffer<T, kernels::BasicOps<T>>(ops, count.used);
  Carver<T> hand_out{a.arena.get(), 0};
  carve(c, B, T_len, a, hand_out);
  a.ids = kernels::Buffer<int32_t, kernels::BasicOps<T>>(ops, B * T_len);
  a.targets = kernels::Buffer<int32_t, kernels::BasicOps<T>>(ops, B * T_len);
  a.head_rows = kernels::Buffer<int32_t, kernels::BasicOps<T>>(ops, B * T_len);
  a.head_targets = kernels::Buffer<int32_t, kernels::BasicOps<T>>(ops, B * T_len);
  return a;
}

template Activations<float> make_activations<float>(const config::ModelConfig&,
                                                    const kernels::BasicOps<float>&, int64_t,
                                                    int64_t);
template Activations<double> make_activations<double>(const config::ModelConfig&,
                                                      const kernels::BasicOps<double>&, int64_t,
                                                      int64_t);

}  // namespace headroom::model
