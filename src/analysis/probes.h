// Probe prompts for the attention diagnostics: RULER's niah_single_1 as evaluate generates it (the
// niah template and answer prefix of eval/niah.h, the noise haystack line, the needle sentence
// "One of the special magic numbers for {key} is: {value}.", a word key and a 7-digit value drawn
// with eval::Draws, filled to the target length in the model's tokenizer by eval::fit_to_length),
// except that the needle goes at an explicit depth instead of evaluate's golden-ratio sweep, so the
// diagnostics can be asked at chosen depths. The needle's token span is located by decoding the
// prompt token by token.
#pragma once

#include "data/tokenizer.h"
#include "eval/prompt.h"
#include "eval/resources.h"

#include <cstdint>
#include <string>
#include <vector>

namespace headroom::analysis {

struct Probe {
  int64_t length = 0;                            // target context length (prompt + max_new ≤ length)
  double depth = 0;                              // needle line index / haystack lines, in [0, 1]
  int64_t index = 0;                             // sample index (different needles)
  std::vector<int32_t> ids;                      // BOS + prompt tokens, as the model sees them
  std::string value;                             // the needle's value = the reference answer
  int64_t value_begin = 0, value_end = 0;        // token span overlapping the value's bytes
  int64_t sentence_begin = 0, sentence_end = 0;  // token span overlapping the needle sentence
  int64_t max_new = 0;
};

// The token span [begin, end) of the tokens that overlap bytes [a, b) of the text that `ids`
// encode (ids decoded one at a time; special ids are zero bytes wide). Throws when the decoded
// tokens do not concatenate to text or the span is empty.
std::pair<int64_t, int64_t> token_span(const data::Tokenizer& tok, const std::vector<int32_t>& ids,
                                       const std::string& text, size_t a, size_t b);

// One probe. Throws eval::TooLong when even an empty haystack does not fit the length.
Probe make_probe(const data::Tokenizer& tok, eval::PromptBuilder& prompts, const eval::Resources& res, uint64_t seed,
                 int64_t length, double depth, int64_t index, int64_t max_new);

}  // namespace headroom::analysis
