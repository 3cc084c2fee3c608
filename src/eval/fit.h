// Filling a context to a target length: the number of haystack units (noise lines, essay words,
// documents, ...) is searched so that the prompt, as the model sees it, plus the tokens to
// generate fit in the target length, counted in the model's tokenizer. RULER grows the haystack
// in fixed increments; a binary search lands within one unit of the target.
#pragma once

#include "eval/prompt.h"
#include "eval/sample.h"

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

namespace headroom::eval {

// Builds the sample with n haystack units; everything but the haystack must not depend on n.
using BuildFn = std::function<Sample(int64_t n)>;

// A task's sample of one key as a function of the haystack size, and the sizes allowed. When
// even min_units does not fit, the fallback (if any) is tried instead.
struct Builder {
  BuildFn build;
  int64_t min_units = 0, max_units = 0;
  std::shared_ptr<Builder> fallback;
};

// The sample with the largest n in [min_units, max_units] whose prompt tokens + max_new ≤
// length, with Sample::units and Sample::tokens filled in. Throws a TooLong error when even
// min_units does not fit (the task does not fit in this length at all).
Sample fit_to_length(const std::string& task, const Builder& b, PromptBuilder& prompts, int64_t length,
                     int64_t max_new);

// Thrown by fit_to_length; the evaluation reports such a task × length as skipped.
struct TooLong : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace headroom::eval
