#include "analysis/predictors.h"

#include "analysis/findings.h"
#include "analysis/run_scores.h"

#include <set>

namespace headroom::analysis {

std::vector<Predictor> default_predictors(const ScoreName& short_score, int64_t perplexity_length) {
  auto final_loss = [](const std::string& stage) {
    return [stage](const RunData& r) -> Opt {
      const StageRun* st = stage_of(r, stage);
      return st ? st->final_loss : std::nullopt;
    };
  };
  return {
      {"pretrain_loss", "final pretraining loss", final_loss("pretrain")},
      {"extend_loss", "final extension loss", final_loss("extend")},
      {"short_score", "short-context score (" + short_score.text + ")",
       [short_score](const RunData& r) { return score_of(r, short_score); }},
      {"perplexity", "held-out perplexity",
       [perplexity_length](const RunData& r) { return perplexity_of(r, perplexity_length); }},
  };
}

std::vector<Feature> regression_features(const std::vector<std::string>& entries) {
  if (entries.empty()) return default_features();
  std::vector<Feature> f;
  for (const auto& e : entries) f.push_back(parse_feature(e));
  return f;
}

Study regression_pool(const Study& s, const std::string& selection) {
  if (selection.empty()) return s;
  const auto preds = parse_conjunction(selection, "analyze.regression_configs");
  Study sub = s;
  sub.configs.clear();
  for (const auto& g : s.configs) {
    std::string why;
    // Runs of one configuration share every non-seed key: the first decides.
    if (side_holds(preds, s.runs[g.runs[0]].config, why).value_or(false)) sub.configs.push_back(g);
  }
  return sub;
}

namespace {

PredictorRow predictor_row(const Study& s, size_t c, const ScoreName& score, const std::vector<Predictor>& predictors,
                           const std::vector<Feature>& features) {
  const ConfigGroup& g = s.configs[c];
  PredictorRow row;
  row.config = c;
  row.score = config_mean(s, g, [&](const RunData& r) { return score_of(r, score); });
  for (const auto& p : predictors) row.predictors.push_back(config_mean(s, g, p.value).mean);
  int count = 0;
  bool known = true;
  for (const auto& f : features) {
    std::string why;
    const auto v = eval_feature(f, s.runs[g.runs[0]].config, why);
    row.features.push_back(v ? *v : -1);
    row.feature_why.push_back(v ? "" : why);
    known &= v.has_value();
    count += v ? *v : 0;
  }
  if (known) row.feature_count = count;
  return row;
}

Regression fit(Regression r, int64_t p) {
  r.fit = ols(r.x, static_cast<int64_t>(r.configs.size()), p, r.y);
  return r;
}

// The score on predictor k over the configurations that have both.
Regression single_fit(const std::vector<PredictorRow>& rows, size_t k) {
  Regression r;
  for (const auto& row : rows)
    if (row.score.mean && row.predictors[k])
      r.configs.push_back(row.config), r.x.push_back(*row.predictors[k]), r.y.push_back(*row.score.mean);
  return fit(std::move(r), 1);
}

Regression count_fit(const std::vector<const PredictorRow*>& use) {
  Regression r;
  for (const PredictorRow* row : use)
    r.configs.push_back(row->config), r.x.push_back(*row->feature_count), r.y.push_back(*row->score.mean);
  return fit(std::move(r), 1);
}

Regression features_fit(const std::vector<const PredictorRow*>& use, const std::vector<size_t>& cols) {
  Regression r;
  for (const PredictorRow* row : use) {
    r.configs.push_back(row->config);
    for (size_t k : cols) r.x.push_back(row->features[k]);
    r.y.push_back(*row->score.mean);
  }
  return fit(std::move(r), static_cast<int64_t>(cols.size()));
}

}  // namespace

PredictorStats predictor_stats(const Study& s, const ScoreName& score, const std::vector<Predictor>& predictors,
                               const std::vector<Feature>& features) {
  PredictorStats st;
  for (size_t c = 0; c < s.configs.size(); ++c) st.rows.push_back(predictor_row(s, c, score, predictors, features));
  for (size_t k = 0; k < predictors.size(); ++k) st.single.push_back(single_fit(st.rows, k));
  std::vector<const PredictorRow*> use;
  for (const auto& row : st.rows)
    if (row.score.mean && row.feature_count) use.push_back(&row);
  st.feature_count = count_fit(use);
  for (size_t k = 0; k < features.size(); ++k) {
    std::set<int> vals;
    for (const PredictorRow* row : use) vals.insert(row->features[k]);
    (vals.size() > 1 ? st.varying : st.constant).push_back(k);
  }
  st.features = features_fit(use, st.varying);
  return st;
}

}  // namespace headroom::analysis
