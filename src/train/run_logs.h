// A training run's two logs, the writers' format and the readers side by side:
//   metrics.jsonl  one line per logged step (the metrics-log callback): step, tokens, loss,
//                  grad_norm, lr, tokens_per_s, and what other callbacks add (spike: the monitor's
//                  window scores per rule: loss, grad_norm, combined)
//   probe.jsonl    one line per retrieval-probe score (train/probe.h): step, tokens, loss,
//                  token_acc, exact, examples, answer_tokens, tasks
// A resumed run repeats the steps after its checkpoint; readers keep a step's last line.
#pragma once

#include "train/probe.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace headroom::train {

struct MetricPoint {
  int64_t step = 0;
  double loss = 0, grad_norm = 0;  // NaN when the line had none (a non-finite value is written as null)
};

// Spike window scores of one rule at a log's last line ("spike").
struct SpikeFinal {
  std::string rule;
  double loss = 0, grad_norm = 0, combined = 0;
};

struct ProbePoint {
  int64_t step = 0, tokens = 0;
  double loss = 0, token_acc = 0, exact = 0;
};

struct MetricsLog {
  std::vector<MetricPoint> points;      // by step
  std::vector<SpikeFinal> last_spikes;  // of the last line
};

nlohmann::json metrics_line(int64_t step, int64_t tokens, double loss, double grad_norm, double lr, double tokens_per_s,
                            const nlohmann::json& extra);
nlohmann::json probe_line(int64_t step, int64_t tokens, const ProbeScores& p, const std::string& tasks);

// Throw headroom::Error naming the line at fault (without the file: callers add it).
MetricsLog parse_metrics_log(const std::string& text);  // lines without step or loss are skipped
std::vector<ProbePoint> parse_probe_log(const std::string& text);

}  // namespace headroom::train
