// samples.jsonl, evaluate's record of every generated sample: one JSON object per line, written by
// evaluate and read by analyze (per-sample seed pairs) and by the RULER prediction-file converter.
// The line format and its reader live here side by side.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace headroom::eval {

struct SampleRecord {
  std::string task;
  int64_t length = 0;           // the evaluated context length
  int64_t index = 0;            // sample index within (task, length)
  std::optional<double> score;  // in [0, 1]; empty when the sample was skipped
  int64_t tokens = 0;           // prompt tokens as the model saw them (scored samples)
  int64_t units = 0;            // haystack units in the prompt (scored samples)
  std::string prediction;
  std::vector<std::string> references;
  std::string input;    // the whole prompt text, written only when eval.ruler_pred is on
  std::string skipped;  // why the sample was skipped (skipped samples)
};

// One line, without the newline. Generated text may hold invalid UTF-8: it is replaced, so the line
// stays valid JSON whatever the model wrote.
std::string sample_line(const SampleRecord& s);
// One line back; throws headroom::Error saying which field is missing or malformed.
SampleRecord parse_sample_line(const std::string& line);
// A whole samples.jsonl (blank lines ignored); throws naming `origin` and the line number.
std::vector<SampleRecord> parse_sample_log(const std::string& text, const std::string& origin);

}  // namespace headroom::eval
