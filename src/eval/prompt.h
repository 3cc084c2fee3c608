// The model's view of a sample: the checkpoint's prompt template (data/prompt_template.h) around
// the task text, then the answer prefix, tokenized with the checkpoint's tokenizer. Lengths are
// counted here, so "a 4K sample" means 4K tokens of the model being evaluated.
#pragma once

#include "data/chat_markers.h"
#include "data/prompt_template.h"
#include "data/tokenizer.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace headroom::eval {

struct PromptBuilder {
  data::Encoder encoder;
  data::PromptTemplate tmpl = data::PromptTemplate::kBase;
  std::vector<int32_t> bos;  // the tokenizer's BOS, or nothing (a Hugging Face model without one)

  data::ChatMarkers chat;  // kChat: the tokenizer's role markers

  // kChat with a tokenizer that has no role markers Headroom knows throws naming the tokenizer.
  PromptBuilder(const data::Tokenizer& tok, data::PromptTemplate t);

  // The text before the model's answer. Base: prompt + answer_prefix. Instruction: the sft
  // template around the prompt, chat: the model's user turn and the start of its answer, then the
  // answer prefix without its leading whitespace (RULER's prefixes start with a space meant to
  // follow the question on the same line).
  std::string text(std::string_view prompt, std::string_view answer_prefix) const;

  // BOS (when the tokenizer has one) followed by the tokens of text().
  std::vector<int32_t> ids(std::string_view prompt, std::string_view answer_prefix);

  int64_t count(std::string_view prompt, std::string_view answer_prefix) {
    return static_cast<int64_t>(ids(prompt, answer_prefix).size());
  }
};

}  // namespace headroom::eval
