// RULER's common words extraction (cwe): a numbered list of words in which 10 common words appear
// more often than the rest; the 10 common words are expected. Below 4K tokens the common words
// appear 6 times and the others once, after one demonstration of 20 words at 3× vs 1×; from 4K,
// 30× vs 3× after a demonstration of 40 words at 10× vs 3× (RULER's settings). RULER's 4K
// threshold assumes ~4 characters per token: where the large setting cannot fit at all (a
// byte-level tokenizer at 4K), the small one is used (Sample::fallback). The haystack unit is one
// distinct word.
#pragma once

#include "eval/fit.h"
#include "eval/resources.h"

namespace headroom::eval {

inline constexpr const char* kCweTemplate =
    "Below is a numbered list of words. In these words, some appear more often than others. "
    "Memorize the ones that appear most often.\n{context}\nQuestion: What are the 10 most common "
    "words in the above list?";
inline constexpr const char* kCweAnswerPrefix = " Answer: The top 10 words that appear most often in the list are:";
inline constexpr int kCweCommon = 10;

struct CweFrequencies {
  int demo_words, demo_common, demo_uncommon;  // demonstration: distinct words and repeats
  int common, uncommon;                        // the question's list
};
inline constexpr CweFrequencies kCweSmall{20, 3, 1, 6, 1}, kCweLarge{40, 10, 3, 30, 3};
CweFrequencies cwe_frequencies(int64_t length);  // RULER's choice by length

// The word pool: adjectives, nouns and verbs, deduplicated and sorted.
std::vector<std::string> cwe_pool(const Resources& res);

// `pool` must outlive the builder.
Builder cwe_builder(const std::string& task, const std::vector<std::string>& pool, const SampleKey& key);

}  // namespace headroom::eval
