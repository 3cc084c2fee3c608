// A run directory: the resolved config, a log, the outputs, and a DONE marker written last. A
// directory holding DONE is a finished run and is never written into again unless --force is given;
// even then old files are only replaced by complete new ones (atomic renames), never deleted first.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

namespace headroom::io {

struct RunDir {
  std::filesystem::path root;
  std::ofstream log;  // root/log.txt, appended
};

// Creates `root` (and parents) or reuses it. Throws when it holds a finished run and !force, or
// when it cannot be created or written.
RunDir open_run_dir(const std::filesystem::path& root, bool force);

bool is_finished(const std::filesystem::path& root);

// Writes root/config.ini atomically.
void write_config(const RunDir& run, const std::string& ini_text);

// One timestamped line to stdout and to the log.
void log_line(RunDir& run, const std::string& line);

// Writes root/DONE (atomically) with the time and a one-line summary.
void mark_finished(const RunDir& run, const std::string& summary);

}  // namespace headroom::io
