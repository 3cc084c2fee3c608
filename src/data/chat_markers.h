// The role markers of a Hugging Face chat model, for evaluate's `eval.template = chat`: the text
// around one user turn up to where the assistant's answer begins, as the model's own
// tokenizer_config.json chat template renders a single user message with add_generation_prompt.
// Recognised by the special tokens the tokenizer carries (a Jinja template is not run):
//   ChatML (Qwen 2/3): "<|im_start|>user\n" P "<|im_end|>\n<|im_start|>assistant\n", and when the
//     tokenizer has <think>/</think> (Qwen 3) the empty thinking block "<think>\n\n</think>\n\n"
//     that enable_thinking=False renders, so the answer starts at once;
//   Llama 3: "<|start_header_id|>user<|end_header_id|>\n\n" P
//     "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n" (no default system message).
// BOS, where the tokenizer has one, is the prompt builder's as for every template.
#pragma once

#include "data/tokenizer.h"

#include <optional>
#include <string>

namespace headroom::data {

struct ChatMarkers {
  std::string name;    // "chatml", "chatml+nothink", "llama3"
  std::string before;  // ahead of the user's text
  std::string after;   // between the user's text and the answer
};

// The markers of an HF tokenizer that has one of the token sets above; nullopt otherwise (native
// tokenizers included).
std::optional<ChatMarkers> chat_markers(const Tokenizer& tok);

}  // namespace headroom::data
