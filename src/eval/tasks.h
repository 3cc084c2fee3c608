// The generated tasks by name: RULER's 13 and HELMET's json_kv. A task turns a SampleKey into a
// Builder (samples by haystack size), filled to the key's length by fit_to_length; its metric and
// default tokens to generate are RULER's.
#pragma once

#include "eval/fit.h"
#include "eval/prompt.h"
#include "eval/resources.h"
#include "eval/sample.h"

#include <functional>
#include <string>
#include <vector>

namespace headroom::eval {

// What generators share for one evaluation: the resources and the prompt builder that counts
// lengths in the model's tokenizer.
struct TaskContext {
  const Resources& res;
  PromptBuilder& prompts;
  std::vector<std::string> cwe_pool;  // built once (cwe_pool(res))
};

struct TaskSpec {
  std::string name;
  Metric metric;
  int64_t max_new;   // RULER's tokens_to_generate
  bool ruler;        // one of RULER's 13 (averaged together)
  bool needs_essay;  // draws from the essay haystack
  std::function<Builder(TaskContext&, const SampleKey&)> builder;
};

// The sample of `key` filled to key.length (throws TooLong when the task cannot fit).
Sample generate_sample(const TaskSpec& spec, TaskContext& ctx, const SampleKey& key);

// Every generated task, RULER's 13 first in RULER's order, then json_kv.
const std::vector<TaskSpec>& all_tasks();
const TaskSpec& find_task(const std::string& name);  // throws listing the known names

// The evaluation parts beyond the generated tasks.
inline constexpr const char* kLossTask = "loss_by_position";
inline constexpr const char* kMcTask = "mc";

// Expands a comma-separated list: task names, "ruler" (the 13), "all" (the 13, json_kv,
// loss_by_position, mc). Keeps first-seen order, drops duplicates; unknown names throw one error
// naming each of them and listing the known ones.
std::vector<std::string> expand_task_list(const std::string& list);

// A context for `res` and `prompts` (fills the cwe pool).
TaskContext make_task_context(const Resources& res, PromptBuilder& prompts);

}  // namespace headroom::eval
