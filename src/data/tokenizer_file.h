// Tokenizer files.
//
// Text format (ASCII, '\n' line ends, fields separated by one space, decimal numbers):
//   headroom-tokenizer 1
//   type byte|bpe            byte exactly when there are no merges
//   vocab_size N             N = 259 + M
//   merges M
//   L R                      M lines: merge i makes id 259 + i from ids L and R, each a byte
//   ...                      (0..255) or an earlier merge (259 .. 258 + i), never a special id
// Nothing may follow the last merge line except its line end.
#pragma once

#include <filesystem>

#include "data/tokenizer.h"

namespace headroom::data {

// Writes <path>.tmp, flushes and checks it, then renames it over path, so path is never left half
// written. Throws headroom::Error naming the file on any failure (the .tmp file is removed).
void save_tokenizer(const Tokenizer& tok, const std::filesystem::path& path);

// Reads and validates a tokenizer file. Errors name the file and, where one is at fault, the line:
// bad header or keys, malformed numbers, merge parts that are special or not earlier ids, repeated
// pairs, vocab_size/type/merges disagreeing, a truncated file or extra lines.
Tokenizer load_tokenizer(const std::filesystem::path& path);

}  // namespace headroom::data
