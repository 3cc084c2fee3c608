// The "What predicts the long-context score" section: single predictors and the feature-count model.
#include "analysis/sections.h"

#include "analysis/findings.h"
#include "analysis/linalg.h"
#include "analysis/report_helpers.h"
#include "analysis/run_scores.h"
#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace headroom::analysis {

using nlohmann::json;

namespace {

// The pool's configurations that analyze.regression_configs selects (all when it is empty), as a
// study of their runs only.
Study regression_pool(const Study& s, const AnalyzeConfig& cfg, Report& rep) {
  if (cfg.regression_configs.empty()) return s;
  const auto preds = parse_conjunction(cfg.regression_configs, "analyze.regression_configs");
  Study sub = s;
  sub.configs.clear();
  for (const auto& g : s.configs) {
    std::string why;
    const auto holds = side_holds(preds, s.runs[g.runs[0]].config, why);
    if (holds.value_or(false)) sub.configs.push_back(g);
  }
  rep.text(cat("Fitted over the ", sub.configs.size(), " of ", s.configs.size(), " configurations that match `",
               cfg.regression_configs, "` (analyze.regression_configs)."));
  return sub;
}

}  // namespace

void section_regressions(const Study& all, const AnalyzeConfig& cfg, Report& rep) {
  rep.heading("What predicts the long-context score");
  const Study s = regression_pool(all, cfg, rep);
  const ScoreName score = parse_score_name(cfg.long_score, "analyze.long_score");
  const ScoreName short_score = parse_score_name(cfg.short_score, "analyze.short_score");
  const std::vector<Feature> features = cfg.features.empty() ? default_features() : [&] {
    std::vector<Feature> f;
    for (const auto& e : cfg.features) f.push_back(parse_feature(e));
    return f;
  }();
  struct Predictor {
    std::string name, label;
    std::function<Opt(const RunData&)> f;
  };
  const std::vector<Predictor> preds{
      {"pretrain_loss", "final pretraining loss", [](const RunData& r) -> Opt {
         const StageRun* st = stage_of(r, "pretrain");
         return st ? st->final_loss : std::nullopt;
       }},
      {"extend_loss", "final extension loss", [](const RunData& r) -> Opt {
         const StageRun* st = stage_of(r, "extend");
         return st ? st->final_loss : std::nullopt;
       }},
      {"short_score", "short-context score (" + short_score.text + ")", [&](const RunData& r) { return score_of(r, short_score); }},
      {"perplexity", "held-out perplexity", [&](const RunData& r) { return perplexity_of(r, cfg.perplexity_length); }},
  };
  Table data{"predictors", cat("One row per configuration (means over seeds): the score ", score.text,
                               ", the predictors and the features"),
             {"config", "label", "seeds", "score"}, {}, ""};
  for (const auto& p : preds) data.header.push_back(p.name);
  for (const auto& f : features) data.header.push_back("feature_" + f.name);
  data.header.push_back("feature_count");
  std::vector<Opt> y;
  std::vector<std::vector<Opt>> xs(preds.size());
  std::vector<std::vector<int>> fv;  // per config; -1 unknown
  std::set<std::string> feature_problems;
  for (const auto& g : s.configs) {
    const Mean m = config_mean(s, g, [&](const RunData& r) { return score_of(r, score); });
    y.push_back(m.mean);
    std::vector<std::string> row{g.id, g.label, std::to_string(m.n), fmt(m.mean)};
    for (size_t k = 0; k < preds.size(); ++k) {
      const Mean pm = config_mean(s, g, preds[k].f);
      xs[k].push_back(pm.mean);
      row.push_back(fmt(pm.mean));
    }
    fv.emplace_back();
    int count = 0;
    bool known = true;
    for (const auto& f : features) {
      std::string why;
      const auto v = eval_feature(f, s.runs[g.runs[0]].config, why);
      fv.back().push_back(v ? *v : -1);
      if (!v) known = false, feature_problems.insert(cat(g.id, ": ", why));
      count += v ? *v : 0;
      row.push_back(v ? std::to_string(*v) : "");
    }
    row.push_back(known ? std::to_string(count) : "");
    data.rows.push_back(row);
  }
  std::string fnote = "Features: ";
  for (const auto& f : features) fnote += f.name + " = [" + f.text + "]; ";
  data.note = fnote;
  rep.table(std::move(data));
  for (const auto& p : feature_problems) rep.cannot_compute("a feature value", p);

  Table reg{"regressions", cat("Linear regressions of ", score.text, " over configurations (ordinary least squares with "
                               "intercept; leave-one-out R² = 1 − Σ(y − ŷ₋ᵢ)² / Σ(y − ȳ)²)"),
            {"model", "predictors", "n", "r2", "loo_r2", "coefficients", "note"}, {}, ""};
  json scatter = json::array();
  for (size_t k = 0; k < preds.size(); ++k) {
    std::vector<double> x, yy;
    std::vector<std::string> labels;
    for (size_t g = 0; g < s.configs.size(); ++g)
      if (y[g] && xs[k][g]) x.push_back(*xs[k][g]), yy.push_back(*y[g]), labels.push_back(s.configs[g].id);
    const OlsFit f = ols(x, static_cast<int64_t>(x.size()), 1, yy);
    std::string coefs;
    if (f.ok) coefs = cat("b0=", fmt(f.coef[0], 6), " b1=", fmt(f.coef[1], 6));
    reg.rows.push_back({"single: " + preds[k].name, preds[k].name, std::to_string(x.size()), f.ok ? fmt(f.r2) : "",
                        f.loo_ok ? fmt(f.loo_r2) : "", coefs, f.ok ? f.loo_why : f.why});
    if (!f.ok) {
      rep.cannot_compute(cat("R² of ", preds[k].label), f.why);
      continue;
    }
    const std::string file = "scatter_" + preds[k].name + ".png";
    scatter.push_back({{"file", file}, {"x_label", preds[k].label}, {"y_label", score.text}, {"x", x}, {"y", yy},
                       {"labels", labels}, {"r2", f.r2}, {"coef", f.coef}});
    rep.plot(file, cat(score.text, " vs ", preds[k].label, " (R² = ", fmt(f.r2, 3), ", n = ", x.size(), ")"));
  }
  // Feature models over configurations whose features are all known.
  std::vector<size_t> use;
  for (size_t g = 0; g < s.configs.size(); ++g) {
    bool ok = y[g].has_value();
    for (int v : fv[g]) ok &= v >= 0;
    if (ok) use.push_back(g);
  }
  {
    std::vector<double> x, yy;
    for (size_t g : use) {
      int c = 0;
      for (int v : fv[g]) c += v;
      x.push_back(c);
      yy.push_back(*y[g]);
    }
    const OlsFit f = ols(x, static_cast<int64_t>(x.size()), 1, yy);
    reg.rows.push_back({"feature count", cat("count of ", features.size(), " features"), std::to_string(x.size()),
                        f.ok ? fmt(f.r2) : "", f.loo_ok ? fmt(f.loo_r2) : "",
                        f.ok ? cat("b0=", fmt(f.coef[0], 6), " b1=", fmt(f.coef[1], 6)) : "", f.ok ? f.loo_why : f.why});
    if (!f.ok) rep.cannot_compute("the feature-count model", f.why);
    else {
      std::vector<std::string> labels;
      for (size_t g : use) labels.push_back(s.configs[g].id);
      scatter.push_back({{"file", "scatter_feature_count.png"}, {"x_label", "feature count"}, {"y_label", score.text},
                         {"x", x}, {"y", yy}, {"labels", labels}, {"r2", f.r2}, {"coef", f.coef}});
      rep.plot("scatter_feature_count.png", cat(score.text, " vs number of features (R² = ", fmt(f.r2, 3), ")"));
    }
  }
  {
    // Separate features: constant columns carry nothing and make the design singular: dropped.
    std::vector<size_t> cols;
    std::string dropped;
    for (size_t k = 0; k < features.size(); ++k) {
      std::set<int> vals;
      for (size_t g : use) vals.insert(fv[g][k]);
      if (vals.size() > 1) cols.push_back(k);
      else dropped.append(dropped.empty() ? "" : ", ").append(features[k].name);
    }
    std::vector<double> x, yy;
    for (size_t g : use) {
      for (size_t k : cols) x.push_back(fv[g][k]);
      yy.push_back(*y[g]);
    }
    std::string names;
    for (size_t k : cols) names.append(names.empty() ? "" : " ").append(features[k].name);
    const OlsFit f = ols(x, static_cast<int64_t>(use.size()), static_cast<int64_t>(cols.size()), yy);
    std::string coefs;
    if (f.ok) {
      coefs = "b0=" + fmt(f.coef[0], 6);
      for (size_t k = 0; k < cols.size(); ++k) coefs += " " + features[cols[k]].name + "=" + fmt(f.coef[k + 1], 6);
    }
    std::string note = f.ok ? f.loo_why : f.why;
    if (!dropped.empty()) note.append(note.empty() ? "" : "; ").append("constant over the pool, left out: ").append(dropped);
    reg.rows.push_back({"features separately", names.empty() ? "(none vary)" : names, std::to_string(use.size()),
                        f.ok ? fmt(f.r2) : "", f.loo_ok ? fmt(f.loo_r2) : "", coefs, note});
    if (!f.ok) rep.cannot_compute("the regression on the features separately", f.why);
  }
  rep.table(std::move(reg));
  rep.plot_data["scatter"] = scatter;
}

}  // namespace headroom::analysis
