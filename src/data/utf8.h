// UTF-8 validation of input text: prepare refuses a document that is not UTF-8 (what every
// tokenizer here assumes of text), naming the file and the byte offset of the first bad sequence.
#pragma once

#include <cstdint>
#include <string_view>

namespace headroom::data {

// The offset of the first byte that does not begin a well-formed UTF-8 sequence (overlong forms,
// surrogates and code points above U+10FFFF are ill-formed), or -1 when `text` is valid.
int64_t first_invalid_utf8(std::string_view text);

}  // namespace headroom::data
