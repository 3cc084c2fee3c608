// RULER's own prediction files from evaluate's samples: one JSONL file per length and task, each
// line a scored sample with the fields RULER's scripts/pred/call_api.py writes (index, pred, input,
// outputs, others, truncation, length), so that RULER's scorer (scripts/eval/evaluate.py) or any
// other can re-score a run without Headroom.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace headroom::eval {

// {relative path "<length>/<task>.jsonl": file content} from samples.jsonl lines that carry the
// prompt text ("input", written when eval.ruler_pred is on). Skipped samples (no score) have no
// RULER counterpart and are left out. Headroom's own score, prompt tokens and haystack units go in
// `others`; `length` is the prompt's token count, as RULER records it.
std::map<std::string, std::string> ruler_pred_files(const std::vector<std::string>& sample_lines);

}  // namespace headroom::eval
