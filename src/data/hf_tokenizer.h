// Hugging Face `tokenizer.json` byte-level BPE (Llama 3, Qwen 2/3, GPT-2 style), encoding and
// decoding exactly as Hugging Face tokenizers (Rust, Oniguruma regexes) does with
// add_special_tokens=false; the model's BOS is prepended by Headroom (data::bos_id).
//
// Supported, and everything else refused when the file is read, naming the file, the JSON key and
// its value (never approximated):
//   model          type BPE; merges as "a b" strings or [a, b] pairs; ignore_merges; dropout null;
//                  byte_fallback false; continuing_subword_prefix / end_of_word_suffix null or "";
//                  unk_token only when every byte of the alphabet is in the vocabulary (it can then
//                  never be emitted)
//   normalizer     null or NFC (ICU unorm2)
//   pre_tokenizer  ByteLevel (use_regex: GPT-2's pattern; add_prefix_space), or Sequence of
//                  Split(Regex, behavior Isolated, invert false)... ending in ByteLevel
//   added_tokens   split out of the text before pre-tokenization (non-normalized ones from the raw
//                  text, normalized ones from each normalized piece), leftmost-longest, honouring
//                  single_word, lstrip and rstrip as tokenizers' AddedVocabulary does
//   post_processor null, ByteLevel, TemplateProcessing whose single template is [A] or [BOS, A]
//                  (what Headroom does by prepending bos_id), or a Sequence of those
//   decoder        ByteLevel
// Regexes are Oniguruma's syntax run by ICU: a translator admits the constructs whose meaning is
// the same in both and rewrites \s, \S (Oniguruma's is Unicode White_Space; ICU documents its \s
// as [\t\n\f\r\p{Z}], without \v and U+0085, though ICU 72 matches White_Space) and \v (ICU's is
// any vertical whitespace, Oniguruma's U+000B); anything else (\w, \b, ., ^, $, POSIX brackets,
// ...) is refused.
//
// Encoding takes UTF-8 (Hugging Face takes strings): invalid UTF-8 is an error naming the byte
// offset. Added tokens in the text are emitted as their ids (split_special_tokens=false, as
// transformers does by default). Decoding mirrors decode(ids, skip_special_tokens=true): special
// added tokens are dropped, the others (added tokens too: tokenizers reverted skipping the decoder
// for them, PR #1569) go through the ByteLevel decoder, which maps byte characters back and
// replaces invalid UTF-8 as Rust's from_utf8_lossy does. transformers' clean_up_tokenization_spaces
// is not applied.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace headroom::data {

struct HfAddedToken {
  int32_t id = 0;
  std::string content;
  bool special = false, lstrip = false, rstrip = false, single_word = false, normalized = false;
};

// One step of pre-tokenization before the byte mapping: a regex split (Isolated) or ByteLevel's
// prefix space.
struct HfPreStep {
  bool prefix_space = false;  // true: prepend ' ' unless the piece starts with one
  std::string regex;          // the ICU translation of the pattern, when !prefix_space
};

// The parsed tokenizer.json plus the specials named by tokenizer_config.json. Immutable.
struct HfBpe {
  std::string tokenizer_json;                                  // verbatim
  std::optional<std::string> bos_token, eos_token, pad_token;  // as the config names them
  std::optional<int32_t> bos;
  int32_t eos = 0, pad = 0;
  int32_t vocab_size = 0;  // 1 + the largest id of vocab and added tokens
  std::string id;          // tokenizer_id, computed once (hashing the record is not free)
  int32_t newline = -1;    // the one id of "\n", or -1 when "\n" is not one token

  bool nfc = false;
  bool ignore_merges = false;
  std::vector<HfPreStep> pre_steps;
  std::vector<HfAddedToken> added;                     // as listed
  std::vector<std::string> added_match;                // parallel to added: the text matched (NFC when normalized)
  std::unordered_map<std::string, int32_t> added_ids;  // content -> id
  std::optional<std::string> template_bos;             // the special token a TemplateProcessing prepends
  std::unordered_map<std::string, int32_t> vocab;      // raw bytes of byte-level tokens -> id
  int32_t model_vocab_count = 0;                       // entries of model.vocab
  std::array<int32_t, 256> byte_id{};                  // -1: the byte's character is not in the vocab
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges;  // (left<<32|right) -> rank, id
  std::vector<std::string> id_bytes;  // id -> what the ByteLevel decoder makes of its token
  std::vector<uint8_t> id_assigned;   // 1 where the id is a token
  std::vector<uint8_t> id_special;    // 1: decode skips it (a special added token's content)
};

// Parses tokenizer.json text; `what` (a file name) starts every error. Specials are resolved by
// set_hf_specials.
std::shared_ptr<HfBpe> parse_hf_tokenizer_json(std::string json_text, const std::string& what);

// Resolves BOS/EOS/PAD token names to ids (BOS optional; EOS required; PAD defaults to EOS);
// `what` names where the names came from.
void set_hf_specials(HfBpe& bpe, std::optional<std::string> bos, std::optional<std::string> eos,
                     std::optional<std::string> pad, const std::string& what);

// Per-thread encoder state: the compiled regexes and a word cache. Not thread-safe.
class HfEncoder {
 public:
  explicit HfEncoder(std::shared_ptr<const HfBpe> bpe);
  ~HfEncoder();
  HfEncoder(const HfEncoder&) = delete;
  HfEncoder& operator=(const HfEncoder&) = delete;

  // Appends the ids of text (UTF-8) to out.
  void encode(std::string_view text, std::vector<int32_t>& out);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Ids -> text as tokenizers' decode(ids, skip_special_tokens=true) with the ByteLevel decoder;
// an id without a token (past the tokenizer or unassigned: a model's padding rows) decodes to
// nothing, as there; a negative id throws naming it.
std::string hf_decode(const HfBpe& bpe, std::span<const int32_t> ids);

// NFC of valid UTF-8 (ICU unorm2).
std::string hf_nfc(const std::string& s);

// GPT-2's bytes_to_unicode: the code point that stands for byte b in byte-level token strings.
char32_t hf_byte_char(uint8_t b);

// Oniguruma pattern -> ICU pattern with the same meaning, or throws naming `what` and the construct.
std::string onig_to_icu(const std::string& pattern, const std::string& what);

}  // namespace headroom::data
