// The mapping between Hugging Face transformers models and Headroom's model (MODEL_SPEC.md), both
// ways, as pure functions: config.json ↔ configuration keys, and tensor names. Four families:
//
//   LlamaForCausalLM   norm_order pre,  qk_norm none
//   Qwen3ForCausalLM   norm_order pre,  qk_norm head  (q_norm/k_norm [head_dim], shared by heads)
//   Olmo2ForCausalLM   norm_order post, qk_norm layer (q_norm [heads·head_dim], k_norm [kv·head_dim])
//   Olmo3ForCausalLM   Olmo 2 plus layer_types (sliding_attention/full_attention) → layer_pattern,
//                      sliding_window → window; RoPE scaling on full-attention layers only
//
// Names: model.embed_tokens.weight ↔ embed.weight; model.layers.i.self_attn.{q,k,v,o}_proj.weight
// ↔ layers.i.attn.{wq,wk,wv,wo}; mlp.{gate,up,down}_proj.weight ↔ mlp.{w_gate,w_up,w_down};
// self_attn.{q,k}_norm.weight ↔ attn.{q,k}_norm.weight; model.norm.weight ↔ final_norm.weight;
// lm_head.weight ↔ lm_head.weight (absent when tied). Norms: pre-norm input_layernorm ↔ attn_norm
// and post_attention_layernorm ↔ mlp_norm; post-norm (OLMo 2/3) post_attention_layernorm ↔
// attn_norm and post_feedforward_layernorm ↔ mlp_norm. transformers' rotate-half RoPE is
// MODEL_SPEC's, so q/k rows copy unchanged. Sliding windows agree: transformers masks key j for
// query i unless j > i − sliding_window, i.e. a query sees `sliding_window` keys, itself included.
//
// RoPE: rope_theta → rope_base_full = rope_base_swa; rope_scaling (or transformers 5's
// rope_parameters) of type default, yarn (factor, original_max_position_embeddings, beta_fast/slow,
// defaults 32/1; the factor as given) or llama3 (its four fields → model.llama3_*).
// Everything else is refused before any work, naming the config.json key and its value.
#pragma once

#include "config/config.h"

#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

namespace headroom::app {

enum class HfFamily { kLlama, kQwen3, kOlmo2, kOlmo3 };

// "LlamaForCausalLM", ...
std::string hf_architecture(HfFamily f);

struct HfImportMapping {
  HfFamily family;
  // Headroom configuration keys ("model.d_model", "train.seq_len") and their values as INI text.
  std::vector<std::pair<std::string, std::string>> keys;
  std::vector<std::string> notes;  // choices worth a line in the log
  std::string torch_dtype;         // as config.json says ("bfloat16"), "" when absent
};

// config.json (already parsed) → Headroom keys. `where` names the file in errors.
HfImportMapping map_hf_config(const nlohmann::json& config_json, const std::string& where);

// The Hugging Face tensor name of a Headroom parameter name in a family.
std::string hf_tensor_name(HfFamily f, config::NormOrder order, const std::string& headroom_name);

// The family a Headroom model is expressed as (qk_norm none + pre → Llama, head + pre → Qwen3,
// layer + post → Olmo 2, or Olmo 3 with sliding layers); refuses, naming the keys and values,
// whatever a family's config.json cannot say.
HfFamily hf_family_for(const config::ModelConfig& m);

// config.json for the model in family f; max_position_embeddings = the trained length.
// torch_dtype: "float32" or "bfloat16".
nlohmann::json hf_config_json(const config::ModelConfig& m, HfFamily f, int64_t max_position_embeddings,
                              const std::string& torch_dtype);

}  // namespace headroom::app
