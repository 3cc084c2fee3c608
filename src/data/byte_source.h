// A file's bytes as a stream, decompressed on the fly by its suffix: `.gz` (zlib), `.zst`
// (libzstd), anything else read as is. Streaming keeps prepare's memory independent of the file's
// size; every failure (unreadable, truncated or corrupt compressed data) throws naming the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>

namespace headroom::data {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Up to `n` bytes into `out`; 0 only at the end of the (decompressed) data.
  virtual std::size_t read(char* out, std::size_t n) = 0;
};

// `offset` > 0 starts that many bytes into an uncompressed file (compressed ones are refused).
std::unique_ptr<ByteSource> open_byte_source(const std::filesystem::path& path, int64_t offset = 0);

// The name without a compression suffix: "a.jsonl.gz" -> "a.jsonl" (what decides the format).
std::filesystem::path without_compression_suffix(const std::filesystem::path& path);

}  // namespace headroom::data
