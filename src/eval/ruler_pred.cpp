#include "eval/ruler_pred.h"

#include "eval/sample_log.h"
#include "util/error.h"

#include <nlohmann/json.hpp>

namespace headroom::eval {

std::map<std::string, std::string> ruler_pred_files(const std::vector<std::string>& sample_lines) {
  std::map<std::string, std::string> files;
  for (const std::string& line : sample_lines) {
    const SampleRecord s = parse_sample_line(line);
    if (!s.score || s.input.empty()) continue;
    nlohmann::ordered_json r;
    r["index"] = s.index;
    r["pred"] = s.prediction;
    r["input"] = s.input;
    r["outputs"] = s.references;
    r["others"] = {{"headroom_score", *s.score}, {"tokens", s.tokens}, {"units", s.units}};
    r["truncation"] = -1;
    r["length"] = s.tokens;
    files[cat(s.length, "/", s.task, ".jsonl")] +=
        r.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  return files;
}

}  // namespace headroom::eval
