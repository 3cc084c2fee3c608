// Encoding and decoding with an HfBpe, step for step as Hugging Face tokenizers does:
//   added tokens split out of the raw text (non-normalized ones) -> each remaining piece
//   normalized (NFC) -> normalized added tokens split out -> pre-tokenizer steps (regex splits,
//   Isolated; ByteLevel's prefix space) -> each piece's bytes through the BPE model.
// Empty pieces are dropped at every step (tokenizers filters them out of its splits).
#include "data/hf_tokenizer.h"

#include <unicode/uchar.h>
#include <unicode/unorm2.h>
#include <unicode/uregex.h>
#include <unicode/ustring.h>
#include <unicode/utext.h>

#include <algorithm>
#include <climits>

#include "util/error.h"

namespace headroom::data {

namespace {

// Length of the valid UTF-8 sequence at s[i], or 0 when none starts there.
size_t utf8_len(std::string_view s, size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) return 1;
  size_t n;
  unsigned char lo = 0x80, hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF)
    n = 2;
  else if (b0 >= 0xE0 && b0 <= 0xEF)
    n = 3, lo = b0 == 0xE0 ? 0xA0 : 0x80, hi = b0 == 0xED ? 0x9F : 0xBF;
  else if (b0 >= 0xF0 && b0 <= 0xF4)
    n = 4, lo = b0 == 0xF0 ? 0x90 : 0x80, hi = b0 == 0xF4 ? 0x8F : 0xBF;
  else
    return 0;
  for (size_t k = 1; k < n; ++k) {
    if (i + k >= s.size()) return 0;
    const auto b = static_cast<unsigned char>(s[i + k]);
    if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) return 0;
  }
  return n;
}

void check_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_len(s, i);
    if (n == 0)
      fail("Hugging Face tokenizer: the text is not valid UTF-8 at byte offset ", i, " (byte 0x",
           std::string(1, "0123456789abcdef"[static_cast<unsigned char>(s[i]) >> 4]),
           std::string(1, "0123456789abcdef"[static_cast<unsigned char>(s[i]) & 15]), ")");
    i += n;
  }
}

// Rust's String::from_utf8_lossy: each maximal invalid subsequence becomes one U+FFFD.
std::string utf8_lossy(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_len(s, i);
    if (n > 0) {
      out.append(s, i, n);
      i += n;
      continue;
    }
    // The maximal prefix of a valid sequence: a valid lead followed by valid continuations.
    size_t j = i + 1;
    const auto b0 = static_cast<unsigned char>(s[i]);
    if (b0 >= 0xC2 && b0 <= 0xF4) {
      const size_t want = b0 <= 0xDF ? 2 : b0 <= 0xEF ? 3 : 4;
      const unsigned char lo = b0 == 0xE0 ? 0xA0 : b0 == 0xF0 ? 0x90 : 0x80;
      const unsigned char hi = b0 == 0xED ? 0x9F : b0 == 0xF4 ? 0x8F : 0xBF;
      while (j < s.size() && j - i < want) {
        const auto b = static_cast<unsigned char>(s[j]);
        if (b < (j == i + 1 ? lo : 0x80) || b > (j == i + 1 ? hi : 0xBF)) break;
        ++j;
      }
    }
    out += "\xEF\xBF\xBD";
    i = j;
  }
  return out;
}

void check_icu(UErrorCode status, const char* what) {
  if (U_FAILURE(status)) fail("ICU ", what, " failed: ", u_errorName(status));
}

bool is_white_space(UChar32 c) { return u_hasBinaryProperty(c, UCHAR_WHITE_SPACE); }

// Rust regex's \w (Unicode): Alphabetic, marks, decimal digits, connector punctuation, joiners.
bool is_word(UChar32 c) {
  const int8_t t = u_charType(c);
  return u_hasBinaryProperty(c, UCHAR_ALPHABETIC) || t == U_NON_SPACING_MARK || t == U_ENCLOSING_MARK ||
         t == U_COMBINING_SPACING_MARK || t == U_DECIMAL_DIGIT_NUMBER || t == U_CONNECTOR_PUNCTUATION ||
         u_hasBinaryProperty(c, UCHAR_JOIN_CONTROL);
}

UChar32 char_at(std::string_view s, size_t i) {
  UChar32 c;
  int32_t k = int32_t(i);
  U8_NEXT(s.data(), k, int32_t(s.size()), c);
  return c;
}

UChar32 char_before(std::string_view s, size_t i) {
  UChar32 c;
  int32_t k = int32_t(i);
  U8_PREV(s.data(), 0, k, c);
  return c;
}

struct Piece {
  std::string text;
  int32_t id = -1;  // an added token's id, or -1 for text still to tokenize
};

}  // namespace

std::string hf_nfc(const std::string& s) {
  bool ascii = true;
  for (const char c : s) ascii &= static_cast<unsigned char>(c) < 0x80;
  if (ascii) return s;
  UErrorCode st = U_ZERO_ERROR;
  const UNormalizer2* nfc = unorm2_getNFCInstance(&st);
  check_icu(st, "unorm2_getNFCInstance");
  std::u16string u(s.size(), u'\0');
  int32_t len = 0;
  u_strFromUTF8(reinterpret_cast<UChar*>(u.data()), int32_t(u.size()), &len, s.data(), int32_t(s.size()), &st);
  check_icu(st, "u_strFromUTF8");
  u.resize(size_t(len));
  if (unorm2_isNormalized(nfc, reinterpret_cast<const UChar*>(u.data()), len, &st) && U_SUCCESS(st)) return s;
  std::u16string n(size_t(len) * 3 + 16, u'\0');
  const int32_t nlen = unorm2_normalize(nfc, reinterpret_cast<const UChar*>(u.data()), len,
                                        reinterpret_cast<UChar*>(n.data()), int32_t(n.size()), &st);
  check_icu(st, "unorm2_normalize");
  std::string out(size_t(nlen) * 3, '\0');
  int32_t olen = 0;
  u_strToUTF8(out.data(), int32_t(out.size()), &olen, reinterpret_cast<const UChar*>(n.data()), nlen, &st);
  check_icu(st, "u_strToUTF8");
  out.resize(size_t(olen));
  return out;
}

struct HfEncoder::Impl {
  std::shared_ptr<const HfBpe> bpe;
  std::vector<URegularExpression*> regexes;  // parallel to bpe->pre_steps (nullptr: prefix space)
  std::vector<size_t> raw_set, norm_set;     // indices into bpe->added, longest first
  std::array<bool, 256> raw_first{}, norm_first{};
  std::unordered_map<std::string, std::vector<int32_t>> cache;
  std::vector<int32_t> ids, ranks;  // scratch for bpe_word

  explicit Impl(std::shared_ptr<const HfBpe> b) : bpe(std::move(b)) {
    for (const auto& step : bpe->pre_steps) {
      if (step.prefix_space) {
        regexes.push_back(nullptr);
        continue;
      }
      UErrorCode st = U_ZERO_ERROR;
      UParseError pe;
      UText* pattern = utext_openUTF8(nullptr, step.regex.data(), int64_t(step.regex.size()), &st);
      regexes.push_back(uregex_openUText(pattern, 0, &pe, &st));
      utext_close(pattern);
      if (U_FAILURE(st))
        fail("Hugging Face tokenizer: ICU rejects the pre-tokenizer regex '", step.regex, "' at offset ", pe.offset,
             ": ", u_errorName(st));
    }
    for (size_t i = 0; i < bpe->added.size(); ++i) {
      auto& set = bpe->added[i].normalized ? norm_set : raw_set;
      auto& first = bpe->added[i].normalized ? norm_first : raw_first;
      set.push_back(i);
      first[static_cast<unsigned char>(bpe->added_match[i][0])] = true;
    }
    for (auto* set : {&raw_set, &norm_set})
      std::stable_sort(set->begin(), set->end(),
                       [&](size_t a, size_t b) { return bpe->added_match[a].size() > bpe->added_match[b].size(); });
  }
  ~Impl() {
    for (auto* r : regexes)
      if (r) uregex_close(r);
  }

  // tokenizers' AddedVocabulary::find_matches: leftmost-longest matches of the set's contents;
  // single_word, lstrip and rstrip as there (a skipped match still consumes its text).
  void split_added(const std::string& s, const std::vector<size_t>& set, const std::array<bool, 256>& first,
                   std::vector<Piece>& out) const {
    size_t start_offset = 0;
    for (size_t pos = 0; pos < s.size();) {
      if (!first[static_cast<unsigned char>(s[pos])]) {
        ++pos;
        continue;
      }
      const HfAddedToken* hit = nullptr;
      size_t len = 0;
      for (const size_t k : set) {
        const std::string& m = bpe->added_match[k];
        if (s.compare(pos, m.size(), m) == 0) {
          hit = &bpe->added[k];
          len = m.size();
          break;
        }
      }
      if (!hit) {
        ++pos;
        continue;
      }
      size_t start = pos, stop = pos + len;
      pos = stop;
      if (hit->single_word) {
        const bool start_space = start == 0 || !is_word(char_before(s, start));
        const bool stop_space = stop == s.size() || !is_word(char_at(s, stop));
        if (!start_space || !stop_space) continue;
      }
      if (hit->lstrip) {
        size_t left = start;
        while (left > 0) {
          size_t prev = left - 1;
          while (prev > 0 && (static_cast<unsigned char>(s[prev]) & 0xC0) == 0x80) --prev;
          if (!is_white_space(char_at(s, prev))) break;
          left = prev;
        }
        start = std::max(left, start_offset);
      }
      if (hit->rstrip) {
        while (stop < s.size() && is_white_space(char_at(s, stop))) stop += utf8_len(s, stop);
      }
      if (start_offset < start) out.push_back({s.substr(start_offset, start - start_offset), -1});
      out.push_back({"", hit->id});
      start_offset = stop;
    }
    if (start_offset < s.size()) out.push_back({s.substr(start_offset), -1});
  }

  // One regex step, Isolated: matches and the text between them become pieces.
  void split_regex(URegularExpression* re, const std::string& s, std::vector<std::string>& out) const {
    UErrorCode st = U_ZERO_ERROR;
    UText* ut = utext_openUTF8(nullptr, s.data(), int64_t(s.size()), &st);
    uregex_setUText(re, ut, &st);
    check_icu(st, "uregex_setUText");
    int64_t last = 0;
    while (uregex_findNext(re, &st)) {
      const int64_t b = uregex_start64(re, 0, &st), e = uregex_end64(re, 0, &st);
      if (b > last) out.push_back(s.substr(size_t(last), size_t(b - last)));
      if (e > b) out.push_back(s.substr(size_t(b), size_t(e - b)));
      last = e;
    }
    check_icu(st, "uregex_findNext");
    if (size_t(last) < s.size()) out.push_back(s.substr(size_t(last)));
    uregex_setText(re, u"", 0, &st);
    utext_close(ut);
  }

  std::vector<std::string> pre_tokenize(std::string piece) const {
    std::vector<std::string> cur{std::move(piece)}, next;
    for (size_t k = 0; k < regexes.size(); ++k) {
      next.clear();
      for (auto& p : cur) {
        if (!regexes[k]) {
          next.push_back(p[0] == ' ' ? std::move(p) : " " + p);
        } else {
          split_regex(regexes[k], p, next);
        }
      }
      std::swap(cur, next);
    }
    return cur;
  }

  int32_t rank_of(int32_t l, int32_t r, int32_t* made) const {
    const auto it = bpe->merges.find((uint64_t(uint32_t(l)) << 32) | uint32_t(r));
    if (it == bpe->merges.end()) return INT32_MAX;
    *made = it->second.second;
    return it->second.first;
  }

  // BPE on one pre-token's bytes: repeatedly merge the adjacent pair of lowest rank, leftmost
  // among equals (what tokenizers' heap of (rank, position) does). A byte whose character is not
  // in the vocab is dropped, as tokenizers does without an unk token.
  void bpe_word(const std::string& w, std::vector<int32_t>& out) {
    if (bpe->ignore_merges) {
      if (const auto it = bpe->vocab.find(w); it != bpe->vocab.end()) {
        out.push_back(it->second);
        return;
      }
    }
    ids.clear();
    for (const char c : w)
      if (const int32_t id = bpe->byte_id[static_cast<unsigned char>(c)]; id >= 0) ids.push_back(id);
    std::vector<int32_t> made(ids.size(), 0);
    ranks.assign(ids.size() > 0 ? ids.size() - 1 : 0, INT32_MAX);
    for (size_t i = 0; i + 1 < ids.size(); ++i) ranks[i] = rank_of(ids[i], ids[i + 1], &made[i]);
    while (!ranks.empty()) {
      size_t best = 0;
      for (size_t i = 1; i < ranks.size(); ++i)
        if (ranks[i] < ranks[best]) best = i;
      if (ranks[best] == INT32_MAX) break;
      ids[best] = made[best];
      ids.erase(ids.begin() + ptrdiff_t(best) + 1);
      ranks.erase(ranks.begin() + ptrdiff_t(best));
      made.erase(made.begin() + ptrdiff_t(best));
      if (best > 0) ranks[best - 1] = rank_of(ids[best - 1], ids[best], &made[best - 1]);
      if (best < ranks.size()) ranks[best] = rank_of(ids[best], ids[best + 1], &made[best]);
    }
    out.insert(out.end(), ids.begin(), ids.end());
  }

  void encode_word(const std::string& w, std::vector<int32_t>& out) {
    if (const auto it = cache.find(w); it != cache.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
    const size_t start = out.size();
    bpe_word(w, out);
    if (cache.size() >= (size_t{1} << 17)) cache.clear();
    cache.emplace(w, std::vector<int32_t>(out.begin() + ptrdiff_t(start), out.end()));
  }

  void encode(std::string_view text, std::vector<int32_t>& out) {
    check_utf8(text);
    std::vector<Piece> raw, pieces;
    split_added(std::string(text), raw_set, raw_first, raw);
    for (auto& p : raw) {
      if (p.id >= 0) {
        pieces.push_back(std::move(p));
        continue;
      }
      split_added(bpe->nfc ? hf_nfc(p.text) : p.text, norm_set, norm_first, pieces);
    }
    for (auto& p : pieces) {
      if (p.id >= 0) {
        out.push_back(p.id);
        continue;
      }
      for (const std::string& w : pre_tokenize(std::move(p.text))) encode_word(w, out);
    }
  }
};

HfEncoder::HfEncoder(std::shared_ptr<const HfBpe> bpe) : impl_(std::make_unique<Impl>(std::move(bpe))) {}
HfEncoder::~HfEncoder() = default;

void HfEncoder::encode(std::string_view text, std::vector<int32_t>& out) { impl_->encode(text, out); }

std::string hf_decode(const HfBpe& bpe, std::span<const int32_t> ids) {
  std::string bytes;
  for (size_t k = 0; k < ids.size(); ++k) {
    const int32_t id = ids[k];
    if (id < 0) fail("decode: token id ", id, " at position ", k, " is negative");
    // Ids without a token (the padding rows of an embedding rounded up past the tokenizer, as in
    // Qwen 3's 151936 rows for 151669 tokens) decode to nothing, as in Hugging Face tokenizers'
    // decode, so a model that emits one is scored, not stopped.
    if (id >= bpe.vocab_size || !bpe.id_assigned[size_t(id)]) continue;
    if (!bpe.id_special[size_t(id)]) bytes += bpe.id_bytes[size_t(id)];
  }
  return utf8_lossy(bytes);
}

}  // namespace headroom::data
