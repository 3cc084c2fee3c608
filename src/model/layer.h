// One transformer block, forward and backward (MODEL_SPEC.md "Forward"), and the RMSNorm
// compositions they share.
#pragma once

#include "model/activations.h"

namespace headroom::model {

template <class T>
void rms_forward(const kernels::BasicOps<T>& ops, const T* x, const T* w, T* y, T* rstd, T* stat,
                 int64_t rows, int64_t n, double eps);

// dx = d norm(x) / dx · dy (overwrites dx); dw += (may be null).
template <class T>
void rms_backward(const kernels::BasicOps<T>& ops, const T* x, const T* w, const T* rstd,
                  const T* dy, T* dx, T* dw, T* dot, int64_t rows, int64_t n);

// Computes block i for B·T rows whose residual input is l.x_in, writing its output to x_out.
// Queries sit at positions pos0 .. pos0+T−1. The block writes its keys and values to l.k / l.v and
// attends over k_all / v_all, which hold pos0 + T positions ending with those (for training
// pos0 = 0 and k_all == l.k; for cached decoding, l.k points into the cache, B = 1).
template <class T>
void layer_forward(Model<T>& m, long i, LayerActs<T>& l, T* x_out, int64_t B, int64_t TT,
                   int64_t pos0, const T* k_all, const T* v_all, T* stat);

// Given a.dh = d loss / d (block output), adds block i's weight gradients to m.g[i] and turns a.dh
// into d loss / d (block input).
template <class T>
void layer_backward(Model<T>& m, long i, const LayerActs<T>& l, Activations<T>& a, int64_t B,
                    int64_t TT);

}  // namespace headroom::model
