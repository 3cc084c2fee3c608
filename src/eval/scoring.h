// Scoring by RULER's rules (RULER scripts/eval/synthetic/constants.py and evaluate.py) and HELMET's
// substring exact match. Strings are bytes; case folding and whitespace are ASCII (RULER's Python
// lower() also folds non-ASCII letters; the generated answers are ASCII).
#pragma once

#include "eval/sample.h"

#include <string>
#include <string_view>
#include <vector>

namespace headroom::eval {

// RULER's postprocess_pred: strip, replace every control character (\x00-\x1f) with a newline,
// strip again. Strip removes what Python's str.strip() removes among ASCII bytes: space, \t, \n,
// \v, \f, \r and \x1c-\x1f.
std::string postprocess_prediction(std::string_view prediction);

// Per-sample scores in [0, 1] (RULER multiplies the mean by 100 per task).
// string_match_all: mean over references of [reference.lower() in prediction.lower()].
double string_match_all(std::string_view prediction, const std::vector<std::string>& references);
// string_match_part: max over references of the same test.
double string_match_part(std::string_view prediction, const std::vector<std::string>& references);

// SQuAD's normalize_answer as HELMET uses it: lower case, punctuation removed, the articles
// a/an/the removed as words, whitespace collapsed to single spaces.
std::string normalize_answer(std::string_view s);
// HELMET's substring_exact_match: some normalised reference is a substring of the normalised
// prediction.
double substring_exact_match(std::string_view prediction, const std::vector<std::string>& references);

// The sample score under `metric` (RULER metrics see the postprocessed prediction).
double score_prediction(Metric metric, std::string_view prediction, const std::vector<std::string>& references);

}  // namespace headroom::eval
