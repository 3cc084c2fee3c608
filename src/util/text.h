// Trimming, splitting the comma-separated lists that config keys hold ("a, b,c"), and the
// replace / join / {placeholder} helpers of the prompt templates.
#pragma once

#include <initializer_list>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace headroom {

// `s` without leading and trailing spaces, tabs and carriage returns (CRLF files).
inline std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r"), b = s.find_last_not_of(" \t\r");
  return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
}

// Items of `s` split at `sep`, trimmed, empty items dropped.
inline std::vector<std::string> split_list(const std::string& s, char sep = ',') {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, sep))
    if (std::string t = trim(item); !t.empty()) out.push_back(std::move(t));
  return out;
}

// Every occurrence of `from` replaced by `to`, scanning left to right (Python's str.replace).
inline std::string replace_all(std::string s, std::string_view from, std::string_view to) {
  if (from.empty()) return s;
  std::string out;
  size_t pos = 0, hit;
  while ((hit = s.find(from, pos)) != std::string::npos) {
    out.append(s, pos, hit - pos).append(to);
    pos = hit + from.size();
  }
  out.append(s, pos, std::string::npos);
  return out;
}

inline std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

// Fills {name} placeholders: fill("a {x} b", {{"x", "1"}}) == "a 1 b".
inline std::string fill(std::string s, std::initializer_list<std::pair<std::string_view, std::string_view>> values) {
  for (const auto& [name, value] : values) {
    std::string slot(1, '{');
    slot.append(name).push_back('}');
    s = replace_all(std::move(s), slot, value);
  }
  return s;
}

}  // namespace headroom
