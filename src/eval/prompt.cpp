#include "eval/prompt.h"

#include "util/error.h"

namespace headroom::eval {

PromptBuilder::PromptBuilder(const data::Tokenizer& tok, data::PromptTemplate t)
    : encoder(tok), tmpl(t), bos(data::bos_prefix(tok)) {
  if (t != data::PromptTemplate::kChat) return;
  const auto m = data::chat_markers(tok);
  if (!m)
    fail("eval.template = chat: tokenizer '", data::tokenizer_id(tok), "' has no chat role markers Headroom knows ",
         "(ChatML's <|im_start|>/<|im_end|>, Llama 3's <|start_header_id|>/<|end_header_id|>/<|eot_id|>); ",
         "use base or instruction");
  chat = *m;
}

std::string PromptBuilder::text(std::string_view prompt, std::string_view answer_prefix) const {
  if (tmpl == data::PromptTemplate::kBase) return std::string(prompt) + std::string(answer_prefix);
  size_t i = 0;
  while (i < answer_prefix.size() && (answer_prefix[i] == ' ' || answer_prefix[i] == '\n')) ++i;
  const std::string head = tmpl == data::PromptTemplate::kChat ? chat.before + std::string(prompt) + chat.after
                                                               : data::format_prompt(tmpl, prompt);
  return head + std::string(answer_prefix.substr(i));
}

std::vector<int32_t> PromptBuilder::ids(std::string_view prompt, std::string_view answer_prefix) {
  std::vector<int32_t> out = bos;
  encoder.encode(text(prompt, answer_prefix), out);
  return out;
}

}  // namespace headroom::eval
