#include "data/shard_writer.h"

#include "io/atomic_file.h"
#include "util/error.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace headroom::data {
namespace fs = std::filesystem;
namespace {

std::FILE* create_spool(const fs::path& p) {
  std::FILE* f = std::fopen(p.c_str(), "wb");
  if (!f) fail(p.string(), ": cannot create (", std::strerror(errno), ")");
  return f;
}

void write_all(std::FILE* f, const void* data, std::size_t n, const fs::path& p) {
  if (n > 0 && std::fwrite(data, 1, n, f) != n)
    fail(p.string(), ": write failed (", std::strerror(errno), "; disk full or quota spent?)");
}

void close_spool(std::FILE*& f, const fs::path& p) {
  std::FILE* g = f;
  f = nullptr;
  if (g && std::fclose(g) != 0)
    fail(p.string(), ": write failed at close (", std::strerror(errno), "; disk full or quota spent?)");
}

// The HDF5 part of the shard: attributes, the tokenizer and the two reserved datasets.
struct Reserved {
  int64_t tokens = 0, offsets = 0;
};
Reserved write_metadata(const fs::path& tmp, const Tokenizer& tok, const ShardMeta& meta, int width, int64_t n_tokens,
                        int64_t n_docs, int64_t n_bytes) {
  io::H5File file = io::h5_create_file(tmp.string());
  Reserved r;
  r.tokens = io::h5_reserve_contiguous(file, "/tokens", width == 2 ? H5T_STD_U16LE : H5T_STD_U32LE,
                                       static_cast<hsize_t>(n_tokens));
  r.offsets = io::h5_reserve_contiguous(file, "/doc_offsets", H5T_STD_U64LE, static_cast<hsize_t>(n_docs + 1));
  write_shard_header(file, tok, meta, n_tokens, n_docs, n_bytes);
  file.close();
  return r;
}

}  // namespace

ShardWriter::ShardWriter(fs::path path, const Tokenizer& tokenizer, ShardMeta meta)
    : path_(std::move(path)),
      token_spool_(path_.string() + ".tokens.tmp"),
      offset_spool_(path_.string() + ".offsets.tmp"),
      tokenizer_(tokenizer),
      meta_(std::move(meta)),
      width_(vocab_size(tokenizer) <= 65536 ? 2 : 4) {
  try {
    tokens_ = create_spool(token_spool_);
    offsets_ = create_spool(offset_spool_);
    const uint64_t zero = 0;
    write_all(offsets_, &zero, sizeof zero, offset_spool_);
  } catch (...) {
    discard();
    throw;
  }
}

ShardWriter::~ShardWriter() {
  if (!finished_) discard();
}

void ShardWriter::add(std::span<const int32_t> tokens, int64_t text_bytes) {
  for (const int32_t t : tokens) {
    const auto v = static_cast<uint32_t>(t);  // little-endian, as the datasets are declared
    buffer_.push_back(static_cast<unsigned char>(v));
    buffer_.push_back(static_cast<unsigned char>(v >> 8));
    if (width_ == 4) {
      buffer_.push_back(static_cast<unsigned char>(v >> 16));
      buffer_.push_back(static_cast<unsigned char>(v >> 24));
    }
  }
  n_tokens_ += static_cast<int64_t>(tokens.size());
  ++n_docs_;
  n_bytes_ += text_bytes;
  const auto end = static_cast<uint64_t>(n_tokens_);
  write_all(offsets_, &end, sizeof end, offset_spool_);
  if (buffer_.size() >= (std::size_t{4} << 20)) flush_tokens();
}

void ShardWriter::flush_tokens() {
  write_all(tokens_, buffer_.data(), buffer_.size(), token_spool_);
  buffer_.clear();
}

void ShardWriter::copy_spool(const fs::path& spool, int fd, int64_t offset, int64_t bytes) {
  std::FILE* in = std::fopen(spool.c_str(), "rb");
  if (!in) fail(spool.string(), ": cannot reopen (", std::strerror(errno), ")");
  std::vector<char> chunk(std::size_t{4} << 20);
  int64_t done = 0;
  while (done < bytes) {
    const std::size_t got = std::fread(chunk.data(), 1, chunk.size(), in);
    if (got == 0) {
      std::fclose(in);
      fail(spool.string(), ": holds ", done, " bytes, ", bytes, " were written");
    }
    for (std::size_t w = 0; w < got;) {
      const ssize_t rc = ::pwrite(fd, chunk.data() + w, got - w, offset + done + static_cast<int64_t>(w));
      if (rc <= 0) {
        const int err = errno;
        std::fclose(in);
        fail(io::temp_path_for(path_).string(), ": write failed (", std::strerror(err), "; disk full or quota spent?)");
      }
      w += static_cast<std::size_t>(rc);
    }
    done += static_cast<int64_t>(got);
  }
  std::fclose(in);
}

void ShardWriter::finish() {
  flush_tokens();
  close_spool(tokens_, token_spool_);
  close_spool(offsets_, offset_spool_);
  const fs::path tmp = io::temp_path_for(path_);
  try {
    const Reserved r = write_metadata(tmp, tokenizer_, meta_, width_, n_tokens_, n_docs_, n_bytes_);
    const int fd = ::open(tmp.c_str(), O_WRONLY);
    if (fd < 0) fail(tmp.string(), ": cannot reopen (", std::strerror(errno), ")");
    try {
      copy_spool(token_spool_, fd, r.tokens, token_bytes());
      copy_spool(offset_spool_, fd, r.offsets, (n_docs_ + 1) * 8);
    } catch (...) {
      ::close(fd);
      throw;
    }
    if (::close(fd) != 0) fail(tmp.string(), ": write failed at close (", std::strerror(errno), ")");
    io::commit_file(tmp, path_);  // fsync + rename + fsync of the directory
  } catch (...) {
    discard();
    throw;
  }
  finished_ = true;
  io::discard_file(token_spool_);
  io::discard_file(offset_spool_);
}

void ShardWriter::discard() noexcept {
  if (tokens_) std::fclose(tokens_);
  if (offsets_) std::fclose(offsets_);
  tokens_ = offsets_ = nullptr;
  io::discard_file(token_spool_);
  io::discard_file(offset_spool_);
  io::discard_file(io::temp_path_for(path_));
}

}  // namespace headroom::data
