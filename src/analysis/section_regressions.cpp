// The "What predicts the long-context score" section: single predictors and the feature-count
// model, laid out from predictors.h's statistics.
#include "analysis/sections.h"

#include "analysis/predictors.h"
#include "analysis/report_helpers.h"
#include "util/error.h"

#include <set>

namespace headroom::analysis {

using nlohmann::json;

namespace {

Table predictors_table(const Study& s, const PredictorStats& st, const ScoreName& score,
                       const std::vector<Predictor>& preds, const std::vector<Feature>& features) {
  Table t{
      "predictors",
      cat("One row per configuration (means over seeds): the score ", score.text, ", the predictors and the features"),
      {"config", "label", "seeds", "score"},
      {},
      ""};
  for (const auto& p : preds) t.header.push_back(p.name);
  for (const auto& f : features) t.header.push_back("feature_" + f.name);
  t.header.push_back("feature_count");
  for (const auto& r : st.rows) {
    const ConfigGroup& g = s.configs[r.config];
    std::vector<std::string> row{g.id, g.label, std::to_string(r.score.n), fmt(r.score.mean)};
    for (const auto& v : r.predictors) row.push_back(fmt(v));
    for (int v : r.features) row.push_back(v >= 0 ? std::to_string(v) : "");
    row.push_back(r.feature_count ? std::to_string(*r.feature_count) : "");
    t.rows.push_back(row);
  }
  t.note = "Features: ";
  for (const auto& f : features) t.note += f.name + " = [" + f.text + "]; ";
  return t;
}

// "C3: why" for every feature value that could not be evaluated, sorted and without repeats.
std::set<std::string> feature_problems(const Study& s, const PredictorStats& st) {
  std::set<std::string> out;
  for (const auto& r : st.rows)
    for (size_t k = 0; k < r.features.size(); ++k)
      if (r.features[k] < 0) out.insert(cat(s.configs[r.config].id, ": ", r.feature_why[k]));
  return out;
}

std::vector<std::string> regression_row(const std::string& model, const std::string& predictors, const Regression& r,
                                        const std::string& coefs, const std::string& note) {
  const OlsFit& f = r.fit;
  return {model, predictors, std::to_string(r.configs.size()), f.ok ? fmt(f.r2) : "", f.loo_ok ? fmt(f.loo_r2) : "",
          coefs, note};
}

std::string line_coefs(const OlsFit& f) { return f.ok ? cat("b0=", fmt(f.coef[0], 6), " b1=", fmt(f.coef[1], 6)) : ""; }

json scatter(const Study& s, const Regression& r, const std::string& file, const std::string& x_label,
             const ScoreName& score) {
  std::vector<std::string> labels;
  for (size_t c : r.configs) labels.push_back(s.configs[c].id);
  return {{"file", file}, {"x_label", x_label}, {"y_label", score.text}, {"x", r.x},
          {"y", r.y},     {"labels", labels},   {"r2", r.fit.r2},        {"coef", r.fit.coef}};
}

// The fit on the features separately: its predictors, coefficients and note.
std::vector<std::string> features_row(const PredictorStats& st, const std::vector<Feature>& features) {
  const OlsFit& f = st.features.fit;
  std::string names, coefs, dropped;
  for (size_t k : st.varying) names.append(names.empty() ? "" : " ").append(features[k].name);
  for (size_t k : st.constant) dropped.append(dropped.empty() ? "" : ", ").append(features[k].name);
  if (f.ok) {
    coefs = "b0=" + fmt(f.coef[0], 6);
    for (size_t k = 0; k < st.varying.size(); ++k)
      coefs += " " + features[st.varying[k]].name + "=" + fmt(f.coef[k + 1], 6);
  }
  std::string note = f.ok ? f.loo_why : f.why;
  if (!dropped.empty())
    note.append(note.empty() ? "" : "; ").append("constant over the pool, left out: ").append(dropped);
  return regression_row("features separately", names.empty() ? "(none vary)" : names, st.features, coefs, note);
}

// The regressions table, with a scatter plot of each fit that succeeded and the reason for each
// that did not.
void regressions(const Study& s, const PredictorStats& st, const ScoreName& score, const std::vector<Predictor>& preds,
                 const std::vector<Feature>& features, Report& rep) {
  Table reg{"regressions",
            cat("Linear regressions of ", score.text,
                " over configurations (ordinary least squares with "
                "intercept; leave-one-out R² = 1 − Σ(y − ŷ₋ᵢ)² / Σ(y − ȳ)²)"),
            {"model", "predictors", "n", "r2", "loo_r2", "coefficients", "note"},
            {},
            ""};
  json scatters = json::array();
  for (size_t k = 0; k < preds.size(); ++k) {
    const Regression& r = st.single[k];
    const OlsFit& f = r.fit;
    reg.rows.push_back(
        regression_row("single: " + preds[k].name, preds[k].name, r, line_coefs(f), f.ok ? f.loo_why : f.why));
    if (!f.ok) {
      rep.cannot_compute(cat("R² of ", preds[k].label), f.why);
      continue;
    }
    const std::string file = "scatter_" + preds[k].name + ".png";
    scatters.push_back(scatter(s, r, file, preds[k].label, score));
    rep.plot(file, cat(score.text, " vs ", preds[k].label, " (R² = ", fmt(f.r2, 3), ", n = ", r.x.size(), ")"));
  }
  const OlsFit& fc = st.feature_count.fit;
  reg.rows.push_back(regression_row("feature count", cat("count of ", features.size(), " features"), st.feature_count,
                                    line_coefs(fc), fc.ok ? fc.loo_why : fc.why));
  if (!fc.ok) {
    rep.cannot_compute("the feature-count model", fc.why);
  } else {
    scatters.push_back(scatter(s, st.feature_count, "scatter_feature_count.png", "feature count", score));
    rep.plot("scatter_feature_count.png", cat(score.text, " vs number of features (R² = ", fmt(fc.r2, 3), ")"));
  }
  reg.rows.push_back(features_row(st, features));
  if (!st.features.fit.ok) rep.cannot_compute("the regression on the features separately", st.features.fit.why);
  rep.table(std::move(reg));
  rep.plot_data["scatter"] = scatters;
}

}  // namespace

void section_regressions(const Study& all, const AnalyzeConfig& cfg, Report& rep) {
  rep.heading("What predicts the long-context score");
  const Study s = regression_pool(all, cfg.regression_configs);
  if (!cfg.regression_configs.empty())
    rep.text(cat("Fitted over the ", s.configs.size(), " of ", all.configs.size(), " configurations that match `",
                 cfg.regression_configs, "` (analyze.regression_configs)."));
  const ScoreName score = parse_score_name(cfg.long_score, "analyze.long_score");
  const ScoreName short_score = parse_score_name(cfg.short_score, "analyze.short_score");
  const std::vector<Feature> features = regression_features(cfg.features);
  const std::vector<Predictor> preds = default_predictors(short_score, cfg.perplexity_length);
  const PredictorStats st = predictor_stats(s, score, preds, features);
  rep.table(predictors_table(s, st, score, preds, features));
  for (const auto& p : feature_problems(s, st)) rep.cannot_compute("a feature value", p);
  regressions(s, st, score, preds, features, rep);
}

}  // namespace headroom::analysis
