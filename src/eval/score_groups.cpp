#include "eval/score_groups.h"

#include "eval/tasks.h"

#include <algorithm>
#include <functional>

namespace headroom::eval {
namespace {

// The mean over lengths of the per-length means of the tasks `member` selects; a length counts
// when at least `need` of them are scored there.
GroupScore group_score(const std::vector<TaskScore>& scores, const std::vector<int64_t>& lengths,
                       const std::function<bool(const std::string&)>& member, int64_t need) {
  GroupScore g;
  double sum_len = 0;
  int64_t n_len = 0;
  for (int64_t L : lengths) {
    LengthAverage a{L, std::nullopt, 0};
    double sum = 0;
    for (const auto& c : scores)
      if (c.length == L && c.score && member(c.task)) sum += *c.score, ++a.n_tasks;
    if (a.n_tasks >= need) a.score = sum / static_cast<double>(a.n_tasks), sum_len += *a.score, ++n_len;
    g.by_length.push_back(a);
  }
  if (n_len > 0) g.average = sum_len / static_cast<double>(n_len);
  return g;
}

}  // namespace

bool is_helmet_recall_task(const std::string& task) {
  return std::find(kHelmetRecallTasks.begin(), kHelmetRecallTasks.end(), task) != kHelmetRecallTasks.end();
}

GroupScore ruler_score(const std::vector<TaskScore>& scores, const std::vector<int64_t>& lengths) {
  return group_score(
      scores, lengths, [](const std::string& t) { return find_task(t).ruler; }, 1);
}

std::optional<GroupScore> helmet_recall_score(const std::vector<TaskScore>& scores, const std::vector<int64_t>& lengths,
                                              const std::vector<std::string>& tasks) {
  for (const char* t : kHelmetRecallTasks)
    if (std::find(tasks.begin(), tasks.end(), t) == tasks.end()) return std::nullopt;
  return group_score(scores, lengths, is_helmet_recall_task, static_cast<int64_t>(kHelmetRecallTasks.size()));
}

}  // namespace headroom::eval
