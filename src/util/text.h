// Splitting the comma-separated lists that config keys hold ("a, b,c").
#pragma once

#include <sstream>
#include <string>
#include <vector>

namespace headroom {

// Items of `s` split at `sep`, spaces and tabs trimmed, empty items dropped.
inline std::vector<std::string> split_list(const std::string& s, char sep = ',') {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, sep)) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

}  // namespace headroom
