// Writes one token shard (the layout of shard.h) document by document, in bounded memory: tokens
// and document offsets are spooled to two raw files beside the shard, and `finish` builds the HDF5
// file (metadata only, the two datasets reserved) and copies the spooled bytes into place with
// plain checked writes. Nothing large passes through HDF5, so a full disk fails in our own write
// with a message naming the file (HDF5 1.10 can crash when a write fails inside its close), and the
// shard appears under its final name only when complete (temporary + fsync + rename).
#pragma once

#include "data/shard.h"

#include <cstdio>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace headroom::data {

class ShardWriter {
 public:
  ShardWriter(std::filesystem::path path, const Tokenizer& tokenizer, ShardMeta meta);
  ShardWriter(const ShardWriter&) = delete;
  ShardWriter& operator=(const ShardWriter&) = delete;
  ~ShardWriter();  // a shard not finished leaves nothing behind

  // One document as stored: BOS (when the tokenizer has one) followed by its tokens.
  void add(std::span<const int32_t> tokens, int64_t text_bytes);
  void finish();

  int64_t n_tokens() const { return n_tokens_; }
  int64_t n_docs() const { return n_docs_; }
  int64_t token_bytes() const { return n_tokens_ * width_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  void flush_tokens();
  void copy_spool(const std::filesystem::path& spool, int fd, int64_t offset, int64_t bytes);
  void discard() noexcept;

  std::filesystem::path path_, token_spool_, offset_spool_;
  const Tokenizer& tokenizer_;
  ShardMeta meta_;
  int width_;  // bytes per stored token: 2 when the vocabulary fits uint16
  std::FILE* tokens_ = nullptr;
  std::FILE* offsets_ = nullptr;
  std::vector<unsigned char> buffer_;
  int64_t n_tokens_ = 0, n_docs_ = 0, n_bytes_ = 0;
  bool finished_ = false;
};

}  // namespace headroom::data
