// Everything the forward pass keeps for the backward pass, and the backward pass's scratch, for a
// micro-batch of B windows of T tokens, allocated once in one arena (no allocation inside a step:
// page faults from large temporaries would cost more than the arithmetic).
//
// What a rank keeps depends on the layout (token_layout.h) and on train.recompute:
//   - context parallelism keeps T / cp tokens of each window (two zig-zag chunks), plus buffers for
//     the keys and values of whole windows, gathered over the cp ranks for attention;
//   - sequence parallelism keeps the residual stream, norms and residual adds for 1/tp of those
//     tokens (`res_rows`); the inputs of the column-parallel products (a_in, m_in) and everything
//     between them and the row-parallel products stay whole (`rows`);
//   - recompute selective points every layer's gu/act at one shared block (recomputed in the
//     backward pass), full points everything but each layer's input at one shared layer;
//   - the queries, keys and values are kept in the attention's operand precision (bf16 on a GPU),
//     in which the attention reads them;
//   - the inputs of the GEMMs that several products read (a_in, m_in, act) are kept in the tables'
//     weight precision when it is narrower than T (bf16 on a GPU): each is stored once (a_op,
//     m_op, act_op) and read by its forward products and its weight gradients. Their producers
//     write the stored copy alone (add_rms_norm_stored, swiglu_fwd_stored): the normed inputs have
//     no T buffer then (a_in, m_in null). Under sequence parallelism each rank stores its own rows
//     and the stored copy is gathered. The gate|up products' output gradient (dgu_op), and the other
//     gradients that two backward products read, are stored so too.
// activation_floats() counts the same carving without allocating: the memory plan's figure.
#pragma once

#include "buffer.h"
#include "model/model.h"
#include "model/step_graphs.h"
#include "model/token_layout.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace headroom::model {

template <class T>
struct LayerActs {
  T* x_in;    // [R, d] residual entering the layer (points into Activations::resid)
  T* a_in;    // [BT, d] attention input: RMSNorm(x_in) (pre-norm) or x_in itself (post-norm),
              //         gathered over the tp ranks under sequence parallelism; null where a_op
              //         holds the normed or gathered rows instead
  T* a_rstd;  // [R]     pre: rstd of the attention-input norm; post: of the output norm
  T* q_pre;   // [BT, Hq·dqk] projections before QK norm (null without QK norm)
  T* k_pre;   // [BT, Hkv·dqk]
  T* q_rstd;  // [BT] (layer) or [BT·Hq] (head)
  T* k_rstd;
  // [BT, Hq·dqk] after QK norm and RoPE, in the attention's operand precision (BasicOps::kv_bytes
  // each: rope_operand), or in T for a decoding call on a kCompute cache (observers read the
  // queries then): carved at T's size
  std::byte* q;
  std::byte* k;  // [BT, Hkv·dqk] likewise, in the operand precision (kv_bytes each)
  std::byte* v;  // [BT, Hkv·dv] in the operand precision
  // [BT, Hq·dv] the attention's output, in its operand precision like q, or in T for a decoding
  // call on a kCompute cache: carved at T's size
  std::byte* att;
  T* lse;     // per attention call (token_layout.h: lse_at): B · Hq · T_len in all
  T* o;       // [R, d] attention output projection
  T* h_mid;   // [R, d] residual after the attention block
  T* m_in;    // [BT, d] MLP input (pre: normed h_mid; post: h_mid), gathered like a_in; null like a_in
  T* m_rstd;  // [R]
  T* gu;      // [BT, 2 d_ff]: each row [gate | up], one GEMM over the adjacent w_gate and w_up;
              // overwritten by its gradient in the backward pass
  T* act;     // [BT, d_ff] silu(gate) * up; null where act_op holds it
  T* dn;      // [R, d] MLP output projection
  T* qkv;     // [BT, Q + K + VD] the fused QKV product's output, unpacked into q (or q_pre), k (or
              //         k_pre) and v at once, then (QK norm on a kCompute cache's call, where
              //         RoPE writes T) the normed queries or keys before RoPE: scratch over
              //         Activations::dq's region, which the backward pass writes only after a
              //         (recomputed) forward is done with it
  // a_in, m_in and act in the weight precision (BasicOps::weight_bytes per element) where it is
  // narrower than T; null where it is T (the GEMMs read a_in, m_in and act themselves).
  std::byte *a_op = nullptr, *m_op = nullptr, *act_op = nullptr;
};

// The whole-window keys and values a context-parallel rank attends over, and their gradients.
template <class T>
struct ContextBuffers {
  // [B·T_full, Hkv·dqk] / [B·T_full, Hkv·dv], positions in order, in the operand precision
  std::byte *k = nullptr, *v = nullptr;
  T *dk = nullptr, *dv = nullptr;            // the same shapes in T: gradients of this rank's queries, summed
  T* stage = nullptr;                        // [cp, B·T_len, width]: rank-major, what the collectives move
  T *call_dk = nullptr, *call_dv = nullptr;  // one attention call's key and value gradients
};

template <class T>
struct Activations {
  using Ops = kernels::BasicOps<T>;
  int64_t B = 0, T_len = 0;  // windows, and tokens of each kept on this rank (T_full / cp)
  TokenLayout layout;
  config::Recompute recompute = config::Recompute::kNone;
  int64_t rows = 0;      // B · T_len: rows of the attention and MLP products
  int64_t res_rows = 0;  // rows of the residual stream on this rank (rows / tp under sequence parallelism)
  kernels::Buffer<T, Ops> arena;
  kernels::Buffer<int32_t, Ops> ids, targets;  // [rows] on the backend
  // [rows] on the backend: each query's first visible key (ops.h's doc_start, global positions) when
  // documents are masked (documents_masked), unused otherwise.
  kernels::Buffer<int32_t, Ops> doc_start;
  // With cp > 1, the same relative to the first key of each windowed call (sliding-window layers
  // that exchange only halos, TokenLayout::halo): max(doc_start − that key's position, 0).
  kernels::Buffer<int32_t, Ops> doc_start_window;
  bool documents_masked = false;
  // The LM head runs only on rows that have a target: their indices and targets, compacted [≤ res_rows].
  kernels::Buffer<int32_t, Ops> head_rows, head_targets;
  std::vector<LayerActs<T>> layers;
  std::vector<T*> resid;  // n_layers + 1 residual streams [R, d]
  ContextBuffers<T> context;
  T* partial;  // [BT, d] a row-parallel product before its reduce-scatter (sequence parallel)
  T* xf;       // [R, d] final-normed
  T* f_rstd;   // [R]
  T* losses;   // [R] per-token loss
  T* logits;   // [chunk, V] LM head chunk (forward+backward fused per chunk)
  T* head_x;   // [chunk, d] the chunk's rows of xf, gathered
  T* head_dx;  // [chunk, d] their gradient, before it is scattered into dx
  int64_t chunk_rows = 0;
  // The staged micro-batch's LM-head rows (head_rows' count) and unmasked targets (forward.h).
  int64_t head_count = 0, target_count = 0;
  // backward scratch: dh, dres, dbranch [R, d]; dx, dfull [BT, d]; dact [BT, d_ff]
  T *dh, *dres, *dx, *dfull, *dbranch, *dact, *dq, *dq_pre, *dk, *dk_pre, *dv, *stat, *dot;
  // [BT, Hq·dv] the attention output's gradient, in the attention's operand precision (its
  // backward reads it so), carved at T's size (the operand precision is T on the CPU and under kSimt).
  std::byte* datt;
  // [BT, 2·d_ff] the gate|up products' output gradient in the weight precision, where the GEMM
  // inputs are stored so (read by their weight and input gradients; over dq … datt, which are not
  // live then); else null (in place over gu).
  std::byte* dgu_op = nullptr;
  // The other gradients that a weight gradient and an input gradient both read, each over scratch
  // that is not live while it is. Stored once in the weight precision where the GEMM inputs are,
  // else null (both products read them in T):
  //   out_grad_op  [BT, d]      the MLP's or the attention's output gradient, over dx (the block
  //                             back-propagated before is done with it; this block's input
  //                             gradient writes it last);
  //   att_op       [BT, Hq·dv]  the attention output, the other operand of wo's gradient, over dact
  //                             (which the attention backward does not use), where the attention
  //                             writes it in another precision (kSimt: fp32); else null (wo's
  //                             gradient reads LayerActs::att as it is).
  // In every table (in the weight precision, which may be T):
  //   qkv_grad_op  [BT, Q+K+VD] the Q, K and V projections' output gradients side by side: the
  //                             fused QKV product's, for its weight and input gradients; over
  //                             dact too (att_op is read by then).
  std::byte *out_grad_op = nullptr, *att_op = nullptr, *qkv_grad_op = nullptr;
  // The forward and backward passes as CUDA graphs, on the buffers above (step_graphs.h).
  StepGraphs graphs;
};

// The sizes of make_activations' arena in elements, counted by the same carving.
struct ActivationFloats {
  int64_t arena = 0;       // everything, the logits chunk included
  int64_t logits = 0;      // the [chunk_rows, vocab] block
  int64_t index_ints = 0;  // int32 index buffers beside the arena (ids, targets, doc starts, head rows)
};
// `local` is one tensor-parallel rank's model config (local_config); `weight_bytes` the weight
// precision's element size (BasicOps::weight_bytes: the stored GEMM inputs are in it when it is below
// 4), `kv_bytes` the attention's operand precision's (BasicOps::kv_bytes: the keys and values; the
// queries are carved at 4 bytes, LayerActs::q), `logits_chunk` the LM head's logits per chunk
// (BasicOps::logits_chunk). Saturates at INT64_MAX.
ActivationFloats activation_floats(const config::ModelConfig& local, const TokenLayout& layout, int64_t B,
                                   config::Recompute recompute, int weight_bytes = 4, int kv_bytes = 4,
                                   int64_t logits_chunk = kernels::kHostLogitsChunk);

template <class T>
Activations<T> make_activations(const config::ModelConfig& local, const kernels::BasicOps<T>& ops,
                                const TokenLayout& layout, int64_t B,
                                config::Recompute recompute = config::Recompute::kNone);

// Whole windows of T_len tokens on one rank (decoding, evaluation, tests).
template <class T>
Activations<T> make_activations(const config::ModelConfig& c, const kernels::BasicOps<T>& ops, int64_t B,
                                int64_t T_len) {
  return make_activations(c, ops, TokenLayout{T_len}, B);
}

// Windows of T tokens under the model's own layout (its cp and sequence-parallel tp ranks).
template <class T>
Activations<T> make_activations(const Model<T>& m, int64_t B, int64_t window,
                                config::Recompute recompute = config::Recompute::kNone) {
  return make_activations(m.local, *m.ops, token_layout(m, window), B, recompute);
}

}  // namespace headroom::model
