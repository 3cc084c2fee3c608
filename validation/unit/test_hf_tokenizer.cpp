// Hugging Face tokenizer.json byte-level BPE on tiny hand-made files: merge ranking, ignore_merges,
// added tokens (special and not, lstrip/rstrip), NFC, the GPT-2 and Llama 3 split patterns, decode,
// every refusal, the record, specials, storage in shards and checkpoints, and Headroom's own BPE
// written as tokenizer.json. The comparison with Hugging Face's own code on real tokenizers is
// validation/hf_tokenizer/compare_js.sh.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "data/bpe_train.h"
#include "data/chat_markers.h"
#include "data/hf_tokenizer.h"
#include "data/hf_tokenizer_files.h"
#include "data/shard.h"
#include "data/tokenizer.h"
#include "data/tokenizer_file.h"
#include "eval/checkpoint_facts.h"
#include "eval/prompt.h"
#include "io/checkpoint.h"
#include "util/error.h"

namespace {

using namespace headroom;
using namespace headroom::data;
using json = nlohmann::json;
namespace fs = std::filesystem;

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// The byte-level spelling of raw bytes.
std::string bl(const std::string& raw) {
  std::string out;
  for (const char b : raw) {
    const char32_t c = hf_byte_char(static_cast<uint8_t>(b));
    if (c < 0x80) {
      out += char(c);
    } else {
      out += char(0xC0 | (c >> 6));
      out += char(0x80 | (c & 0x3F));
    }
  }
  return out;
}

// A tokenizer.json: the 256 bytes (ids 0..255 = the byte), then one token per merge (raw bytes
// "a b" split at the given position), extra vocab entries, then the added tokens <s> and </s>.
struct Tiny {
  std::vector<std::pair<std::string, std::string>> merges;
  std::vector<std::string> extra_vocab;
  json pre_tokenizer = {
      {"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}};
  json normalizer = nullptr;
  bool ignore_merges = false;
  std::vector<json> added;  // after <s>, </s>

  json tokenizer_json() const {
    json vocab = json::object();
    for (int b = 0; b < 256; ++b) vocab[bl(std::string(1, char(b)))] = b;
    json m = json::array();
    int32_t next = 256;
    for (const auto& [a, b] : merges) {
      if (!vocab.contains(bl(a + b))) vocab[bl(a + b)] = next++;
      m.push_back(bl(a) + " " + bl(b));
    }
    for (const auto& t : extra_vocab) vocab[bl(t)] = next++;
    json added_tokens = json::array();
    auto add = [&](const std::string& content, bool special, json more = json::object()) {
      json t = {{"id", next++},    {"content", content},     {"single_word", false}, {"lstrip", false},
                {"rstrip", false}, {"normalized", !special}, {"special", special}};
      t.update(more);
      added_tokens.push_back(t);
    };
    add("<s>", true);
    add("</s>", true);
    for (const auto& a : added) add(a["content"], a.value("special", false), a);
    return {
        {"version", "1.0"},
        {"truncation", nullptr},
        {"padding", nullptr},
        {"added_tokens", added_tokens},
        {"normalizer", normalizer},
        {"pre_tokenizer", pre_tokenizer},
        {"post_processor", nullptr},
        {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
        {"model",
         {{"type", "BPE"},
          {"dropout", nullptr},
          {"unk_token", nullptr},
          {"continuing_subword_prefix", nullptr},
          {"end_of_word_suffix", nullptr},
          {"fuse_unk", false},
          {"byte_fallback", false},
          {"ignore_merges", ignore_merges},
          {"vocab", vocab},
          {"merges", m}}}};
  }
};

std::string record_of(const json& tokenizer_json, json bos = "<s>", json eos = "</s>", json pad = nullptr) {
  return json{{"bos_token", bos}, {"eos_token", eos}, {"pad_token", pad}, {"tokenizer_json", tokenizer_json.dump()}}
      .dump();
}

Tokenizer load(const json& tokenizer_json) { return tokenizer_from_record(record_of(tokenizer_json), "tiny"); }

std::vector<int32_t> enc(const Tokenizer& tok, const std::string& text) {
  std::vector<int32_t> ids;
  Encoder(tok).encode(text, ids);
  return ids;
}

// The id of a token given as raw bytes.
int32_t id(const Tokenizer& tok, const std::string& raw) { return tok.hf->vocab.at(raw); }

// The Llama 3 pre-tokenizer.
json llama3_pre() {
  return {
      {"type", "Sequence"},
      {"pretokenizers",
       {{{"type", "Split"},
         {"pattern",
          {{"Regex",
            R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"}}},
         {"behavior", "Isolated"},
         {"invert", false}},
        {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}}}}};
}

TEST(HfTokenizer, MergesApplyByRank) {
  Tiny t;
  t.merges = {{"a", "b"}, {"b", "c"}, {"ab", "c"}};
  auto tok = load(t.tokenizer_json());
  EXPECT_EQ(enc(tok, "abc"), (std::vector<int32_t>{id(tok, "abc")}));
  t.merges = {{"b", "c"}, {"a", "b"}, {"ab", "c"}};  // b c first: ab never forms
  tok = load(t.tokenizer_json());
  EXPECT_EQ(enc(tok, "abc"), (std::vector<int32_t>{'a', id(tok, "bc")}));
  // Leftmost among equal ranks: "aaa" with a a -> "aa" "a".
  t.merges = {{"a", "a"}};
  tok = load(t.tokenizer_json());
  EXPECT_EQ(enc(tok, "aaa"), (std::vector<int32_t>{id(tok, "aa"), 'a'}));
}

TEST(HfTokenizer, IgnoreMergesEmitsWholeVocabWords) {
  Tiny t;
  t.merges = {{"a", "b"}};
  t.extra_vocab = {"abd"};  // no merge path leads to it
  EXPECT_EQ(enc(load(t.tokenizer_json()), "abd"), (std::vector<int32_t>{256, 'd'}));
  t.ignore_merges = true;
  const auto tok = load(t.tokenizer_json());
  EXPECT_EQ(enc(tok, "abd"), (std::vector<int32_t>{id(tok, "abd")}));
  EXPECT_EQ(enc(tok, "abdd"), (std::vector<int32_t>{id(tok, "ab"), 'd', 'd'}));
}

TEST(HfTokenizer, Gpt2PatternKeepsTheLastSpaceForTheWord) {
  Tiny t;
  t.merges = {{" ", " "}, {" ", "b"}, {"\v", "!"}, {"\xc2", "\x85"}, {"\xc2\x85", "!"}};
  const auto tok = load(t.tokenizer_json());
  // \s+(?!\S) takes two of the three spaces; " b" is one piece.
  EXPECT_EQ(enc(tok, "a   b"), (std::vector<int32_t>{'a', id(tok, "  "), id(tok, " b")}));
  // At the end of the text all spaces go together.
  EXPECT_EQ(enc(tok, "a  "), (std::vector<int32_t>{'a', id(tok, "  ")}));
  // \v and U+0085 are whitespace for Oniguruma (ICU's \s lacks them): were they not, each would
  // join the "!" after it as punctuation.
  EXPECT_EQ(enc(tok, "a\v!"), (std::vector<int32_t>{'a', '\v', '!'}));
  EXPECT_EQ(enc(tok, "a\xc2\x85!"), (std::vector<int32_t>{'a', id(tok, "\xc2\x85"), '!'}));
}

// In a Split pattern \v is U+000B alone (Oniguruma), not ICU's vertical-whitespace class.
TEST(HfTokenizer, RegexVerticalTabIsOneCharacter) {
  Tiny t;
  t.pre_tokenizer = llama3_pre();
  t.pre_tokenizer["pretokenizers"][0]["pattern"]["Regex"] = "\\v";
  t.merges = {{"\n", "\n"}};
  const auto tok = load(t.tokenizer_json());
  EXPECT_EQ(enc(tok, "\n\n"), (std::vector<int32_t>{id(tok, "\n\n")}));
  EXPECT_EQ(enc(tok, "\n\v\n"), (std::vector<int32_t>{'\n', '\v', '\n'}));
}

TEST(HfTokenizer, Llama3PatternContractionsAndDigits) {
  Tiny t;
  t.pre_tokenizer = llama3_pre();
  t.merges = {{"T", "'"}, {"'", "S"}, {"3", "4"}, {"1", "2"}, {"L", "x"}};
  const auto tok = load(t.tokenizer_json());
  // (?i:'s) splits "'S" off "IT'S" (so "T'" never forms).
  EXPECT_EQ(enc(tok, "IT'S"), (std::vector<int32_t>{'I', 'T', id(tok, "'S")}));
  // Case-insensitively: "'LL" is a piece of its own, so "Lx" never forms.
  EXPECT_EQ(enc(tok, "'LLx"), (std::vector<int32_t>{'\'', 'L', 'L', 'x'}));
  // \p{N}{1,3}: "12345" is "123" "45", so "34" never forms.
  EXPECT_EQ(enc(tok, "12345"), (std::vector<int32_t>{id(tok, "12"), '3', '4', '5'}));
}

TEST(HfTokenizer, AddedTokensAreSplitOutFirst) {
  Tiny t;
  t.merges = {{"<", "s"}};
  t.added = {{{"content", "foo"}, {"special", false}},
             {{"content", "<m>"}, {"special", true}, {"lstrip", true}, {"rstrip", true}}};
  const auto tok = load(t.tokenizer_json());
  const int32_t s = tok.hf->added_ids.at("<s>"), foo = tok.hf->added_ids.at("foo"), m = tok.hf->added_ids.at("<m>");
  EXPECT_EQ(enc(tok, "x<s>y"), (std::vector<int32_t>{'x', s, 'y'}));
  EXPECT_EQ(enc(tok, "afoob"), (std::vector<int32_t>{'a', foo, 'b'}));
  // lstrip/rstrip: the spaces around <m> belong to it.
  EXPECT_EQ(enc(tok, "a  <m>  b"), (std::vector<int32_t>{'a', m, 'b'}));
  // Decoding drops special tokens but keeps the others.
  EXPECT_EQ(decode(tok, enc(tok, "x<s>yfoo")), "xyfoo");
}

// single_word: a match inside a word is skipped (and its text still consumed by the matcher).
TEST(HfTokenizer, SingleWordAddedTokens) {
  Tiny t;
  t.added = {{{"content", "cat"}, {"special", false}, {"single_word", true}}};
  const auto tok = load(t.tokenizer_json());
  const int32_t cat = tok.hf->added_ids.at("cat");
  EXPECT_EQ(enc(tok, "a cat b"), (std::vector<int32_t>{'a', ' ', cat, ' ', 'b'}));
  EXPECT_EQ(enc(tok, "cats"), (std::vector<int32_t>{'c', 'a', 't', 's'}));
  EXPECT_EQ(enc(tok, "cat"), (std::vector<int32_t>{cat}));
}

TEST(HfTokenizer, NfcNormalizes) {
  Tiny t;
  t.normalizer = {{"type", "NFC"}};
  t.merges = {{"\xc3", "\xa9"}};  // é
  const auto tok = load(t.tokenizer_json());
  EXPECT_EQ(enc(tok, "e\xcc\x81"), enc(tok, "\xc3\xa9"));
  EXPECT_EQ(enc(tok, "e\xcc\x81"), (std::vector<int32_t>{id(tok, "\xc3\xa9")}));
  EXPECT_EQ(decode(tok, enc(tok, "e\xcc\x81")), "\xc3\xa9");
}

TEST(HfTokenizer, DecodeEveryIdAndRoundTrip) {
  Tiny t;
  t.merges = {{"a", "b"}, {" ", "a"}, {"ab", "c"}, {"\xe6", "\x97"}};
  const auto tok = load(t.tokenizer_json());
  for (int32_t i = 0; i < vocab_size(tok); ++i) {
    if (tok.hf->id_special[size_t(i)]) {
      EXPECT_EQ(decode(tok, std::vector<int32_t>{i}), "");
      continue;
    }
    std::string want = tok.hf->id_bytes[size_t(i)];
    if (i >= 0x80 && i < 256) want = "\xef\xbf\xbd";  // a lone byte >= 0x80 is invalid UTF-8: U+FFFD
    if (i == 256 + 3) want = "\xef\xbf\xbd";          // the first two bytes of 日 alone
    EXPECT_EQ(decode(tok, std::vector<int32_t>{i}), want) << i;
  }
  for (const std::string s : {"abc ab a", "日本語 text\n\tand 😀", "", "  x  "}) EXPECT_EQ(decode(tok, enc(tok, s)), s);
  // An id past the tokenizer (a model's padding rows, e.g. Qwen 3's) decodes to nothing, as in
  // Hugging Face tokenizers, so evaluate scores a model that emits one; a negative id is an error.
  std::vector<int32_t> ids = enc(tok, "abc ab");
  ids.insert(ids.begin() + 1, vocab_size(tok) + 7);
  EXPECT_EQ(decode(tok, ids), "abc ab");
  EXPECT_NE(error_of([&] { decode(tok, std::vector<int32_t>{-1}); }).find("negative"), std::string::npos);
}

TEST(HfTokenizer, InvalidUtf8NamesTheOffset) {
  const auto tok = load(Tiny{}.tokenizer_json());
  EXPECT_NE(error_of([&] { enc(tok, "ok\xff"); }).find("byte offset 2"), std::string::npos);
  EXPECT_NE(error_of([&] { enc(tok, "a\xed\xa0\x80"); }).find("byte offset 1"), std::string::npos);  // a surrogate
}

// Each mutation of a valid file is refused with the key and value named.
TEST(HfTokenizer, RefusalsNameTheKeyAndValue) {
  const json good = Tiny{}.tokenizer_json();
  struct Case {
    std::string pointer;
    json value;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"/model/type", "WordPiece", "model.type 'WordPiece' is not supported"},
      {"/model/byte_fallback", true, "model.byte_fallback true"},
      {"/model/dropout", 0.1, "model.dropout 0.1"},
      {"/model/continuing_subword_prefix", "##", "model.continuing_subword_prefix '##'"},
      {"/pre_tokenizer/type", "Metaspace", "pre_tokenizer.type 'Metaspace' is not supported"},
      {"/normalizer", {{"type", "NFKC"}}, "normalizer.type 'NFKC' is not supported"},
      {"/decoder/type", "Metaspace", "decoder.type 'Metaspace'"},
      {"/post_processor", {{"type", "BertProcessing"}}, "post_processor.type 'BertProcessing'"},
      {"/post_processor",
       {{"type", "TemplateProcessing"},
        {"single",
         {{{"Sequence", {{"id", "A"}, {"type_id", 0}}}}, {{"SpecialToken", {{"id", "</s>"}, {"type_id", 0}}}}}}},
       "post_processor.single"},
      {"/truncation", {{"max_length", 5}}, "truncation {\"max_length\":5}"},
      {"/model/merges", json::array({"a zz"}), "model.merges[0] 'a zz' names 'zz', which is not in the vocab"},
      {"/added_tokens/0/id", 7, "added_tokens[0].id 7 differs from the id 256"},
  };
  for (const auto& c : cases) {
    json bad = good;
    bad[json::json_pointer(c.pointer)] = c.value;
    const std::string msg = error_of([&] { load(bad); });
    EXPECT_NE(msg.find("tiny (tokenizer.json): "), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.expected), std::string::npos) << c.pointer << ": " << msg;
  }
  // Splits: only Regex patterns, behavior Isolated, invert false, and regex constructs whose
  // Oniguruma and ICU meanings agree.
  auto split = [](json pattern, json behavior, bool invert) {
    Tiny t;
    t.pre_tokenizer = llama3_pre();
    t.pre_tokenizer["pretokenizers"][0]["pattern"] = pattern;
    t.pre_tokenizer["pretokenizers"][0]["behavior"] = behavior;
    t.pre_tokenizer["pretokenizers"][0]["invert"] = invert;
    return error_of([&] { load(t.tokenizer_json()); });
  };
  EXPECT_NE(split({{"String", " "}}, "Isolated", false).find("pretokenizers[0].pattern {\"String\":\" \"}"),
            std::string::npos);
  EXPECT_NE(split({{"Regex", "a"}}, "Removed", false).find("pretokenizers[0].behavior 'Removed'"), std::string::npos);
  EXPECT_NE(split({{"Regex", "a"}}, "Isolated", true).find("pretokenizers[0].invert true"), std::string::npos);
  EXPECT_NE(split({{"Regex", R"(\w+)"}}, "Isolated", false).find("the escape '\\w'"), std::string::npos);
  EXPECT_NE(split({{"Regex", "a.b"}}, "Isolated", false).find("'.'"), std::string::npos);
  EXPECT_NE(split({{"Regex", "^a"}}, "Isolated", false).find("the anchor '^'"), std::string::npos);
  EXPECT_NE(split({{"Regex", "[[:alpha:]]"}}, "Isolated", false).find("POSIX bracket"), std::string::npos);
  // ByteLevel must end the sequence.
  Tiny t;
  t.pre_tokenizer = llama3_pre();
  std::swap(t.pre_tokenizer["pretokenizers"][0], t.pre_tokenizer["pretokenizers"][1]);
  EXPECT_NE(error_of([&] {
              load(t.tokenizer_json());
            }).find("pretokenizers[0].type 'ByteLevel' is not supported before the end"),
            std::string::npos);
  // Specials must name tokens; EOS is required.
  EXPECT_NE(error_of([&] {
              tokenizer_from_record(record_of(good, "<s>", "<nope>"), "rec");
            }).find("rec: eos_token '<nope>' is not a token"),
            std::string::npos);
  EXPECT_NE(
      error_of([&] { tokenizer_from_record(record_of(good, "<s>", nullptr), "rec"); }).find("eos_token is missing"),
      std::string::npos);
}

// Meta's Llama 3 post-processor prepends BOS: accepted when bos_token names the same token (Headroom
// prepends it), refused otherwise; [A, EOS] cannot be mirrored (RefusalsNameTheKeyAndValue).
TEST(HfTokenizer, PostProcessorThatPrependsBos) {
  json j = Tiny{}.tokenizer_json();
  const json bos = {{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}};
  const json a = {{"Sequence", {{"id", "A"}, {"type_id", 0}}}};
  const json byte_level = {
      {"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", false}, {"use_regex", true}};
  const json tmpl = {{"type", "TemplateProcessing"}, {"single", json::array({bos, a})}};
  j["post_processor"] = {{"type", "Sequence"}, {"processors", json::array({byte_level, tmpl})}};
  EXPECT_EQ(bos_id(tokenizer_from_record(record_of(j, "<s>", "</s>"), "rec")), 256);
  EXPECT_NE(error_of([&] {
              tokenizer_from_record(record_of(j, nullptr, "</s>"), "rec");
            }).find("rec: the post_processor prepends '<s>' but bos_token is null"),
            std::string::npos);
}

// unk_token can never be emitted when every byte is in the vocab; otherwise it is refused.
TEST(HfTokenizer, UnkTokenOnlyWhenUnreachable) {
  json j = Tiny{}.tokenizer_json();
  j["model"]["unk_token"] = "<s>";
  EXPECT_NO_THROW(load(j));
  j["model"]["vocab"].erase(bl("\x01"));
  EXPECT_NE(error_of([&] { load(j); }).find("model.unk_token '<s>' is not supported when a byte"), std::string::npos);
}

TEST(HfTokenizer, SpecialsAndRecord) {
  const Tokenizer native{};
  EXPECT_EQ(bos_id(native), kBos);
  EXPECT_EQ(eos_id(native), kEos);
  EXPECT_EQ(pad_id(native), kPad);
  EXPECT_EQ(tokenizer_record(native), "");

  const json j = Tiny{}.tokenizer_json();
  const Tokenizer qwen_like = tokenizer_from_record(record_of(j, nullptr, "</s>"), "rec");
  EXPECT_FALSE(bos_id(qwen_like).has_value());
  EXPECT_EQ(eos_id(qwen_like), 257);
  EXPECT_EQ(pad_id(qwen_like), 257);  // no pad: EOS
  EXPECT_TRUE(bos_prefix(qwen_like).empty());

  const Tokenizer tok = tokenizer_from_record(record_of(j, "<s>", "</s>", "<s>"), "rec");
  EXPECT_EQ(bos_id(tok), 256);
  EXPECT_EQ(pad_id(tok), 256);
  EXPECT_EQ(vocab_size(tok), 258);
  const std::string id = tokenizer_id(tok);
  EXPECT_EQ(id.substr(0, 6), "hf258-");
  EXPECT_EQ(id.size(), 6u + 16u);
  const Tokenizer back = tokenizer_from_record(tokenizer_record(tok), "back");
  EXPECT_EQ(tokenizer_id(back), id);
  EXPECT_EQ(tokenizer_record(back), tokenizer_record(tok));
  EXPECT_EQ(to_tokenizer_json(back), j.dump());  // verbatim

  // A model directory: tokenizer_config.json names the specials as strings or {"content": ...}.
  const fs::path dir = fs::temp_directory_path() / "headroom_test_hf_tokenizer";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "tokenizer.json") << j.dump(2);
  EXPECT_NE(
      error_of([&] { load_hf_tokenizer_dir(dir / "tokenizer.json"); }).find("tokenizer_config.json: no such file"),
      std::string::npos);
  std::ofstream(dir / "tokenizer_config.json")
      << R"({"bos_token": {"content": "<s>", "lstrip": false}, "eos_token": "</s>"})";
  const Tokenizer from_dir = load_any_tokenizer(dir.string());
  EXPECT_EQ(bos_id(from_dir), 256);
  EXPECT_EQ(eos_id(from_dir), 257);
  EXPECT_EQ(to_tokenizer_json(from_dir), j.dump(2));
  EXPECT_EQ(tokenizer_id(load_any_tokenizer((dir / "tokenizer.json").string())), tokenizer_id(from_dir));
  fs::remove_all(dir);
}

TEST(HfTokenizer, StoredInShardsAndCheckpoints) {
  const json j = Tiny{}.tokenizer_json();
  const Tokenizer tok = tokenizer_from_record(record_of(j), "rec");
  const fs::path path = fs::temp_directory_path() / "headroom_test_hf_tokenizer_shard.h5";
  ShardContents c;
  c.tokens = {256, 'a', 'b', 256, 'c'};
  c.doc_offsets = {0, 3, 5};
  c.n_bytes = 3;
  write_shard(path, c, tok, ShardMeta{"train", ""});
  const ShardReader s = open_shard(path, tokenizer_id(tok));
  EXPECT_EQ(tokenizer_id(read_shard_tokenizer(s)), tokenizer_id(tok));
  fs::remove(path);

  io::CheckpointInfo info;
  info.path = "ckpt.h5";
  info.tokenizer_id = tokenizer_id(tok);
  info.tokenizer_hf = tokenizer_record(tok);
  EXPECT_EQ(tokenizer_id(eval::checkpoint_tokenizer(info, 258)), tokenizer_id(tok));
  info.tokenizer_id = "hf258-0000000000000000";
  EXPECT_NE(error_of([&] { eval::checkpoint_tokenizer(info, 258); }).find("/tokenizer/hf make"), std::string::npos);
}

// Headroom's BPE written as tokenizer.json and read back encodes as Headroom's encoder does,
// including the 256-byte chunk cuts of ASCII runs (compare_js.sh checks it with Hugging Face's).
TEST(HfTokenizer, NativeBpeAsTokenizerJson) {
  const std::string text =
      "The quick brown fox jumps over the lazy dog. 1234567 numbers, don't stop!\n\n  indented\ttabs "
      "naïve café 日本語 -- punctuation!!! again the the the";
  const std::vector<std::string_view> docs{text};
  const Tokenizer native = train_bpe(docs, 400);
  const fs::path dir = fs::temp_directory_path() / "headroom_test_hf_native";
  fs::remove_all(dir);
  fs::create_directories(dir);
  save_hf_tokenizer_dir(native, dir);
  const Tokenizer hf = load_any_tokenizer(dir.string());
  EXPECT_EQ(bos_id(hf), kBos);
  EXPECT_EQ(eos_id(hf), kEos);
  EXPECT_EQ(pad_id(hf), kPad);
  EXPECT_EQ(vocab_size(hf), vocab_size(native));
  for (const std::string& s :
       std::vector<std::string>{text, std::string(700, 'a'), " " + std::string(600, 'b'), std::string(600, ' ') + "x",
                                std::string(300, '\t') + " y", std::string(530, '!'), "\v\f\r\n x  \t y ",
                                "a\xc2\xa0"
                                "b \xc2\x85 c"}) {
    EXPECT_EQ(enc(hf, s), enc(native, s)) << s.substr(0, 40);
    EXPECT_EQ(decode(hf, enc(hf, s)), s);
  }
  fs::remove_all(dir);
}

// eval.template = chat: the role markers come from the tokenizer's special tokens, the user turn
// and the answer's start are framed as the model's chat template renders them, and the markers
// encode to their single special ids (split out of the text like any added token).
TEST(HfTokenizer, ChatMarkers) {
  Tiny t;
  for (const char* c : {"<|im_start|>", "<|im_end|>", "<think>", "</think>"})
    t.added.push_back({{"content", c}, {"special", true}});
  const auto qwen = load(t.tokenizer_json());
  const auto m = chat_markers(qwen);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->name, "chatml+nothink");
  eval::PromptBuilder chat(qwen, PromptTemplate::kChat);
  EXPECT_EQ(chat.text("Q?", " Answer:"),
            "<|im_start|>user\nQ?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nAnswer:");
  const std::vector<int32_t> ids = chat.ids("Q?", "");
  EXPECT_EQ(ids.front(), qwen.hf->added_ids.at("<s>"));  // the tiny tokenizer's BOS
  EXPECT_EQ(ids[1], qwen.hf->added_ids.at("<|im_start|>"));
  EXPECT_NE(std::find(ids.begin(), ids.end(), qwen.hf->added_ids.at("</think>")), ids.end());

  Tiny l;
  for (const char* c : {"<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"})
    l.added.push_back({{"content", c}, {"special", true}});
  const auto llama = load(l.tokenizer_json());
  EXPECT_EQ(
      eval::PromptBuilder(llama, PromptTemplate::kChat).text("Q?", ""),
      "<|start_header_id|>user<|end_header_id|>\n\nQ?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");

  // No markers (a plain HF tokenizer, or Headroom's own): refused by name, base still works.
  const auto plain = load(Tiny().tokenizer_json());
  EXPECT_FALSE(chat_markers(plain));
  EXPECT_NE(error_of([&] { eval::PromptBuilder(plain, PromptTemplate::kChat); }).find("eval.template = chat"),
            std::string::npos);
  EXPECT_FALSE(chat_markers(Tokenizer{}));
  EXPECT_EQ(eval::PromptBuilder(plain, PromptTemplate::kBase).text("Q?", " A:"), "Q? A:");
}

}  // namespace
