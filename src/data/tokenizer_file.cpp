#include "data/tokenizer_file.h"

#include <charconv>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <unordered_set>

#include "io/atomic_file.h"
#include "util/error.h"

namespace headroom::data {

namespace {

constexpr std::string_view kMagic = "headroom-tokenizer";
constexpr int64_t kMaxMerges = (int64_t{1} << 20) - kFirstMerge;

class Lines {
 public:
  Lines(const std::filesystem::path& path, std::string text) : path_(path.string()), text_(std::move(text)) {}

  // The next line without its '\n'; fails if the file ends first (what names what was expected).
  std::string_view next(std::string_view what) {
    if (pos_ >= text_.size())
      fail("tokenizer file ", path_, ":", line_ + 1, ": truncated: expected ", what, ", found end of file");
    const size_t end = text_.find('\n', pos_);
    ++line_;
    if (end == std::string::npos) fail("tokenizer file ", path_, ":", line_, ": truncated: line has no line end");
    std::string_view line(text_.data() + pos_, end - pos_);
    pos_ = end + 1;
    return line;
  }
  bool at_end() const { return pos_ >= text_.size(); }
  int64_t line() const { return line_; }

  template <class... Args>
  [[noreturn]] void error(const Args&... args) const {
    fail("tokenizer file ", path_, ":", line_, ": ", args...);
  }

  // Parses a non-negative decimal integer that is the whole of s.
  int64_t number(std::string_view s, std::string_view what) const {
    int64_t v = 0;
    const char* end = s.data() + s.size();
    const auto [p, ec] = std::from_chars(s.data(), end, v);
    if (s.empty() || s[0] == '-' || ec != std::errc() || p != end)
      error("bad ", what, " '", s, "' (expected a non-negative decimal integer)");
    return v;
  }

  // Parses "key value" and returns value.
  std::string_view keyed(std::string_view key) {
    const std::string_view line = next(key);
    if (line.size() <= key.size() + 1 || line.substr(0, key.size()) != key || line[key.size()] != ' ')
      error("expected '", key, " <value>', found '", line, "'");
    return line.substr(key.size() + 1);
  }

 private:
  std::string path_;
  std::string text_;
  size_t pos_ = 0;
  int64_t line_ = 0;
};

}  // namespace

void save_tokenizer(const Tokenizer& tok, const std::filesystem::path& path) {
  validate(tok);
  std::string text = cat(kMagic, " 1\ntype ", tok.merges.empty() ? "byte" : "bpe", "\nvocab_size ", vocab_size(tok),
                         "\nmerges ", tok.merges.size(), "\n");
  for (const auto& [l, r] : tok.merges) {
    text += std::to_string(l);
    text += ' ';
    text += std::to_string(r);
    text += '\n';
  }
  io::write_file_atomic(path, text);
}

Tokenizer load_tokenizer(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("tokenizer file ", path.string(), ": cannot open");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) fail("tokenizer file ", path.string(), ": read failed");
  Lines lines(path, std::move(text));

  const std::string_view header = lines.next("the header line");
  if (header.substr(0, kMagic.size() + 1) != cat(kMagic, " "))
    lines.error("bad header '", header, "' (expected '", kMagic, " 1')");
  if (header.substr(kMagic.size() + 1) != "1")
    lines.error("unsupported version '", header.substr(kMagic.size() + 1), "' (expected 1)");

  const std::string_view type = lines.keyed("type");
  if (type != "byte" && type != "bpe") lines.error("unknown type '", type, "' (expected byte or bpe)");
  const int64_t vocab = lines.number(lines.keyed("vocab_size"), "vocab_size");
  const int64_t vocab_line = lines.line();
  const int64_t count = lines.number(lines.keyed("merges"), "merge count");
  if (count > kMaxMerges) lines.error("merge count ", count, " exceeds the maximum ", kMaxMerges);
  if (vocab != kFirstMerge + count)
    fail("tokenizer file ", path.string(), ":", vocab_line, ": vocab_size ", vocab, " does not match ", count,
         " merges (expected ", kFirstMerge + count, ")");
  if ((type == "byte") != (count == 0)) lines.error("type ", type, " does not match ", count, " merges");

  Tokenizer tok;
  tok.merges.reserve(size_t(count));
  std::unordered_set<uint64_t> seen;
  seen.reserve(size_t(count) * 2);
  for (int64_t i = 0; i < count; ++i) {
    if (lines.at_end())
      fail("tokenizer file ", path.string(), ":", lines.line() + 1, ": truncated: expected ", count, " merges, found ",
           i);
    const std::string_view line = lines.next("a merge line");
    const size_t space = line.find(' ');
    if (space == std::string_view::npos) lines.error("expected 'left right', found '", line, "'");
    const int64_t self = kFirstMerge + i;
    int64_t parts[2] = {lines.number(line.substr(0, space), "left id"),
                        lines.number(line.substr(space + 1), "right id")};
    for (const int64_t p : parts) {
      if (p >= self) lines.error("merge ", i, " (id ", self, ") references id ", p, ", which is not below its own id");
      if (p == kBos || p == kEos || p == kPad)
        lines.error("merge ", i, " (id ", self, ") references the special id ", p);
    }
    const uint64_t key = (uint64_t(parts[0]) << 32) | uint64_t(parts[1]);
    if (!seen.insert(key).second)
      lines.error("merge ", i, " (id ", self, ") repeats the pair ", parts[0], " ", parts[1]);
    tok.merges.emplace_back(int32_t(parts[0]), int32_t(parts[1]));
  }
  if (!lines.at_end())
    fail("tokenizer file ", path.string(), ":", lines.line() + 1, ": unexpected content after the ", count,
         " merges declared");
  return tok;
}

}  // namespace headroom::data
