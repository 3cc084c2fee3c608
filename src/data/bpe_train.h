// Byte-level BPE training.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string_view>

#include "data/tokenizer.h"

namespace headroom::data {

// Trains a BPE tokenizer with vocab_size ids in total (256 bytes + 3 specials + vocab_size - 259
// merges) on docs.
//
// Each document is pre-split into chunks by the rule in tokenizer.h (so merges never cross a
// document or chunk boundary) and identical chunks are counted once with their frequency. Then,
// repeatedly, the most frequent adjacent pair over all chunks (weighted by chunk frequency) becomes
// the next merge and every occurrence of it is replaced, left to right without overlap. Ties are
// broken by (count descending, left id ascending, right id ascending), so training is deterministic
// and independent of document order. Pair counts are updated incrementally through an index from
// each pair to the chunks that contain it.
//
// Training stops early, returning fewer merges than asked, when no adjacent pair occurs at least
// twice (a merge that saves one token is not worth an id); so vocab_size(result) <= vocab_size.
//
// split_digits: chunks holding a digit are left out of training, so no merge contains a digit and
// every digit stays one token (numbers are read, and copied, digit by digit).
//
// progress(done, total), if set, is called after each merge with total = vocab_size - 259.
// Throws headroom::Error if vocab_size < 259 or vocab_size > 1 << 20.
Tokenizer train_bpe(std::span<const std::string_view> docs, int32_t vocab_size,
                    const std::function<void(int32_t done, int32_t total)>& progress = {}, bool split_digits = false);

}  // namespace headroom::data
