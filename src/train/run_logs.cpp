#include "train/run_logs.h"

#include "util/error.h"
#include "util/jsonl.h"

#include <cmath>
#include <map>

namespace headroom::train {

nlohmann::json metrics_line(int64_t step, int64_t tokens, double loss, double grad_norm, double lr, double tokens_per_s,
                            const nlohmann::json& extra) {
  nlohmann::json j{
      {"step", step},    {"loss", loss}, {"grad_norm", grad_norm}, {"lr", lr}, {"tokens_per_s", tokens_per_s},
      {"tokens", tokens}};
  j.update(extra);
  return j;
}

nlohmann::json probe_line(int64_t step, int64_t tokens, const ProbeScores& p, const std::string& tasks) {
  return {{"step", step},
          {"tokens", tokens},
          {"loss", p.loss},
          {"token_acc", p.token_acc},
          {"exact", p.exact},
          {"examples", p.examples},
          {"answer_tokens", p.answer_tokens},
          {"tasks", tasks}};
}

MetricsLog parse_metrics_log(const std::string& text) {
  std::map<int64_t, MetricPoint> points;
  nlohmann::json last;
  for (const auto& [n, j] : jsonl_lines(text)) {
    if (!j.contains("step") || !j.contains("loss")) continue;
    MetricPoint p;
    p.step = j["step"].get<int64_t>();
    p.loss = j["loss"].is_number() ? j["loss"].get<double>() : std::nan("");
    p.grad_norm = j.contains("grad_norm") && j["grad_norm"].is_number() ? j["grad_norm"].get<double>() : std::nan("");
    points[p.step] = p;
    last = j;
  }
  MetricsLog out;
  for (auto& [step, p] : points) out.points.push_back(p);
  if (last.contains("spike") && last["spike"].is_object())
    for (auto& [rule, v] : last["spike"].items())
      out.last_spikes.push_back(
          {rule, v.value("loss", std::nan("")), v.value("grad_norm", std::nan("")), v.value("combined", std::nan(""))});
  return out;
}

std::vector<ProbePoint> parse_probe_log(const std::string& text) {
  std::map<int64_t, ProbePoint> points;
  for (const auto& [n, j] : jsonl_lines(text)) {
    if (!j.contains("step") || !j.contains("token_acc")) fail("line ", n, " has no step or token_acc");
    ProbePoint p;
    p.step = j["step"].get<int64_t>();
    p.tokens = j.value("tokens", int64_t{0});
    p.loss = j.value("loss", std::nan(""));
    p.token_acc = j["token_acc"].get<double>();
    p.exact = j.value("exact", std::nan(""));
    points[p.step] = p;
  }
  std::vector<ProbePoint> out;
  for (auto& [step, p] : points) out.push_back(p);
  return out;
}

}  // namespace headroom::train
