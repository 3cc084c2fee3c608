// Hugging Face tokenizers in files: reading a model directory (tokenizer.json +
// tokenizer_config.json), the one-string record that shards and checkpoints store, and writing
// tokenizer.json back (verbatim for Hugging Face tokenizers; converted for Headroom's own BPE).
//
// Record: the JSON object {"bos_token": s|null, "eos_token": s, "pad_token": s|null,
// "tokenizer_json": "<the original tokenizer.json text>"} as nlohmann::json::dump() writes it
// (keys sorted, no whitespace), so the same tokenizer always gives the same record and id.
//
// Headroom's BPE as tokenizer.json (to_tokenizer_json): vocab ids 0..255 are the bytes, 256/257/258
// the special tokens <|bos|>, <|eos|>, <|pad|> (in the vocab and as special added tokens), 259 + i
// merge i; the pre-split of tokenizer.h as one Split regex (S = the six ASCII spaces, NS its
// complement, L = ASCII letters and every character >= U+0080, D = digits, O = other):
//    L{1,255}| D{1,255}| O{1,255}|S{1,256}(?= NS)|S{1,256}|L{1,256}|D{1,256}|O{1,256}
// then ByteLevel without regex. It encodes exactly as Headroom's encoder on valid UTF-8 except:
//   - a run of letters longer than 255/256 bytes holding a non-ASCII character: Headroom cuts
//     chunks at 256 bytes, possibly inside a character; the regex counts characters;
//   - the text "<|bos|>", "<|eos|>" or "<|pad|>": Hugging Face emits the special id, Headroom
//     encodes the characters;
//   - invalid UTF-8, which Headroom encodes and Hugging Face cannot take.
// Refused: merges that make the same byte string twice (a tokenizer.json vocab maps each string
// to one id).
#pragma once

#include <filesystem>
#include <string>

#include "data/tokenizer.h"

namespace headroom::data {

// dir/tokenizer.json with dir/tokenizer_config.json (bos_token, eos_token, pad_token: a string, an
// object with "content", or null/absent). `path` may also name the tokenizer.json itself; the
// config beside it is then still needed (it names the EOS), and its absence is an error naming it.
Tokenizer load_hf_tokenizer_dir(const std::filesystem::path& path);

// A tokenizer given on a command line: "byte", a Headroom tokenizer file, a Hugging Face model
// directory or a tokenizer.json (told apart by content: Headroom files start with their magic).
Tokenizer load_any_tokenizer(const std::string& spec);

// "" for Headroom's tokenizers.
std::string tokenizer_record(const Tokenizer& tok);

// Rebuilds a Hugging Face tokenizer from its record; errors start with `what` (the file and the
// place it was stored).
Tokenizer tokenizer_from_record(const std::string& record, const std::string& what);

// tokenizer.json text: the stored original for Hugging Face tokenizers; for Headroom's the
// conversion described above.
std::string to_tokenizer_json(const Tokenizer& tok);

// tokenizer_config.json text naming the special tokens (bos_token, eos_token, pad_token).
std::string to_tokenizer_config_json(const Tokenizer& tok);

// Writes dir/tokenizer.json and dir/tokenizer_config.json (each atomically).
void save_hf_tokenizer_dir(const Tokenizer& tok, const std::filesystem::path& dir);

}  // namespace headroom::data
