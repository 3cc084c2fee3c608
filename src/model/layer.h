// One transformer block, forward and backward (MODEL_SPEC.md "Forward"), and the RMSNorm
// compositions they share.
#pragma once

#include "model/activations.h"

namespace headroom::model {

template <class T>
void rms_forward(const kernels::BasicOps<T>& ops, const T* x, const T* w, T* y, T* rstd, T* stat, int64_t rows,
                 int64_t n, double eps);

// dx = d norm(x) / dx · dy (overwrites dx); dw += (may be null).
template <class T>
void rms_backward(const kernels::BasicOps<T>& ops, const T* x, const T* w, const T* rstd, const T* dy, T* dx, T* dw,
                  T* dot, int64_t rows, int64_t n);

// Decoding: block i for B·T rows whose residual input is l.x_in, output to x_out. Queries sit at
// positions pos0 .. pos0+T−1. The block writes its keys and values to l.k / l.v and attends over
// k_all / v_all, which hold positions key_pos0 .. pos0+T−1 ending with those (l.k points into the
// cache, B = 1; key_pos0 > 0 when a sliding-window cache has dropped the positions before it).
template <class T>
void layer_forward(Model<T>& m, long i, LayerActs<T>& l, T* x_out, int64_t B, int64_t TT, int64_t pos0,
                   int64_t key_pos0, const T* k_all, const T* v_all, T* stat);

// Training: block i of a micro-batch under the activations' layout (context-parallel chunks,
// sequence-parallel rows), output to x_out ([res_rows, d]).
template <class T>
void layer_forward(Model<T>& m, long i, LayerActs<T>& l, T* x_out, Activations<T>& a);

// Given a.dh = d loss / d (block output), adds block i's weight gradients to m.g[i] and turns a.dh
// into d loss / d (block input). Recomputes first what a.recompute did not keep.
template <class T>
void layer_backward(Model<T>& m, long i, LayerActs<T>& l, Activations<T>& a);

}  // namespace headroom::model
