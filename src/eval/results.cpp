#include "eval/results.h"

#include "util/error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <iomanip>
#include <map>
#include <sstream>

namespace headroom::eval {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

ordered_json optional_number(const std::optional<double>& v) { return v ? ordered_json(*v) : ordered_json(nullptr); }

std::optional<double> read_optional_number(const json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  if (!j[key].is_number()) fail("'", key, "' is not a number");
  return j[key].get<double>();
}

// Every score evaluate writes is a percentage; anything else is a damaged or hand-edited file,
// and would enter analyze's means unnoticed.
std::optional<double> read_score(const json& j, const char* key, const std::string& where) {
  const std::optional<double> v = read_optional_number(j, key);
  if (v && !(*v >= 0.0 && *v <= 100.0)) fail(where, ": '", key, "' is ", *v, ", outside the scores' range [0, 100]");
  return v;
}

double required_score(const json& j, const char* key, const std::string& where) {
  const std::optional<double> v = read_score(j, key, where);
  if (!v) fail(where, ": '", key, "' is missing");
  return *v;
}

ordered_json group_json(const std::vector<LengthAverage>& by_length, const std::optional<double>& average) {
  ordered_json by_len = ordered_json::array();
  for (const auto& a : by_length)
    by_len.push_back({{"length", a.length}, {"score", optional_number(a.score)}, {"n_tasks", a.n_tasks}});
  return {{"by_length", by_len}, {"average", optional_number(average)}};
}

void parse_group(const json& j, const char* name, std::vector<LengthAverage>& by_length,
                 std::optional<double>& average) {
  if (!j.contains(name) || !j[name].is_object()) return;
  for (const auto& a : j[name].value("by_length", json::array())) {
    const auto L = a.at("length").get<int64_t>();
    by_length.push_back({L, read_score(a, "score", cat(name, ".by_length at ", L)), a.value("n_tasks", int64_t{0})});
  }
  average = read_score(j[name], "average", name);
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string number(double v, int precision = 6) {
  std::ostringstream s;
  s << std::setprecision(precision) << v;
  return s.str();
}

}  // namespace

std::string results_json(const Results& r) {
  ordered_json j;
  j["format"] = "headroom-eval-results";
  j["format_version"] = 1;
  j["checkpoint"] = r.checkpoint;
  j["stage"] = r.stage;
  j["step"] = r.step;
  j["config_id"] = r.config_id;
  j["tokenizer_id"] = r.tokenizer_id;
  j["prompt_template"] = r.prompt_template;
  j["prompt_template_text"] = r.prompt_template_text;
  j["code_version"] = r.code_version;
  j["created_utc"] = r.created_utc;
  j["ranks"] = r.ranks;
  j["seconds"] = r.seconds;
  j["settings"] = {{"seed", r.seed},
                   {"samples", r.samples},
                   {"lengths", r.lengths},
                   {"tasks", r.tasks},
                   {"addressable_length", r.addressable_length},
                   {"allow_beyond_training", r.allow_beyond_training}};
  ordered_json tasks = ordered_json::array();
  for (const auto& t : r.task_scores) {
    ordered_json e;
    e["task"] = t.task;
    e["length"] = t.length;
    e["score"] = optional_number(t.score);
    e["n"] = t.n;
    e["skipped"] = t.skipped;
    if (!t.skip_reason.empty()) e["skip_reason"] = t.skip_reason;
    e["metric"] = t.metric;
    e["mean_tokens"] = t.mean_tokens;
    e["mean_units"] = t.mean_units;
    tasks.push_back(e);
  }
  j["tasks"] = tasks;
  j["ruler"] = group_json(r.ruler_by_length, r.ruler_average);
  if (!r.helmet_recall_by_length.empty())
    j["helmet_recall"] = group_json(r.helmet_recall_by_length, r.helmet_recall);
  else
    j["helmet_recall"] = nullptr;
  ordered_json loss = ordered_json::array();
  for (const auto& c : r.loss) {
    ordered_json b = ordered_json::array();
    for (const auto& k : c.buckets)
      b.push_back({{"start", k.start}, {"end", k.end}, {"mean_loss", k.mean_loss}, {"tokens", k.tokens}});
    loss.push_back({{"length", c.length}, {"windows", c.windows}, {"mean_loss", c.mean_loss}, {"buckets", b}});
  }
  j["loss_by_position"] = loss;
  if (r.mc)
    j["multiple_choice"] = {{"file", r.mc->file}, {"n", r.mc->n}, {"acc", r.mc->acc}, {"acc_norm", r.mc->acc_norm}};
  else
    j["multiple_choice"] = nullptr;
  return j.dump(2) + "\n";
}

Results parse_results_json(const std::string& text, const std::string& origin) {
  Results r;
  try {
    const json j = json::parse(text);
    if (j.value("format", std::string()) != "headroom-eval-results")
      fail("format is '", j.value("format", std::string()), "', expected headroom-eval-results");
    if (j.value("format_version", 0) != 1)
      fail("format_version is ", j.value("format_version", 0), ", this build reads 1");
    r.checkpoint = j.value("checkpoint", std::string());
    r.stage = j.value("stage", std::string());
    r.step = j.value("step", int64_t{0});
    r.config_id = j.value("config_id", std::string());
    r.tokenizer_id = j.value("tokenizer_id", std::string());
    r.prompt_template = j.value("prompt_template", std::string());
    r.prompt_template_text = j.value("prompt_template_text", std::string());
    r.code_version = j.value("code_version", std::string());
    r.created_utc = j.value("created_utc", std::string());
    r.ranks = j.value("ranks", 1);
    r.seconds = j.value("seconds", 0.0);
    if (j.contains("settings") && j["settings"].is_object()) {
      const auto& s = j["settings"];
      r.seed = s.value("seed", uint64_t{0});
      r.samples = s.value("samples", int64_t{0});
      if (s.contains("lengths")) r.lengths = s["lengths"].get<std::vector<int64_t>>();
      if (s.contains("tasks")) r.tasks = s["tasks"].get<std::vector<std::string>>();
      r.addressable_length = s.value("addressable_length", int64_t{0});
      r.allow_beyond_training = s.value("allow_beyond_training", false);
    }
    for (const auto& t : j.value("tasks", json::array())) {
      TaskScore ts;
      ts.task = t.at("task").get<std::string>();
      ts.length = t.at("length").get<int64_t>();
      ts.score = read_score(t, "score", cat("task ", ts.task, " at length ", ts.length));
      ts.n = t.value("n", int64_t{0});
      ts.skipped = t.value("skipped", int64_t{0});
      ts.skip_reason = t.value("skip_reason", std::string());
      ts.metric = t.value("metric", std::string());
      ts.mean_tokens = t.value("mean_tokens", 0.0);
      ts.mean_units = t.value("mean_units", 0.0);
      r.task_scores.push_back(ts);
    }
    parse_group(j, "ruler", r.ruler_by_length, r.ruler_average);
    parse_group(j, "helmet_recall", r.helmet_recall_by_length, r.helmet_recall);
    for (const auto& c : j.value("loss_by_position", json::array())) {
      LossCurve lc;
      lc.length = c.at("length").get<int64_t>();
      lc.windows = c.value("windows", int64_t{0});
      lc.mean_loss = c.at("mean_loss").get<double>();
      for (const auto& b : c.value("buckets", json::array()))
        lc.buckets.push_back({b.at("start").get<int64_t>(), b.at("end").get<int64_t>(), b.at("mean_loss").get<double>(),
                              b.value("tokens", int64_t{0})});
      r.loss.push_back(lc);
    }
    if (j.contains("multiple_choice") && j["multiple_choice"].is_object()) {
      const auto& m = j["multiple_choice"];
      r.mc = McSummary{m.value("file", std::string()), m.value("n", int64_t{0}),
                       required_score(m, "acc", "multiple_choice"), required_score(m, "acc_norm", "multiple_choice")};
    }
  } catch (const std::exception& e) {
    fail(origin, ": not a readable results.json (", e.what(), ")");
  }
  return r;
}

std::string results_csv(const Results& r) {
  std::string out = "task,length,score,n,checkpoint,config_id\n";
  std::string tail(1, ',');
  tail.append(csv_field(r.checkpoint)).append(1, ',').append(csv_field(r.config_id)).append(1, '\n');
  auto row = [&](const std::string& task, int64_t length, const std::optional<double>& score, int64_t n) {
    out += csv_field(task) + "," + std::to_string(length) + "," + (score ? number(*score, 8) : "") + "," +
           std::to_string(n) + tail;
  };
  for (const auto& t : r.task_scores) row(t.task, t.length, t.score, t.n);
  auto group_rows = [&](const char* name, const std::vector<LengthAverage>& by_length,
                        const std::optional<double>& average) {
    for (const auto& a : by_length) row(name, a.length, a.score, a.n_tasks);
    if (!by_length.empty()) row(name, 0, average, static_cast<int64_t>(by_length.size()));
  };
  group_rows("ruler_average", r.ruler_by_length, r.ruler_average);
  group_rows("helmet_recall", r.helmet_recall_by_length, r.helmet_recall);
  for (const auto& c : r.loss) row("loss_by_position", c.length, c.mean_loss, c.windows);
  if (r.mc) {
    row("mc_acc", 0, r.mc->acc, r.mc->n);
    row("mc_acc_norm", 0, r.mc->acc_norm, r.mc->n);
  }
  return out;
}

std::string results_table(const Results& r) {
  std::ostringstream s;
  std::vector<int64_t> lengths = r.lengths;
  std::vector<std::string> order;
  std::map<std::pair<std::string, int64_t>, const TaskScore*> cell;
  for (const auto& t : r.task_scores) {
    if (std::find(order.begin(), order.end(), t.task) == order.end()) order.push_back(t.task);
    cell[{t.task, t.length}] = &t;
  }
  auto fmt = [](const std::optional<double>& v) {
    char b[32];
    if (!v) return std::string("      -");
    std::snprintf(b, sizeof b, "%7.1f", *v);
    return std::string(b);
  };
  s << "checkpoint " << r.checkpoint << " (" << r.stage << ", step " << r.step << ", " << r.config_id
    << "), prompt template: " << r.prompt_template << "\n";
  if (!order.empty()) {
    s << std::left << std::setw(18) << "task";
    for (int64_t L : lengths) s << std::right << std::setw(8) << L;
    s << "\n";
    for (const auto& task : order) {
      s << std::left << std::setw(18) << task;
      for (int64_t L : lengths) {
        const auto it = cell.find({task, L});
        s << " " << (it == cell.end() ? std::string("      -") : fmt(it->second->score));
      }
      s << "\n";
    }
  }
  auto group_row = [&](const char* name, const std::vector<LengthAverage>& by_length,
                       const std::optional<double>& average) {
    if (by_length.empty()) return;
    s << std::left << std::setw(18) << name;
    for (int64_t L : lengths) {
      std::optional<double> v;
      for (const auto& a : by_length)
        if (a.length == L) v = a.score;
      s << " " << fmt(v);
    }
    s << "   overall " << (average ? number(*average, 4) : std::string("-")) << "\n";
  };
  group_row("ruler_average", r.ruler_by_length, r.ruler_average);
  group_row("helmet_recall", r.helmet_recall_by_length, r.helmet_recall);
  for (const auto& c : r.loss) {
    s << "loss_by_position " << c.length << ": mean " << number(c.mean_loss, 4) << " nats over " << c.windows
      << " windows; by position";
    for (const auto& b : c.buckets) s << " [" << b.start << "," << b.end << ") " << number(b.mean_loss, 4);
    s << "\n";
  }
  if (r.mc)
    s << "multiple choice (" << r.mc->n << " items): acc " << number(r.mc->acc, 4) << ", acc_norm "
      << number(r.mc->acc_norm, 4) << "\n";
  return s.str();
}

}  // namespace headroom::eval
