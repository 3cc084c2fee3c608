// What evaluate reads off a checkpoint besides its weights: the tokenizer, the prompt template of
// its stage, how long a context it can address, and an id of its configuration.
#pragma once

#include "config/config.h"
#include "data/prompt_template.h"
#include "data/tokenizer.h"
#include "io/checkpoint.h"

#include <cstdint>
#include <optional>
#include <string>

namespace headroom::eval {

// The tokenizer stored in the checkpoint; throws naming the file when it has none, when the
// merges do not hash to the recorded tokenizer_id, or when the model's vocabulary is too small.
data::Tokenizer checkpoint_tokenizer(const io::CheckpointInfo& info, long model_vocab);

// Instruction when the checkpoint's stage or any stage of its lineage is sft, else base.
data::PromptTemplate checkpoint_template(const io::CheckpointInfo& info);

// The longest train.seq_len in the checkpoint's own configuration and every lineage stage's.
int64_t trained_length(const io::CheckpointInfo& info);

// What the model can address: the longest training length, or, with YaRN in the effective
// model configuration, yarn_original_len · yarn_factor when that is longer (llama3 scaling:
// llama3_original_len · llama3_factor).
int64_t addressable_length(const io::CheckpointInfo& info, const config::ModelConfig& model);

// "cfg-" + 16 hex digits: FNV-1a 64 of the resolved [model] and [train] INI text (overrides
// included), so runs that evaluated the same model and recipe share it.
std::string config_id(const std::string& model_and_train_ini);

}  // namespace headroom::eval
