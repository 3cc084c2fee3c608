#include "eval/ruler_pred.h"

#include "util/error.h"

#include <nlohmann/json.hpp>

namespace headroom::eval {

std::map<std::string, std::string> ruler_pred_files(const std::vector<std::string>& sample_lines) {
  std::map<std::string, std::string> files;
  for (const std::string& line : sample_lines) {
    const nlohmann::json s = nlohmann::json::parse(line);
    if (s.value("score", nlohmann::json()).is_null() || !s.contains("input")) continue;
    nlohmann::ordered_json r;
    r["index"] = s.at("index");
    r["pred"] = s.at("prediction");
    r["input"] = s.at("input");
    r["outputs"] = s.at("references");
    r["others"] = {{"headroom_score", s.at("score")}, {"tokens", s.at("tokens")}, {"units", s.at("units")}};
    r["truncation"] = -1;
    r["length"] = s.at("tokens");
    files[cat(s.at("length").get<int64_t>(), "/", s.at("task").get<std::string>(), ".jsonl")] +=
        r.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  return files;
}

}  // namespace headroom::eval
