// The training logs per configuration, as means over seeds: each stage's final loss and its
// end-of-stage spike scores.
#pragma once

#include "analysis/means.h"
#include "analysis/study.h"

#include <string>
#include <vector>

namespace headroom::analysis {

// The spike rules in the last metrics line of any stage that logged metrics, sorted.
std::vector<std::string> spike_rules(const Study& s);

struct StageMeans {
  std::string stage;
  Mean final_loss;
  std::vector<Mean> spikes;  // per rule: the combined window score
};

struct TrainingMeans {
  size_t config = 0;               // into Study::configs
  std::vector<StageMeans> stages;  // pretrain, extend
};
std::vector<TrainingMeans> training_means(const Study& s, const std::vector<std::string>& rules);

}  // namespace headroom::analysis
