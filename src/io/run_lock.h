// One writer per run directory. Two jobs on one directory (a resubmitted job while the first still
// runs, an evaluate pointed at a training run) interleave their logs and leave one run's DONE with
// the other's config.ini. The stage that writes a directory holds DIR/LOCK, created atomically
// (O_CREAT | O_EXCL, which shared cluster file systems honour), holding its host, pid and Slurm job
// id; a second writer is refused with that identity before it writes anything.
//
// A lock outlives a process killed without unwinding (SIGKILL, MPI_Abort of another rank). It is
// stale, and taken over with a note naming it, when its process is gone from this host or when it
// belongs to this very Slurm job (a requeued job keeps its id, possibly on another node). A lock of
// another host's live-looking job is refused: only its owner can tell, and the message says how.
#pragma once

#include <filesystem>
#include <string>

namespace headroom::io {

class RunLock {
 public:
  RunLock() = default;
  RunLock(RunLock&& o) noexcept { *this = std::move(o); }
  RunLock& operator=(RunLock&& o) noexcept;
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;
  ~RunLock() { release(); }
  // Removes the lock file if it is still this process's (never throws).
  void release() noexcept;
  // What a takeover of a stale lock said ("" when there was none), for the run's log.
  const std::string& note() const { return note_; }

 private:
  friend RunLock lock_run_dir(const std::filesystem::path& dir, const std::string& stage);
  std::filesystem::path path_;
  std::string identity_, note_;
};

// Creates `dir` if needed and locks it for `stage`; throws naming the holder when another live
// process holds it.
RunLock lock_run_dir(const std::filesystem::path& dir, const std::string& stage);

}  // namespace headroom::io
