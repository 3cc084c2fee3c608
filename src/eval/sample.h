// One generated evaluation sample and the task it belongs to.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace headroom::eval {

// How a prediction is compared with the references (scoring.h).
enum class Metric {
  kMatchAll,        // RULER string_match_all: mean over references of a case-insensitive substring test
  kMatchPart,       // RULER string_match_part: max over references
  kSubstringExact,  // HELMET substring exact match after SQuAD normalisation
};

const char* metric_name(Metric m);

struct Sample {
  std::string prompt;         // the task text; the model's prompt template wraps it
  std::string answer_prefix;  // put after the template, before the model's answer
  std::vector<std::string> references;
  int64_t units = 0;      // haystack units in the context (lines, words, documents, pairs)
  int64_t tokens = 0;     // prompt tokens as the model sees them: BOS, template, answer prefix
  bool fallback = false;  // built by the task's fallback builder (fit.h)
};

// What identifies a sample: the same key gives the same sample on any rank.
struct SampleKey {
  uint64_t seed = 0;
  int64_t length = 0;   // target context length in tokens: prompt + max_new fit in it
  int64_t index = 0;    // sample index within (task, length)
  int64_t max_new = 0;  // tokens to generate
};

}  // namespace headroom::eval
