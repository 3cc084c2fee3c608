// Trimming, and splitting the comma-separated lists that config keys hold ("a, b,c").
#pragma once

#include <sstream>
#include <string>
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

}  // namespace headroom
