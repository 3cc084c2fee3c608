// What a failed write most often means on a cluster: the file system is full or the user's quota
// is spent. The I/O libraries' own messages rarely say so; this note does, from statvfs.
#pragma once

#include <filesystem>
#include <string>

namespace headroom::io {

// "; <dir>: the file system is full (N bytes free)" when little is left, "" otherwise (or when
// statvfs fails: the note is a hint, never an error of its own).
std::string free_space_note(const std::filesystem::path& dir);

}  // namespace headroom::io
