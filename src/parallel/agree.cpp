#include "parallel/agree.h"

#include <string>

namespace headroom::parallel {
namespace {

// The lowest rank whose flag is set, or -1: a max over (size - rank) of the failing ranks.
int lowest_failing_rank(Comm& comm, bool failed) {
  int64_t key = failed ? comm.size() - comm.rank() : 0;
  comm.allreduce_max(&key, 1);
  return key == 0 ? -1 : comm.size() - static_cast<int>(key);
}

std::string broadcast_message(Comm& comm, std::string text, int root) {
  int64_t n = static_cast<int64_t>(text.size());
  comm.broadcast(&n, sizeof n, root);
  text.resize(static_cast<size_t>(n));
  if (n > 0) comm.broadcast(text.data(), text.size(), root);
  return text;
}

}  // namespace

void agree(Comm& comm, const std::function<void()>& step) {
  std::string message;
  bool failed = false;
  try {
    step();
  } catch (const CollectiveError& e) {  // agreed already (a nested agree): every rank has it
    failed = true;
    message = e.what();
  } catch (const std::exception& e) {
    failed = true;
    message = comm.size() > 1 ? cat(e.what(), " (rank ", comm.rank(), " of ", comm.size(), ")") : e.what();
  }
  const int first = lowest_failing_rank(comm, failed);
  if (first < 0) return;
  throw CollectiveError(broadcast_message(comm, message, first));
}

}  // namespace headroom::parallel
