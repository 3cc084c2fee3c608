#include "model/layer.h"

#include "parallel/comm.h"

#include <cmath>

namespace headroom::model {
namespace {

// Model dimensions of one block as this tensor-parallel rank sees them, named once.
struct Dims {
  int64_t BT, d, F, Hq, Hkv, dqk, dv, Q, K, VD, A;
  int64_t Q_total, K_total;  // whole-layer QK widths (layerwise QK norm normalises over these)
  bool pre, sliding;
  config::QkNorm qk_norm;
  int64_t window, rot;
  double eps;
};

template <class T>
Dims dims(const Model<T>& m, long i, int64_t B, int64_t TT) {
  const auto& c = m.local;
  const bool sliding = is_sliding(c, i);
  return {B * TT,
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

template <class T>
void qk_norm_forward(const Model<T>& m, const Dims& s, const T* x, const T* w, T* y, T* rstd,
                     T* stat, bool keys) {
  const NormRows r = qk_rows(m, s, keys);
  m.ops->row_sumsq(x, stat, r.rows, r.n);
  reduce_rows(stat, r, *m.ops);
  m.ops->rms_apply(x, w, stat, y, rstd, r.rows, r.n, r.n_total, static_cast<T>(s.eps));
}

template <class T>
void qk_norm_backward(const Model<T>& m, const Dims& s, const T* x, const T* w, const T* rstd,
                      const T* dy, T* dx, T* dw, T* dot, bool keys) {
  const NormRows r = qk_rows(m, s, keys);
  m.ops->rms_bwd_dot(x, w, dy, dot, r.rows, r.n);
  reduce_rows(dot, r, *m.ops);
  m.ops->rms_bwd_apply(x, w, dy, rstd, dot, dx, dw, r.rows, r.n, r.n_total);
}

// Megatron's g: the partial sums of a row-parallel product (or of the input gradient of a
// column-parallel one) are completed across the TP group.
template <class T>
void tp_sum(const Model<T>& m, T* x, int64_t n) {
  if (m.tp.comm) m.tp.comm->allreduce_sum(x, n);
}

}  // namespace

template <class T>
void rms_forward(const kernels::BasicOps<T>& ops, const T* x, const T* w, T* y, T* rstd, T* stat,
                 int64_t rows, int64_t n, double eps) {
  ops.row_sumsq(x, stat, rows, n);
  ops.rms_apply(x, w, stat, y, rstd, rows, n, n, static_cast<T>(eps));
}

template <class T>
void rms_backward(const kernels::BasicOps<T>& ops, const T* x, const T* w, const T* rstd,
                  const T* dy, T* dx, T* dw, T* dot, int64_t rows, int64_t n) {
  ops.rms_bwd_dot(x, w, dy, dot, rows, n);
  ops.rms_bwd_apply(x, w, dy, rstd, dot, dx, dw, rows, n, n);
}

template <class T>
void layer_forward(Model<T>& m, long i, LayerActs<T>& l, T* x_out, int64_t B, int64_t TT,
                   int64_t pos0, const T* k_all, const T* v_all, T* stat) {
  const auto& ops = *m.ops;
  const auto& w = m.w[static_cast<size_t>(i)];
  const Dims s = dims(m, i, B, TT);
  const bool qk = s.qk_norm != config::QkNorm::kNone;

  // Attention block.
  if (s.pre) rms_forward(ops, l.x_in, w.attn_norm, l.a_in, l.a_rstd, stat, s.BT, s.d, s.eps);
  T* q_lin = qk ? l.q_pre : l.q;
  T* k_lin = qk ? l.k_pre : l.k;
  ops.matmul(l.a_in, w.wq, q_lin, s.BT, s.Q, s.d, false, true, false);
  ops.matmul(l.a_in, w.wk, k_lin, s.BT, s.K, s.d, false, true, false);
  ops.matmul(l.a_in, w.wv, l.v, s.BT, s.VD, s.d, false, true, false);
  if (qk) {
    qk_norm_forward(m, s, l.q_pre, w.q_norm, l.q, l.q_rstd, stat, false);
    qk_norm_forward(m, s, l.k_pre, w.k_norm, l.k, l.k_rstd, stat, true);
  }
  if (s.rot > 0) {
    const int kind = s.sliding ? 1 : 0;
    ops.rope(l.q, m.rope_cos[kind].get(), m.rope_sin[kind].get(), B, TT, pos0, s.Hq, s.dqk, s.rot,
             false);
    ops.rope(l.k, m.rope_cos[kind].get(), m.rope_sin[kind].get(), B, TT, pos0, s.Hkv, s.dqk, s.rot,
             false);
  }
  ops.attention_fwd(l.q, k_all, v_all, l.att, l.lse, B, TT, pos0 + TT, pos0, s.Hq, s.Hkv, s.dqk,
                    s.dv, s.window, static_cast<T>(config::attention_scale(s.dqk)));
  ops.matmul(l.att, w.wo, l.o, s.BT, s.d, s.A, false, true, false);
  tp_sum(m, l.o, s.BT * s.d);
  if (s.pre) {
    ops.add(l.h_mid, l.x_in, l.o, s.BT * s.d);
  } else {
    rms_forward(ops, l.o, w.attn_norm, l.h_mid, l.a_rstd, stat, s.BT, s.d, s.eps);
    ops.axpy(l.h_mid, l.x_in, T(1), s.BT * s.d);
  }

  // MLP block.
  if (s.pre) rms_forward(ops, l.h_mid, w.mlp_norm, l.m_in, l.m_rstd, stat, s.BT, s.d, s.eps);
  ops.matmul(l.m_in, w.w_gate, l.gate, s.BT, s.F, s.d, false, true, false);
  ops.matmul(l.m_in, w.w_up, l.up, s.BT, s.F, s.d, false, true, false);
  ops.swiglu_fwd(l.gate, l.up, l.act, s.BT * s.F);
  ops.matmul(l.act, w.w_down, l.dn, s.BT, s.d, s.F, false, true, false);
  tp_sum(m, l.dn, s.BT * s.d);
  if (s.pre) {
    ops.add(x_out, l.h_mid, l.dn, s.BT * s.d);
  } else {
    rms_forward(ops, l.dn, w.mlp_norm, x_out, l.m_rstd, stat, s.BT, s.d, s.eps);
    ops.axpy(x_out, l.h_mid, T(1), s.BT * s.d);
  }
}

template <class T>
void layer_backward(Model<T>& m, long i, const LayerActs<T>& l, Activations<T>& a, int64_t B,
                    int64_t TT) {
  const auto& ops = *m.ops;
  const auto& w = m.w[static_cast<size_t>(i)];
  const auto& g = m.g[static_cast<size_t>(i)];
  const Dims s = dims(m, i, B, TT);
  const bool qk = s.qk_norm != config::QkNorm::kNone;
  T* dh = a.dh;

  // MLP block: out = h_mid + branch. d(branch output) is dh (pre) or through the output norm (post).
  const T* d_dn = dh;
  if (!s.pre) {
    rms_backward(ops, l.dn, w.mlp_norm, l.m_rstd, dh, a.dbranch, g.mlp_norm, a.dot, s.BT, s.d);
    d_dn = a.dbranch;
  }
  T *dact = a.dff1, *dgate = a.dff2, *dup = a.dff3;
  ops.matmul(d_dn, l.act, g.w_down, s.d, s.F, s.BT, true, false, true);
  ops.matmul(d_dn, w.w_down, dact, s.BT, s.F, s.d, false, false, false);
  ops.swiglu_bwd(l.gate, l.up, dact, dgate, dup, s.BT * s.F);
  ops.matmul(dgate, l.m_in, g.w_gate, s.F, s.d, s.BT, true, false, true);
  ops.matmul(dup, l.m_in, g.w_up, s.F, s.d, s.BT, true, false, true);
  ops.matmul(dgate, w.w_gate, a.dx, s.BT, s.d, s.F, false, false, false);
  ops.matmul(dup, w.w_up, a.dx, s.BT, s.d, s.F, false, false, true);
  tp_sum(m, a.dx, s.BT * s.d);
  if (s.pre) {
    rms_backward(ops, l.h_mid, w.mlp_norm, l.m_rstd, a.dx, a.dbranch, g.mlp_norm, a.dot, s.BT, s.d);
    ops.axpy(dh, a.dbranch, T(1), s.BT * s.d);
  } else {
    ops.axpy(dh, a.dx, T(1), s.BT * s.d);
  }

  // Attention block: dh is now d loss / d h_mid.
  const T* d_o = dh;
  if (!s.pre) {
    rms_backward(ops, l.o, w.attn_norm, l.a_rstd, dh, a.dbranch, g.attn_norm, a.dot, s.BT, s.d);
    d_o = a.dbranch;
  }
  ops.matmul(d_o, l.att, g.wo, s.d, s.A, s.BT, true, false, true);
  ops.matmul(d_o, w.wo, a.datt, s.BT, s.A, s.d, false, false, false);
  ops.attention_bwd(l.q, l.k, l.v, l.att, l.lse, a.datt, a.dq, a.dk, a.dv, B, TT, TT, 0, s.Hq,
                    s.Hkv, s.dqk, s.dv, s.window,
                    static_cast<T>(config::attention_scale(s.dqk)));
  if (s.rot > 0) {
    const int kind = s.sliding ? 1 : 0;
    ops.rope(a.dq, m.rope_cos[kind].get(), m.rope_sin[kind].get(), B, TT, 0, s.Hq, s.dqk, s.rot,
             true);
    ops.rope(a.dk, m.rope_cos[kind].get(), m.rope_sin[kind].get(), B, TT, 0, s.Hkv, s.dqk, s.rot,
             true);
  }
  const T* dq_lin = a.dq;
  const T* dk_lin = a.dk;
  if (qk) {
    qk_norm_backward(m, s, l.q_pre, w.q_norm, l.q_rstd, a.dq, a.dq_pre, g.q_norm, a.dot, false);
    qk_norm_backward(m, s, l.k_pre, w.k_norm, l.k_rstd, a.dk, a.dk_pre, g.k_norm, a.dot, true);
    dq_lin = a.dq_pre;
    dk_lin = a.dk_pre;
  }
  ops.matmul(dq_lin, l.a_in, g.wq, s.Q, s.d, s.BT, true, false, true);
  ops.matmul(dk_lin, l.a_in, g.wk, s.K, s.d, s.BT, true, false, true);
  ops.matmul(a.dv, l.a_in, g.wv, s.VD, s.d, s.BT, true, false, true);
  ops.matmul(dq_lin, w.wq, a.dx, s.BT, s.d, s.Q, false, false, false);
  ops.matmul(dk_lin, w.wk, a.dx, s.BT, s.d, s.K, false, false, true);
  ops.matmul(a.dv, w.wv, a.dx, s.BT, s.d, s.VD, false, false, true);
  // Ranks sharing a KV head each added that head's input gradient only for their own query
  // heads, so the sum over the group is exact.
  tp_sum(m, a.dx, s.BT * s.d);
  if (s.pre) {
    rms_backward(ops, l.x_in, w.attn_norm, l.a_rstd, a.dx, a.dbranch, g.attn_norm, a.dot, s.BT, s.d);
    ops.axpy(dh, a.dbranch, T(1), s.BT * s.d);
  } else {
    ops.axpy(dh, a.dx, T(1), s.BT * s.d);
  }
}

#define HEADROOM_LAYER_INSTANTIATE(T)                                                          \
  template void rms_forward<T>(const kernels::BasicOps<T>&, const T*, const T*, T*, T*, T*,     \
                               int64_t, int64_t, double);                                       \
  template void rms_backward<T>(const kernels::BasicOps<T>&, const T*, const T*, const T*,      \
                                const T*, T*, T*, T*, int64_t, int64_t);                        \
  template void layer_forward<T>(Model<T>&, long, LayerActs<T>&, T*, int64_t, int64_t, int64_t, \
                                 const T*, const T*, T*);                                       \
  template void layer_backward<T>(Model<T>&, long, const LayerActs<T>&, Activations<T>&,        \
                                  int64_t, int64_t);
HEADROOM_LAYER_INSTANTIATE(float)
HEADROOM_LAYER_INSTANTIATE(double)
#undef HEADROOM_LAYER_INSTANTIATE

}  // namespace headroom::model
