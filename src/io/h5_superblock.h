// Why an HDF5 file does not open, in words, read from its first bytes: missing, empty, without
// the HDF5 signature (not an HDF5 file), or shorter than the end-of-file address its superblock
// records (truncated: an interrupted copy or write). HDF5 itself only says "open failed".
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace headroom::io {

struct H5Superblock {
  bool signature = false;      // the 8-byte HDF5 signature at offset 0, 512, 1024, ...
  int64_t file_size = -1;      // -1: the file cannot be read
  std::optional<int64_t> eof;  // end-of-file address (absolute, bytes), when the superblock has one
};

// The superblock facts of `path` (versions 0–3 of the HDF5 file format).
H5Superblock read_superblock(const std::string& path);

// "<path>: not a readable HDF5 file: ..." with the reason and the sizes.
std::string h5_unreadable(const std::string& path);

}  // namespace headroom::io
