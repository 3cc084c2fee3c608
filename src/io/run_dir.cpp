#include "io/run_dir.h"

#include "io/atomic_file.h"
#include "util/error.h"
#include "util/clock.h"

#include <cerrno>
#include <cstring>
#include <iostream>

namespace headroom::io {
namespace fs = std::filesystem;

bool is_finished(const fs::path& root) { return fs::exists(root / "DONE"); }

RunDir open_run_dir(const fs::path& root, bool force) {
  if (is_finished(root) && !force)
    fail("run directory ", root.string(), " holds a finished run (", (root / "DONE").string(),
         " exists); choose another --run-dir or pass --force to replace its outputs");
  std::error_code ec;
  // Replacing a finished run: it stops counting as finished until the new run writes DONE.
  if (force) fs::remove(root / "DONE", ec);
  fs::create_directories(root, ec);
  if (ec) fail("run directory ", root.string(), ": cannot create (", ec.message(), ")");
  RunDir run{root, std::ofstream(root / "log.txt", std::ios::app)};
  if (!run.log) fail(root.string(), "/log.txt: cannot open for writing (", std::strerror(errno), ")");
  return run;
}

void write_config(const RunDir& run, const std::string& ini_text) {
  write_file_atomic(run.root / "config.ini", ini_text);
}

void log_line(RunDir& run, const std::string& line) {
  const std::string stamped = cat('[', utc_timestamp(), "] ", line);
  std::cout << stamped << std::endl;
  run.log << stamped << '\n';
  run.log.flush();
}

void mark_finished(const RunDir& run, const std::string& summary) {
  write_file_atomic(run.root / "DONE", cat(utc_timestamp(), ' ', summary, '\n'));
}

}  // namespace headroom::io
