// Tokenizer tests: pre-split rule, byte-level and BPE encode/decode round trips, encoder against a
// naive reference BPE, BPE training (determinism, compression, against a naive full-recount trainer),
// tokenizer files and their error paths.
//
// validation/data/sample_english.txt: quotations attributed to Mark Twain, Shakespeare, Dickens,
// Lewis Carroll, Conan Doyle, Wilde, Keats, Milton, Samuel Johnson and Walter Scott, taken from
// Debian's fortunes-min files (public-domain authors only).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "data/bpe_train.h"
#include "data/tokenizer.h"
#include "data/tokenizer_file.h"
#include "util/error.h"

namespace fs = std::filesystem;
using namespace headroom::data;
using headroom::Error;

namespace {

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// $HEADROOM_SOURCE_DIR/validation/data/sample_english.txt, else the copy next to this source.
fs::path sample_path() {
  if (const char* dir = std::getenv("HEADROOM_SOURCE_DIR")) {
    const fs::path p = fs::path(dir) / "validation/data/sample_english.txt";
    if (fs::exists(p)) return p;
  }
  return fs::path(__FILE__).parent_path().parent_path() / "data/sample_english.txt";
}

const std::string& sample() {
  static const std::string text = read_file(sample_path());
  return text;
}

TEST(Sample, IsThere) { ASSERT_GT(sample().size(), 20000u) << sample_path(); }

// The sample split into documents at blank lines (one quotation each).
std::vector<std::string_view> sample_docs() {
  std::vector<std::string_view> docs;
  const std::string_view s = sample();
  size_t pos = 0;
  while (pos < s.size()) {
    size_t end = s.find("\n\n", pos);
    end = end == std::string_view::npos ? s.size() : end + 2;
    docs.push_back(s.substr(pos, end - pos));
    pos = end;
  }
  return docs;
}

const Tokenizer& trained(int32_t vocab) {
  static std::map<int32_t, Tokenizer> cache;
  auto it = cache.find(vocab);
  if (it == cache.end()) {
    const auto docs = sample_docs();
    it = cache.emplace(vocab, train_bpe(docs, vocab)).first;
  }
  return it->second;
}

std::vector<std::string> chunks(std::string_view s) {
  std::vector<std::string> out;
  for_each_chunk(s, [&](std::string_view c) { out.emplace_back(c); });
  return out;
}

std::vector<int32_t> encode(const Tokenizer& tok, std::string_view s) {
  Encoder enc(tok);
  std::vector<int32_t> out;
  enc.encode(s, out);
  return out;
}

// Naive reference BPE: split with for_each_chunk, then for each merge in rank order replace every
// occurrence left to right (equivalent to "merge the lowest-ranked adjacent pair until none is left",
// since a pair that contains merge r's token has a rank above r).
std::vector<int32_t> reference_encode(const Tokenizer& tok, std::string_view s) {
  std::vector<int32_t> out;
  for_each_chunk(s, [&](std::string_view c) {
    std::vector<int32_t> ids;
    for (const char ch : c) ids.push_back(static_cast<unsigned char>(ch));
    for (size_t r = 0; r < tok.merges.size() && ids.size() > 1; ++r) {
      std::vector<int32_t> next;
      for (size_t i = 0; i < ids.size();) {
        if (i + 1 < ids.size() && ids[i] == tok.merges[r].first && ids[i + 1] == tok.merges[r].second) {
          next.push_back(kFirstMerge + int32_t(r));
          i += 2;
        } else {
          next.push_back(ids[i++]);
        }
      }
      ids.swap(next);
    }
    out.insert(out.end(), ids.begin(), ids.end());
  });
  return out;
}

// Naive reference trainer: full recount of every pair before each merge.
Tokenizer reference_train(const std::vector<std::string_view>& docs, int32_t vocab) {
  std::map<std::string, int64_t> counts;
  for (const auto d : docs) for_each_chunk(d, [&](std::string_view c) { ++counts[std::string(c)]; });
  std::vector<std::pair<std::vector<int32_t>, int64_t>> words;
  for (const auto& [w, c] : counts) {
    std::vector<int32_t> ids;
    for (const char ch : w) ids.push_back(static_cast<unsigned char>(ch));
    words.emplace_back(ids, c);
  }
  Tokenizer tok;
  for (int32_t m = 0; m < vocab - kFirstMerge; ++m) {
    std::map<std::pair<int32_t, int32_t>, int64_t> pairs;
    for (const auto& [ids, c] : words)
      for (size_t i = 0; i + 1 < ids.size(); ++i) pairs[{ids[i], ids[i + 1]}] += c;
    std::pair<int32_t, int32_t> best{};
    int64_t best_count = 0;
    for (const auto& [p, c] : pairs)  // map order: left asc, right asc; strict > keeps the first
      if (c > best_count) {
        best = p;
        best_count = c;
      }
    if (best_count < 2) break;
    tok.merges.push_back(best);
    for (auto& [ids, c] : words) {
      std::vector<int32_t> next;
      for (size_t i = 0; i < ids.size();) {
        if (i + 1 < ids.size() && ids[i] == best.first && ids[i + 1] == best.second) {
          next.push_back(kFirstMerge + m);
          i += 2;
        } else {
          next.push_back(ids[i++]);
        }
      }
      ids.swap(next);
    }
  }
  return tok;
}

std::string random_bytes(std::mt19937_64& rng, size_t n) {
  std::string s(n, '\0');
  for (auto& c : s) c = char(rng() & 0xff);
  return s;
}

// Random strings biased towards the interesting cases: all byte values, NUL, invalid UTF-8, long runs
// of whitespace, runs of one class, English fragments.
std::vector<std::string> nasty_strings() {
  std::mt19937_64 rng(1234);
  std::vector<std::string> out;
  std::string all;
  for (int b = 0; b < 256; ++b) all += char(b);
  out.push_back(all);
  out.push_back(std::string(1, '\0'));
  out.push_back(std::string("a\0b\0\0 c", 7));
  out.push_back("\xff\xfe\xc3\x28\xa0\xa1\xe2\x28\xa1\xf0\x90\x28\xbc\x80 \xc0\xaf");
  out.push_back(std::string(5000, ' '));
  out.push_back(std::string(3000, '\n') + "x" + std::string(700, '\t') + " y " + std::string(300, ' '));
  out.push_back(std::string(10000, 'e'));
  out.push_back(std::string(1000, '9') + "  " + std::string(999, '.'));
  out.push_back("");
  out.push_back(" ");
  out.push_back("héllo wörld — naïve café ✓ 日本語テキスト");
  for (int i = 0; i < 40; ++i) out.push_back(random_bytes(rng, 1 + rng() % 2000));
  const std::string_view alphabet[] = {" ",    "  ", "\n", "\t",  "the",  " the", "e",    "th",  "\xc3",
                                       "\xa9", "\0", ".",  "123", " and", "ing",  "\r\n", "\xff"};
  for (int i = 0; i < 40; ++i) {
    std::string s;
    const size_t n = rng() % 400;
    for (size_t k = 0; k < n; ++k) s += alphabet[rng() % std::size(alphabet)];
    out.push_back(s);
  }
  return out;
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Pre-split

TEST(PreSplit, Examples) {
  using V = std::vector<std::string>;
  EXPECT_EQ(chunks("Hello, world!  The  1984 cats\n\nran"),
            (V{"Hello", ",", " world", "!", " ", " The", " ", " 1984", " cats", "\n\n", "ran"}));
  EXPECT_EQ(chunks("a \n b"), (V{"a", " \n", " b"}));
  EXPECT_EQ(chunks("x   "), (V{"x", "   "}));
  EXPECT_EQ(chunks("   x"), (V{"  ", " x"}));
  EXPECT_EQ(chunks("\tx"), (V{"\t", "x"}));
  EXPECT_EQ(chunks("don't stop..."), (V{"don", "'", "t", " stop", "..."}));
  EXPECT_EQ(chunks("abc123def"), (V{"abc", "123", "def"}));
  EXPECT_EQ(chunks(" ... ?!"), (V{" ...", " ?!"}));
  EXPECT_EQ(chunks("héllo wörld"), (V{"héllo", " wörld"}));
  EXPECT_EQ(chunks(std::string("a\0\0b", 4)), (V{"a", std::string("\0\0", 2), "b"}));
  EXPECT_EQ(chunks(""), V{});
}

TEST(PreSplit, LongRunsAreCut) {
  const auto c = chunks(std::string(1000, 'a'));
  ASSERT_EQ(c.size(), 4u);
  EXPECT_EQ(c[0].size(), kMaxChunkBytes);
  EXPECT_EQ(c[3].size(), 1000 - 3 * kMaxChunkBytes);
}

TEST(PreSplit, ChunksConcatenateBack) {
  for (const auto& s : nasty_strings()) {
    std::string joined;
    for (const auto& c : chunks(s)) {
      ASSERT_FALSE(c.empty());
      ASSERT_LE(c.size(), kMaxChunkBytes);
      joined += c;
    }
    ASSERT_EQ(joined, s);
  }
}

// ---------------------------------------------------------------------------------------------
// Byte-level

TEST(ByteLevel, IdAndVocab) {
  const Tokenizer tok;
  EXPECT_EQ(vocab_size(tok), 259);
  EXPECT_EQ(tokenizer_id(tok), "byte");
}

TEST(ByteLevel, RoundTrip) {
  const Tokenizer tok;
  Encoder enc(tok);
  for (const auto& s : nasty_strings()) {
    std::vector<int32_t> ids = {7};  // encode appends
    enc.encode(s, ids);
    ASSERT_EQ(ids.size(), s.size() + 1);
    for (size_t i = 0; i < s.size(); ++i) ASSERT_EQ(ids[i + 1], int32_t(static_cast<unsigned char>(s[i])));
    ids.erase(ids.begin());
    ASSERT_EQ(decode(tok, ids), s);
  }
  std::vector<int32_t> ids;
  enc.encode(sample(), ids);
  EXPECT_EQ(decode(tok, ids), sample());
}

TEST(ByteLevel, DecodeSpecialsAndErrors) {
  const Tokenizer tok;
  const std::vector<int32_t> ids = {kBos, 'h', kPad, 'i', kEos};
  EXPECT_EQ(decode(tok, ids), "hi");
  const std::vector<int32_t> bad = {'a', 259};
  const std::string e = error_of([&] { decode(tok, bad); });
  EXPECT_NE(e.find("259"), std::string::npos) << e;
  const std::vector<int32_t> neg = {-5};
  EXPECT_NE(error_of([&] { decode(tok, neg); }).find("-5"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// BPE encode / decode

TEST(Bpe, HandBuiltMerges) {
  Tokenizer tok;
  tok.merges = {{'a', 'a'}, {259, 'a'}, {'b', 'c'}};  // 259 = "aa", 260 = "aaa", 261 = "bc"
  EXPECT_EQ(encode(tok, "aaa"), (std::vector<int32_t>{260}));
  EXPECT_EQ(encode(tok, "aaaa"), (std::vector<int32_t>{259, 259}));
  EXPECT_EQ(encode(tok, "aaaaa"), (std::vector<int32_t>{259, 260}));  // rank order, not longest
  EXPECT_EQ(encode(tok, "abcbc a"), (std::vector<int32_t>{'a', 261, 261, ' ', 'a'}));
  EXPECT_EQ(encode(tok, "a a"), (std::vector<int32_t>{'a', ' ', 'a'}));  // merges stay inside chunks
  EXPECT_EQ(decode(tok, std::vector<int32_t>{kBos, 260, 261, kEos}), "aaabc");
  const std::vector<int32_t> bad = {262};
  EXPECT_NE(error_of([&] { decode(tok, bad); }).find("262"), std::string::npos);
}

TEST(Bpe, RoundTripNastyStrings) {
  const Tokenizer& tok = trained(1024);
  Encoder enc(tok);
  for (const auto& s : nasty_strings()) {
    std::vector<int32_t> ids;
    enc.encode(s, ids);
    for (const int32_t id : ids) {
      ASSERT_GE(id, 0);
      ASSERT_LT(id, vocab_size(tok));
      ASSERT_TRUE(id < 256 || id >= kFirstMerge) << "special id emitted";
    }
    ASSERT_EQ(decode(tok, ids), s);
  }
}

TEST(Bpe, RoundTripEnglishAndCacheReuse) {
  const Tokenizer& tok = trained(1024);
  Encoder enc(tok);
  std::vector<int32_t> first, second;
  enc.encode(sample(), first);
  EXPECT_EQ(decode(tok, first), sample());
  enc.encode(sample(), second);  // now served from the cache
  EXPECT_EQ(first, second);
  EXPECT_GT(enc.cache_hits(), enc.cache_misses());
}

TEST(Bpe, MatchesReferenceEncoder) {
  const Tokenizer& tok = trained(1024);
  Encoder enc(tok);
  std::vector<int32_t> ids;
  enc.encode(sample(), ids);
  EXPECT_EQ(ids, reference_encode(tok, sample()));
  for (const auto& s : nasty_strings()) {
    ids.clear();
    enc.encode(s, ids);
    ASSERT_EQ(ids, reference_encode(tok, s));
  }
}

TEST(Bpe, CacheOverflowKeepsResults) {
  // More distinct chunks than the cache holds: it is emptied and refilled without changing output.
  const Tokenizer& tok = trained(512);
  Encoder enc(tok);
  std::mt19937_64 rng(99);
  std::string text;
  const char* letters = "etaoinshrdlucmfwyp";
  for (size_t i = 0; i < Encoder::kCacheMaxEntries + 20000; ++i) {
    text += ' ';
    const size_t len = 3 + rng() % 8;
    for (size_t k = 0; k < len; ++k) text += letters[rng() % 18];
  }
  std::vector<int32_t> ids;
  enc.encode(text, ids);
  EXPECT_LE(enc.cache_entries(), Encoder::kCacheMaxEntries);
  EXPECT_EQ(decode(tok, ids), text);
  const std::string_view head(text.data(), 20000);
  std::vector<int32_t> again;
  enc.encode(head, again);
  EXPECT_EQ(again, reference_encode(tok, head));
}

TEST(Bpe, EncoderRejectsMalformedTokenizer) {
  Tokenizer self_ref;
  self_ref.merges = {{'a', 259}};
  EXPECT_NE(error_of([&] { Encoder e(self_ref); }).find("merge 0"), std::string::npos);
  Tokenizer special;
  special.merges = {{'a', kEos}};
  EXPECT_THROW(Encoder e(special), Error);
  Tokenizer dup;
  dup.merges = {{'a', 'b'}, {'a', 'b'}};
  EXPECT_THROW(Encoder e(dup), Error);
}

TEST(Bpe, TokenizerId) {
  Tokenizer tok;
  tok.merges = {{'a', 'b'}, {259, 'c'}};
  // FNV-1a 64 over the little-endian bytes of 97, 98, 259, 99.
  uint64_t h = 0xcbf29ce484222325ull;
  for (const uint32_t v : {97u, 98u, 259u, 99u})
    for (int i = 0; i < 4; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 0x100000001b3ull;
    }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  EXPECT_EQ(tokenizer_id(tok), std::string("bpe261-") + hex);
  Tokenizer other = tok;
  other.merges[1].second = 'd';
  EXPECT_NE(tokenizer_id(other), tokenizer_id(tok));
}

// ---------------------------------------------------------------------------------------------
// Training

TEST(Train, DeterministicAndOrderIndependent) {
  auto docs = sample_docs();
  const Tokenizer a = train_bpe(docs, 800);
  const Tokenizer b = train_bpe(docs, 800);
  EXPECT_EQ(a.merges, b.merges);
  EXPECT_EQ(tokenizer_id(a), tokenizer_id(b));
  std::reverse(docs.begin(), docs.end());
  const Tokenizer c = train_bpe(docs, 800);
  EXPECT_EQ(a.merges, c.merges);
  EXPECT_EQ(vocab_size(a), 800);
  EXPECT_EQ(tokenizer_id(a).substr(0, 7), "bpe800-");
}

TEST(Train, MatchesNaiveTrainer) {
  const auto all = sample_docs();
  const std::vector<std::string_view> docs(all.begin(), all.begin() + 40);
  const Tokenizer fast = train_bpe(docs, 420);
  const Tokenizer slow = reference_train(docs, 420);
  EXPECT_EQ(fast.merges, slow.merges);
  // Adversarial repeats (overlapping pairs such as "aaaa") and mixed classes.
  const std::vector<std::string_view> odd = {"aaaa aaa aaaaaaa abab ababab", "aaaa\n\n\n  xyxyxy 1111 11",
                                             "abababab aaaa bbbb ab"};
  EXPECT_EQ(train_bpe(odd, 300).merges, reference_train(odd, 300).merges);
}

TEST(Train, Compresses) {
  const Tokenizer& tok = trained(1024);
  const auto ids = encode(tok, sample());
  const double tokens_per_byte = double(ids.size()) / double(sample().size());
  EXPECT_LT(tokens_per_byte, 0.45) << ids.size() << " tokens for " << sample().size() << " bytes";
}

TEST(Train, VocabBounds) {
  const std::vector<std::string_view> docs = {"the cat the hat the bat"};
  EXPECT_NE(error_of([&] { train_bpe(docs, 258); }).find("258"), std::string::npos);
  EXPECT_THROW(train_bpe(docs, (1 << 20) + 1), Error);
  EXPECT_THROW(train_bpe(docs, -1), Error);
  EXPECT_TRUE(train_bpe(docs, 259).merges.empty());
  EXPECT_LT(vocab_size(train_bpe(docs, 1 << 20)), 300);  // stops early
}

TEST(Train, StopsEarlyWhenNoPairRepeats) {
  const std::vector<std::string_view> none = {"ab", "cd ef"};
  EXPECT_TRUE(train_bpe(none, 400).merges.empty());
  const std::vector<std::string_view> one = {"abab"};
  const Tokenizer t = train_bpe(one, 400);
  EXPECT_EQ(t.merges, (std::vector<std::pair<int32_t, int32_t>>{{'a', 'b'}}));
  const std::vector<std::string_view> empty;
  EXPECT_TRUE(train_bpe(empty, 400).merges.empty());
}

TEST(Train, ReportsProgress) {
  const auto docs = sample_docs();
  std::vector<std::pair<int32_t, int32_t>> calls;
  train_bpe(docs, 300, [&](int32_t done, int32_t total) { calls.emplace_back(done, total); });
  ASSERT_EQ(calls.size(), 41u);
  EXPECT_EQ(calls.front(), std::make_pair(1, 41));
  EXPECT_EQ(calls.back(), std::make_pair(41, 41));
}

// ---------------------------------------------------------------------------------------------
// Files

class TokenizerFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("headroom_tok_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }

  // Loads text and returns the error; checks that it names the file and, if line > 0, the line.
  std::string load_error(const std::string& text, int line) {
    const fs::path p = write("bad.tok", text);
    const std::string e = error_of([&] { load_tokenizer(p); });
    EXPECT_NE(e.find(p.string()), std::string::npos) << e;
    if (line > 0) {
      EXPECT_NE(e.find(p.string() + ":" + std::to_string(line) + ":"), std::string::npos) << e;
    }
    return e;
  }

  fs::path dir_;
};

TEST_F(TokenizerFile, RoundTrip) {
  const fs::path p = dir_ / "bpe.tok";
  const Tokenizer& tok = trained(1024);
  save_tokenizer(tok, p);
  EXPECT_FALSE(fs::exists(dir_ / "bpe.tok.tmp"));
  const Tokenizer back = load_tokenizer(p);
  EXPECT_EQ(back.merges, tok.merges);
  EXPECT_EQ(tokenizer_id(back), tokenizer_id(tok));
  const std::string text = read_file(p);
  EXPECT_EQ(text.substr(0, 50), "headroom-tokenizer 1\ntype bpe\nvocab_size 1024\nmerg");

  const fs::path b = dir_ / "byte.tok";
  save_tokenizer(Tokenizer{}, b);
  EXPECT_EQ(read_file(b), "headroom-tokenizer 1\ntype byte\nvocab_size 259\nmerges 0\n");
  EXPECT_TRUE(load_tokenizer(b).merges.empty());

  save_tokenizer(tok, b);  // overwrites
  EXPECT_EQ(load_tokenizer(b).merges, tok.merges);
}

TEST_F(TokenizerFile, SaveFailsCleanly) {
  EXPECT_NE(error_of([&] { save_tokenizer(Tokenizer{}, dir_ / "no_such_dir" / "x.tok"); }).find("x.tok"),
            std::string::npos);
  Tokenizer bad;
  bad.merges = {{300, 1}};
  EXPECT_THROW(save_tokenizer(bad, dir_ / "bad.tok"), Error);
  EXPECT_FALSE(fs::exists(dir_ / "bad.tok"));
}

TEST_F(TokenizerFile, LoadErrors) {
  const std::string head = "headroom-tokenizer 1\ntype bpe\nvocab_size 261\nmerges 2\n";
  // Sanity: the good file loads.
  const Tokenizer ok = load_tokenizer(write("ok.tok", head + "97 98\n259 99\n"));
  EXPECT_EQ(ok.merges.size(), 2u);

  EXPECT_NE(error_of([&] { load_tokenizer(dir_ / "missing.tok"); }).find("missing.tok"), std::string::npos);
  EXPECT_NE(load_error("", 1).find("truncated"), std::string::npos);
  EXPECT_NE(load_error("hello world\n", 1).find("bad header"), std::string::npos);
  EXPECT_NE(load_error("headroom-tokenizer 2\n", 1).find("version"), std::string::npos);
  EXPECT_NE(load_error("headroom-tokenizer 1\ntype wordpiece\n", 2).find("type"), std::string::npos);
  EXPECT_NE(load_error("headroom-tokenizer 1\ntype bpe\nvocab 261\n", 3).find("vocab_size"), std::string::npos);
  EXPECT_NE(load_error("headroom-tokenizer 1\ntype bpe\nvocab_size x1\n", 3).find("x1"), std::string::npos);
  EXPECT_NE(load_error("headroom-tokenizer 1\ntype bpe\nvocab_size 262\nmerges 2\n", 3).find("262"), std::string::npos);
  EXPECT_NE(load_error("headroom-tokenizer 1\ntype byte\nvocab_size 261\nmerges 2\n", 4).find("type byte"),
            std::string::npos);
  EXPECT_NE(load_error("headroom-tokenizer 1\ntype bpe\nvocab_size 259\nmerges 0\n", 4).find("type bpe"),
            std::string::npos);
  // Merge referencing an id not below its own id (merge 1 is id 260).
  EXPECT_NE(load_error(head + "97 98\n260 99\n", 6).find("260"), std::string::npos);
  EXPECT_NE(load_error(head + "97 98\n99 4000\n", 6).find("4000"), std::string::npos);
  EXPECT_NE(load_error(head + "97 257\n259 99\n", 5).find("special"), std::string::npos);
  EXPECT_NE(load_error(head + "97 98\n97 98\n", 6).find("repeats"), std::string::npos);
  EXPECT_NE(load_error(head + "97 -98\n259 99\n", 5).find("-98"), std::string::npos);
  EXPECT_NE(load_error(head + "97  98\n259 99\n", 5).find("bad"), std::string::npos);
  EXPECT_NE(load_error(head + "9798\n259 99\n", 5).find("left right"), std::string::npos);
  // Count mismatch: too few merge lines (truncated) or too many.
  EXPECT_NE(load_error(head + "97 98\n", 6).find("expected 2 merges, found 1"), std::string::npos);
  EXPECT_NE(load_error(head + "97 98\n259 99\n100 101\n", 7).find("after the 2 merges"), std::string::npos);
  // Truncated in the middle of a line.
  EXPECT_NE(load_error(head + "97 98\n259 9", 6).find("truncated"), std::string::npos);
}

// prepare --bpe-split-digits: no merge contains a digit, so every digit is one token, while the
// same text trained without the option does merge digits.
TEST(BpeTrain, SplitDigitsKeepsEveryDigitOneToken) {
  std::string text;
  for (int i = 0; i < 400; ++i) text += "the magic number is " + std::to_string(1000003 + 7919 * (i % 37)) + ". ";
  const std::vector<std::string_view> docs{text};
  const Tokenizer plain = train_bpe(docs, 400), split = train_bpe(docs, 400, {}, true);
  auto has_digit = [](const Tokenizer& t, int32_t id) {
    const std::string s = decode(t, std::vector<int32_t>{id});
    return s.find_first_of("0123456789") != std::string::npos;
  };
  int digit_merges_plain = 0;
  for (size_t m = 0; m < plain.merges.size(); ++m)
    digit_merges_plain += has_digit(plain, kFirstMerge + static_cast<int32_t>(m));
  EXPECT_GT(digit_merges_plain, 0) << "the text is made to merge digits without the option";
  for (size_t m = 0; m < split.merges.size(); ++m)
    EXPECT_FALSE(has_digit(split, kFirstMerge + static_cast<int32_t>(m))) << "merge " << m;
  std::vector<int32_t> ids;
  Encoder(split).encode(" 1234567", ids);
  EXPECT_EQ(ids.size(), 8u) << "a space and seven digits";
  EXPECT_GT(split.merges.size(), 10u) << "the words still merge";
}
