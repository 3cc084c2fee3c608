#include "data/chat_markers.h"

#include "data/hf_tokenizer.h"

#include <initializer_list>

namespace headroom::data {

std::optional<ChatMarkers> chat_markers(const Tokenizer& tok) {
  if (!tok.hf) return std::nullopt;
  auto has = [&](std::initializer_list<const char*> tokens) {
    for (const char* t : tokens)
      if (!tok.hf->added_ids.count(t)) return false;
    return true;
  };
  if (has({"<|im_start|>", "<|im_end|>"})) {
    ChatMarkers m{"chatml", "<|im_start|>user\n", "<|im_end|>\n<|im_start|>assistant\n"};
    if (has({"<think>", "</think>"})) {
      m.name = "chatml+nothink";
      m.after += "<think>\n\n</think>\n\n";
    }
    return m;
  }
  if (has({"<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"}))
    return ChatMarkers{"llama3", "<|start_header_id|>user<|end_header_id|>\n\n",
                       "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"};
  return std::nullopt;
}

}  // namespace headroom::data
