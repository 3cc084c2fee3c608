// Small string helpers shared by the task generators.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace headroom::eval {

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

// Golden-ratio sequence: sample index i gets a depth in [0, 1) such that any run of consecutive
// indices covers the unit interval evenly (a low-discrepancy sweep, like RULER's depth grid).
inline double sweep_depth(int64_t index, double offset) {
  const double x = static_cast<double>(index) * 0.6180339887498949 + offset;
  return x - static_cast<double>(static_cast<int64_t>(x));
}

}  // namespace headroom::eval
