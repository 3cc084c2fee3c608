#include "io/run_lock.h"

#include "io/atomic_file.h"
#include "util/clock.h"
#include "util/error.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

namespace headroom::io {
namespace fs = std::filesystem;
namespace {

std::string this_host() {
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof name) != 0) return "unknown-host";
  return name;
}

std::string slurm_job() {
  const char* id = std::getenv("SLURM_JOB_ID");
  return id && *id ? id : "none";
}

// One line: "host=H pid=P job=J stage=S since=T".
std::string identity_line(const std::string& stage) {
  return cat("host=", this_host(), " pid=", ::getpid(), " job=", slurm_job(), " stage=", stage,
             " since=", utc_timestamp());
}

// The value of `key=` in an identity line ("" if absent).
std::string lock_field(const std::string& line, const std::string& key) {
  const std::string tag = key + "=";
  size_t at = line.find(tag);
  while (at != std::string::npos && at > 0 && line[at - 1] != ' ') at = line.find(tag, at + 1);
  if (at == std::string::npos) return "";
  const size_t from = at + tag.size();
  return line.substr(from, line.find_first_of(" \n", from) - from);
}

// A killed process stays in the process table until its parent reaps it, and kill(pid, 0) still
// finds it: a stage killed with its launcher (SIGKILL on a node) leaves one behind for as long as
// nothing reaps orphans. Its state in /proc/PID/stat (the field after the command's closing
// parenthesis) says so.
bool is_zombie(long pid) {
  std::ifstream stat(cat("/proc/", pid, "/stat"));
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');
  if (close == std::string::npos || close + 2 >= text.size()) return false;
  const char state = text[close + 2];
  return state == 'Z' || state == 'X';
}

// Why a lock is stale ("" when its holder may be alive).
std::string stale_reason(const std::string& holder) {
  const std::string job = lock_field(holder, "job");
  if (job != "none" && job == slurm_job()) return cat("it belongs to this Slurm job (", job, "), an earlier instance");
  if (lock_field(holder, "host") != this_host()) return "";
  const long pid = std::strtol(lock_field(holder, "pid").c_str(), nullptr, 10);
  if (pid <= 0) return "it names no process";
  if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
    return cat("process ", pid, " no longer runs on this host");
  if (is_zombie(pid)) return cat("process ", pid, " has ended (a zombie not yet reaped)");
  return "";
}

// O_CREAT | O_EXCL: true when this call created the file (and wrote `line` into it).
bool create_exclusive(const fs::path& path, const std::string& line) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd < 0) {
    if (errno == EEXIST) return false;
    fail(path.string(), ": cannot create the run directory's lock (", std::strerror(errno), ")");
  }
  const std::string text = line + "\n";
  const ssize_t n = ::write(fd, text.data(), text.size());
  const int err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(text.size())) {
    ::unlink(path.c_str());
    fail(path.string(), ": cannot write the run directory's lock (", std::strerror(err), ")");
  }
  return true;
}

std::string read_holder(const fs::path& path) {
  try {
    std::string text = read_file(path);
    while (!text.empty() && text.back() == '\n') text.pop_back();
    return text;
  } catch (const Error&) {
    return "";  // released between our create and our read: the caller tries again
  }
}

}  // namespace

RunLock& RunLock::operator=(RunLock&& o) noexcept {
  if (this != &o) {
    release();
    path_ = std::move(o.path_);
    identity_ = std::move(o.identity_);
    note_ = std::move(o.note_);
    o.path_.clear();
  }
  return *this;
}

void RunLock::release() noexcept {
  if (path_.empty()) return;
  // Only our own: a lock taken over by another process after ours was judged stale stays.
  if (read_holder(path_) == identity_) ::unlink(path_.c_str());
  path_.clear();
}

RunLock lock_run_dir(const fs::path& dir, const std::string& stage) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) fail("run directory ", dir.string(), ": cannot create (", ec.message(), ")");
  RunLock lock;
  lock.path_ = dir / "LOCK";
  lock.identity_ = identity_line(stage);
  // Twice at most: once, and once more after removing a stale lock.
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (create_exclusive(lock.path_, lock.identity_)) return lock;
    const std::string holder = read_holder(lock.path_);
    if (holder.empty()) continue;
    const std::string why = stale_reason(holder);
    if (why.empty())
      fail("run directory ", dir.string(), " is in use by another stage (", lock.path_.string(), ": ", holder,
           "); wait for it to finish, or choose another --run-dir. If that process is gone (a node that "
           "failed), remove ",
           lock.path_.string(), " by hand");
    lock.note_ = cat("took over the stale lock ", lock.path_.string(), " (", holder, "): ", why);
    // The check-then-remove below can race only with another taker of the same stale lock.
    if (read_holder(lock.path_) == holder) ::unlink(lock.path_.c_str());
  }
  lock.path_.clear();
  fail("run directory ", dir.string(), ": another process took its lock ", (dir / "LOCK").string(),
       " at the same time (", read_holder(dir / "LOCK"), ")");
}

}  // namespace headroom::io
