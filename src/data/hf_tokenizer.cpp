// Reading tokenizer.json into an HfBpe: every key Hugging Face tokenizers would act on is either
// mirrored or refused (see hf_tokenizer.h), so encoding never silently differs.
#include "data/hf_tokenizer.h"

#include <nlohmann/json.hpp>

#include <unicode/unorm2.h>
#include <unicode/ustring.h>

#include <algorithm>

#include "util/error.h"

namespace headroom::data {

using json = nlohmann::json;

namespace {

std::string show(const json& v) { return v.is_string() ? cat("'", v.get<std::string>(), "'") : v.dump(); }

[[noreturn]] void refuse(const std::string& what, const std::string& key, const json& value,
                         const std::string& why = "is not supported") {
  fail(what, ": ", key, " ", show(value), " ", why);
}

const json& at(const json& obj, const char* key) {
  static const json kNull;
  if (!obj.is_object()) return kNull;
  const auto it = obj.find(key);
  return it == obj.end() ? kNull : *it;
}

// A boolean key that may be absent (then `fallback`); anything but a boolean is refused.
bool flag(const json& obj, const char* key, bool fallback, const std::string& what, const std::string& path) {
  const json& v = at(obj, key);
  if (v.is_null()) return fallback;
  if (!v.is_boolean()) refuse(what, path + key, v, "is not a boolean");
  return v.get<bool>();
}

// Requires obj[key] to be null/absent or one of the accepted values.
void require_null_or(const json& obj, const char* key, std::initializer_list<json> ok, const std::string& what,
                     const std::string& path) {
  const json& v = at(obj, key);
  if (v.is_null()) return;
  for (const json& o : ok)
    if (v == o) return;
  refuse(what, path + key, v);
}

// The byte for a code point of the byte-level alphabet, or -1.
int byte_of_char(char32_t c) {
  static const std::array<int16_t, 324> table = [] {
    std::array<int16_t, 324> t{};
    t.fill(-1);
    for (int b = 0; b < 256; ++b) t[hf_byte_char(uint8_t(b))] = int16_t(b);
    return t;
  }();
  return c < table.size() ? table[c] : -1;
}

// Decodes one UTF-8 code point at s[i] (the text is valid UTF-8: it came from JSON).
char32_t next_char(std::string_view s, size_t& i) {
  const auto b = static_cast<unsigned char>(s[i]);
  const int n = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
  char32_t c = n == 1 ? b : n == 2 ? (b & 0x1F) : n == 3 ? (b & 0x0F) : (b & 0x07);
  for (int k = 1; k < n; ++k) c = (c << 6) | (static_cast<unsigned char>(s[i + size_t(k)]) & 0x3F);
  i += size_t(n);
  return c;
}

// A byte-level token string -> its raw bytes; nullopt when a character is outside the alphabet.
std::optional<std::string> token_bytes(std::string_view token) {
  std::string out;
  for (size_t i = 0; i < token.size();) {
    const int b = byte_of_char(next_char(token, i));
    if (b < 0) return std::nullopt;
    out += char(b);
  }
  return out;
}

// ByteLevel decoding of one token: its bytes when every character is in the alphabet, otherwise
// the token's own UTF-8 (tokenizers' decoders::byte_level does the same).
std::string decoded_bytes(const std::string& token) {
  auto b = token_bytes(token);
  return b ? *b : token;
}

std::string nfc_of(const std::string& s);

void parse_model(HfBpe& bpe, const json& model, const std::string& what) {
  const std::string p = "model.";
  if (at(model, "type") != "BPE") refuse(what, p + "type", at(model, "type"));
  require_null_or(model, "dropout", {0, 0.0}, what, p);
  if (flag(model, "byte_fallback", false, what, p)) refuse(what, p + "byte_fallback", true);
  require_null_or(model, "continuing_subword_prefix", {""}, what, p);
  require_null_or(model, "end_of_word_suffix", {""}, what, p);
  bpe.ignore_merges = flag(model, "ignore_merges", false, what, p);
  const json& vocab = at(model, "vocab");
  if (!vocab.is_object()) refuse(what, p + "vocab", vocab, "is not an object");
  std::unordered_map<int32_t, std::string> by_id;
  int32_t max_id = -1;
  for (const auto& [token, idv] : vocab.items()) {
    if (!idv.is_number_integer() || idv.get<int64_t>() < 0 || idv.get<int64_t>() >= (int64_t{1} << 30))
      refuse(what, p + "vocab['" + token + "']", idv, "is not an id");
    const auto id = idv.get<int32_t>();
    if (!by_id.emplace(id, token).second)
      refuse(what, p + "vocab['" + token + "']", idv, cat("repeats the id of '", by_id[id], "'"));
    max_id = std::max(max_id, id);
  }
  bpe.id_bytes.assign(size_t(max_id + 1), "");
  bpe.id_assigned.assign(size_t(max_id + 1), 0);
  bpe.byte_id.fill(-1);
  for (const auto& [id, token] : by_id) {
    bpe.id_bytes[size_t(id)] = decoded_bytes(token);
    bpe.id_assigned[size_t(id)] = 1;
    if (auto raw = token_bytes(token)) {
      if (raw->size() == 1) bpe.byte_id[static_cast<unsigned char>((*raw)[0])] = id;
      bpe.vocab.emplace(std::move(*raw), id);
    }
  }
  bpe.model_vocab_count = int32_t(by_id.size());
  const json& unk = at(model, "unk_token");
  if (!unk.is_null() && std::count(bpe.byte_id.begin(), bpe.byte_id.end(), -1) > 0)
    refuse(what, p + "unk_token", unk, "is not supported when a byte of the alphabet is missing from the vocab");

  // Merges: ranks in file order; a later duplicate pair overwrites an earlier one (tokenizers
  // collects them into a HashMap). Lines starting with "#version" are skipped as tokenizers does.
  const json& merges = at(model, "merges");
  if (!merges.is_array()) refuse(what, p + "merges", merges, "is not an array");
  auto id_of = [&](const std::string& tok, size_t i) {
    const auto raw = token_bytes(tok);
    const auto it = raw ? bpe.vocab.find(*raw) : bpe.vocab.end();
    if (it == bpe.vocab.end())
      refuse(what, cat(p, "merges[", i, "]"), merges[i], cat("names '", tok, "', which is not in the vocab"));
    return it->second;
  };
  int32_t rank = 0;
  for (size_t i = 0; i < merges.size(); ++i) {
    const json& m = merges[i];
    std::string a, b;
    if (m.is_string()) {
      const std::string s = m.get<std::string>();
      if (s.rfind("#version", 0) == 0) continue;
      const size_t sp = s.find(' ');
      if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
        refuse(what, cat(p, "merges[", i, "]"), m, "is not two tokens separated by one space");
      a = s.substr(0, sp);
      b = s.substr(sp + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      a = m[0].get<std::string>();
      b = m[1].get<std::string>();
    } else {
      refuse(what, cat(p, "merges[", i, "]"), m, "is not a merge");
    }
    const int32_t left = id_of(a, i), right = id_of(b, i), made = id_of(a + b, i);
    bpe.merges[(uint64_t(uint32_t(left)) << 32) | uint32_t(right)] = {rank++, made};
  }
}

// Added tokens, checked against the ids tokenizers would give them: it assigns ids itself (the
// vocab's id when the content is in the vocab, else the next free one) and only warns when the
// file says otherwise; a file where the two differ is refused.
void parse_added(HfBpe& bpe, const json& added, const std::string& what) {
  if (added.is_null()) return;
  if (!added.is_array()) refuse(what, "added_tokens", added, "is not an array");
  int32_t max_added = -1;
  for (size_t i = 0; i < added.size(); ++i) {
    const json& t = added[i];
    const std::string p = cat("added_tokens[", i, "].");
    HfAddedToken a;
    if (!at(t, "content").is_string() || at(t, "content").get<std::string>().empty())
      refuse(what, p + "content", at(t, "content"), "is not a non-empty string");
    if (!at(t, "id").is_number_integer() || at(t, "id").get<int64_t>() < 0 ||
        at(t, "id").get<int64_t>() >= (int64_t{1} << 30))
      refuse(what, p + "id", at(t, "id"), "is not an id");
    a.content = at(t, "content").get<std::string>();
    a.id = at(t, "id").get<int32_t>();
    a.special = flag(t, "special", false, what, p);
    a.lstrip = flag(t, "lstrip", false, what, p);
    a.rstrip = flag(t, "rstrip", false, what, p);
    a.single_word = flag(t, "single_word", false, what, p);
    a.normalized = flag(t, "normalized", !a.special, what, p);
    if (bpe.added_ids.count(a.content)) refuse(what, p + "content", t["content"], "repeats an earlier added token");
    const auto raw = token_bytes(a.content);
    const auto in_vocab = raw ? bpe.vocab.find(*raw) : bpe.vocab.end();
    const int32_t n = bpe.model_vocab_count;
    const int32_t expected = in_vocab != bpe.vocab.end()  ? in_vocab->second
                             : max_added < 0              ? n
                             : (max_added >= n || n == 0) ? max_added + 1
                                                          : n;
    if (expected != a.id)
      refuse(what, p + "id", t["id"],
             cat("differs from the id ", expected, " Hugging Face tokenizers assigns to '", a.content, "'"));
    max_added = std::max(max_added, a.id);
    bpe.added_ids[a.content] = a.id;
    bpe.added.push_back(std::move(a));
  }
}

void parse_normalizer(HfBpe& bpe, const json& n, const std::string& what) {
  if (n.is_null()) return;
  if (at(n, "type") != "NFC") refuse(what, "normalizer.type", at(n, "type"));
  bpe.nfc = true;
}

// GPT-2's pattern, which ByteLevel uses when use_regex is true.
constexpr const char* kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

void parse_byte_level(HfBpe& bpe, const json& pt, const std::string& what, const std::string& p) {
  if (!at(pt, "add_prefix_space").is_boolean())
    refuse(what, p + "add_prefix_space", at(pt, "add_prefix_space"), "is not a boolean");
  if (at(pt, "add_prefix_space").get<bool>()) bpe.pre_steps.push_back({true, ""});
  if (flag(pt, "use_regex", true, what, p)) bpe.pre_steps.push_back({false, onig_to_icu(kGpt2Pattern, what)});
}

void parse_split(HfBpe& bpe, const json& pt, const std::string& what, const std::string& p) {
  const json& pattern = at(pt, "pattern");
  if (!at(pattern, "Regex").is_string()) refuse(what, p + "pattern", pattern);
  if (at(pt, "behavior") != "Isolated") refuse(what, p + "behavior", at(pt, "behavior"));
  if (flag(pt, "invert", false, what, p)) refuse(what, p + "invert", true);
  bpe.pre_steps.push_back({false, onig_to_icu(at(pattern, "Regex").get<std::string>(), what)});
}

// ByteLevel alone, or a Sequence of Splits ending in the one ByteLevel (which maps the pieces to
// the byte alphabet, so nothing may follow it).
void parse_pre_tokenizer(HfBpe& bpe, const json& pt, const std::string& what) {
  const json& type = at(pt, "type");
  if (type == "ByteLevel") return parse_byte_level(bpe, pt, what, "pre_tokenizer.");
  if (type != "Sequence") refuse(what, "pre_tokenizer.type", type);
  const json& list = at(pt, "pretokenizers");
  if (!list.is_array() || list.empty()) refuse(what, "pre_tokenizer.pretokenizers", list);
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string p = cat("pre_tokenizer.pretokenizers[", i, "].");
    const json& t = at(list[i], "type");
    if (t == "Split") {
      parse_split(bpe, list[i], what, p);
    } else if (t == "ByteLevel" && i + 1 == list.size()) {
      parse_byte_level(bpe, list[i], what, p);
    } else {
      refuse(what, p + "type", t,
             t == "ByteLevel" ? "is not supported before the end of the sequence" : "is not supported");
    }
  }
  if (at(list.back(), "type") != "ByteLevel")
    refuse(what, cat("pre_tokenizer.pretokenizers[", list.size() - 1, "].type"), at(list.back(), "type"),
           "is not supported as the last pre-tokenizer (a byte-level BPE needs ByteLevel last)");
}

// Post-processors whose effect on one sequence Headroom mirrors: none, or BOS before it.
void parse_post_processor(HfBpe& bpe, const json& pp, const std::string& what, const std::string& p) {
  if (pp.is_null()) return;
  const json& type = at(pp, "type");
  if (type == "ByteLevel") return;  // offsets only
  if (type == "Sequence") {
    const json& list = at(pp, "processors");
    if (!list.is_array()) refuse(what, p + "processors", list);
    for (size_t i = 0; i < list.size(); ++i) parse_post_processor(bpe, list[i], what, cat(p, "processors[", i, "]."));
    return;
  }
  if (type != "TemplateProcessing") refuse(what, p + "type", type);
  const json& single = at(pp, "single");
  const bool a_last = single.is_array() && !single.empty() && at(at(single.back(), "Sequence"), "id") == "A";
  const bool bos_first = single.is_array() && single.size() == 2 && at(at(single[0], "SpecialToken"), "id").is_string();
  if (!a_last || !(single.size() == 1 || bos_first))
    refuse(what, p + "single", single, "is not supported (only [A] or [special token, A], the BOS Headroom prepends)");
  if (bos_first) bpe.template_bos = at(at(single[0], "SpecialToken"), "id").get<std::string>();
}

void parse_decoder(const json& d, const std::string& what) {
  if (at(d, "type") != "ByteLevel") refuse(what, "decoder.type", d.is_null() ? d : at(d, "type"));
}

}  // namespace

char32_t hf_byte_char(uint8_t b) {
  // Printable Latin-1 bytes stand for themselves; the others map to 256, 257, ... in byte order.
  if ((b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE) return b;
  int n = 0;
  for (int x = 0; x < b; ++x)
    if (!((x >= '!' && x <= '~') || (x >= 0xA1 && x <= 0xAC) || x >= 0xAE)) ++n;
  return char32_t(256 + n);
}

std::shared_ptr<HfBpe> parse_hf_tokenizer_json(std::string json_text, const std::string& what) {
  json root;
  try {
    root = json::parse(json_text);
  } catch (const json::exception& e) {
    fail(what, ": not valid JSON: ", e.what());
  }
  if (!root.is_object()) fail(what, ": not a JSON object");
  auto bpe = std::make_shared<HfBpe>();
  for (const char* k : {"truncation", "padding"})
    if (!at(root, k).is_null()) refuse(what, k, at(root, k));
  parse_model(*bpe, at(root, "model"), what);
  parse_added(*bpe, at(root, "added_tokens"), what);
  parse_normalizer(*bpe, at(root, "normalizer"), what);
  if (at(root, "pre_tokenizer").is_null()) refuse(what, "pre_tokenizer", nullptr);
  parse_pre_tokenizer(*bpe, at(root, "pre_tokenizer"), what);
  parse_post_processor(*bpe, at(root, "post_processor"), what, "post_processor.");
  parse_decoder(at(root, "decoder"), what);

  // Ids: added tokens decode to their content verbatim and take precedence over the vocab.
  int32_t top = int32_t(bpe->id_bytes.size()) - 1;
  for (const auto& a : bpe->added) top = std::max(top, a.id);
  bpe->vocab_size = top + 1;
  bpe->id_bytes.resize(size_t(top + 1));
  bpe->id_assigned.resize(size_t(top + 1), 0);
  bpe->id_special.assign(size_t(top + 1), 0);
  std::unordered_map<std::string, bool> special_contents;
  for (const auto& a : bpe->added) {
    bpe->id_bytes[size_t(a.id)] = decoded_bytes(a.content);
    bpe->id_assigned[size_t(a.id)] = 1;
    if (a.special) special_contents[a.content] = true;
    if (a.normalized && bpe->nfc)
      bpe->added_match.push_back(nfc_of(a.content));
    else
      bpe->added_match.push_back(a.content);
  }
  // tokenizers skips a token whose string is a special token's content, whichever id it has.
  for (const auto& a : bpe->added)
    if (special_contents.count(a.content)) bpe->id_special[size_t(a.id)] = 1;
  for (const auto& [content, _] : special_contents)
    if (auto raw = token_bytes(content); raw && bpe->vocab.count(*raw)) bpe->id_special[size_t(bpe->vocab[*raw])] = 1;
  bpe->tokenizer_json = std::move(json_text);
  return bpe;
}

namespace {

std::string nfc_of(const std::string& s) { return hf_nfc(s); }

std::optional<int32_t> token_id(const HfBpe& bpe, const std::string& name) {
  if (const auto it = bpe.added_ids.find(name); it != bpe.added_ids.end()) return it->second;
  if (const auto raw = token_bytes(name)) {
    if (const auto it = bpe.vocab.find(*raw); it != bpe.vocab.end()) return it->second;
  }
  return std::nullopt;
}

}  // namespace

void set_hf_specials(HfBpe& bpe, std::optional<std::string> bos, std::optional<std::string> eos,
                     std::optional<std::string> pad, const std::string& what) {
  auto resolve = [&](const char* key, const std::optional<std::string>& name) {
    const auto id = token_id(bpe, *name);
    if (!id) refuse(what, key, *name, "is not a token of the tokenizer");
    return *id;
  };
  if (!eos) fail(what, ": eos_token is missing or null; Headroom needs the model's end-of-sequence token");
  bpe.bos_token = bos;
  bpe.eos_token = eos;
  bpe.pad_token = pad;
  bpe.bos = bos ? std::optional<int32_t>(resolve("bos_token", bos)) : std::nullopt;
  bpe.eos = resolve("eos_token", eos);
  bpe.pad = pad ? resolve("pad_token", pad) : bpe.eos;
  if (bpe.template_bos && bpe.template_bos != bos)
    fail(what, ": the post_processor prepends '", *bpe.template_bos, "' but bos_token is ",
         bos ? "'" + *bos + "'" : std::string("null"), "; Headroom cannot mirror that");
}

}  // namespace headroom::data
