// Shared by the evaluation tests: where the source tree is, the word lists and essay sample, a
// small BPE tokenizer.
#pragma once

#include "data/bpe_train.h"
#include "eval/resources.h"

#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace headroom::eval::testing {

inline std::filesystem::path source_dir() {
  if (const char* s = std::getenv("HEADROOM_SOURCE_DIR")) return s;
  return HEADROOM_TEST_SOURCE_DIR;  // set by eval.cmake
}

// inputs/eval word lists and the committed essay sample.
inline const Resources& test_resources() {
  static const Resources r =
      load_resources(source_dir() / "inputs/eval", source_dir() / "validation/data/sample_corpus/essay/sample.jsonl");
  return r;
}

// A BPE tokenizer of 600 ids trained on the essay sample, so lengths counted in it differ from
// byte counts.
inline const data::Tokenizer& test_bpe() {
  static const data::Tokenizer tok = [] {
    std::string text;
    for (const auto& w : test_resources().essay.words) text += w + " ";
    std::vector<std::string_view> docs{text};
    return data::train_bpe(docs, 600);
  }();
  return tok;
}

}  // namespace headroom::eval::testing
