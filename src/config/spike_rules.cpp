#include "config/spike_rules.h"

#include "util/error.h"

#include <cmath>
#include <cstdlib>
#include <set>
#include <sstream>

namespace headroom::config {
namespace {

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, sep);) out.push_back(item);
  if (!text.empty() && text.back() == sep) out.emplace_back();
  return out;
}

bool parse_long(const std::string& s, long& out) {
  char* end = nullptr;
  out = std::strtol(s.c_str(), &end, 10);
  return !s.empty() && *end == '\0';
}

bool parse_double(const std::string& s, double& out) {
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return !s.empty() && *end == '\0';
}

// One entry: a built-in's name or name:window:sigmas:one|two:lookback. "" or why in `why`.
SpikeRule parse_entry(const std::string& entry, std::string& why) {
  const auto f = split(entry, ':');
  if (f.size() == 1) {
    if (f[0] == "paper") return paper_spike_rule();
    if (f[0] == "olmo") return olmo_spike_rule();
    why = cat("'", entry, "' is not a built-in rule (paper, olmo) nor name:window:sigmas:one|two:lookback");
    return {};
  }
  SpikeRule r;
  r.name = f[0];
  if (f.size() != 5 || !parse_long(f[1], r.window) || !parse_double(f[2], r.sigmas) ||
      (f[3] != "one" && f[3] != "two") || !parse_long(f[4], r.lookback)) {
    why = cat("'", entry, "' is not name:window:sigmas:one|two:lookback (e.g. tight:500:5:two:200)");
    return {};
  }
  r.two_sided = f[3] == "two";
  if (const std::string p = spike_rule_problem(r); !p.empty()) why = cat("'", entry, "': ", p);
  return r;
}

}  // namespace

SpikeRule paper_spike_rule() { return {"paper", 1000, 7.0, true, 1000}; }
SpikeRule olmo_spike_rule() { return {"olmo", 10000, 6.0, false, 128}; }
std::vector<SpikeRule> default_spike_rules() { return {paper_spike_rule(), olmo_spike_rule()}; }

SpikeRule builtin_spike_rule(std::string_view name) {
  if (name == "paper") return paper_spike_rule();
  if (name == "olmo") return olmo_spike_rule();
  fail("spike rule '", name, "': no such built-in rule (built-ins: paper, olmo)");
}

std::string spike_rule_problem(const SpikeRule& r) {
  if (r.name.empty()) return "empty name";
  if (r.window < 1 || r.window > kMaxSpikeLength)
    return cat("window ", r.window, " must be in [1, ", kMaxSpikeLength, "]");
  if (r.lookback < 2 || r.lookback > kMaxSpikeLength)
    return cat("lookback ", r.lookback, " must be in [2, ", kMaxSpikeLength,
               "] (a standard deviation needs two values)");
  if (!std::isfinite(r.sigmas) || r.sigmas <= 0) return cat("sigmas ", r.sigmas, " must be finite and > 0");
  return "";
}

std::string check_spike_rules(const std::string& text) {
  if (text.empty()) return "must name at least one rule (paper, olmo, or name:window:sigmas:one|two:lookback)";
  std::set<std::string> names;
  for (const std::string& entry : split(text, ',')) {
    std::string why;
    const SpikeRule r = parse_entry(entry, why);
    if (!why.empty()) return why;
    if (!names.insert(r.name).second) return cat("names the rule '", r.name, "' twice");
  }
  return "";
}

std::vector<SpikeRule> parse_spike_rules(const std::string& text) {
  if (const std::string why = check_spike_rules(text); !why.empty()) fail("train.spike_rules = '", text, "': ", why);
  std::vector<SpikeRule> out;
  for (const std::string& entry : split(text, ',')) {
    std::string why;
    out.push_back(parse_entry(entry, why));
  }
  return out;
}

}  // namespace headroom::config
