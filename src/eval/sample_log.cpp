#include "eval/sample_log.h"

#include "util/error.h"
#include "util/jsonl.h"

#include <nlohmann/json.hpp>

namespace headroom::eval {
namespace {

SampleRecord from_json(const nlohmann::json& j) {
  SampleRecord s;
  s.task = j.at("task").get<std::string>();
  s.length = j.at("length").get<int64_t>();
  s.index = j.at("index").get<int64_t>();
  if (!j.at("score").is_null()) {
    s.score = j["score"].get<double>();
    s.tokens = j.at("tokens").get<int64_t>();
    s.units = j.at("units").get<int64_t>();
    s.prediction = j.at("prediction").get<std::string>();
    s.references = j.at("references").get<std::vector<std::string>>();
    s.input = j.value("input", std::string());
  } else {
    s.skipped = j.value("skipped", std::string());
  }
  return s;
}

}  // namespace

std::string sample_line(const SampleRecord& s) {
  nlohmann::ordered_json j;
  j["task"] = s.task;
  j["length"] = s.length;
  j["index"] = s.index;
  if (s.score) {
    j["score"] = *s.score;
    j["tokens"] = s.tokens;
    j["units"] = s.units;
    j["prediction"] = s.prediction;
    j["references"] = s.references;
    if (!s.input.empty()) j["input"] = s.input;
  } else {
    j["score"] = nullptr;
    j["skipped"] = s.skipped;
  }
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

SampleRecord parse_sample_line(const std::string& line) {
  try {
    return from_json(nlohmann::json::parse(line));
  } catch (const std::exception& e) {
    fail("not a samples.jsonl line (", e.what(), ")");
  }
}

std::vector<SampleRecord> parse_sample_log(const std::string& text, const std::string& origin) {
  std::vector<std::pair<int64_t, nlohmann::json>> lines;
  try {
    lines = jsonl_lines(text);
  } catch (const std::exception& e) {
    fail(origin, ": ", e.what());
  }
  std::vector<SampleRecord> out;
  out.reserve(lines.size());
  for (const auto& [n, j] : lines) {
    try {
      out.push_back(from_json(j));
    } catch (const std::exception& e) {
      fail(origin, " line ", n, ": ", e.what());
    }
  }
  return out;
}

}  // namespace headroom::eval
