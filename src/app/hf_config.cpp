#include "app/hf_config.h"

#include "config/keys.h"
#include "config/schema.h"
#include "model/model.h"
#include "util/error.h"

#include <cmath>
#include <set>

namespace headroom::app {
using nlohmann::json;

namespace {

struct Reader {
  const json& j;
  const std::string& where;

  bool has(const std::string& k) const { return j.contains(k) && !j[k].is_null(); }

  std::string shown(const std::string& k) const { return has(k) ? j[k].dump() : "null"; }

  [[noreturn]] void refuse(const std::string& k, const std::string& why) const {
    fail(where, ": ", k, " = ", shown(k), ": ", why);
  }

  int64_t integer(const std::string& k, std::optional<int64_t> dflt = {}) const {
    if (!has(k)) {
      if (dflt) return *dflt;
      fail(where, ": ", k, " is missing");
    }
    if (!j[k].is_number_integer()) refuse(k, "not an integer");
    return j[k].get<int64_t>();
  }
  double number(const std::string& k, std::optional<double> dflt = {}) const {
    if (!has(k)) {
      if (dflt) return *dflt;
      fail(where, ": ", k, " is missing");
    }
    if (!j[k].is_number()) refuse(k, "not a number");
    return j[k].get<double>();
  }
  bool boolean(const std::string& k, bool dflt) const {
    if (!has(k)) return dflt;
    if (!j[k].is_boolean()) refuse(k, "not true or false");
    return j[k].get<bool>();
  }
  std::string text(const std::string& k, const std::string& dflt) const {
    if (!has(k)) return dflt;
    if (!j[k].is_string()) refuse(k, "not a string");
    return j[k].get<std::string>();
  }
};

std::string num(double v) { return config::format_value(v); }
std::string num(int64_t v) { return std::to_string(v); }

// rope_scaling (transformers ≤ 4.x) or rope_parameters (5.x, which also holds rope_theta).
void map_rope(const Reader& r, HfFamily family, int64_t max_pos, HfImportMapping& out) {
  const std::string key = r.has("rope_parameters") ? "rope_parameters" : "rope_scaling";
  double theta = r.number("rope_theta", 10000.0);
  std::string type = "default";
  json scaling = json::object();
  if (r.has(key)) {
    if (!r.j[key].is_object()) r.refuse(key, "not an object");
    scaling = r.j[key];
    if (scaling.contains("rope_theta")) {
      if (!scaling["rope_theta"].is_number()) fail(r.where, ": ", key, ".rope_theta is not a number");
      theta = scaling["rope_theta"].get<double>();
    }
    const std::string tkey = scaling.contains("rope_type") ? "rope_type" : "type";
    if (scaling.contains(tkey)) {
      if (!scaling[tkey].is_string()) fail(r.where, ": ", key, ".", tkey, " is not a string");
      type = scaling[tkey].get<std::string>();
    }
  }
  if (r.has("partial_rotary_factor") && r.number("partial_rotary_factor") != 1.0)
    r.refuse("partial_rotary_factor", "partial RoPE in Hugging Face's layout is not mapped");
  if (scaling.contains("partial_rotary_factor") && scaling["partial_rotary_factor"] != json(1.0) &&
      scaling["partial_rotary_factor"] != json(1))
    fail(r.where, ": ", key, ".partial_rotary_factor = ", scaling["partial_rotary_factor"].dump(),
         ": partial RoPE in Hugging Face's layout is not mapped");
  out.keys.push_back({"model.rope_base_full", num(theta)});
  out.keys.push_back({"model.rope_base_swa", num(theta)});
  auto field = [&](const char* k) { return scaling.contains(k) && !scaling[k].is_null(); };
  auto number = [&](const char* k) {
    if (!scaling[k].is_number()) fail(r.where, ": ", key, ".", k, " = ", scaling[k].dump(), " is not a number");
    return scaling[k].get<double>();
  };
  if (type == "default") {
    out.keys.push_back({"model.rope_scaling", "none"});
    return;
  }
  if (type == "yarn") {
    for (const char* k : {"attention_factor", "mscale", "mscale_all_dim"})
      if (field(k))
        fail(r.where, ": ", key, ".", k, " = ", scaling[k].dump(), ": Headroom's YaRN has the attention factor ",
             "0.1 ln(factor) + 1 only (no attention_factor, mscale or mscale_all_dim)");
    if (field("truncate") && scaling["truncate"] != json(true))
      fail(r.where, ": ", key, ".truncate = ", scaling["truncate"].dump(), ": Headroom's YaRN truncates the ",
           "correction range (truncate = true) only");
    if (!field("factor")) fail(r.where, ": ", key, ".factor is missing (rope type yarn)");
    const double factor = number("factor");
    const int64_t original = field("original_max_position_embeddings")
                                 ? static_cast<int64_t>(number("original_max_position_embeddings"))
                                 : max_pos;
    if (field("original_max_position_embeddings") &&
        std::abs(static_cast<double>(max_pos) / static_cast<double>(original) - factor) > 1e-12)
      out.notes.push_back(cat("YaRN factor ", factor, " is used as given; max_position_embeddings / ",
                              "original_max_position_embeddings = ", max_pos, " / ", original,
                              " differs (some transformers versions used that ratio instead)"));
    out.keys.push_back({"model.rope_scaling", "yarn"});
    out.keys.push_back({"model.yarn_factor", num(factor)});
    out.keys.push_back({"model.yarn_original_len", num(original)});
    out.keys.push_back({"model.yarn_beta_fast", num(field("beta_fast") ? number("beta_fast") : 32.0)});
    out.keys.push_back({"model.yarn_beta_slow", num(field("beta_slow") ? number("beta_slow") : 1.0)});
    // OLMo 3 scales only its full-attention layers (OLMo-core, vLLM, and transformers' Olmo3 as
    // released; later transformers versions apply one RoPE to every layer).
    out.keys.push_back({"model.yarn_layers", family == HfFamily::kOlmo3 ? "full" : "all"});
    if (family == HfFamily::kOlmo3)
      out.notes.push_back("YaRN on full-attention layers only (model.yarn_layers = full), as OLMo 3 was trained");
    return;
  }
  if (type == "llama3") {
    // Headroom's llama3 bands apply to every layer; OLMo 3 would scale its full layers only.
    if (family == HfFamily::kOlmo3)
      fail(r.where, ": ", key, ".rope_type = \"llama3\" in an OLMo 3 model: which layers it scales is not mapped");
    for (const char* k : {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"})
      if (!field(k)) fail(r.where, ": ", key, ".", k, " is missing (rope type llama3)");
    out.keys.push_back({"model.rope_scaling", "llama3"});
    out.keys.push_back({"model.llama3_factor", num(number("factor"))});
    out.keys.push_back({"model.llama3_low_freq_factor", num(number("low_freq_factor"))});
    out.keys.push_back({"model.llama3_high_freq_factor", num(number("high_freq_factor"))});
    out.keys.push_back(
        {"model.llama3_original_len", num(static_cast<int64_t>(number("original_max_position_embeddings")))});
    return;
  }
  fail(r.where, ": ", key, ".rope_type = \"", type, "\" is not supported (default, yarn and llama3 are)");
}

// Headroom's layer_pattern: the shortest prefix whose repetition gives every layer's kind.
std::string pattern_of(const Reader& r, int64_t n_layers) {
  std::string kinds;
  const json& t = r.j["layer_types"];
  if (!t.is_array() || static_cast<int64_t>(t.size()) != n_layers)
    r.refuse("layer_types", cat("not a list of num_hidden_layers = ", n_layers, " entries"));
  for (const auto& e : t) {
    const std::string s = e.is_string() ? e.get<std::string>() : e.dump();
    if (s == "sliding_attention")
      kinds += 'S';
    else if (s == "full_attention")
      kinds += 'F';
    else
      r.refuse("layer_types", cat("has '", s, "'; only sliding_attention and full_attention are mapped"));
  }
  for (size_t p = 1; p <= kinds.size(); ++p) {
    bool ok = true;
    for (size_t i = p; i < kinds.size() && ok; ++i) ok = kinds[i] == kinds[i % p];
    if (ok) return kinds.substr(0, p);
  }
  return kinds;
}

}  // namespace

std::string hf_architecture(HfFamily f) {
  switch (f) {
    case HfFamily::kLlama:
      return "LlamaForCausalLM";
    case HfFamily::kQwen3:
      return "Qwen3ForCausalLM";
    case HfFamily::kOlmo2:
      return "Olmo2ForCausalLM";
    case HfFamily::kOlmo3:
      return "Olmo3ForCausalLM";
  }
  return "?";
}

HfImportMapping map_hf_config(const json& j, const std::string& where) {
  if (!j.is_object()) fail(where, ": not a JSON object");
  const Reader r{j, where};
  if (!r.has("architectures") || !j["architectures"].is_array() || j["architectures"].size() != 1 ||
      !j["architectures"][0].is_string())
    r.refuse("architectures", "must list one architecture");
  const std::string arch = j["architectures"][0].get<std::string>();
  HfImportMapping out;
  if (arch == "LlamaForCausalLM")
    out.family = HfFamily::kLlama;
  else if (arch == "Qwen3ForCausalLM")
    out.family = HfFamily::kQwen3;
  else if (arch == "Olmo2ForCausalLM")
    out.family = HfFamily::kOlmo2;
  else if (arch == "Olmo3ForCausalLM")
    out.family = HfFamily::kOlmo3;
  else
    r.refuse("architectures", "not one of LlamaForCausalLM, Qwen3ForCausalLM, Olmo2ForCausalLM, Olmo3ForCausalLM");
  const HfFamily f = out.family;
  const bool olmo = f == HfFamily::kOlmo2 || f == HfFamily::kOlmo3;

  if (r.text("hidden_act", "silu") != "silu") r.refuse("hidden_act", "only silu (SwiGLU) is supported");
  for (const char* k : {"attention_bias", "mlp_bias"})
    if (r.boolean(k, false)) r.refuse(k, "biases are not part of the Headroom model");
  if (f == HfFamily::kQwen3 && r.boolean("use_sliding_window", false))
    r.refuse("use_sliding_window", "Qwen 3's sliding window (max_window_layers) is not mapped");
  out.torch_dtype = r.text("torch_dtype", r.text("dtype", ""));

  const int64_t d = r.integer("hidden_size"), heads = r.integer("num_attention_heads");
  const int64_t layers = r.integer("num_hidden_layers");
  const int64_t kv = r.integer("num_key_value_heads", heads);
  if (!r.has("head_dim") && d % heads != 0)
    r.refuse("hidden_size", cat("not a multiple of num_attention_heads = ", heads, " and no head_dim given"));
  const int64_t head_dim = r.integer("head_dim", d / heads);
  const int64_t max_pos = r.integer("max_position_embeddings");
  const double eps = r.number("rms_norm_eps", olmo ? 1e-5 : 1e-6);
  auto& k = out.keys;
  k.push_back({"model.vocab_size", num(r.integer("vocab_size"))});
  k.push_back({"model.d_model", num(d)});
  k.push_back({"model.n_layers", num(layers)});
  k.push_back({"model.d_ff", num(r.integer("intermediate_size"))});
  k.push_back({"model.n_heads", num(heads)});
  k.push_back({"model.n_kv_heads", num(kv)});
  k.push_back({"model.head_dim_qk", num(head_dim)});
  k.push_back({"model.head_dim_v", num(head_dim)});
  k.push_back({"model.qk_norm", f == HfFamily::kLlama ? "none" : f == HfFamily::kQwen3 ? "head" : "layer"});
  k.push_back({"model.norm_order", olmo ? "post" : "pre"});
  k.push_back({"model.rope_dims_full", "-1"});
  k.push_back({"model.rope_dims_swa", "-1"});
  k.push_back({"model.tie_embeddings", r.boolean("tie_word_embeddings", false) ? "true" : "false"});
  k.push_back({"model.norm_eps", num(eps)});
  if (r.has("initializer_range")) {
    const double s = r.number("initializer_range");
    if (s >= 1e-6 && s <= 1.0) k.push_back({"model.init_std", num(s)});
  }
  if (f == HfFamily::kOlmo3) {
    // transformers' Olmo3Config: three sliding layers then one full, when layer_types is absent.
    const std::string pattern = r.has("layer_types") ? pattern_of(r, layers) : "SSSF";
    k.push_back({"model.layer_pattern", pattern});
    k.push_back({"model.window", num(r.integer("sliding_window", 4096))});
  } else {
    k.push_back({"model.layer_pattern", "F"});
  }
  map_rope(r, f, max_pos, out);
  k.push_back({"train.seq_len", num(max_pos)});
  return out;
}

std::string hf_tensor_name(HfFamily f, config::NormOrder order, const std::string& name) {
  (void)f;
  static const std::vector<std::pair<std::string, std::string>> layer_map = {
      {"attn.wq", "self_attn.q_proj.weight"},
      {"attn.wk", "self_attn.k_proj.weight"},
      {"attn.wv", "self_attn.v_proj.weight"},
      {"attn.wo", "self_attn.o_proj.weight"},
      {"attn.q_norm.weight", "self_attn.q_norm.weight"},
      {"attn.k_norm.weight", "self_attn.k_norm.weight"},
      {"mlp.w_gate", "mlp.gate_proj.weight"},
      {"mlp.w_up", "mlp.up_proj.weight"},
      {"mlp.w_down", "mlp.down_proj.weight"}};
  if (name == "embed.weight") return "model.embed_tokens.weight";
  if (name == "final_norm.weight") return "model.norm.weight";
  if (name == "lm_head.weight") return "lm_head.weight";
  if (name.rfind("layers.", 0) == 0) {
    const size_t dot = name.find('.', 7);
    const std::string prefix = "model." + name.substr(0, dot + 1), rest = name.substr(dot + 1);
    const bool post = order == config::NormOrder::kPost;
    if (rest == "attn_norm.weight")
      return prefix + (post ? "post_attention_layernorm.weight" : "input_layernorm.weight");
    if (rest == "mlp_norm.weight")
      return prefix + (post ? "post_feedforward_layernorm.weight" : "post_attention_layernorm.weight");
    for (const auto& [ours, theirs] : layer_map)
      if (rest == ours) return prefix + theirs;
  }
  fail("internal: no Hugging Face name for parameter '", name, "'");
}

HfFamily hf_family_for(const config::ModelConfig& m) {
  using config::name_of;
  std::string problems;
  auto add = [&](const std::string& s) { problems += "\n  " + s; };
  const bool sliding = m.layer_pattern.find('S') != std::string::npos;
  const bool full = m.layer_pattern.find('F') != std::string::npos;
  HfFamily f = HfFamily::kLlama;
  if (m.qk_norm == config::QkNorm::kNone && m.norm_order == config::NormOrder::kPre)
    f = HfFamily::kLlama;
  else if (m.qk_norm == config::QkNorm::kHead && m.norm_order == config::NormOrder::kPre)
    f = HfFamily::kQwen3;
  else if (m.qk_norm == config::QkNorm::kLayer && m.norm_order == config::NormOrder::kPost)
    f = sliding ? HfFamily::kOlmo3 : HfFamily::kOlmo2;
  else
    add(cat("model.qk_norm = ", name_of(m.qk_norm), " with model.norm_order = ", name_of(m.norm_order),
            ": no family has it (none + pre: Llama, head + pre: Qwen 3, layer + post: OLMo 2/3)"));
  if (m.head_dim_qk != m.head_dim_v)
    add(cat("model.head_dim_qk = ", m.head_dim_qk, " differs from model.head_dim_v = ", m.head_dim_v,
            ": Hugging Face's head_dim is one width"));
  for (const auto& [key, dims, used] : {std::tuple{"model.rope_dims_full", m.rope_dims_full, full},
                                        std::tuple{"model.rope_dims_swa", m.rope_dims_swa, sliding}})
    if (used && dims >= 0 && dims != m.head_dim_qk)
      add(cat(key, " = ", dims, ": partial RoPE or NoPE is not expressible (needs -1 or head_dim_qk = ", m.head_dim_qk,
              ")"));
  if (sliding && f != HfFamily::kOlmo3)
    add(cat("model.layer_pattern = ", m.layer_pattern, ": sliding layers are expressible as OLMo 3 only ",
            "(qk_norm layer, norm_order post)"));
  if (sliding && full && m.rope_base_swa != m.rope_base_full)
    add(cat("model.rope_base_swa = ", m.rope_base_swa, " differs from model.rope_base_full = ", m.rope_base_full,
            ": OLMo 3 has one rope_theta"));
  if (sliding && m.rope_scaling == config::RopeScaling::kYarn && m.yarn_layers != config::YarnLayers::kFull)
    add(cat("model.yarn_layers = ", name_of(m.yarn_layers), " with sliding layers: OLMo 3 scales its ",
            "full-attention layers only (yarn_layers = full)"));
  if (sliding && m.rope_scaling == config::RopeScaling::kLlama3)
    add("model.rope_scaling = llama3 with sliding layers: OLMo 3 would scale its full-attention layers only");
  if (!problems.empty()) fail("the model cannot be expressed as a Hugging Face model:", problems);
  return f;
}

json hf_config_json(const config::ModelConfig& m, HfFamily f, int64_t max_pos, const std::string& torch_dtype) {
  const bool sliding = m.layer_pattern.find('S') != std::string::npos;
  json j;
  j["architectures"] = {hf_architecture(f)};
  j["model_type"] = f == HfFamily::kLlama   ? "llama"
                    : f == HfFamily::kQwen3 ? "qwen3"
                    : f == HfFamily::kOlmo2 ? "olmo2"
                                            : "olmo3";
  j["vocab_size"] = m.vocab_size;
  j["hidden_size"] = m.d_model;
  j["intermediate_size"] = m.d_ff;
  j["num_hidden_layers"] = m.n_layers;
  j["num_attention_heads"] = m.n_heads;
  j["num_key_value_heads"] = m.n_kv_heads;
  j["head_dim"] = m.head_dim_qk;
  j["hidden_act"] = "silu";
  j["max_position_embeddings"] = max_pos;
  j["rms_norm_eps"] = m.norm_eps;
  j["rope_theta"] = sliding ? m.rope_base_swa : m.rope_base_full;
  if (m.layer_pattern.find('F') != std::string::npos) j["rope_theta"] = m.rope_base_full;
  j["initializer_range"] = m.init_std;
  j["tie_word_embeddings"] = m.tie_embeddings;
  j["attention_bias"] = false;
  if (f == HfFamily::kLlama) j["mlp_bias"] = false;
  if (f == HfFamily::kQwen3) j["use_sliding_window"] = false;
  j["torch_dtype"] = torch_dtype;
  if (m.rope_scaling == config::RopeScaling::kYarn)
    j["rope_scaling"] = {{"rope_type", "yarn"},
                         {"factor", m.yarn_factor},
                         {"original_max_position_embeddings", m.yarn_original_len},
                         {"beta_fast", m.yarn_beta_fast},
                         {"beta_slow", m.yarn_beta_slow}};
  else if (m.rope_scaling == config::RopeScaling::kLlama3)
    j["rope_scaling"] = {{"rope_type", "llama3"},
                         {"factor", m.llama3_factor},
                         {"low_freq_factor", m.llama3_low_freq_factor},
                         {"high_freq_factor", m.llama3_high_freq_factor},
                         {"original_max_position_embeddings", m.llama3_original_len}};
  else
    j["rope_scaling"] = nullptr;
  if (f == HfFamily::kOlmo3) {
    json types = json::array();
    for (long i = 0; i < m.n_layers; ++i)
      types.push_back(model::is_sliding(m, i) ? "sliding_attention" : "full_attention");
    j["layer_types"] = types;
    j["sliding_window"] = m.window;
  }
  return j;
}

}  // namespace headroom::app
