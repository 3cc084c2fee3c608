// Training-time forward and backward passes (MODEL_SPEC.md), batch-major: B windows of T tokens
// starting at position 0, of which this rank holds the activations' layout's share (token_layout.h):
// ids and targets are this rank's rows [a.rows] (take_local). The LM head and the loss are fused
// chunk by chunk, so no [B·T, vocab] logits tensor exists during training. Loss sums are over the
// rank's tokens: the tp ranks' shares are already summed, the cp ranks' are not.
#pragma once

#include "model/activations.h"

#include <functional>

namespace headroom::model {

struct LossSum {
  double sum = 0;     // sum of per-token cross-entropy over unmasked targets
  int64_t count = 0;  // unmasked targets
};

// Embedding and every layer; leaves the final-normed stream in a.xf. ids: host [B·T].
template <class T>
void forward_layers(Model<T>& m, Activations<T>& a, const int32_t* ids);

// Forward + loss + backward for one micro-batch. Gradients of (grad_scale · Σ token losses) are
// ADDED to m.grads (gradient accumulation); the caller picks grad_scale = 1 / (unmasked targets of
// the global batch) so the loss is the mean over the global batch. targets: host [B·T], −1 masks.
// doc_start: host [B·T], each token's document start as a position in its window (ops.h's document
// mask; data/document_starts.h), or null: every token attends to the whole window before it.
// grads_final, when set, is called with a parameter index k each time the backward pass has finished
// with every parameter of index ≥ k (after the final norm, after each layer, at the end with 0):
// the point from which their gradients may be reduced while the backward goes on.
template <class T>
LossSum forward_backward(Model<T>& m, Activations<T>& a, const int32_t* ids, const int32_t* targets, T grad_scale,
                         const int32_t* doc_start = nullptr, const std::function<void(size_t)>& grads_final = {});

// forward_backward in its three parts, for a caller that must know where the host waits for the
// backend. stage_micro_batch uploads the host's inputs (ids, targets, document starts, the LM
// head's rows); train_staged enqueues the forward pass, the loss and the backward pass and never
// waits for the backend (no host transfer: the host runs ahead of the device), unless
// train.profile_steps times it region by region or grads_final waits, and where a.graphs.enabled
// launches the passes (or their pieces) as CUDA graphs (step_graphs.h); staged_loss waits and
// reads the loss.
template <class T>
void stage_micro_batch(Model<T>& m, Activations<T>& a, const int32_t* ids, const int32_t* targets,
                       const int32_t* doc_start = nullptr);
template <class T>
void train_staged(Model<T>& m, Activations<T>& a, T grad_scale, const std::function<void(size_t)>& grads_final = {});
template <class T>
LossSum staged_loss(Model<T>& m, Activations<T>& a);

// Forward only: the loss, and when logits_out is non-null the logits of this rank's residual rows
// [a.res_rows, V] (host; every row unless sequence-parallel).
template <class T>
LossSum forward_loss(Model<T>& m, Activations<T>& a, const int32_t* ids, const int32_t* targets, T* logits_out,
                     const int32_t* doc_start = nullptr);

}  // namespace headroom::model
