#include "io/h5_superblock.h"

#include "util/error.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

namespace headroom::io {
namespace {

constexpr unsigned char kSignature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};

// A little-endian address of `size` bytes at `at`; nullopt when the bytes are missing or the
// address is "undefined" (all bits set).
std::optional<uint64_t> address(const std::vector<unsigned char>& b, size_t at, size_t size) {
  if (size == 0 || size > 8 || at + size > b.size()) return std::nullopt;
  uint64_t v = 0;
  bool all_ones = true;
  for (size_t i = 0; i < size; ++i) {
    v |= static_cast<uint64_t>(b[at + i]) << (8 * i);
    all_ones = all_ones && b[at + i] == 0xff;
  }
  if (all_ones) return std::nullopt;
  return v;
}

// The end-of-file address of a superblock whose signature starts b (format spec, "Superblock"):
// versions 0 and 1 keep base address, free-space address, end-of-file address after 24 (v0) or
// 28 (v1) bytes; versions 2 and 3 keep base address, extension address, end-of-file address
// after 12. Addresses are relative to the base address.
std::optional<int64_t> eof_address(const std::vector<unsigned char>& b) {
  if (b.size() < 9) return std::nullopt;
  const int version = b[8];
  size_t first = 0, offsets = 0;
  if (version == 0 || version == 1) {
    if (b.size() < 14) return std::nullopt;
    offsets = b[13];
    first = version == 0 ? 24 : 28;
  } else if (version == 2 || version == 3) {
    if (b.size() < 10) return std::nullopt;
    offsets = b[9];
    first = 12;
  } else {
    return std::nullopt;
  }
  const auto base = address(b, first, offsets), eof = address(b, first + 2 * offsets, offsets);
  if (!eof) return std::nullopt;
  return static_cast<int64_t>(base.value_or(0) + *eof);
}

}  // namespace

H5Superblock read_superblock(const std::string& path) {
  H5Superblock s;
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  std::ifstream in(path, std::ios::binary);
  if (ec || !in) return s;
  s.file_size = static_cast<int64_t>(size);
  // The signature sits at 0 or, after a user block, at 512, 1024, 2048, ...
  for (int64_t at = 0; at + 8 <= s.file_size; at = at == 0 ? 512 : 2 * at) {
    std::vector<unsigned char> b(64);
    in.clear();
    in.seekg(at);
    in.read(reinterpret_cast<char*>(b.data()), static_cast<std::streamsize>(b.size()));
    b.resize(static_cast<size_t>(in.gcount()));
    if (b.size() < 8 || std::memcmp(b.data(), kSignature, 8) != 0) continue;
    s.signature = true;
    s.eof = eof_address(b);
    if (s.eof) *s.eof += at;
    break;
  }
  return s;
}

std::string h5_unreadable(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return cat(path, ": no such file");
  const H5Superblock s = read_superblock(path);
  const std::string what = cat(path, ": not a readable HDF5 file: ");
  if (s.file_size < 0) return what + "cannot read it (permissions?)";
  if (s.file_size == 0) return what + "the file is empty (0 bytes; truncated?)";
  if (!s.signature)
    return cat(what, "no HDF5 signature in its ", s.file_size, " bytes (not an HDF5 file, or corrupted)");
  if (!s.eof) return cat(what, "truncated or corrupted: ", s.file_size, " bytes, too few for its superblock");
  if (*s.eof > s.file_size)
    return cat(what, "truncated: ", s.file_size, " bytes of the ", *s.eof,
               " its superblock records (an interrupted copy or write?)");
  return cat(what, "corrupted: its superblock is intact (", s.file_size,
             " bytes, as recorded) but HDF5 cannot open it");
}

}  // namespace headroom::io
