// Everything the forward pass keeps for the backward pass, and the backward pass's scratch, for a
// batch of B sequences of T tokens, allocated once in one arena (no allocation inside a step:
// page faults from large temporaries would cost more than the arithmetic).
#pragma once

#include "buffer.h"
#include "model/model.h"

#include <cstdint>
#include <vector>

namespace headroom::model {

template <class T>
struct LayerActs {
  T* x_in;       // [BT, d] residual entering the layer (points into Activations::resid)
  T* a_in;       // [BT, d] attention input: RMSNorm(x_in) (pre-norm) or x_in itself (post-norm)
  T* a_rstd;     // [BT]    pre: rstd of the attention-input norm; post: of the output norm
  T* q_pre;      // [BT, Hq·dqk] projections before QK norm (null without QK norm)
  T* k_pre;      // [BT, Hkv·dqk]
  T* q_rstd;     // [BT] (layer) or [BT·Hq] (head)
  T* k_rstd;
  T* q;          // [BT, Hq·dqk] after QK norm and RoPE
  T* k;          // [BT, Hkv·dqk]
  T* v;          // [BT, Hkv·dv]
  T* att;        // [BT, Hq·dv]
  T* lse;        // [B, Hq, T]
  T* o;          // [BT, d] attention output projection
  T* h_mid;      // [BT, d] residual after the attention block
  T* m_in;       // [BT, d] MLP input (pre: normed h_mid; post: h_mid)
  T* m_rstd;     // [BT]
  T* gate;       // [BT, d_ff]
  T* up;         // [BT, d_ff]
  T* act;        // [BT, d_ff] silu(gate) * up
  T* dn;         // [BT, d] MLP output projection
};

template <class T>
struct Activations {
  using Ops = kernels::BasicOps<T>;
  int64_t B = 0, T_len = 0;
  kernels::Buffer<T, Ops> arena;
  kernels::Buffer<int32_t, Ops> ids, targets;  // [BT] on the backend
  // The LM head runs only on rows that have a target: their indices and targets, compacted [≤ BT].
  kernels::Buffer<int32_t, Ops> head_rows, head_targets;
  std::vector<LayerActs<T>> layers;
  std::vector<T*> resid;  // n_layers + 1 residual streams [BT, d]
  T* xf;                  // [BT, d] final-normed
  T* f_rstd;              // [BT]
  T* losses;              // [BT] per-token loss
  T* logits;              // [chunk, V] LM head chunk (forward+backward fused per chunk)
  T* head_x;              // [chunk, d] the chunk's rows of xf, gathered
  T* head_dx;             // [chunk, d] their gradient, before it is scattered into dx
  int64_t chunk_rows = 0;
  // backward scratch
  T *dh, *dx, *dbranch, *dff1, *dff2, *dff3, *dq, *dq_pre, *dk, *dk_pre, *dv, *datt, *stat, *dot;
};

template <class T>
Activations<T> make_activations(const config::ModelConfig& c, const kernels::BasicOps<T>& ops,
                                int64_t B, int64_t T_len);

template <class T>
Activations<T> make_activations(const Model<T>& m, int64_t B, int64_t T_len) {
  return make_activations(m.local, *m.ops, B, T_len);
}

}  // namespace headroom::model
