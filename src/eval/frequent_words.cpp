#include "eval/frequent_words.h"

#include "eval/draws.h"
#include "eval/text.h"

#include <algorithm>
#include <set>

namespace headroom::eval {

std::vector<int64_t> zipf_counts(int64_t n, int64_t v) {
  constexpr double kZeta2 = 1.6449340668482264;  // ζ(2) = π²/6
  std::vector<int64_t> c;
  for (int64_t k = 1; k <= v; ++k)
    c.push_back(
        static_cast<int64_t>(static_cast<double>(n) / (static_cast<double>(k) * static_cast<double>(k)) / kZeta2));
  return c;
}

Builder fwe_builder(const std::string& task, const SampleKey& key) {
  const int64_t v = std::max<int64_t>(key.length / 50, 5);
  auto build = [task, key, v](int64_t n) {
    Draws d = sample_draws(key.seed, task, key.length, key.index);
    std::set<std::string> seen;
    std::vector<std::string> vocab;
    while (static_cast<int64_t>(vocab.size()) < v) {
      std::string w = d.letters(6, "abcdefghijklmnopqrstuvwxyz");
      if (seen.insert(w).second) vocab.push_back(std::move(w));
    }
    vocab[0] = "...";
    const auto counts = zipf_counts(n, v);
    std::vector<const std::string*> words;
    for (size_t k = 0; k < vocab.size(); ++k)
      for (int64_t r = 0; r < counts[k]; ++r) words.push_back(&vocab[k]);
    d.shuffle(words);
    std::string context;
    for (size_t i = 0; i < words.size(); ++i) {
      if (i) context += ' ';
      context += *words[i];
    }
    Sample s;
    s.prompt = fill(kFweTemplate, {{"context", context}});
    s.answer_prefix = kFweAnswerPrefix;
    s.references = {vocab[1], vocab[2], vocab[3]};
    return s;
  };
  // At least one occurrence of rank 4: n ≥ 16 ζ(2) ≈ 26.3.
  return {build, 27, int64_t{1} << 26, nullptr};
}

}  // namespace headroom::eval
