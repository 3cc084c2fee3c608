// Files that appear complete or not at all: write to "<path>.tmp", flush and fsync, then rename over
// the final name (rename is atomic on POSIX file systems), then fsync the directory so the new name
// survives a crash.
#pragma once

#include <filesystem>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>

namespace headroom::io {

std::filesystem::path temp_path_for(const std::filesystem::path& final_path);

// Writes `contents` to `path` atomically; throws headroom::Error naming the file on any failure and
// leaves no temporary behind.
void write_file_atomic(const std::filesystem::path& path, std::string_view contents);

// The same for contents streamed by `write` (large files written piece by piece).
void write_file_atomic(const std::filesystem::path& path, const std::function<void(std::ostream&)>& write);

// Renames a finished temporary (written by someone else, e.g. HDF5) onto its final name, with the
// fsyncs above. Throws on failure, naming both paths.
void commit_file(const std::filesystem::path& tmp, const std::filesystem::path& final_path);

// Best-effort removal of a temporary after a failure (never throws).
void discard_file(const std::filesystem::path& tmp) noexcept;

std::string read_file(const std::filesystem::path& path);

}  // namespace headroom::io
