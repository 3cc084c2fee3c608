// evaluate's scores per configuration, as means over its seeds that have them: RULER by length, by
// task and overall; multiple choice; held-out loss per evaluated length and per position bucket.
#pragma once

#include "analysis/means.h"
#include "analysis/study.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace headroom::analysis {

struct RulerMeans {
  size_t config = 0;            // into Study::configs
  std::vector<Mean> by_length;  // per requested length
  Mean overall;                 // results.json's ruler.average
};
std::vector<RulerMeans> ruler_means(const Study& s, const std::vector<int64_t>& lengths);

// One task × length cell of a configuration (the cells of its first run).
struct TaskMean {
  size_t config = 0;
  std::string task;
  int64_t length = 0;
  Mean score;
};
std::vector<TaskMean> ruler_task_means(const Study& s);

struct McMeans {
  size_t config = 0;
  std::optional<int64_t> items;  // of the configuration's first run
  Mean acc, acc_norm;
};
std::vector<McMeans> mc_means(const Study& s);

struct BucketMean {
  int64_t start = 0, end = 0;  // token positions [start, end)
  Mean loss;
};

// One evaluated length of a configuration (the lengths and buckets of its first run).
struct LossMeans {
  size_t config = 0;
  int64_t length = 0;
  Mean loss;
  Opt perplexity;  // exp of the mean loss
  std::vector<BucketMean> buckets;
};
std::vector<LossMeans> loss_means(const Study& s);

}  // namespace headroom::analysis
