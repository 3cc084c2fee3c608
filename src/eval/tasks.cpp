#include "eval/tasks.h"

#include "data/ruler_niah.h"
#include "eval/common_words.h"
#include "eval/frequent_words.h"
#include "eval/json_kv.h"
#include "eval/niah.h"
#include "eval/qa.h"
#include "eval/score_groups.h"
#include "eval/variable_tracking.h"
#include "util/error.h"
#include "util/text.h"

#include <algorithm>
#include <sstream>

namespace headroom::eval {
namespace {

NeedleType needle_type(const std::string& name) {
  if (name == "words") return NeedleType::kWords;
  if (name == "numbers") return NeedleType::kNumbers;
  if (name == "uuids") return NeedleType::kUuids;
  fail("unknown needle type '", name, "'");
}

NiahSpec niah_spec(const data::RulerNiahShape& r) {
  const std::string h = r.haystack;
  const Haystack hay = h == "noise" ? Haystack::kNoise : h == "essay" ? Haystack::kEssay : Haystack::kNeedles;
  return {hay, needle_type(r.key_type), needle_type(r.value_type), r.n_keys, r.n_values, r.n_queries};
}

TaskSpec niah(const std::string& name, NiahSpec spec) {
  return {name,
          Metric::kMatchAll,
          128,
          true,
          spec.haystack == Haystack::kEssay,
          [name, spec](TaskContext& c, const SampleKey& k) { return niah_builder(name, spec, c.res, k); }};
}

std::vector<TaskSpec> make_tasks() {
  std::vector<TaskSpec> t;
  for (const data::RulerNiahShape& r : data::kRulerNiahShapes) t.push_back(niah(r.task, niah_spec(r)));
  t.push_back(
      {"vt", Metric::kMatchAll, 30, true, false, [](TaskContext&, const SampleKey& k) { return vt_builder("vt", k); }});
  t.push_back({"cwe", Metric::kMatchAll, 120, true, false,
               [](TaskContext& c, const SampleKey& k) { return cwe_builder("cwe", c.cwe_pool, k); }});
  t.push_back({"fwe", Metric::kMatchAll, 50, true, false,
               [](TaskContext&, const SampleKey& k) { return fwe_builder("fwe", k); }});
  t.push_back({"qa_1", Metric::kMatchPart, 32, true, false,
               [](TaskContext& c, const SampleKey& k) { return qa_builder("qa_1", 1, c.res, k); }});
  t.push_back({"qa_2", Metric::kMatchPart, 32, true, false,
               [](TaskContext& c, const SampleKey& k) { return qa_builder("qa_2", 2, c.res, k); }});
  t.push_back({"json_kv", Metric::kSubstringExact, 100, false, false,
               [](TaskContext&, const SampleKey& k) { return json_kv_builder("json_kv", k); }});
  return t;
}

std::string known_names() {
  std::string s = "ruler, helmet_recall, all";
  for (const auto& t : all_tasks()) s += ", " + t.name;
  return s + ", " + kLossTask + ", " + kMcTask;
}

}  // namespace

const std::vector<TaskSpec>& all_tasks() {
  static const std::vector<TaskSpec> tasks = make_tasks();
  return tasks;
}

const TaskSpec& find_task(const std::string& name) {
  for (const auto& t : all_tasks())
    if (t.name == name) return t;
  fail("unknown task '", name, "'; known: ", known_names());
}

std::vector<std::string> expand_task_list(const std::string& list) {
  std::vector<std::string> out, unknown;
  auto add = [&](const std::string& n) {
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  };
  for (const std::string& item : split_list(list)) {
    if (item == "ruler" || item == "all") {
      for (const auto& t : all_tasks())
        if (t.ruler || item == "all") add(t.name);
      if (item == "all") add(kLossTask), add(kMcTask);
    } else if (item == "helmet_recall") {
      for (const char* t : kHelmetRecallTasks) add(t);
    } else if (item == kLossTask || item == kMcTask ||
               std::any_of(all_tasks().begin(), all_tasks().end(), [&](const TaskSpec& t) { return t.name == item; })) {
      add(item);
    } else {
      unknown.push_back("'" + item + "'");
    }
  }
  if (!unknown.empty()) {
    std::string names;
    for (const auto& u : unknown) names += (names.empty() ? "" : ", ") + u;
    fail("eval.tasks: unknown task name", unknown.size() > 1 ? "s " : " ", names, "; known: ", known_names());
  }
  if (out.empty()) fail("eval.tasks is empty; known: ", known_names());
  return out;
}

Sample generate_sample(const TaskSpec& spec, TaskContext& ctx, const SampleKey& key) {
  return fit_to_length(spec.name, spec.builder(ctx, key), ctx.prompts, key.length, key.max_new);
}

TaskContext make_task_context(const Resources& res, PromptBuilder& prompts) { return {res, prompts, cwe_pool(res)}; }

}  // namespace headroom::eval
