#include "eval/checkpoint_facts.h"

#include "data/hf_tokenizer_files.h"

#include "config/ini_text.h"
#include "util/error.h"
#include "util/random.h"
#include "util/text.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <sstream>

namespace headroom::eval {

data::Tokenizer checkpoint_tokenizer(const io::CheckpointInfo& info, long model_vocab) {
  if (info.tokenizer_id.empty())
    fail("checkpoint ", info.path,
         " has no tokenizer (the /config tokenizer_id attribute is empty); "
         "evaluate needs the tokenizer the model was trained with to build and count prompts");
  data::Tokenizer tok{info.merges, nullptr};
  try {
    if (!info.tokenizer_hf.empty())  // a Hugging Face tokenizer (its record; no merges)
      tok = data::tokenizer_from_record(info.tokenizer_hf, "checkpoint " + info.path + ": /tokenizer/hf");
    data::validate(tok);
  } catch (const std::exception& e) {
    fail("checkpoint ", info.path, ": its tokenizer (/tokenizer/", info.tokenizer_hf.empty() ? "merges" : "hf",
         ") is invalid: ", e.what());
  }
  const char* stored = info.tokenizer_hf.empty() ? "/tokenizer/merges" : "/tokenizer/hf";
  if (data::tokenizer_id(tok) != info.tokenizer_id)
    fail("checkpoint ", info.path, " records tokenizer '", info.tokenizer_id, "' but its ", stored, " ", "make '",
         data::tokenizer_id(tok), "'",
         info.merges.empty() && info.tokenizer_hf.empty() ? " (the merges are missing)" : "");
  if (data::vocab_size(tok) > model_vocab)
    fail("checkpoint ", info.path, ": tokenizer '", info.tokenizer_id, "' has ", data::vocab_size(tok),
         " ids but model.vocab_size = ", model_vocab);
  return tok;
}

data::PromptTemplate checkpoint_template(const io::CheckpointInfo& info) {
  if (info.stage == "sft") return data::PromptTemplate::kInstruction;
  if (!info.lineage.empty()) {
    nlohmann::json lineage;
    try {
      lineage = nlohmann::json::parse(info.lineage);
    } catch (const std::exception& e) {
      fail("checkpoint ", info.path, ": the lineage attribute is not JSON (", e.what(), ")");
    }
    for (const auto& stage : lineage)
      if (stage.is_object() && stage.value("stage", "") == "sft") return data::PromptTemplate::kInstruction;
  }
  return data::PromptTemplate::kBase;
}

int64_t trained_length(const io::CheckpointInfo& info) {
  int64_t best = 0;
  auto consider = [&](const std::string& ini) {
    if (const auto v = config::ini_value(ini, "train", "seq_len")) best = std::max<int64_t>(best, std::stoll(*v));
  };
  consider(info.config_ini);
  if (!info.lineage.empty())
    for (const auto& stage : nlohmann::json::parse(info.lineage))
      if (stage.is_object() && stage.contains("config") && stage["config"].is_string()) consider(stage["config"]);
  if (best <= 0) fail("checkpoint ", info.path, " records no train.seq_len in its configuration or lineage");
  return best;
}

int64_t addressable_length(const io::CheckpointInfo& info, const config::ModelConfig& model) {
  int64_t len = trained_length(info);
  if (model.rope_scaling == config::RopeScaling::kYarn)
    len = std::max(len,
                   static_cast<int64_t>(std::floor(static_cast<double>(model.yarn_original_len) * model.yarn_factor)));
  if (model.rope_scaling == config::RopeScaling::kLlama3)
    len = std::max(
        len, static_cast<int64_t>(std::floor(static_cast<double>(model.llama3_original_len) * model.llama3_factor)));
  return len;
}

std::string config_id(const std::string& model_and_train_ini) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "cfg-%016llx", static_cast<unsigned long long>(fnv1a64(model_and_train_ini)));
  return buf;
}

}  // namespace headroom::eval
