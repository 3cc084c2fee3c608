// Tokenizers: byte-level (no training) and byte-level BPE (trained by bpe_train.h, stored by
// tokenizer_file.h).
//
// Ids: 0..255 are the raw bytes, 256 = BOS, 257 = EOS, 258 = PAD, and 259 + i is the token made by
// merge i (the concatenation of merges[i].first and merges[i].second). A tokenizer with no merges is
// the byte-level tokenizer (vocabulary 259). Every byte string, including invalid UTF-8 and NUL bytes,
// round-trips: decode(encode(s)) == s. Encoding never emits the special ids; decoding drops them.
//
// Pre-split (shared by encoding and training; merges never cross a chunk boundary). Bytes fall into
// four classes: space (' ', \t, \n, \v, \f, \r), letter (A-Z, a-z and every byte >= 0x80, so UTF-8
// words stay together), digit (0-9) and other (everything else: punctuation, control bytes, NUL).
// Scanning left to right, the next chunk is
//   1. a single ' ' followed by a non-space byte: that space plus the maximal run of bytes of the
//      following byte's class (" the", " 1984", " --");
//   2. otherwise, at a space-class byte: the maximal run of space-class bytes, except that when the
//      run is followed by a non-space byte and ends in ' ', that last ' ' is left to start the next
//      chunk by rule 1 (GPT-2's "\s+(?!\S)");
//   3. otherwise: the maximal run of bytes of the current byte's class.
// A chunk longer than kMaxChunkBytes is cut into kMaxChunkBytes pieces (the last may be shorter),
// which bounds the cost of encoding pathological input such as megabytes without a space.
//
// A Tokenizer can instead hold a Hugging Face tokenizer.json byte-level BPE (`hf` set; see
// hf_tokenizer.h, loaded by hf_tokenizer_files.h): then ids, specials, encoding and decoding are
// Hugging Face's and the constants above do not apply; use bos_id/eos_id/pad_id.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace headroom::data {

constexpr int32_t kBos = 256, kEos = 257, kPad = 258, kFirstMerge = 259;
constexpr size_t kMaxChunkBytes = 256;

struct HfBpe;
class HfEncoder;

struct Tokenizer {  // ids 0..255 = bytes, 256 = BOS, 257 = EOS, 258 = PAD, 259 + i = merge i
  std::vector<std::pair<int32_t, int32_t>> merges;  // empty => byte-level tokenizer
  std::shared_ptr<const HfBpe> hf;                  // set: a Hugging Face tokenizer (merges then empty)
};

// kFirstMerge + merges.size(); for Hugging Face, 1 + the largest id of its vocab and added tokens.
int32_t vocab_size(const Tokenizer& tok);

// "byte" for no merges, else "bpe<vocab>-<16 lowercase hex digits>": FNV-1a 64 over the merges, each
// merge hashed as the 4 little-endian bytes of left then the 4 little-endian bytes of right.
// Hugging Face: "hf<vocab>-<16 hex digits>", FNV-1a 64 of tokenizer_record(tok).
std::string tokenizer_id(const Tokenizer& tok);

// The special ids: kBos/kEos/kPad for Headroom's tokenizers; for Hugging Face the tokens named by
// tokenizer_config.json (no BOS when bos_token is null, PAD = EOS when pad_token is missing).
std::optional<int32_t> bos_id(const Tokenizer& tok);
int32_t eos_id(const Tokenizer& tok);
int32_t pad_id(const Tokenizer& tok);

// BOS (when the tokenizer has one) as a sequence's start: {bos} or {}.
std::vector<int32_t> bos_prefix(const Tokenizer& tok);

// The id of the text "\n" ('\n' for Headroom's tokenizers).
int32_t newline_id(const Tokenizer& tok);

// Throws headroom::Error unless every merge i has both parts in [0, 256) or [kFirstMerge, 259 + i)
// and no pair occurs twice.
void validate(const Tokenizer& tok);

// Special ids decode to nothing; an id outside [0, vocab_size) throws headroom::Error naming the id.
// Hugging Face: as decode(ids, skip_special_tokens=true), ids without a token skipped (hf_tokenizer.h).
std::string decode(const Tokenizer& tok, std::span<const int32_t> ids);

// Byte classes of the pre-split rule.
enum class ByteClass : uint8_t { kSpace, kLetter, kDigit, kOther };

namespace detail {
constexpr std::array<ByteClass, 256> make_byte_classes() {
  std::array<ByteClass, 256> c{};
  for (int b = 0; b < 256; ++b) {
    if (b == ' ' || b == '\t' || b == '\n' || b == '\v' || b == '\f' || b == '\r')
      c[b] = ByteClass::kSpace;
    else if ((b >= 'A' && b <= 'Z') || (b >= 'a' && b <= 'z') || b >= 0x80)
      c[b] = ByteClass::kLetter;
    else if (b >= '0' && b <= '9')
      c[b] = ByteClass::kDigit;
    else
      c[b] = ByteClass::kOther;
  }
  return c;
}
inline constexpr std::array<ByteClass, 256> kByteClass = make_byte_classes();
}  // namespace detail

inline ByteClass byte_class(unsigned char b) { return detail::kByteClass[b]; }

// Calls f(std::string_view chunk) for each chunk of text, in order, by the pre-split rule above. The
// chunks are non-empty views into text and concatenate back to it.
template <class F>
void for_each_chunk(std::string_view text, F&& f) {
  const size_t n = text.size();
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  size_t i = 0;
  while (i < n) {
    size_t j;
    const ByteClass c = byte_class(s[i]);
    if (s[i] == ' ' && i + 1 < n && byte_class(s[i + 1]) != ByteClass::kSpace) {
      const ByteClass run = byte_class(s[i + 1]);
      j = i + 2;
      while (j < n && byte_class(s[j]) == run) ++j;
    } else if (c == ByteClass::kSpace) {
      j = i + 1;
      while (j < n && byte_class(s[j]) == ByteClass::kSpace) ++j;
      if (j < n && s[j - 1] == ' ' && j - 1 > i) --j;
    } else {
      j = i + 1;
      while (j < n && byte_class(s[j]) == c) ++j;
    }
    while (j - i > kMaxChunkBytes) {
      f(text.substr(i, kMaxChunkBytes));
      i += kMaxChunkBytes;
    }
    f(text.substr(i, j - i));
    i = j;
  }
}

// Encodes text with a tokenizer's merges. Holds the merge ranks (an open-addressing table) and a
// bounded cache chunk -> ids. Not thread-safe: use one Encoder per thread. Does not keep a reference
// to the Tokenizer (a Hugging Face one shares its immutable HfBpe).
struct Encoder {
  explicit Encoder(const Tokenizer& tok);  // validates tok
  ~Encoder();
  Encoder(Encoder&&) noexcept;
  Encoder& operator=(Encoder&&) noexcept;

  // Appends the ids of text to out; never emits special ids (Hugging Face: added tokens written in
  // the text are emitted, as Hugging Face does; the text must be valid UTF-8).
  void encode(std::string_view text, std::vector<int32_t>& out);

  int32_t vocab_size() const { return vocab_; }

  // Cache statistics (for benchmarks and tests).
  size_t cache_entries() const { return cache_used_; }
  uint64_t cache_hits() const { return hits_; }
  uint64_t cache_misses() const { return misses_; }

  // Cache bounds: when either is exceeded the cache is emptied and refilled.
  static constexpr size_t kCacheMaxEntries = size_t{1} << 17;
  static constexpr size_t kCacheMaxBytes = size_t{16} << 20;  // chunk bytes + 4 bytes per cached id

 private:
  struct RankSlot {
    uint64_t key;  // (left << 32 | right) + 1; 0 = empty
    int32_t rank;
  };
  struct CacheSlot {
    uint64_t hash;
    uint32_t key_off, ids_off;
    uint16_t key_len, ids_len;  // key_len == 0: empty
  };

  int32_t rank_of(int32_t left, int32_t right) const;
  void encode_chunk(std::string_view chunk, std::vector<int32_t>& out);
  void bpe_chunk(std::string_view chunk, std::vector<int32_t>& out);
  void cache_clear();
  void cache_grow();

  int32_t vocab_ = kFirstMerge;
  bool byte_level_ = true;
  std::vector<RankSlot> ranks_;  // power-of-two size
  uint64_t rank_mask_ = 0;

  std::vector<CacheSlot> cache_;  // power-of-two size
  size_t cache_used_ = 0;
  std::string cache_keys_;
  std::vector<int32_t> cache_ids_;
  uint64_t hits_ = 0, misses_ = 0;

  std::vector<int32_t> work_ids_, work_ranks_;  // scratch for bpe_chunk

  std::unique_ptr<HfEncoder> hf_;  // set for a Hugging Face tokenizer
};

}  // namespace headroom::data
