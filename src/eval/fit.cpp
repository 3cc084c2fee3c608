#include "eval/fit.h"

#include "util/error.h"

namespace headroom::eval {

Sample fit_to_length(const std::string& task, const Builder& b, PromptBuilder& prompts, int64_t length,
                     int64_t max_new) {
  const BuildFn& build = b.build;
  const int64_t min_units = b.min_units, max_units = b.max_units;
  const int64_t budget = length - max_new;
  auto tokens_of = [&](const Sample& s) { return prompts.count(s.prompt, s.answer_prefix); };
  Sample best = build(min_units);
  int64_t best_tokens = tokens_of(best);
  if (best_tokens > budget && b.fallback) {
    try {
      Sample s = fit_to_length(task, *b.fallback, prompts, length, max_new);
      s.fallback = true;
      return s;
    } catch (const TooLong&) {
      // Report the primary builder's shortfall below.
    }
  }
  if (best_tokens > budget)
    throw TooLong(cat(task, ": the prompt takes ", best_tokens, " tokens with the smallest haystack (", min_units,
                      " units), but length ", length, " leaves ", budget, " after the ", max_new,
                      " tokens to generate; not scored (a prompt without its haystack "
                      "is no long-context sample)"));
  // Invariant: lo fits; hi does not fit, or hi = max_units + 1.
  int64_t lo = min_units, hi = max_units + 1;
  // Exponential probing first: the answer is usually far below max_units.
  for (int64_t step = 1; lo + step <= max_units; step *= 2) {
    Sample s = build(lo + step);
    const int64_t t = tokens_of(s);
    if (t > budget) {
      hi = lo + step;
      break;
    }
    lo += step;
    best = std::move(s);
    best_tokens = t;
  }
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    Sample s = build(mid);
    const int64_t t = tokens_of(s);
    if (t <= budget) {
      lo = mid;
      best = std::move(s);
      best_tokens = t;
    } else {
      hi = mid;
    }
  }
  best.units = lo;
  best.tokens = best_tokens;
  return best;
}

}  // namespace headroom::eval
