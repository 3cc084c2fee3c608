#include "eval/common_words.h"

#include "eval/draws.h"
#include "eval/text.h"
#include "util/error.h"

#include <algorithm>

namespace headroom::eval {
namespace {

// "1. w 2. w ..." of `words`, common ones repeated `common` times and the others `uncommon`
// times, shuffled.
std::string numbered_list(Draws& d, const std::vector<std::string>& words, int common, int uncommon) {
  std::vector<const std::string*> list;
  for (size_t i = 0; i < words.size(); ++i)
    for (int r = 0; r < (static_cast<int>(i) < kCweCommon ? common : uncommon); ++r) list.push_back(&words[i]);
  d.shuffle(list);
  std::string out;
  for (size_t i = 0; i < list.size(); ++i) {
    if (i) out += ' ';
    out += std::to_string(i + 1) + ". " + *list[i];
  }
  return out;
}

std::string numbered_answer(const std::vector<std::string>& words) {
  std::string out;
  for (int i = 0; i < kCweCommon; ++i) {
    if (i) out += ' ';
    out += std::to_string(i + 1) + ". " + words[static_cast<size_t>(i)];
  }
  return out;
}

}  // namespace

CweFrequencies cwe_frequencies(int64_t length) { return length < 4096 ? kCweSmall : kCweLarge; }

std::vector<std::string> cwe_pool(const Resources& res) {
  std::vector<std::string> pool = res.adjectives;
  pool.insert(pool.end(), res.nouns.begin(), res.nouns.end());
  pool.insert(pool.end(), res.verbs.begin(), res.verbs.end());
  std::sort(pool.begin(), pool.end());
  pool.erase(std::unique(pool.begin(), pool.end()), pool.end());
  return pool;
}

namespace {

Builder cwe_builder_with(const std::string& task, const std::vector<std::string>& pool, const SampleKey& key,
                         const CweFrequencies& f) {
  const auto pool_size = static_cast<int64_t>(pool.size());
  if (pool_size < f.demo_words + kCweCommon + 1)
    fail(task, ": the word pool has ", pool_size, " words; it needs more than ", f.demo_words + kCweCommon);
  auto build = [task, &pool, key, f, pool_size](int64_t n) {
    Draws d = sample_draws(key.seed, task, key.length, key.index);
    // One permutation of the pool: the demonstration takes its first words, the question the
    // next n, so the words do not depend on n and never repeat between the two lists.
    const auto order = d.distinct(pool_size, pool_size);
    auto words_at = [&](int64_t from, int64_t count) {
      std::vector<std::string> w;
      for (int64_t i = from; i < from + count; ++i)
        w.push_back(pool[static_cast<size_t>(order[static_cast<size_t>(i)])]);
      return w;
    };
    const auto demo = words_at(0, f.demo_words), words = words_at(f.demo_words, n);
    const std::string example =
        fill(kCweTemplate, {{"context", numbered_list(d, demo, f.demo_common, f.demo_uncommon)}}) + kCweAnswerPrefix +
        " " + numbered_answer(demo);
    Sample s;
    s.prompt = example + "\n" + fill(kCweTemplate, {{"context", numbered_list(d, words, f.common, f.uncommon)}});
    s.answer_prefix = kCweAnswerPrefix;
    s.references.assign(words.begin(), words.begin() + kCweCommon);
    return s;
  };
  return {build, kCweCommon, pool_size - f.demo_words, nullptr};
}

}  // namespace

Builder cwe_builder(const std::string& task, const std::vector<std::string>& pool, const SampleKey& key) {
  const CweFrequencies f = cwe_frequencies(key.length);
  Builder b = cwe_builder_with(task, pool, key, f);
  if (f.common == kCweLarge.common)
    b.fallback = std::make_shared<Builder>(cwe_builder_with(task, pool, key, kCweSmall));
  return b;
}

}  // namespace headroom::eval
