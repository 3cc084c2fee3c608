// One transformer block, forward and backward (MODEL_SPEC.md "Forward"), and the RMSNorm forward
// (row statistics, then the apply) they share with the final norm.
#pragma once

#include "model/activations.h"

namespace headroom::model {

template <class T>
void rms_forward(const kernels::BasicOps<T>& ops, const T* x, const T* w, T* y, T* rstd, T* stat, int64_t rows,
                 int64_t n, double eps);

// Decoding: one layer's cache. Rows hold positions key_pos0, key_pos0 + 1, ... (key_pos0 > 0 when
// a sliding-window cache has dropped the positions before it); a call's own keys and values go to
// rows `row` on. In the table's cache precision (ops.h's rope_operand, attention_fwd_cached) when
// `table`, else the compute type.
struct CachedKeys {
  void *k, *v;
  int64_t row, key_pos0;
  bool table;
};

// Decoding: block i for TT rows of one sequence whose residual input is l.x_in, output to x_out.
// Queries sit at positions pos0 .. pos0+TT−1. The block writes its keys and values into the cache
// (l.k and l.v stay unused) and attends over the cache's positions up to pos0+TT−1.
template <class T>
void layer_forward(Model<T>& m, long i, LayerActs<T>& l, T* x_out, int64_t TT, int64_t pos0, const CachedKeys& kv,
                   T* stat);

// Where a pre-norm block's output add also writes the next norm's output (add_rms_norm): the next
// block's input norm or the final norm, its weight w, its output rows y and rstd. The block that
// follows then finds its input normed already.
template <class T>
struct NextNorm {
  const T* w = nullptr;  // null: the output is added alone
  T* y = nullptr;
  T* rstd = nullptr;
  std::byte* y_stored = nullptr;  // where set, y is written there in the weight precision instead
};

// This rank's rows of a block's normed input in T, which is null where only its stored copy is kept.
template <class T>
T* rows_slot(T* rows, int64_t offset) {
  return rows ? rows + offset : nullptr;
}

// This rank's rows in a stored copy in the weight precision (a block's normed input a_op, m_op,
// where a norm writes them straight in; the stored output gradients): their slot, `offset`
// elements in (the first row's times d; with sequence parallelism the block gathers the copy's
// rows afterwards). Null where there is no copy: T rows.
template <class T>
std::byte* stored_slot(std::byte* stored, int64_t offset, const kernels::BasicOps<T>& ops) {
  return stored ? stored + offset * ops.weight_bytes : nullptr;
}

// Training: block i of a micro-batch under the activations' layout (context-parallel chunks,
// sequence-parallel rows), output to x_out ([res_rows, d]). input_normed: this rank's rows of l.a_in
// and l.a_rstd hold the block's input norm already (the previous block's `next`).
template <class T>
void layer_forward(Model<T>& m, long i, LayerActs<T>& l, T* x_out, Activations<T>& a, const NextNorm<T>& next = {},
                   bool input_normed = false);

// Given a.dh = d loss / d (block output), adds block i's weight gradients to m.g[i] and turns a.dh
// into d loss / d (block input). Recomputes first what a.recompute did not keep.
template <class T>
void layer_backward(Model<T>& m, long i, LayerActs<T>& l, Activations<T>& a);

}  // namespace headroom::model
