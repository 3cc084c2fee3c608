#include "model/forward.h"

#include "model/layer.h"
#include "model/step_graphs.h"
#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace headroom::model {
namespace {

int64_t count_targets(const int32_t* targets, int64_t n) {
  return std::count_if(targets, targets + n, [](int32_t t) { return t >= 0; });
}

template <class T>
void upload(const Model<T>& m, Activations<T>& a, const int32_t* ids, const int32_t* targets) {
  const int64_t BT = a.rows;
  for (int64_t i = 0; i < BT; ++i) {
    if (ids[i] < 0 || ids[i] >= m.cfg.vocab_size)
      fail("token id ", ids[i], " at position ", i, " is outside the vocabulary [0, ", m.cfg.vocab_size, ")");
    if (targets && targets[i] >= m.cfg.vocab_size)
      fail("target id ", targets[i], " at position ", i, " is outside the vocabulary [0, ", m.cfg.vocab_size, ")");
  }
  m.ops->copy_from_host(a.ids.get(), ids, static_cast<size_t>(BT) * sizeof(int32_t));
  if (targets) m.ops->copy_from_host(a.targets.get(), targets, static_cast<size_t>(BT) * sizeof(int32_t));
}

// The document mask of the micro-batch (null: none), kept on the backend for every layer; under
// context parallelism also relative to each windowed call's first key (layer.cpp's halo exchange of
// sliding-window layers).
template <class T>
void upload_documents(const Model<T>& m, Activations<T>& a, const int32_t* doc_start) {
  a.documents_masked = doc_start != nullptr;
  if (!doc_start) return;
  const auto bytes = static_cast<size_t>(a.rows) * sizeof(int32_t);
  m.ops->copy_from_host(a.doc_start.get(), doc_start, bytes);
  const TokenLayout& lay = a.layout;
  if (lay.halo(m.local.window) == 0) return;
  std::vector<int32_t> relative(static_cast<size_t>(a.rows));
  for (int64_t r = 0; r < a.rows; ++r) {
    const int seg = static_cast<int>(r % lay.T_len() / lay.segment_len());
    const int64_t first_key = lay.segment_pos0(seg) - lay.halo_before(seg, m.local.window);
    relative[static_cast<size_t>(r)] = static_cast<int32_t>(std::max<int64_t>(doc_start[r] - first_key, 0));
  }
  m.ops->copy_from_host(a.doc_start_window.get(), relative.data(), bytes);
}

// The rows the LM head runs on: those of this rank's residual rows with a target (a pretraining
// window of synthetic prompts has a target only on its answers, so most rows skip the head's
// vocab-wide matmul and softmax), or every one of them when the full logits are wanted. Uploads
// their indices and targets, compacted, and returns their count. `targets` are the residual rows' own.
template <class T>
int64_t upload_head_rows(const Model<T>& m, Activations<T>& a, const int32_t* targets, bool all) {
  const int64_t R = a.res_rows;
  std::vector<int32_t> rows, kept;
  rows.reserve(static_cast<size_t>(R));
  kept.reserve(static_cast<size_t>(R));
  for (int64_t i = 0; i < R; ++i)
    if (all || targets[i] >= 0) {
      rows.push_back(static_cast<int32_t>(i));
      kept.push_back(targets[i]);
    }
  const auto n = static_cast<int64_t>(rows.size());
  m.ops->copy_from_host(a.head_rows.get(), rows.data(), static_cast<size_t>(n) * sizeof(int32_t));
  m.ops->copy_from_host(a.head_targets.get(), kept.data(), static_cast<size_t>(n) * sizeof(int32_t));
  return n;
}

// Everything a micro-batch's device work reads from the host, uploaded before any of it is
// enqueued: a copy from the host's (pageable) memory waits for the device, and the host must not
// wait between the forward pass and the end of the backward pass. ids, targets, document starts,
// the RoPE tables' length, the weights' stored copy and the LM head's rows (every residual row when all_head_rows: the
// logits are wanted); targets null: no head.
template <class T>
void stage(Model<T>& m, Activations<T>& a, const int32_t* ids, const int32_t* targets, const int32_t* doc_start,
           bool all_head_rows) {
  upload(m, a, ids, targets);
  upload_documents(m, a, doc_start);
  ensure_rope(m, a.layout.T_full);
  refresh_stored_weights(m);
  a.head_count = targets ? upload_head_rows(m, a, targets + a.layout.res_row0(a.B), all_head_rows) : 0;
  a.target_count = targets ? count_targets(targets, a.rows) : 0;
}

// LM head + cross-entropy over chunks of the staged head rows, gathered from xf; the losses stay on
// the backend (staged_loss reads them). With backward, dlogits never leave the chunk: the weight
// gradient and the gradient of the rows are formed right away and the latter scattered into a.dx
// (zero on rows without a target, which add nothing to the loss).
template <class T>
void head_loss(Model<T>& m, Activations<T>& a, bool backward, T grad_scale, T* logits_out) {
  const auto& ops = *m.ops;
  const int64_t d = m.cfg.d_model, V = m.cfg.vocab_size;
  const int64_t n = a.head_count;
  if (backward) ops.fill(a.dx, T(0), a.res_rows * d);
  for (int64_t r0 = 0; r0 < n; r0 += a.chunk_rows) {
    const int64_t R = std::min(a.chunk_rows, n - r0);
    const int32_t* rows = a.head_rows.get() + r0;
    ops.embedding_fwd(a.xf, rows, a.head_x, R, d);  // a row gather
    ops.matmul_stored(a.head_x, stored_weight(m, m.s_lm_head), a.logits, R, V, d, false, true, false);
    if (logits_out)  // every row is a head row here, in order
      ops.copy_to_host(logits_out + r0 * V, a.logits, static_cast<size_t>(R * V) * sizeof(T));
    ops.cross_entropy(a.logits, a.head_targets.get() + r0, a.losses + r0, backward ? a.logits : nullptr, R, V,
                      grad_scale);
    if (!backward) continue;
    ops.matmul(a.logits, a.head_x, m.g_lm_head, V, d, R, true, false, true);
    ops.matmul_stored(a.logits, stored_weight(m, m.s_lm_head), a.head_dx, R, d, V, false, false, false);
    ops.embedding_bwd(a.head_dx, rows, a.dx, R, d);  // a scatter: the rows are distinct
  }
}

// This rank's residual rows of the token ids (all of them unless sequence-parallel).
template <class T>
const int32_t* residual_ids(const Activations<T>& a) {
  return a.ids.get() + a.layout.res_row0(a.B);
}

template <class T>
void run_layers(Model<T>& m, Activations<T>& a) {
  const auto& ops = *m.ops;
  const int64_t R = a.res_rows, d = m.cfg.d_model;
  mark(m.timer, "embedding (forward and backward)");
  ops.embedding_fwd(m.embed, residual_ids(a), a.resid[0], R, d);
  // Pre-norm: each block's output add writes the next norm's output too (add_rms_norm), the next
  // block's input norm (this rank's rows of its a_in) or, after the last block, the final norm.
  const bool pre = m.cfg.norm_order == config::NormOrder::kPre;
  const int64_t row0 = a.layout.res_row0(a.B);
  const long L = m.cfg.n_layers;
  for (long i = 0; i < L; ++i) {
    NextNorm<T> next;
    if (pre && i + 1 < L) {
      const LayerActs<T>& n = a.layers[static_cast<size_t>(i + 1)];
      next = {m.w[static_cast<size_t>(i + 1)].attn_norm, rows_slot(n.a_in, row0 * d), n.a_rstd,
              stored_slot(n.a_op, row0 * d, ops)};
    } else if (pre) {
      next = {m.final_norm, a.xf, a.f_rstd};
    }
    layer_forward(m, i, a.layers[static_cast<size_t>(i)], a.resid[static_cast<size_t>(i + 1)], a, next, pre && i > 0);
  }
  mark(m.timer, "final norm, LM head and loss (forward and backward)");
  if (!pre) rms_forward(ops, a.resid.back(), m.final_norm, a.xf, a.f_rstd, a.stat, R, d, m.cfg.norm_eps);
}

// The backward pass from the final norm's output gradient in a.dx to the embedding's gradient, in
// pieces: the final norm, each layer from the last, the embedding. piece(k, work) runs the k-th;
// grads_final, when set, runs after each.
template <class T>
void backward_pieces(Model<T>& m, Activations<T>& a, const std::function<void(size_t)>& grads_final,
                     const std::function<void(size_t, const std::function<void()>&)>& piece) {
  const auto& ops = *m.ops;
  const int64_t R = a.res_rows, d = m.cfg.d_model;
  const long L = m.cfg.n_layers;
  const auto finished = [&](const std::string& first_param) {
    if (grads_final) grads_final(static_cast<size_t>(find_param(m, first_param)));
  };
  // a.dx holds d loss / d xf; back through the final norm into the residual gradient a.dh.
  piece(0, [&] { ops.rms_bwd(a.resid.back(), m.final_norm, a.dx, a.f_rstd, a.dh, m.g_final_norm, R, d, false); });
  finished("final_norm.weight");
  for (long i = L - 1; i >= 0; --i) {
    piece(static_cast<size_t>(L - i), [&] { layer_backward(m, i, a.layers[static_cast<size_t>(i)], a); });
    finished(cat("layers.", i, ".attn_norm.weight"));
  }
  piece(static_cast<size_t>(L + 1), [&] {
    mark(m.timer, "embedding (forward and backward)");
    ops.embedding_bwd(a.dh, residual_ids(a), m.g_embed, R, d);
  });
  if (grads_final) grads_final(0);
}

// Whether the passes may run as CUDA graphs (step_graphs.h): not while the step is timed region by
// region (the timer waits for the device). The collectives of tensor and context parallelism are
// captured with the kernels (NCCL's on the stream, the emulated ones on the emulated stream).
template <class T>
bool graphs_apply(const Model<T>& m, const Activations<T>& a) {
  return a.graphs.enabled && m.ops->capture_begin && !m.timer;
}

}  // namespace

template <class T>
void forward_layers(Model<T>& m, Activations<T>& a, const int32_t* ids) {
  stage(m, a, ids, nullptr, nullptr, false);
  run_layers(m, a);
}

template <class T>
void stage_micro_batch(Model<T>& m, Activations<T>& a, const int32_t* ids, const int32_t* targets,
                       const int32_t* doc_start) {
  stage(m, a, ids, targets, doc_start, false);
}

template <class T>
LossSum staged_loss(Model<T>& m, Activations<T>& a) {
  std::vector<T> losses(static_cast<size_t>(a.head_count));
  m.ops->copy_to_host(losses.data(), a.losses, losses.size() * sizeof(T));
  double sum = 0;
  for (T l : losses) sum += static_cast<double>(l);
  // Under sequence parallelism each tp rank ran the head on its own rows.
  if (a.layout.sp > 1) m.tp.comm->allreduce_sum(&sum, 1);
  return {sum, a.target_count};
}

template <class T>
void train_staged(Model<T>& m, Activations<T>& a, T grad_scale, const std::function<void(size_t)>& grads_final) {
  const bool graphs = graphs_apply(m, a);
  const int key = a.documents_masked ? 1 : 0;
  const auto run = [&](CapturedPass& graph, const std::function<void()>& work) {
    if (graphs && !a.graphs.failed)
      run_captured(*m.ops, a.graphs, graph, key, work);
    else
      work();
  };
  run(a.graphs.forward, [&] { run_layers(m, a); });
  head_loss(m, a, true, grad_scale, static_cast<T*>(nullptr));
  if (!grads_final) {
    run(a.graphs.backward, [&] { backward_pieces(m, a, grads_final, [](size_t, const auto& work) { work(); }); });
    return;
  }
  // The gradient reductions start between the backward pass's pieces: a graph for each piece.
  auto& parts = a.graphs.backward_parts;
  parts.resize(static_cast<size_t>(m.cfg.n_layers + 2));
  backward_pieces(m, a, grads_final, [&](size_t k, const std::function<void()>& work) { run(parts[k], work); });
}

template <class T>
LossSum forward_backward(Model<T>& m, Activations<T>& a, const int32_t* ids, const int32_t* targets, T grad_scale,
                         const int32_t* doc_start, const std::function<void(size_t)>& grads_final) {
  stage_micro_batch(m, a, ids, targets, doc_start);
  train_staged(m, a, grad_scale, grads_final);
  return staged_loss(m, a);
}

template <class T>
LossSum forward_loss(Model<T>& m, Activations<T>& a, const int32_t* ids, const int32_t* targets, T* logits_out,
                     const int32_t* doc_start) {
  stage(m, a, ids, targets, doc_start, logits_out != nullptr);
  run_layers(m, a);
  head_loss(m, a, false, T(0), logits_out);
  return staged_loss(m, a);
}

#define HEADROOM_FORWARD_INSTANTIATE(T)                                                                               \
  template void forward_layers<T>(Model<T>&, Activations<T>&, const int32_t*);                                        \
  template void stage_micro_batch<T>(Model<T>&, Activations<T>&, const int32_t*, const int32_t*, const int32_t*);     \
  template void train_staged<T>(Model<T>&, Activations<T>&, T, const std::function<void(size_t)>&);                   \
  template LossSum staged_loss<T>(Model<T>&, Activations<T>&);                                                        \
  template LossSum forward_backward<T>(Model<T>&, Activations<T>&, const int32_t*, const int32_t*, T, const int32_t*, \
                                       const std::function<void(size_t)>&);                                           \
  template LossSum forward_loss<T>(Model<T>&, Activations<T>&, const int32_t*, const int32_t*, T*, const int32_t*);
HEADROOM_FORWARD_INSTANTIATE(float)
HEADROOM_FORWARD_INSTANTIATE(double)
#undef HEADROOM_FORWARD_INSTANTIATE

}  // namespace headroom::model
