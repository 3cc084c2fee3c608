// The prompt template shared by `sft` (which trains on it) and `evaluate` (which asks in it).
// Models fine-tuned by sft see
//
//   BOS "### Instruction:\n" <prompt> "\n\n### Response:\n" <response> EOS
//
// with the loss on <response> and EOS only. A base (pretrain/extend) checkpoint is asked with the
// raw prompt. evaluate picks the template from the checkpoint's stage: any lineage that contains
// an sft stage uses the instruction template.
#pragma once

#include <string>
#include <string_view>

namespace headroom::data {

inline constexpr std::string_view kInstructionHeader = "### Instruction:\n";
inline constexpr std::string_view kResponseHeader = "\n\n### Response:\n";

// kChat: a Hugging Face chat model's own role markers (data/chat_markers.h), for imported models.
enum class PromptTemplate { kBase, kInstruction, kChat };

// The text that precedes the model's answer (an answer prefix, if any, goes after it); base or
// instruction (kChat's text needs the tokenizer's markers: eval::PromptBuilder).
inline std::string format_prompt(PromptTemplate t, std::string_view prompt) {
  if (t == PromptTemplate::kBase) return std::string(prompt);
  std::string s(kInstructionHeader);
  s += prompt;
  s += kResponseHeader;
  return s;
}

inline const char* template_name(PromptTemplate t) {
  return t == PromptTemplate::kBase ? "base" : t == PromptTemplate::kInstruction ? "instruction" : "chat";
}

}  // namespace headroom::data
