#include "analysis/features.h"

#include "eval/eval_config.h"
#include "util/error.h"
#include "util/text.h"

#include <algorithm>
#include <regex>
#include <sstream>

namespace headroom::analysis {
namespace {

bool is_key_ref(const std::string& s) {
  static const std::regex re("[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*){1,2}");
  return std::regex_match(s, re);
}

std::optional<double> as_number(const std::string& s) {
  if (s.empty()) return std::nullopt;
  size_t used = 0;
  try {
    const double v = std::stod(s, &used);
    if (used == s.size()) return v;
  } catch (const std::exception&) {}
  if (s == "true") return 1.0;
  if (s == "false") return 0.0;
  return std::nullopt;
}

}  // namespace

std::optional<std::string> lookup(const RunConfig& cfg, const std::string& key) {
  if (cfg.stages.empty()) return std::nullopt;
  const size_t dots = static_cast<size_t>(std::count(key.begin(), key.end(), '.'));
  if (dots == 2) {
    const size_t dot = key.find('.');
    const std::string stage = key.substr(0, dot), rest = key.substr(dot + 1);
    for (const auto& s : cfg.stages)
      if (s.stage == stage) {
        auto it = s.keys.find(rest);
        if (it == s.keys.end()) return std::nullopt;
        return it->second;
      }
    return std::nullopt;
  }
  const auto& last = cfg.stages.back().keys;
  auto it = last.find(key);
  if (it == last.end()) return std::nullopt;
  return it->second;
}

Feature parse_feature(const std::string& entry) {
  const size_t eq = entry.find('=');
  // "name=..." : the first '=' that is not part of an operator ("==", "<=", ">=", "!=").
  if (eq == std::string::npos || eq == 0 || entry[eq + 1] == '=' ||
      std::string("<>!").find(entry[eq - 1]) != std::string::npos)
    fail("analyze.feature '", entry, "': write name=KEY OP VALUE, e.g. gqa=model.n_kv_heads < model.n_heads");
  Feature f;
  f.name = trim(entry.substr(0, eq));
  f.text = trim(entry.substr(eq + 1));
  static const std::regex re("^\\s*(\\S+)\\s+(==|!=|<=|>=|<|>|contains|!contains)\\s+(.+?)\\s*$");
  std::smatch m;
  if (!std::regex_match(f.text, m, re))
    fail("analyze.feature '", entry,
         "': the predicate must be 'KEY OP VALUE' with OP one of == != < <= > >= "
         "contains !contains, separated by spaces");
  f.pred.lhs = m[1];
  f.pred.op = m[2];
  f.pred.rhs = m[3];
  if (!is_key_ref(f.pred.lhs))
    fail("analyze.feature '", entry, "': '", f.pred.lhs, "' is not a key (section.key or stage.section.key)");
  f.pred.rhs_is_key = is_key_ref(f.pred.rhs);
  if (f.name.empty() || f.name.find_first_of(" ,\t") != std::string::npos)
    fail("analyze.feature '", entry, "': the name must be one word");
  return f;
}

std::vector<Feature> default_features() {
  return {parse_feature("qk_norm=model.qk_norm != none"), parse_feature("gqa=model.n_kv_heads < model.n_heads"),
          parse_feature("sliding=model.layer_pattern contains S"),
          parse_feature("short_pretrain=pretrain.train.seq_len < 8192")};
}

std::optional<int> eval_feature(const Feature& f, const RunConfig& cfg, std::string& why) {
  const auto lhs = lookup(cfg, f.pred.lhs);
  if (!lhs) {
    why = cat("feature ", f.name, ": the run's configuration has no ", f.pred.lhs);
    return std::nullopt;
  }
  std::string rhs = f.pred.rhs;
  if (f.pred.rhs_is_key) {
    const auto v = lookup(cfg, f.pred.rhs);
    if (!v) {
      why = cat("feature ", f.name, ": the run's configuration has no ", f.pred.rhs);
      return std::nullopt;
    }
    rhs = *v;
  }
  const std::string& op = f.pred.op;
  if (op == "contains") return lhs->find(rhs) != std::string::npos ? 1 : 0;
  if (op == "!contains") return lhs->find(rhs) == std::string::npos ? 1 : 0;
  const auto a = as_number(*lhs), b = as_number(rhs);
  if (op == "==" || op == "!=") {
    const bool eq = (a && b) ? *a == *b : *lhs == rhs;
    return (op == "==") == eq ? 1 : 0;
  }
  if (!a || !b) {
    why = cat("feature ", f.name, ": '", *lhs, "' ", op, " '", rhs, "' needs two numbers");
    return std::nullopt;
  }
  if (op == "<") return *a < *b ? 1 : 0;
  if (op == "<=") return *a <= *b ? 1 : 0;
  if (op == ">") return *a > *b ? 1 : 0;
  return *a >= *b ? 1 : 0;
}

ScoreName parse_score_name(const std::string& s, const std::string& key) {
  ScoreName n;
  n.text = s;
  if (s == "ruler")
    n.kind = ScoreName::kRuler;
  else if (s == "helmet_recall")
    n.kind = ScoreName::kHelmetRecall;
  else if (s == "mc_acc")
    n.kind = ScoreName::kMcAcc;
  else if (s == "mc_acc_norm")
    n.kind = ScoreName::kMcAccNorm;
  else if (s == "probe_acc")
    n.kind = ScoreName::kProbeAcc;
  else if (s == "probe_exact")
    n.kind = ScoreName::kProbeExact;
  else if (s == "probe_auc")
    n.kind = ScoreName::kProbeAuc;
  else if (s.rfind("ruler@", 0) == 0) {
    n.kind = ScoreName::kRulerAt;
    const auto lens = eval::parse_lengths(s.substr(6));
    if (lens.size() != 1) fail(key, ": '", s, "' names no single length");
    n.length = lens[0];
  } else {
    fail(key, ": '", s,
         "' is not a score (ruler, ruler@LENGTH, helmet_recall, mc_acc, mc_acc_norm, probe_acc, probe_exact, "
         "probe_auc)");
  }
  return n;
}

}  // namespace headroom::analysis
