// The statistics behind "What predicts the long-context score": per configuration (means over
// seeds) the long score, the predictors and the feature values, and the least-squares fits of the
// score on each predictor, on the number of features present, and on the features separately.
#pragma once

#include "analysis/features.h"
#include "analysis/linalg.h"
#include "analysis/means.h"
#include "analysis/study.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace headroom::analysis {

// A per-run value that might predict the long score.
struct Predictor {
  std::string name, label;
  std::function<Opt(const RunData&)> value;
};

// Final pretraining loss, final extension loss, the short-context score, held-out perplexity.
std::vector<Predictor> default_predictors(const ScoreName& short_score, int64_t perplexity_length);

// analyze.feature entries parsed, or default_features() when there are none.
std::vector<Feature> regression_features(const std::vector<std::string>& entries);

// The study restricted to the configurations that `selection` (analyze.regression_configs:
// predicates joined by '&') holds for; the whole study when it is empty.
Study regression_pool(const Study& s, const std::string& selection);

// One configuration's row.
struct PredictorRow {
  size_t config = 0;                     // into Study::configs
  Mean score;                            // over its seeds
  std::vector<Opt> predictors;           // per predictor, mean over seeds
  std::vector<int> features;             // per feature: 1, 0, or -1 when it cannot be evaluated
  std::vector<std::string> feature_why;  // per feature: why it cannot be evaluated ("" when it can)
  std::optional<int> feature_count;      // when every feature is known
};

// One least-squares fit and its points, in configuration order.
struct Regression {
  OlsFit fit;
  std::vector<size_t> configs;  // into Study::configs
  std::vector<double> x, y;     // x: points × predictors, row-major
};

struct PredictorStats {
  std::vector<PredictorRow> rows;  // every configuration
  std::vector<Regression> single;  // per predictor: the configurations with the score and the predictor
  // Over the configurations with the score and every feature known:
  Regression feature_count;
  Regression features;                    // on the features that vary over those configurations
  std::vector<size_t> varying, constant;  // feature indices fitted / left out (a constant column is singular)
};

PredictorStats predictor_stats(const Study& s, const ScoreName& score, const std::vector<Predictor>& predictors,
                               const std::vector<Feature>& features);

}  // namespace headroom::analysis
