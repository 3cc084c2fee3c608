// RULER's frequent words extraction (fwe): coded words (random 6-letter strings) with Zipf
// frequencies (α = 2): the word of rank k appears ⌊n · k^-α / ζ(α)⌋ times among n words. Rank 1
// is the noise word "..." (RULER treats the top rank as noise), so ranks 2–4 are the three
// expected answers. The vocabulary has length / 50 words (RULER); the haystack unit is n.
#pragma once

#include "eval/fit.h"

namespace headroom::eval {

inline constexpr const char* kFweTemplate =
    "Read the following coded text and track the frequency of each coded word. Find the three most "
    "frequently appeared coded words. {context}\nQuestion: Do not provide any explanation. Please "
    "ignore the dots '....'. What are the three most frequently appeared words in the above coded "
    "text?";
inline constexpr const char* kFweAnswerPrefix =
    " Answer: According to the coded text above, the three most frequently appeared words are:";

// Occurrences of each rank (index 0 = rank 1) among n words over a vocabulary of v words, α = 2.
std::vector<int64_t> zipf_counts(int64_t n, int64_t v);

Builder fwe_builder(const std::string& task, const SampleKey& key);

}  // namespace headroom::eval
