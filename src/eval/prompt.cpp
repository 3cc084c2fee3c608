#include "eval/prompt.h"

namespace headroom::eval {

std::string PromptBuilder::text(std::string_view prompt, std::string_view answer_prefix) const {
  if (tmpl == data::PromptTemplate::kBase) return std::string(prompt) + std::string(answer_prefix);
  size_t i = 0;
  while (i < answer_prefix.size() && (answer_prefix[i] == ' ' || answer_prefix[i] == '\n')) ++i;
  return data::format_prompt(tmpl, prompt) + std::string(answer_prefix.substr(i));
}

std::vector<int32_t> PromptBuilder::ids(std::string_view prompt, std::string_view answer_prefix) {
  std::vector<int32_t> out = bos;
  encoder.encode(text(prompt, answer_prefix), out);
  return out;
}

}  // namespace headroom::eval
