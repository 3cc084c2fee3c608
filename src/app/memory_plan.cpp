#include "app/memory_plan.h"

#include "config/keys.h"
#include "model/shard.h"
#include "util/error.h"
#include "util/text.h"

#include <algorithm>
#include <cstdio>
#include <string_view>

namespace headroom::app {
namespace {

constexpr int64_t kFloat = 4, kInt32 = 4;

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

// The Carver of activations.cpp rounds every block up to 16 elements (64-byte alignment).
int64_t block(int64_t n) {
  const int64_t up = add(n, 15);
  return up == kOverflow ? kOverflow : up / 16 * 16;
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
  return std::max({mul(l.vocab_size, d), mul(l.d_ff, d), mul(l.n_heads, l.head_dim_qk, d),
                   mul(l.n_heads, l.head_dim_v, d)});
}

}  // namespace

int64_t params_per_rank(const config::ModelConfig& m, int tp) {
  const config::ModelConfig l = model::local_config(m, tp);
  const int64_t d = l.d_model, q = mul(l.n_heads, l.head_dim_qk), kv_qk = mul(l.n_kv_heads, l.head_dim_qk);
  const int64_t qk_norm = m.qk_norm == config::QkNorm::kLayer ? add(q, kv_qk) : m.qk_norm == config::QkNorm::kHead ? mul(2, l.head_dim_qk) : 0;
  int64_t layer = add(mul(2, d), qk_norm);  // attn_norm, mlp_norm (+ QK norm weights)
  layer = add(layer, mul(add(q, kv_qk), d));                               // wq, wk
  layer = add(layer, mul(add(mul(l.n_kv_heads, l.head_dim_v), mul(l.n_heads, l.head_dim_v)), d));  // wv, wo
  layer = add(layer, mul(3, l.d_ff, d));                                   // w_gate, w_up, w_down
  const int64_t embeddings = mul(m.tie_embeddings ? 1 : 2, m.vocab_size, d);
  return add(add(embeddings, d), mul(m.n_layers, layer));  // + final_norm
}

ActivationFloats activation_floats(const config::ModelConfig& c, int64_t B, int64_t T) {
  const int64_t BT = mul(B, T), d = c.d_model, F = c.d_ff;
  const int64_t Q = mul(c.n_heads, c.head_dim_qk), K = mul(c.n_kv_heads, c.head_dim_qk);
  const int64_t VD = mul(c.n_kv_heads, c.head_dim_v), A = mul(c.n_heads, c.head_dim_v);
  const bool pre = c.norm_order == config::NormOrder::kPre, qk = c.qk_norm != config::QkNorm::kNone;
  const int64_t qk_rows = c.qk_norm == config::QkNorm::kHead ? mul(BT, c.n_heads) : BT;
  const int64_t k_rows = c.qk_norm == config::QkNorm::kHead ? mul(BT, c.n_kv_heads) : BT;
  const int64_t BTd = block(mul(BT, d)), BTF = block(mul(BT, F)), BTQ = block(mul(BT, Q));
  const int64_t BTK = block(mul(BT, K)), BTV = block(mul(BT, VD)), BTA = block(mul(BT, A));
  // One layer, in carve()'s order.
  int64_t layer = 0;
  for (const int64_t n : {pre ? BTd : 0, block(BT), qk ? BTQ : 0, qk ? BTK : 0, qk ? block(qk_rows) : 0,
                          qk ? block(k_rows) : 0, BTQ, BTK, BTV, BTA, block(mul(B, c.n_heads, T)), BTd, BTd,
                          pre ? BTd : 0, block(BT), BTF, BTF, BTF, BTd})
    layer = add(layer, n);
  ActivationFloats a;
  const int64_t chunk_rows = std::clamp<int64_t>((int64_t{1} << 21) / std::max<long>(c.vocab_size, 1), 1,
                                                 std::max<int64_t>(BT, 1));
  a.logits = block(mul(chunk_rows, c.vocab_size));
  const int64_t head_rows = mul(2, block(mul(chunk_rows, d)));  // head_x, head_dx
  const int64_t heads = std::max<int64_t>(c.n_heads, 1);
  int64_t rest = 0;  // resid streams, final norm, losses, backward scratch
  for (const int64_t n : {mul(add(c.n_layers, 1), BTd), BTd, block(BT), block(BT), mul(3, BTd), mul(3, BTF),
                          mul(2, BTQ), mul(2, BTK), BTV, BTA, mul(2, block(mul(BT, heads)))})
    rest = add(rest, n);
  a.arena = add(add(add(mul(c.n_layers, layer), rest), a.logits), head_rows);
  return a;
}

MemoryPlan training_plan(const std::string& stage, const config::Config& cfg, int tp, int dp) {
  const auto& m = cfg.model;
  const auto& t = cfg.train;
  model::check_tp(m, tp);  // local_config divides by tp
  const config::ModelConfig l = model::local_config(m, tp);
  const int64_t T = t.seq_len, micro = micro_batch(t, dp), share = t.global_batch / std::max(dp, 1);
  const int64_t P = params_per_rank(m, tp);
  const int64_t moments = cfg.parallel.zero1 && dp > 1 ? ceil_div(P, dp) : P;  // ZeRO-1: a range of ⌈P / dp⌉
  const ActivationFloats act = activation_floats(l, micro, T);
  const RopeFloats rope = rope_floats(m, T);
  const std::string seq = key("train.seq_len", T), batch = batch_keys(t, dp);

  MemoryPlan p;
  p.stage = stage;
  p.device_elsewhere = t.device == config::Device::kCuda;
  p.advice = "split the model over more tensor-parallel ranks (parallel.tp) or the batch over more data-parallel "
             "ones (parallel.dp; parallel.zero1 true splits the optimizer moments), on more nodes";
  p.parts.push_back({"parameters", mul(P, kFloat), true, param_keys(m, tp)});
  p.parts.push_back({"gradients", mul(P, kFloat), true, param_keys(m, tp)});
  p.parts.push_back({"optimizer moments", mul(2, moments, kFloat), true,
                     keys(param_keys(m, tp), key("parallel.zero1", cfg.parallel.zero1 ? "true" : "false"))});
  // The arena without its logits chunk, plus the token ids and targets on the backend and the LM
  // head's compacted rows and targets.
  const int64_t acts = act.arena == kOverflow ? kOverflow : act.arena - act.logits;
  p.parts.push_back({"activations", add(mul(acts, kFloat), mul(4, micro, T, kInt32)), true,
                     keys(seq, batch, width_keys(m))});
  p.parts.push_back({"logits", mul(act.logits, kFloat), true, key("model.vocab_size", m.vocab_size)});
  p.parts.push_back({"RoPE tables", mul(rope.both, kFloat), true,
                     keys(seq, key("model.head_dim_qk", m.head_dim_qk))});
  // Host: the rank's ids and targets for a step, the per-token losses of a micro-batch and the LM
  // head's compacted rows and targets, the sampler's window and its temporaries, the RoPE tables
  // being built, one checkpoint tensor.
  int64_t host = mul(2, share, T, kInt32);
  host = add(host, mul(micro, T, kFloat));
  host = add(host, mul(2, micro, T, kInt32));
  host = add(host, mul(3, add(T, 1), kInt32));
  host = add(host, mul(rope.largest, kFloat));
  host = add(host, mul(largest_tensor(l), kFloat));
  p.parts.push_back({"host buffers", host, false, keys(seq, key("train.global_batch", t.global_batch),
                                                       key("parallel.dp", dp))});
  if (t.probe_every > 0)  // train/probe.cpp: a micro-batch's logits on the host, its ids and targets
    p.parts.push_back({"probe logits (host)", add(mul(micro, T, m.vocab_size, kFloat), mul(2, micro, T, kInt32)),
                       false, keys(key("train.probe_every", t.probe_every), seq, batch,
                                   key("model.vocab_size", m.vocab_size))});
  return p;
}

MemoryPlan evaluation_plan(const config::ModelConfig& m, bool cuda, const EvalShape& e) {
  // The cache holds the longest context (a loss window is length + 1 tokens; a generated sample's
  // prompt and answer fit in its length). RoPE tables grow geometrically: up to twice that.
  const int64_t cap = add(e.max_length, 1), chunk = std::min(e.prefill_chunk, cap);
  const int64_t P = params_per_rank(m, 1);
  config::ModelConfig one_layer = m;
  one_layer.n_layers = 1;
  const ActivationFloats act = activation_floats(one_layer, 1, chunk);
  const RopeFloats rope = rope_floats(m, mul(2, cap));
  const std::string len = key(e.length_key, e.max_length), pre = key(e.chunk_key, e.prefill_chunk);

  MemoryPlan p;
  p.stage = e.stage;
  p.device_elsewhere = cuda;
  p.advice = "run fewer ranks per node (each evaluate rank holds a whole model and one sequence's KV cache)";
  p.parts.push_back({"parameters", mul(P, kFloat), true, param_keys(m, 1)});
  p.parts.push_back({"gradients (allocated with the model)", mul(P, kFloat), true, param_keys(m, 1)});
  const int64_t kv_width = add(mul(m.n_kv_heads, m.head_dim_qk), mul(m.n_kv_heads, m.head_dim_v));  // K and V
  p.parts.push_back({"KV cache", mul(m.n_layers, cap, kv_width, kFloat), true,
                     keys(len, key("model.n_layers", m.n_layers), key("model.n_kv_heads", m.n_kv_heads),
                          key("model.head_dim_qk", m.head_dim_qk), key("model.head_dim_v", m.head_dim_v))});
  const int64_t acts = act.arena == kOverflow ? kOverflow : act.arena - act.logits;
  p.parts.push_back({"prefill activations", add(mul(acts, kFloat), mul(4, chunk, kInt32)), true,
                     keys(pre, len, width_keys(m))});
  // The LM-head chunk on the backend, and token_logprobs' [chunk, vocab] host copy.
  p.parts.push_back({"logits", add(mul(act.logits, kFloat), mul(add(chunk, 1), m.vocab_size, kFloat)), false,
                     keys(pre, len, key("model.vocab_size", m.vocab_size))});
  p.parts.push_back({"RoPE tables", mul(add(rope.both, rope.largest), kFloat), true,
                     keys(len, key("model.head_dim_qk", m.head_dim_qk))});
  // A sample's text (two candidates while fitting it to the length), its token ids, the loss
  // window and its per-token log-probabilities: an estimate of 64 bytes per context token.
  p.parts.push_back({"sample buffers (host)", mul(cap, 64), false, len});
  return p;
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

std::string exact(int64_t bytes) {
  return bytes == kOverflow ? std::string("over 9223372036854775807 bytes: overflows int64") : cat(bytes, " bytes");
}

std::string parts_text(const MemoryPlan& plan) {
  std::string out;
  for (const auto& part : plan.parts) {
    out += out.empty() ? "" : ", ";
    out += cat(part.name, " ", format_bytes(part.bytes));
    if (!in_host_memory(plan, part)) out += " (GPU)";
  }
  return out;
}

// The keys of the two largest parts that count (host parts, and any part that overflows), each
// key once.
std::string largest_keys(const MemoryPlan& plan) {
  std::vector<const MemoryPart*> order;
  for (const auto& part : plan.parts)
    if (in_host_memory(plan, part) || part.bytes == kOverflow) order.push_back(&part);
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

}  // namespace

int64_t host_bytes(const MemoryPlan& plan) {
  int64_t sum = 0;
  for (const auto& part : plan.parts)
    if (in_host_memory(plan, part)) sum = add(sum, part.bytes);
  return sum;
}

std::string plan_line(const MemoryPlan& plan) {
  return cat("memory plan per rank: ", format_bytes(host_bytes(plan)), plan.device_elsewhere ? " of host memory" : "",
             " (", parts_text(plan), ")");
}

std::string plan_refusal(const MemoryPlan& plan, int ranks_on_node, int64_t available,
                         const std::string& available_source) {
  const int64_t per_rank = host_bytes(plan), node = mul(per_rank, std::max(ranks_on_node, 1));
  std::string parts;
  for (const auto& part : plan.parts)
    parts += cat(parts.empty() ? "" : ", ", part.name, " ", format_bytes(part.bytes), " (", exact(part.bytes),
                 in_host_memory(plan, part) ? ")" : "; on the GPU, not counted here)");
  std::string out = cat("the memory plan of ", plan.stage, " does not fit",
                        overflows(plan) ? " (a size overflows 64-bit integers)" : "", ": needed ", format_bytes(per_rank),
                        " (", exact(per_rank), ") per rank: ", parts);
  if (ranks_on_node > 1)
    out += cat("; ", format_bytes(node), " (", exact(node), ") for the ", ranks_on_node, " ranks on this node");
  out += "; available ";
  out += available >= 0 ? cat(format_bytes(available), " (", available, " bytes, ", available_source, ")")
                        : std::string("unknown (no /proc/meminfo)");
  out += cat("; the largest parts are driven by ", largest_keys(plan),
             ". Lower these keys, or ", plan.advice);
  return out;
}

}  // namespace headroom::app
