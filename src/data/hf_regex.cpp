// Oniguruma (what Hugging Face tokenizers compiles Split patterns with, Ruby syntax, no options)
// to ICU regex syntax. Only constructs that mean the same in both pass; the few that differ in
// meaning but matter for real tokenizers are rewritten; everything else is refused, since a
// pattern that quietly means something else would tokenize differently.
#include <cctype>
#include <string>
#include <string_view>

#include "data/hf_tokenizer.h"
#include "util/error.h"

namespace headroom::data {

namespace {

// General categories: \p{..} means the same in both engines for these.
bool known_category(std::string_view name) {
  static const char* const kNames[] = {"L",  "Lu", "Ll", "Lt", "Lm", "Lo", "M",  "Mn", "Mc", "Me", "N",  "Nd",
                                       "Nl", "No", "P",  "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "S",  "Sm",
                                       "Sc", "Sk", "So", "Z",  "Zs", "Zl", "Zp", "C",  "Cc", "Cf", "Co", "Cn"};
  for (const char* n : kNames)
    if (name == n) return true;
  return false;
}

bool all_hex(std::string_view s) {
  if (s.empty()) return false;
  for (const char c : s)
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

class Translator {
 public:
  Translator(const std::string& p, const std::string& what) : p_(p), what_(what) {}

  std::string run() {
    while (i_ < p_.size()) step();
    if (depth_ != 0) refuse("an unclosed character class");
    return out_;
  }

 private:
  [[noreturn]] void refuse(std::string_view construct) const {
    fail(what_, ": regex '", p_, "': ", construct, " at offset ", i_,
         " is not supported (its Oniguruma and ICU meanings differ or are unchecked)");
  }

  void step() {
    const char c = p_[i_];
    if (c == '\\') return escape();
    if (c == '[') return open_class();
    if (depth_ > 0) return in_class(c);
    if (c == '.') refuse("'.'");
    if (c == '^' || c == '$') refuse(cat("the anchor '", c, "'"));
    if (c == '(') return group();
    out_ += c;
    ++i_;
  }

  void in_class(char c) {
    if (c == ']') --depth_;
    if ((c == '&' || c == '-') && i_ + 1 < p_.size() && p_[i_ + 1] == c) refuse(cat("the class operator '", c, c, "'"));
    out_ += c;
    ++i_;
  }

  void open_class() {
    if (p_.compare(i_, 2, "[:") == 0) refuse("a POSIX bracket");
    size_t j = i_ + 1;
    if (j < p_.size() && p_[j] == '^') ++j;
    if (j < p_.size() && p_[j] == ']') refuse("a class starting with ']'");
    ++depth_;
    out_.append(p_, i_, j - i_);
    i_ = j;
  }

  void group() {
    static const char* const kOk[] = {"(?:", "(?i:", "(?=", "(?!", "(?<=", "(?<!"};
    if (p_.compare(i_, 2, "(?") != 0) {
      out_ += '(';
      ++i_;
      return;
    }
    for (const char* g : kOk) {
      const std::string_view s(g);
      if (p_.compare(i_, s.size(), s) == 0) {
        out_ += s;
        i_ += s.size();
        return;
      }
    }
    refuse("the group '" + p_.substr(i_, 4) + "...'");
  }

  void escape() {
    if (i_ + 1 >= p_.size()) refuse("a trailing backslash");
    const char c = p_[i_ + 1];
    switch (c) {
      // Oniguruma's \s is Unicode White_Space. ICU documents its \s as [\t\n\f\r\p{Z}] (no \v,
      // no U+0085) though ICU 72 implements White_Space; spelling it out does not depend on which.
      case 's':
        return emit("\\p{White_Space}", 2);
      case 'S':
        return emit("\\P{White_Space}", 2);
      case 'v':
        return emit("\\x{0B}", 2);  // ICU's \v is any vertical whitespace
      case 'd':
        return emit("\\p{Nd}", 2);
      case 'D':
        return emit("\\P{Nd}", 2);
      case 'r':
      case 'n':
      case 't':
      case 'f':
        return emit(p_.substr(i_, 2), 2);
      case 'p':
      case 'P':
        return property();
      case 'x':
        return hex_escape();
      case 'u':
        if (i_ + 6 <= p_.size() && all_hex(std::string_view(p_).substr(i_ + 2, 4))) return emit(p_.substr(i_, 6), 6);
        refuse("a malformed \\u escape");
      default:
        break;
    }
    if (static_cast<unsigned char>(c) < 0x80 && std::ispunct(static_cast<unsigned char>(c)))
      return emit(p_.substr(i_, 2), 2);  // an escaped metacharacter: literal in both
    refuse(cat("the escape '\\", c, "'"));
  }

  void property() {
    const size_t close = p_.find('}', i_);
    if (p_.compare(i_ + 2, 1, "{") != 0 || close == std::string::npos) refuse("a \\p without {name}");
    const std::string name = p_.substr(i_ + 3, close - i_ - 3);
    if (!known_category(name)) refuse("the property '" + name + "'");
    emit(p_.substr(i_, close + 1 - i_), close + 1 - i_);
  }

  void hex_escape() {
    if (p_.compare(i_ + 2, 1, "{") == 0) {
      const size_t close = p_.find('}', i_);
      if (close != std::string::npos && close - i_ - 3 <= 6 &&
          all_hex(std::string_view(p_).substr(i_ + 3, close - i_ - 3)))
        return emit(p_.substr(i_, close + 1 - i_), close + 1 - i_);
    } else if (i_ + 4 <= p_.size() && all_hex(std::string_view(p_).substr(i_ + 2, 2))) {
      return emit(p_.substr(i_, 4), 4);
    }
    refuse("a malformed \\x escape");
  }

  void emit(std::string_view s, size_t consumed) {
    out_ += s;
    i_ += consumed;
  }

  const std::string& p_;
  const std::string& what_;
  std::string out_;
  size_t i_ = 0;
  int depth_ = 0;
};

}  // namespace

std::string onig_to_icu(const std::string& pattern, const std::string& what) { return Translator(pattern, what).run(); }

}  // namespace headroom::data
