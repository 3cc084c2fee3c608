// Run configurations as analyze sees them (the resolved INI of every lineage stage), the feature
// predicates of the feature-count model (analyze.feature = name=KEY OP VALUE), and score names
// (analyze.long_score / short_score).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace headroom::analysis {

// One training stage's resolved configuration: "section.key" -> value text.
struct StageConfig {
  std::string stage;  // pretrain | extend | sft
  std::map<std::string, std::string> keys;
};

// The lineage of the evaluated checkpoint, first stage first; the last one produced it.
struct RunConfig {
  std::vector<StageConfig> stages;
};

// KEY is "section.key" (the evaluated checkpoint's, i.e. the last stage's) or "stage.section.key"
// (the first lineage stage of that name).
std::optional<std::string> lookup(const RunConfig& cfg, const std::string& key);

struct Predicate {
  std::string lhs, op, rhs;  // rhs_is_key when it names a key
  bool rhs_is_key = false;
};

struct Feature {
  std::string name;
  Predicate pred;
  std::string text;  // as written
};

// "name=KEY OP VALUE"; throws naming the entry on a malformed one.
Feature parse_feature(const std::string& entry);
// The study's four features (second seed paper): qk_norm, gqa, sliding, short_pretrain.
std::vector<Feature> default_features();

// 1/0 when the predicate can be evaluated on the run, or empty with `why` filled (missing key,
// non-numeric value for an ordering).
std::optional<int> eval_feature(const Feature& f, const RunConfig& cfg, std::string& why);

// analyze.long_score / short_score.
struct ScoreName {
  // probe_*: the retrieval probe of the last lineage stage that has one (train/probe.h):
  // probe_acc / probe_exact at its last point, probe_auc = mean token accuracy over its learning
  // curve (trapezoids over steps, divided by the steps covered).
  // helmet_recall: HELMET's synthetic-recall category (eval/score_groups.h).
  enum Kind { kRuler, kRulerAt, kHelmetRecall, kMcAcc, kMcAccNorm, kProbeAcc, kProbeExact, kProbeAuc } kind = kRuler;
  int64_t length = 0;  // kRulerAt
  std::string text;
};
ScoreName parse_score_name(const std::string& s, const std::string& key);
inline bool is_probe_score(const ScoreName& s) { return s.kind >= ScoreName::kProbeAcc; }

}  // namespace headroom::analysis
