// The suites' summary scores over task scores: RULER's average (per length the mean of the RULER
// tasks scored there, then the mean over lengths) and HELMET's synthetic-recall category, whose
// four tasks need no downloaded data (HELMET's configs/helmet_recall.yaml: json_kv and RULER's
// niah_multikey_2, niah_multikey_3 and niah_multivalue).
#pragma once

#include "eval/results.h"

#include <array>
#include <optional>
#include <string>
#include <vector>

namespace headroom::eval {

inline constexpr std::array<const char*, 4> kHelmetRecallTasks{"json_kv", "niah_multikey_2", "niah_multikey_3",
                                                               "niah_multivalue"};
bool is_helmet_recall_task(const std::string& task);

struct GroupScore {
  std::vector<LengthAverage> by_length;
  std::optional<double> average;  // over the lengths that have a score
};

// Per length over the RULER tasks scored at it.
GroupScore ruler_score(const std::vector<TaskScore>& scores, const std::vector<int64_t>& lengths);
// Per length over the four recall tasks, only where all four are scored (a subset would be another
// average); empty when the evaluation did not ask for all four.
std::optional<GroupScore> helmet_recall_score(const std::vector<TaskScore>& scores, const std::vector<int64_t>& lengths,
                                              const std::vector<std::string>& tasks);

}  // namespace headroom::eval
