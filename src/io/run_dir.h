// A run directory: the resolved config, a log, the outputs, and a DONE marker written last. A
// directory holding DONE is a finished run and is never written into again unless --force is given;
// even then old files are only replaced by complete new ones (atomic renames), never deleted first.
#pragma once

#include "io/run_lock.h"

#include <filesystem>
#include <fstream>
#include <string>

namespace headroom::io {

struct RunDir {
  std::filesystem::path root;
  std::ofstream log;  // root/log.txt, appended
  RunLock lock;       // held while the stage writes here
};

// What a stage writes, told apart by the outputs that only it makes (a directory is never shared
// by two kinds: evaluate's DONE in a training run would end the training).
enum class RunKind { kTraining, kEvaluation, kAnalysis, kData };

// Locks `root` (creating it) for `stage` (io/run_lock.h), then refuses a directory that holds
// another kind's outputs, naming them. Before anything is written there.
RunLock claim_run_dir(const std::filesystem::path& root, RunKind kind, const std::string& stage);

// Opens a claimed `root`. Throws when it holds a finished run and !force, or when it cannot be
// written. The run's log notes a stale lock that was taken over.
RunDir open_run_dir(const std::filesystem::path& root, bool force, RunLock lock);

// Best effort (never throws): "error: <what>" in the log, so that log.txt says how a run ended
// even when only stderr was kept.
void log_fatal(RunDir& run, const std::string& what) noexcept;

bool is_finished(const std::filesystem::path& root);

// Writes root/config.ini atomically.
void write_config(const RunDir& run, const std::string& ini_text);

// One timestamped line to stdout and to the log.
void log_line(RunDir& run, const std::string& line);

// Writes root/DONE (atomically) with the time and a one-line summary.
void mark_finished(const RunDir& run, const std::string& summary);

// root/STOPPED: the stage checkpointed and stopped on a signal (preemption) and wants to be run
// again. The job script requeues on this marker rather than on the launcher's exit status, which
// mpirun does not pass through (it returns 1 after forwarding SIGTERM). Written atomically after
// the checkpoint; removed when a stage opens the directory.
void mark_stopped(const RunDir& run, const std::string& why);

}  // namespace headroom::io
