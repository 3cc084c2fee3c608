// The evaluation itself, on every rank: the work (generated samples, held-out windows,
// multiple-choice items) is one list split round-robin across the ranks of `samples_comm` (the
// world, or with eval.tp the groups' data-parallel communicator: a tensor-parallel group works
// through its items together); per-sample results are combined exactly (combine.h), then
// aggregated in list order, so the numbers are the same on any rank count.
#pragma once

#include "data/prompt_template.h"
#include "data/tokenizer.h"
#include "eval/eval_config.h"
#include "eval/results.h"
#include "model/model.h"
#include "parallel/comm.h"

#include <functional>
#include <string>
#include <vector>

namespace headroom::eval {

struct EvalJob {
  EvalConfig eval;
  std::vector<std::string> tasks;  // expanded (tasks.h)
  std::vector<int64_t> lengths;
  std::string val_path;  // data.val, for loss_by_position
  data::Tokenizer tokenizer;
  data::PromptTemplate tmpl = data::PromptTemplate::kBase;
  Results header;  // provenance, copied into the result
};

struct EvalOutput {
  Results results;                        // complete on every rank
  std::vector<std::string> sample_lines;  // samples.jsonl lines in list order (every rank)
};

// Collective over `samples_comm` and, with eval.tp, the model's tensor-parallel group. `log` receives
// progress lines (call it on the root only).
EvalOutput run_evaluation(const EvalJob& job, model::Model<float>& model, parallel::Comm& samples_comm,
                          const std::function<void(const std::string&)>& log);

}  // namespace headroom::eval
