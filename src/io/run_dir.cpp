#include "io/run_dir.h"

#include "io/atomic_file.h"
#include "util/error.h"
#include "util/clock.h"

#include <cerrno>
#include <cstring>
#include <iostream>
#include <vector>

namespace headroom::io {
namespace fs = std::filesystem;

bool is_finished(const fs::path& root) { return fs::exists(root / "DONE"); }

namespace {

struct KindSignature {
  RunKind kind;
  const char* what;
  std::vector<const char*> outputs;
};

const std::vector<KindSignature>& kind_signatures() {
  static const std::vector<KindSignature> all{
      {RunKind::kTraining, "a training run", {"checkpoints", "metrics.jsonl"}},
      {RunKind::kEvaluation, "an evaluation", {"results.json"}},
      {RunKind::kAnalysis, "an analysis", {"report.md"}},
      {RunKind::kData, "prepared data", {"train.h5"}},
  };
  return all;
}

void refuse_other_kind(const fs::path& root, RunKind kind, const std::string& stage) {
  std::error_code ec;
  for (const auto& sig : kind_signatures()) {
    if (sig.kind == kind) continue;
    for (const char* output : sig.outputs)
      if (fs::exists(root / output, ec))
        fail("run directory ", root.string(), " holds ", sig.what, " (", (root / output).string(), " exists); ", stage,
             " writes into a directory of its own: choose another ", kind == RunKind::kAnalysis ? "--out" : "--run-dir",
             " (--force does not change this)");
  }
}

}  // namespace

RunLock claim_run_dir(const fs::path& root, RunKind kind, const std::string& stage) {
  RunLock lock = lock_run_dir(root, stage);
  refuse_other_kind(root, kind, stage);
  return lock;
}

RunDir open_run_dir(const fs::path& root, bool force, RunLock lock) {
  if (is_finished(root) && !force)
    fail("run directory ", root.string(), " holds a finished run (", (root / "DONE").string(),
         " exists); choose another --run-dir or pass --force to replace its outputs");
  std::error_code ec;
  // Replacing a finished run: it stops counting as finished until the new run writes DONE.
  if (force) fs::remove(root / "DONE", ec);
  // A new attempt: an old stop marker would have the job requeued whatever this one does.
  fs::remove(root / "STOPPED", ec);
  fs::create_directories(root, ec);
  if (ec) fail("run directory ", root.string(), ": cannot create (", ec.message(), ")");
  RunDir run{root, std::ofstream(root / "log.txt", std::ios::app), std::move(lock)};
  if (!run.log) fail(root.string(), "/log.txt: cannot open for writing (", std::strerror(errno), ")");
  if (!run.lock.note().empty()) log_line(run, "note: " + run.lock.note());
  return run;
}

void log_fatal(RunDir& run, const std::string& what) noexcept {
  try {
    log_line(run, "error: " + what);
  } catch (...) {  // the log itself failed (a full disk): stderr has the message
  }
}

void write_config(const RunDir& run, const std::string& ini_text) {
  write_file_atomic(run.root / "config.ini", ini_text);
}

void log_line(RunDir& run, const std::string& line) {
  const std::string stamped = cat('[', utc_timestamp(), "] ", line);
  std::cout << stamped << std::endl;
  run.log << stamped << '\n';
  run.log.flush();
  if (!run.log)
    fail((run.root / "log.txt").string(), ": write failed (", std::strerror(errno), "; disk full or quota reached?)");
}

void mark_finished(const RunDir& run, const std::string& summary) {
  write_file_atomic(run.root / "DONE", cat(utc_timestamp(), ' ', summary, '\n'));
}

void mark_stopped(const RunDir& run, const std::string& why) {
  write_file_atomic(run.root / "STOPPED", cat(utc_timestamp(), ' ', why, '\n'));
}

}  // namespace headroom::io
