#include "app/memory_plan.h"

#include "config/keys.h"
#include "cuda/attention_blocks.h"
#include "model/activations.h"
#include "model/model.h"
#include "model/shard.h"
#include "model/token_layout.h"
#include "ops.h"
#include "util/error.h"
#include "util/text.h"

#include <algorithm>
#include <cstdio>
#include <string_view>

namespace headroom::app {
namespace {

constexpr int64_t kFloat = 4, kInt32 = 4, kBf16 = 2;

// The LM head's logits per chunk of the table a stage runs on (BasicOps::logits_chunk).
int64_t logits_chunk(bool cuda) { return cuda ? kernels::kDeviceLogitsChunk : kernels::kHostLogitsChunk; }

// Saturating arithmetic: once a size overflows it stays kOverflow through every later sum and
// product, so one absurd key cannot wrap around into a small, plausible figure.
int64_t add(int64_t a, int64_t b) {
  int64_t r = 0;
  if (a == kOverflow || b == kOverflow || __builtin_add_overflow(a, b, &r)) return kOverflow;
  return r;
}

int64_t mul(int64_t a, int64_t b) {
  int64_t r = 0;
  if (a == kOverflow || b == kOverflow || __builtin_mul_overflow(a, b, &r)) return kOverflow;
  return r;
}

template <class... Rest>
int64_t mul(int64_t a, int64_t b, int64_t c, Rest... rest) {
  return mul(mul(a, b), c, rest...);
}

int64_t ceil_div(int64_t a, int64_t b) {
  const int64_t up = add(a, b - 1);
  return up == kOverflow ? kOverflow : up / b;
}

std::string key(std::string_view name, const auto& value) { return cat(name, "=", value); }

template <class... Rest>
std::string keys(const std::string& first, const Rest&... rest) {
  std::string out = first;
  ((out += ", " + rest), ...);
  return out;
}

// The windows one forward/backward runs on a rank, as the trainer chooses them.
int64_t micro_batch(const config::TrainConfig& t, int dp) {
  return t.micro_batch > 0 ? t.micro_batch : t.global_batch / std::max(dp, 1);
}

std::string batch_keys(const config::TrainConfig& t, int dp) {
  if (t.micro_batch > 0) return key("train.micro_batch", t.micro_batch);
  return keys(key("train.global_batch", t.global_batch), key("parallel.dp", dp));
}

std::string width_keys(const config::ModelConfig& m) {
  return keys(key("model.d_model", m.d_model), key("model.d_ff", m.d_ff), key("model.n_layers", m.n_layers),
              key("model.n_heads", m.n_heads));
}

std::string param_keys(const config::ModelConfig& m, int tp) {
  return keys(width_keys(m), key("model.vocab_size", m.vocab_size), key("parallel.tp", tp));
}

// Floats of the cos and sin tables of both layer kinds for n_pos positions (ensure_rope: a kind
// without RoPE has none), and of the larger kind alone (its host copy is built before upload).
struct RopeFloats {
  int64_t both = 0, largest = 0;
};

RopeFloats rope_floats(const config::ModelConfig& m, int64_t n_pos) {
  RopeFloats r;
  for (const bool sliding : {false, true}) {
    const int64_t per_kind = mul(n_pos, config::rope_dims(m, sliding));  // cos + sin: 2 × dims / 2
    r.both = add(r.both, per_kind);
    r.largest = std::max(r.largest, per_kind);
  }
  return r;
}

// The largest single tensor of a rank (checkpoint reads and writes stage one tensor at a time).
int64_t largest_tensor(const config::ModelConfig& l) {
  const int64_t d = l.d_model;
  return std::max(
      {mul(l.vocab_size, d), mul(l.d_ff, d), mul(l.n_heads, l.head_dim_qk, d), mul(l.n_heads, l.head_dim_v, d)});
}

// One attention call's queries and keys (per window) and windows: the queries are the last Tq of
// the Tk positions.
struct AttentionCall {
  int64_t B = 1, Tq = 0, Tk = 0;
};

// The blocked attention's workspace for one call (kernels/cuda/attention_blocks.h). Queries after
// a cached prefix or a context-parallel segment's earlier chunks go to it only with heads wider
// than cuDNN's and enough queries (blocked_after_prefix, as attention_choice.cpp decides), and then
// count with all their keys; other calls with Tq < Tk go to the flash kernels and count as the
// prefix-free call of their first Tq positions (evaluate's first prefill chunk). Its sizes are
// products of the call's own (each below 2^63 when the plan's saturating products are), so the
// shape is checked against overflow first.
int64_t blocked_attention_bytes(const config::ModelConfig& l, AttentionCall c) {
  if (!kernels::cuda::blocked_after_prefix(c.Tq, l.head_dim_qk, l.head_dim_v)) c.Tk = c.Tq;
  const int64_t block = kernels::cuda::attention_block();
  const int64_t widest = std::max(l.head_dim_qk, l.head_dim_v) + 8;
  const int64_t rows = mul(c.B, std::min(block, c.Tq), l.n_heads);
  // 16: the widest element (4 bytes) times the parts that share a product, with room for their sum.
  if (mul(rows, add(c.Tk, 8), 16) == kOverflow || mul(c.B, std::max(c.Tq, c.Tk), l.n_heads, widest, 16) == kOverflow)
    return kOverflow;
  const kernels::AttentionShape shape{c.B,           c.Tq,         c.Tk, c.Tk - c.Tq, l.n_heads, l.n_kv_heads,
                                      l.head_dim_qk, l.head_dim_v, 0};
  return kernels::cuda::blocked_workspace_bytes(shape, block, true);
}

// The CUDA backend's one scratch workspace (kernels/cuda/runtime.cu: scratch) at its largest: the
// rounded bf16 operands of a GEMM (kernels/cuda/gemm.cu: matmul_bf16) over `rows` tokens or the LM
// head's chunk, or cuDNN attention's backward pass with its bf16 copies, statistics and dQ
// accumulator (kernels/cuda/cudnn_attention.cu), or the blocked attention's backward pass with its
// bf16 copies, one block's scores and probabilities and its fp32 dK/dV accumulators
// (kernels/cuda/attention_blocks.h, at the block size in use and without a window, the widest
// score rows), grown by a quarter and 1 MiB as scratch() grows it. An upper bound: the fp32
// datapath and Headroom's own flash kernels take less.
int64_t scratch_bytes(const config::ModelConfig& l, int64_t rows, const AttentionCall& c, int64_t chunk_rows) {
  const int64_t d = l.d_model, V = l.vocab_size;
  const int64_t Q = config::q_width(l), K = config::k_width(l), VD = config::v_width(l), A = config::attn_out_width(l);
  const int64_t W = std::max({l.d_ff, Q, K, VD, A});  // the widest product beside d_model
  const int64_t gemm = mul(2, add(mul(rows, add(W, d)), mul(W, d)));
  const int64_t head = mul(2, add(mul(chunk_rows, add(V, d)), mul(V, d)));
  const int64_t nq = mul(c.B, c.Tq, Q), no = mul(c.B, c.Tq, A), stats = mul(c.B, c.Tq, l.n_heads);
  const int64_t nk = mul(c.B, c.Tk, K), nv = mul(c.B, c.Tk, VD);
  const int64_t attention = add(mul(4, add(add(nq, nk), add(nv, no))), mul(kFloat, add(mul(2, stats), nq)));
  const int64_t most = std::max({gemm, head, attention, blocked_attention_bytes(l, c)});
  return most == kOverflow ? kOverflow : add(add(most, most / 4), int64_t{1} << 20);
}

// Elements of one cached position of one layer: the KV heads' keys and values (GQA stores only those).
int64_t kv_width(const config::ModelConfig& m) {
  return add(mul(m.n_kv_heads, m.head_dim_qk), mul(m.n_kv_heads, m.head_dim_v));
}

// Cached positions summed over the layers of evaluate's cache (model::kv_rows under
// KvWindows::kWindowOnly): the whole context on full-attention layers, on sliding-window ones at most
// 2·(window − 1) + chunk, whatever the length.
int64_t kv_cache_rows(const config::ModelConfig& m, int64_t cap, int64_t chunk) {
  const int64_t ring = std::min(cap, add(mul(2, m.window - 1), chunk));
  // Sliding layers counted in closed form: layer i's kind is layer_pattern[i mod its length].
  const auto period = static_cast<int64_t>(m.layer_pattern.size());
  const int64_t whole = m.n_layers / period, rest = m.n_layers % period;
  int64_t sliding = 0;
  for (int64_t i = 0; i < period; ++i)
    if (m.layer_pattern[static_cast<size_t>(i)] == 'S') sliding = add(sliding, i < rest ? whole + 1 : whole);
  return add(mul(sliding, ring), mul(m.n_layers - sliding, cap));
}

// The GEMMs' copy of the weights (model::Model::stored) where the tables read them in bf16: on a GPU
// unless HEADROOM_CUDA_PRECISION = fp32.
void count_weight_copy(MemoryPlan& p, bool cuda, int64_t gemm_params, const std::string& weights) {
  const int bytes = cuda ? kernels::cuda_weight_bytes() : kFloat;
  if (bytes != kFloat)
    p.parts.push_back(
        {"bf16 weight copy", mul(gemm_params, bytes), true, keys(weights, std::string("HEADROOM_CUDA_PRECISION"))});
}

// One layer's norm weights on a rank (attn_norm, mlp_norm, the QK norms').
int64_t layer_norm_params(const config::ModelConfig& m, const config::ModelConfig& l) {
  const int64_t q = mul(l.n_heads, l.head_dim_qk), kv_qk = mul(l.n_kv_heads, l.head_dim_qk);
  const int64_t qk_norm = m.qk_norm == config::QkNorm::kLayer  ? add(q, kv_qk)
                          : m.qk_norm == config::QkNorm::kHead ? mul(2, l.head_dim_qk)
                                                               : 0;
  return add(mul(2, l.d_model), qk_norm);
}

}  // namespace

int64_t params_per_rank(const config::ModelConfig& m, int tp) {
  const config::ModelConfig l = model::local_config(m, tp);
  const int64_t d = l.d_model, q = mul(l.n_heads, l.head_dim_qk), kv_qk = mul(l.n_kv_heads, l.head_dim_qk);
  int64_t layer = layer_norm_params(m, l);
  layer = add(layer, mul(add(q, kv_qk), d));                                                       // wq, wk
  layer = add(layer, mul(add(mul(l.n_kv_heads, l.head_dim_v), mul(l.n_heads, l.head_dim_v)), d));  // wv, wo
  layer = add(layer, mul(3, l.d_ff, d));  // w_gate, w_up, w_down
  const int64_t embeddings = mul(m.tie_embeddings ? 1 : 2, m.vocab_size, d);
  return add(add(embeddings, d), mul(m.n_layers, layer));  // + final_norm
}

int64_t gemm_params_per_rank(const config::ModelConfig& m, int tp) {
  const config::ModelConfig l = model::local_config(m, tp);
  const int64_t all = params_per_rank(m, tp);
  const int64_t other = add(add(mul(m.n_layers, layer_norm_params(m, l)), l.d_model),
                            m.tie_embeddings ? 0 : mul(m.vocab_size, l.d_model));
  return all == kOverflow || other == kOverflow ? kOverflow : all - other;
}

MemoryPlan training_plan(const std::string& stage, const config::Config& cfg, const TrainingLayout& layout) {
  const auto& m = cfg.model;
  const auto& t = cfg.train;
  const int tp = layout.tp, replicas = layout.cp * layout.dp;
  model::check_tp(m, tp);  // local_config divides by tp
  const config::ModelConfig l = model::local_config(m, tp);
  const int64_t T = t.seq_len, micro = micro_batch(t, layout.dp), share = t.global_batch / std::max(layout.dp, 1);
  // Rank 0's tokens: every rank of the grid keeps as many (check_layout refuses uneven cuts).
  const bool sp = layout.sequence_parallel && tp > 1;
  const model::TokenLayout tokens{T, layout.cp, 0, sp ? tp : 1, 0, 0};
  model::check_layout(tokens, micro);
  const int64_t R = tokens.res_rows(micro), T_len = tokens.T_len();
  const int64_t P = params_per_rank(m, tp);
  const bool zero = cfg.parallel.zero1 && replicas > 1;
  const int64_t moments = zero ? ceil_div(P, replicas) : P;  // ZeRO-1: the largest range, ⌈P / (cp·dp)⌉
  const bool cuda = t.device == config::Device::kCuda;
  const model::ActivationFloats act =
      model::activation_floats(l, tokens, micro, t.recompute, cuda ? kernels::cuda_weight_bytes() : kFloat,
                               cuda ? kernels::cuda_kv_bytes(t.attention_kernel) : kFloat, logits_chunk(cuda));
  const RopeFloats rope = rope_floats(m, T);
  const std::string seq = key("train.seq_len", T), batch = batch_keys(t, layout.dp);
  const std::string lay = keys(key("parallel.tp", tp), key("parallel.cp", layout.cp),
                               key("parallel.sequence_parallel", sp ? "true" : "false"));

  MemoryPlan p;
  p.stage = stage;
  p.device_elsewhere = cuda;
  p.advice =
      "set train.recompute = full (or selective), split each sequence over context-parallel ranks "
      "(parallel.cp) or the model over tensor-parallel ones (parallel.tp, with parallel.sequence_parallel "
      "true), or set parallel.zero1 true to split the optimizer moments over the cp × dp ranks, on more nodes";
  p.parts.push_back({"parameters", mul(P, kFloat), true, param_keys(m, tp)});
  count_weight_copy(p, p.device_elsewhere, gemm_params_per_rank(m, tp), param_keys(m, tp));
  p.parts.push_back({"gradients", mul(P, kFloat), true, param_keys(m, tp)});
  p.parts.push_back({"optimizer moments", mul(2, moments, kFloat), true,
                     keys(param_keys(m, tp), key("parallel.zero1", cfg.parallel.zero1 ? "true" : "false"),
                          key("parallel.cp", layout.cp), key("parallel.dp", layout.dp))});
  // bf16 reduction: a bf16 copy of every bucket in flight, at most all of them (grad_reduction.h).
  if (replicas > 1 && cfg.parallel.grad_reduce_dtype == config::GradReduceDtype::kBf16)
    p.parts.push_back({"bf16 gradient reduction buffers", mul(P, kBf16), true,
                       keys(param_keys(m, tp), key("parallel.grad_reduce_dtype", "bf16"))});
  // The arena without its logits chunk, plus its int32 buffers (ids, targets, the LM head's rows
  // and targets, context parallelism's row maps).
  const int64_t acts = act.arena == kOverflow ? kOverflow : act.arena - act.logits;
  p.parts.push_back({"activations", add(mul(acts, kFloat), mul(act.index_ints, kInt32)), true,
                     keys(seq, batch, key("train.recompute", config::name_of(t.recompute)), lay, width_keys(m))});
  p.parts.push_back({"logits", mul(act.logits, kFloat), true, key("model.vocab_size", m.vocab_size)});
  p.parts.push_back({"RoPE tables", mul(rope.both, kFloat), true, keys(seq, key("model.head_dim_qk", m.head_dim_qk))});
  // cp > 1: one call per window and zig-zag segment, over the keys of the whole window at most.
  const AttentionCall call =
      layout.cp == 1 ? AttentionCall{micro, T_len, T_len} : AttentionCall{1, tokens.segment_len(), T};
  if (p.device_elsewhere)
    p.parts.push_back({"kernel scratch (upper bound)",
                       scratch_bytes(l, mul(micro, T_len), call, act.logits / std::max<long>(l.vocab_size, 1)), true,
                       keys(seq, batch, lay, width_keys(m), key("model.vocab_size", m.vocab_size))});
  // Host: the rank's whole windows of a step and its tokens of a micro-batch (ids and targets), the
  // per-token losses of a micro-batch and the LM head's rows and targets, the sampler's window and
  // its temporaries, the RoPE tables being built, one checkpoint tensor.
  int64_t host = mul(2, share, T, kInt32);
  host = add(host, mul(2, micro, T_len, kInt32));
  host = add(host, mul(R, kFloat));
  host = add(host, mul(2, R, kInt32));
  host = add(host, mul(3, add(T, 1), kInt32));
  host = add(host, mul(rope.largest, kFloat));
  host = add(host, mul(largest_tensor(l), kFloat));
  p.parts.push_back({"host buffers", host, false,
                     keys(seq, key("train.global_batch", t.global_batch), key("parallel.dp", layout.dp))});
  if (t.probe_every > 0)  // train/probe.cpp: a micro-batch's logits on the host, its ids and targets
    p.parts.push_back(
        {"probe logits (host)", add(mul(micro, T, m.vocab_size, kFloat), mul(2, micro, T, kInt32)), false,
         keys(key("train.probe_every", t.probe_every), seq, batch, key("model.vocab_size", m.vocab_size))});
  return p;
}

MemoryPlan evaluation_plan(const config::ModelConfig& m, bool cuda, const EvalShape& e) {
  // The cache holds the longest context (a loss window is length + 1 tokens; a generated sample's
  // prompt and answer fit in its length). RoPE tables grow geometrically: up to twice that.
  const int64_t cap = add(e.max_length, 1), chunk = std::min(e.prefill_chunk, cap);
  model::check_tp(m, e.tp, "eval.tp");
  const config::ModelConfig l = model::local_config(m, e.tp);  // the heads and columns a rank holds
  const int64_t P = params_per_rank(m, e.tp);
  config::ModelConfig one_layer = l;
  one_layer.n_layers = 1;
  const model::ActivationFloats act =
      model::activation_floats(one_layer, model::TokenLayout{chunk}, 1, config::Recompute::kNone,
                               cuda ? kernels::cuda_weight_bytes() : kFloat, e.kv_bytes, logits_chunk(cuda));
  const RopeFloats rope = rope_floats(m, mul(2, cap));
  const std::string len = key(e.length_key, e.max_length), pre = key(e.chunk_key, e.prefill_chunk);

  MemoryPlan p;
  p.stage = e.stage;
  p.device_elsewhere = cuda;
  p.advice =
      "split the model and its KV cache over more ranks (eval.tp), or run fewer ranks per node (each group of "
      "eval.tp ranks holds one model and one sequence's KV cache)";
  const std::string weights = keys(width_keys(m), key("model.vocab_size", m.vocab_size), key("eval.tp", e.tp));
  if (const int wbytes = cuda ? kernels::cuda_weight_bytes() : kFloat; wbytes == kFloat) {
    p.parts.push_back({"parameters", mul(P, kFloat), true, weights});
  } else {
    // model::ModelUse::master_weights = false: fp32 only what is read in fp32 (the norms, the
    // embedding table looked up), the GEMMs' weights in bf16 alone, each rounded on the GPU
    // through a staging buffer as it loads.
    const int64_t G = gemm_params_per_rank(m, e.tp);
    const int64_t held =
        add(P == kOverflow || G == kOverflow ? kOverflow : P - G, m.tie_embeddings ? mul(m.vocab_size, m.d_model) : 0);
    p.parts.push_back({"parameters (fp32: norms, embedding table)", mul(held, kFloat), true, weights});
    p.parts.push_back({"bf16 weights", mul(G, wbytes), true, keys(weights, std::string("HEADROOM_CUDA_PRECISION"))});
    p.parts.push_back(
        {"weight loading buffer", mul(std::min(largest_tensor(l), model::kWeightStageElems), kFloat), true, weights});
  }
  p.parts.push_back(
      {e.kv_bytes == kFloat ? "KV cache" : "KV cache (bf16)",
       mul(kv_cache_rows(l, cap, chunk), kv_width(l), e.kv_bytes), true,
       keys(len, pre, key("model.n_layers", m.n_layers), key("model.layer_pattern", m.layer_pattern),
            key("model.window", m.window), key("model.n_kv_heads", m.n_kv_heads),
            key("model.head_dim_qk", m.head_dim_qk), key("model.head_dim_v", m.head_dim_v), key("eval.tp", e.tp))});
  const int64_t acts = act.arena == kOverflow ? kOverflow : act.arena - act.logits;
  p.parts.push_back({"prefill activations", add(mul(acts, kFloat), mul(act.index_ints, kInt32)), true,
                     keys(pre, len, width_keys(m))});
  // The LM-head chunk on the backend, and token_logprobs' [chunk, vocab] host copy.
  p.parts.push_back({"logits", add(mul(act.logits, kFloat), mul(add(chunk, 1), m.vocab_size, kFloat)), false,
                     keys(pre, len, key("model.vocab_size", m.vocab_size))});
  p.parts.push_back({"RoPE tables", mul(add(rope.both, rope.largest), kFloat), true,
                     keys(len, key("model.head_dim_qk", m.head_dim_qk))});
  if (cuda)  // a prefill chunk's queries against the cached keys of the longest context
    p.parts.push_back({"kernel scratch (upper bound)",
                       scratch_bytes(l, chunk, {1, chunk, cap}, act.logits / std::max<long>(m.vocab_size, 1)), true,
                       keys(pre, len, width_keys(m), key("model.vocab_size", m.vocab_size))});
  // A sample's text (two candidates while fitting it to the length), its token ids, the loss
  // window and its per-token log-probabilities: an estimate of 64 bytes per context token.
  p.parts.push_back({"sample buffers (host)", mul(cap, 64), false, len});
  return p;
}

void count_program(MemoryPlan& plan, int64_t resident) {
  if (resident >= 0)
    plan.parts.push_back({"program (code, libraries, runtimes: resident when planned)", resident, false,
                          "no key: the binary and its libraries"});
}

bool overflows(const MemoryPlan& plan) {
  return std::any_of(plan.parts.begin(), plan.parts.end(), [](const MemoryPart& p) { return p.bytes == kOverflow; });
}

std::string format_bytes(int64_t bytes) {
  if (bytes == kOverflow) return "more than 8 EiB";
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  auto v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 6) v /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

namespace {

bool in_host_memory(const MemoryPlan& plan, const MemoryPart& part) { return !(plan.device_elsewhere && part.device); }
bool on_gpu(const MemoryPlan& plan, const MemoryPart& part) { return !in_host_memory(plan, part); }

std::string exact(int64_t bytes) {
  return bytes == kOverflow ? std::string("over 9223372036854775807 bytes: overflows int64") : cat(bytes, " bytes");
}

std::string parts_text(const MemoryPlan& plan) {
  std::string out;
  for (const auto& part : plan.parts) {
    out += out.empty() ? "" : ", ";
    out += cat(part.name, " ", format_bytes(part.bytes));
    if (on_gpu(plan, part)) out += " (GPU)";
  }
  return out;
}

// The keys of the two largest parts of one memory (`gpu`: the GPU's, else the host's; and any part
// that overflows), each key once.
std::string largest_keys(const MemoryPlan& plan, bool gpu) {
  std::vector<const MemoryPart*> order;
  for (const auto& part : plan.parts)
    if (on_gpu(plan, part) == gpu || part.bytes == kOverflow) order.push_back(&part);
  std::stable_sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->bytes > b->bytes; });
  std::vector<std::string> seen;
  std::string out;
  for (size_t i = 0; i < std::min<size_t>(2, order.size()); ++i) {
    out += cat(i ? "; " : "", order[i]->name, ": ");
    std::string these;
    for (const auto& k : split_list(order[i]->keys))
      if (std::find(seen.begin(), seen.end(), k) == seen.end()) {
        these += (these.empty() ? "" : ", ") + k;
        seen.push_back(k);
      }
    out += these.empty() ? "the keys above" : these;
  }
  return out;
}

// Every part with its exact bytes; `gpu` says which memory's parts count.
std::string counted_parts(const MemoryPlan& plan, bool gpu) {
  std::string out;
  for (const auto& part : plan.parts) {
    const bool counted = on_gpu(plan, part) == gpu;
    const char* elsewhere = gpu ? "; in host memory, not counted here)" : "; on the GPU, not counted here)";
    out += cat(out.empty() ? "" : ", ", part.name, " ", format_bytes(part.bytes), " (", exact(part.bytes),
               counted ? ")" : elsewhere);
  }
  return out;
}

}  // namespace

int64_t host_bytes(const MemoryPlan& plan) {
  int64_t sum = 0;
  for (const auto& part : plan.parts)
    if (in_host_memory(plan, part)) sum = add(sum, part.bytes);
  return sum;
}

int64_t device_bytes(const MemoryPlan& plan) {
  int64_t sum = 0;
  for (const auto& part : plan.parts)
    if (on_gpu(plan, part)) sum = add(sum, part.bytes);
  return sum;
}

bool fits_device(const MemoryPlan& plan, int64_t gpu_memory) {
  return !plan.device_elsewhere || gpu_memory < 0 || add(device_bytes(plan), kDeviceReserve) <= gpu_memory;
}

std::string plan_line(const MemoryPlan& plan) {
  return cat("memory plan per rank: ", format_bytes(host_bytes(plan)), plan.device_elsewhere ? " of host memory" : "",
             plan.device_elsewhere ? cat(", ", format_bytes(device_bytes(plan)), " + ", format_bytes(kDeviceReserve),
                                         " reserved of GPU memory")
                                   : "",
             " (", parts_text(plan), ")");
}

std::string plan_table(const MemoryPlan& plan) {
  std::string out = cat("memory plan of ", plan.stage, " per rank:\n");
  for (const auto& part : plan.parts) {
    char figure[24];
    std::snprintf(figure, sizeof figure, "%12s", format_bytes(part.bytes).c_str());
    out += cat("  ", figure, "  ", on_gpu(plan, part) ? "GPU " : "host", "  ", part.name, "  [", part.keys, "]\n");
  }
  out += cat("  host total ", format_bytes(host_bytes(plan)), " (", exact(host_bytes(plan)), ")\n");
  if (plan.device_elsewhere)
    out += cat("  GPU total ", format_bytes(device_bytes(plan)), " (", exact(device_bytes(plan)), ") + ",
               kDeviceReserveText, " = ", format_bytes(add(device_bytes(plan), kDeviceReserve)), " (",
               exact(add(device_bytes(plan), kDeviceReserve)), ")\n");
  return out;
}

std::string plan_refusal(const MemoryPlan& plan, int ranks_on_node, int64_t available,
                         const std::string& available_source) {
  const int64_t per_rank = host_bytes(plan), node = mul(per_rank, std::max(ranks_on_node, 1));
  std::string out = cat("the memory plan of ", plan.stage, " does not fit",
                        overflows(plan) ? " (a size overflows 64-bit integers)" : "", ": needed ",
                        format_bytes(per_rank), " (", exact(per_rank), ") per rank: ", counted_parts(plan, false));
  if (ranks_on_node > 1)
    out += cat("; ", format_bytes(node), " (", exact(node), ") for the ", ranks_on_node, " ranks on this node");
  out += "; available ";
  out += available >= 0 ? cat(format_bytes(available), " (", available, " bytes, ", available_source, ")")
                        : std::string("unknown (no /proc/meminfo)");
  out += cat("; the largest parts are driven by ", largest_keys(plan, false), ". Lower these keys, or ", plan.advice);
  return out;
}

std::string device_refusal(const MemoryPlan& plan, int64_t gpu_memory, const std::string& gpu_source) {
  const int64_t parts = device_bytes(plan), need = add(parts, kDeviceReserve);
  std::string out =
      cat("the memory plan of ", plan.stage, " does not fit in GPU memory",
          overflows(plan) ? " (a size overflows 64-bit integers)" : "", ": needed ", format_bytes(need), " (",
          exact(need), ") per GPU: ", counted_parts(plan, true), ", and ", kDeviceReserveText, "; GPU memory ");
  out += gpu_memory >= 0 ? cat(format_bytes(gpu_memory), " (", gpu_memory, " bytes, ", gpu_source, ")")
                         : cat("unknown (", gpu_source, ")");
  out += cat("; the largest parts are driven by ", largest_keys(plan, true), ". Lower these keys, or ", plan.advice);
  return out;
}

}  // namespace headroom::app
