#include "eval/scoring.h"

#include <algorithm>

namespace headroom::eval {
namespace {

bool py_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f); }

std::string_view strip(std::string_view s) {
  while (!s.empty() && py_space(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && py_space(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

bool is_punct(unsigned char c) {  // Python's string.punctuation
  return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126);
}

bool is_ascii_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f); }

double contains_lower(const std::string& pred_lower, const std::string& ref) {
  return pred_lower.find(lower(ref)) != std::string::npos ? 1.0 : 0.0;
}

}  // namespace

const char* metric_name(Metric m) {
  switch (m) {
    case Metric::kMatchAll:
      return "string_match_all";
    case Metric::kMatchPart:
      return "string_match_part";
    case Metric::kSubstringExact:
      return "substring_exact_match";
  }
  return "";
}

std::string postprocess_prediction(std::string_view prediction) {
  std::string s(strip(prediction));
  for (char& c : s)
    if (static_cast<unsigned char>(c) <= 0x1f) c = '\n';
  return std::string(strip(s));
}

double string_match_all(std::string_view prediction, const std::vector<std::string>& references) {
  if (references.empty()) return 0;
  const std::string p = lower(prediction);
  double sum = 0;
  for (const auto& r : references) sum += contains_lower(p, r);
  return sum / static_cast<double>(references.size());
}

double string_match_part(std::string_view prediction, const std::vector<std::string>& references) {
  const std::string p = lower(prediction);
  double best = 0;
  for (const auto& r : references) best = std::max(best, contains_lower(p, r));
  return best;
}

std::string normalize_answer(std::string_view s) {
  std::string no_punct;
  for (char c : lower(s))
    if (!is_punct(static_cast<unsigned char>(c))) no_punct += c;
  std::string out;
  size_t i = 0;
  while (i < no_punct.size()) {
    while (i < no_punct.size() && is_ascii_space(static_cast<unsigned char>(no_punct[i]))) ++i;
    size_t j = i;
    while (j < no_punct.size() && !is_ascii_space(static_cast<unsigned char>(no_punct[j]))) ++j;
    const std::string_view word(no_punct.data() + i, j - i);
    if (!word.empty() && word != "a" && word != "an" && word != "the") {
      if (!out.empty()) out += ' ';
      out += word;
    }
    i = j;
  }
  return out;
}

double substring_exact_match(std::string_view prediction, const std::vector<std::string>& references) {
  const std::string p = normalize_answer(prediction);
  for (const auto& r : references)
    if (p.find(normalize_answer(r)) != std::string::npos) return 1.0;
  return 0.0;
}

double score_prediction(Metric metric, std::string_view prediction, const std::vector<std::string>& references) {
  switch (metric) {
    case Metric::kMatchAll:
      return string_match_all(postprocess_prediction(prediction), references);
    case Metric::kMatchPart:
      return string_match_part(postprocess_prediction(prediction), references);
    case Metric::kSubstringExact:
      return substring_exact_match(prediction, references);
  }
  return 0;
}

}  // namespace headroom::eval
