// The decoder-only transformer of MODEL_SPEC.md on one backend: parameters and gradients in two
// flat arenas (one all-reduce, one optimizer call, one checkpoint loop each), per-layer pointers
// into them, and RoPE tables for each layer kind. T is float for training; double exists so the
// finite-difference tests can check the backward pass in fp64.
#pragma once

#include "buffer.h"
#include "config/config.h"
#include "model/params.h"
#include "model/rope_tables.h"
#include "model/shard.h"
#include "ops.h"
#include "util/region_timer.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace headroom::model {

// Pointers to one layer's tensors (weights or their gradients); null where a knob removes one.
template <class T>
struct LayerTensors {
  T *attn_norm, *wq, *wk, *wv, *wo, *q_norm, *k_norm, *mlp_norm, *w_gate, *w_up, *w_down;
};

template <class T>
struct Model {
  using Ops = kernels::BasicOps<T>;
  config::ModelConfig cfg;    // the logical model
  config::ModelConfig local;  // what this tensor-parallel rank computes (heads, d_ff)
  TpContext tp;
  CpContext cp;                  // set by the trainer; evaluation and decoding keep whole windows
  RegionTimer* timer = nullptr;  // set on the steps train.profile_steps times (util/region_timer.h)
  int64_t kv_rep = 1;            // TP ranks sharing one KV head
  const Ops* ops = nullptr;
  std::vector<ParamSpec> specs;
  std::vector<Shard> shards;     // this rank's slice of each spec
  std::vector<int64_t> offsets;  // of each local slice in the parameter layout (grads; params when master)
  int64_t n_params = 0;
  // params holds every weight in T (the master copy), or, for a model made with
  // ModelUse::master_weights = false on a table whose GEMMs read another precision, only the
  // tensors read in T: the norms and the embedding table. The GEMMs' weights then exist only in
  // stored.
  bool master = true;
  std::vector<int64_t> param_offsets;   // of each slice in params; -1 where params does not hold it
  std::vector<int64_t> stored_offsets;  // of each slice in stored, in elements; -1 where not there
  kernels::Buffer<T, Ops> params, grads;
  // The weights the GEMMs read (every 2-D weight but an untied embedding table), in the table's
  // weight precision (ops->weight_bytes per element: bf16 on the GPU), for tables whose weight
  // precision is not T; empty elsewhere (the GEMMs read params). A master model remakes it from
  // params at the start of the first forward pass after weights_changed, not rounding again in
  // every product; the other kind writes it as it loads (write_weights).
  kernels::Buffer<std::byte, Ops> stored;
  bool stored_current = false;

  // Views into the arenas.
  std::vector<LayerTensors<T>> w, g;
  T *embed = nullptr, *final_norm = nullptr, *lm_head = nullptr;  // lm_head == embed when tied
  T *g_embed = nullptr, *g_final_norm = nullptr, *g_lm_head = nullptr;
  // The weights as the GEMMs read them (ops->matmul_stored): into stored, or into params where
  // stored is empty. Null for the tensors the GEMMs do not read (norms).
  std::vector<LayerTensors<const std::byte>> sw;
  const std::byte* s_lm_head = nullptr;

  // RoPE cos/sin per layer kind ([0] full, [1] sliding) on the backend, for positions < rope_pos.
  RopeTable rope[2];
  kernels::Buffer<T, Ops> rope_cos[2], rope_sin[2];
  int64_t rope_pos = 0;
};

// What a model is made for. random_weights = false leaves the weights zero, for a caller that
// fills every one of them from a checkpoint (drawing billions of values it overwrites is most of
// the start-up of a large model); gradients = false allocates no gradient arena (the g views are
// null), for a caller that never runs a backward pass: import_hf and export_hf then hold one copy
// of the model, not two. master_weights = false (gradients = false only) keeps no T copy of the
// GEMMs' weights where the table reads them in another precision, for a caller that only loads
// weights (write_weights) and runs forward passes: evaluate on a GPU holds 2 bytes a parameter,
// not 4 + 2. No effect where the table reads T.
struct ModelUse {
  bool random_weights = true;
  bool gradients = true;
  bool master_weights = true;
};

// Elements staged on the backend at a time while write_weights rounds a weight into stored.
inline constexpr int64_t kWeightStageElems = int64_t{1} << 22;

// Allocates and initialises this rank's part of a model (weights from (cfg.seed, name, index), so
// the same whatever the layout; gradients zero).
template <class T>
Model<T> make_model(const config::ModelConfig& cfg, const kernels::BasicOps<T>& ops, TpContext tp = {},
                    ModelUse use = {});

// Sums the gradients that are partial on each TP rank (headwise QK-norm weights, KV heads shared
// by several ranks; under sequence parallelism every replicated weight) over the TP group. Call
// once after the backward passes of a step, for all parameters or for those of index in
// [first, end) (every TP rank the same ranges in the same order).
template <class T>
void sync_partial_grads(Model<T>& m, size_t first = 0, size_t end = SIZE_MAX);

// Elements [first, first + n) of this rank's slice of parameter i, from host memory: into params
// where it holds the tensor, and straight into stored where a model keeps no master copy. Call
// weights_changed after the last one.
template <class T>
void write_weights(Model<T>& m, size_t i, const T* host, int64_t first, int64_t n);
// Call after writing params (a checkpoint, an optimizer step, an import): the GEMMs' copy of the
// weights is remade before the next product. make_model's weights count as written.
template <class T>
void weights_changed(Model<T>& m) {
  m.stored_current = false;
}
// Remakes the GEMMs' weight copy when the weights changed: at the start of every forward pass.
template <class T>
void refresh_stored_weights(Model<T>& m);
// A weight the GEMMs read (a view of sw or s_lm_head), checked to be current.
template <class T>
const void* stored_weight(const Model<T>& m, const std::byte* w);
// Whether the GEMMs read a tensor: every 2-D weight but an untied input embedding (looked up, never
// multiplied).
bool read_by_gemms(const ParamSpec& spec, const config::ModelConfig& cfg);

// Index of a parameter by name, or -1.
template <class T>
int find_param(const Model<T>& m, const std::string& name);

// Makes the RoPE tables cover positions [0, n_pos).
template <class T>
void ensure_rope(Model<T>& m, int64_t n_pos);

template <class T>
void zero_grads(Model<T>& m);

inline bool is_sliding(const config::ModelConfig& c, long layer) {
  return c.layer_pattern[static_cast<size_t>(layer) % c.layer_pattern.size()] == 'S';
}

}  // namespace headroom::model
