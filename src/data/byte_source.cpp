#include "data/byte_source.h"

#include "util/error.h"

#include <zlib.h>
#include <zstd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

namespace headroom::data {
namespace fs = std::filesystem;
namespace {

class PlainSource final : public ByteSource {
 public:
  PlainSource(const fs::path& path, int64_t offset) : path_(path.string()), f_(std::fopen(path_.c_str(), "rb")) {
    if (!f_) fail(path_, ": cannot open (", std::strerror(errno), ")");
    if (offset > 0 && fseeko(f_, static_cast<off_t>(offset), SEEK_SET) != 0) {
      const int err = errno;
      std::fclose(f_);
      fail(path_, ": cannot seek to byte ", offset, " (", std::strerror(err), ")");
    }
  }
  ~PlainSource() override { std::fclose(f_); }
  std::size_t read(char* out, std::size_t n) override {
    const std::size_t got = std::fread(out, 1, n, f_);
    if (got == 0 && std::ferror(f_)) fail(path_, ": read failed (", std::strerror(errno), ")");
    return got;
  }

 private:
  std::string path_;
  std::FILE* f_;
};

// gzread reports a truncated member only as a short read with an error state, so every return is
// checked against gzerror.
class GzipSource final : public ByteSource {
 public:
  explicit GzipSource(const fs::path& path) : path_(path.string()), f_(gzopen(path_.c_str(), "rb")) {
    if (!f_) fail(path_, ": cannot open (", std::strerror(errno), ")");
    gzbuffer(f_, 1 << 20);
    // zlib reads a file without a gzip header as plain bytes; a .gz name promises compression.
    if (gzdirect(f_)) fail(path_, ": not a gzip file (no gzip header), although its name ends in .gz");
  }
  ~GzipSource() override { gzclose(f_); }
  std::size_t read(char* out, std::size_t n) override {
    const int got = gzread(f_, out, static_cast<unsigned>(std::min<std::size_t>(n, 1u << 30)));
    int err = Z_OK;
    const char* msg = gzerror(f_, &err);
    if (got < 0 || (err != Z_OK && err != Z_STREAM_END))
      fail(path_, ": not a readable gzip stream (", msg ? msg : "zlib error",
           "); a truncated or damaged .gz file is refused");
    return static_cast<std::size_t>(got);
  }

 private:
  std::string path_;
  gzFile f_;
};

// A frame left open at the end of the file (ZSTD_decompressStream's hint > 0) means truncation.
class ZstdSource final : public ByteSource {
 public:
  explicit ZstdSource(const fs::path& path) : raw_(path, 0), path_(path.string()), in_(ZSTD_DStreamInSize()) {
    if (!ctx_) fail(path_, ": cannot create a zstd decompression context");
  }
  ~ZstdSource() override { ZSTD_freeDCtx(ctx_); }
  std::size_t read(char* out, std::size_t n) override {
    ZSTD_outBuffer ob{out, n, 0};
    while (ob.pos == 0) {
      if (ib_.pos == ib_.size) {
        ib_ = {in_.data(), raw_.read(in_.data(), in_.size()), 0};
        if (ib_.size == 0) {
          if (pending_ != 0) fail(path_, ": truncated zstd stream (the last frame is incomplete)");
          return 0;
        }
      }
      pending_ = ZSTD_decompressStream(ctx_, &ob, &ib_);
      if (ZSTD_isError(pending_)) fail(path_, ": not a readable zstd stream (", ZSTD_getErrorName(pending_), ")");
    }
    return ob.pos;
  }

 private:
  PlainSource raw_;
  std::string path_;
  std::vector<char> in_;
  ZSTD_inBuffer ib_{nullptr, 0, 0};
  ZSTD_DCtx* ctx_ = ZSTD_createDCtx();
  std::size_t pending_ = 0;
};

}  // namespace

fs::path without_compression_suffix(const fs::path& path) {
  const auto ext = path.extension();
  return ext == ".gz" || ext == ".zst" ? path.parent_path() / path.stem() : path;
}

std::unique_ptr<ByteSource> open_byte_source(const fs::path& path, int64_t offset) {
  const auto ext = path.extension();
  if ((ext == ".gz" || ext == ".zst") && offset > 0)
    fail(path.string(), ": a compressed file is read from its start only (asked for byte ", offset, ")");
  if (ext == ".gz") return std::make_unique<GzipSource>(path);
  if (ext == ".zst") return std::make_unique<ZstdSource>(path);
  return std::make_unique<PlainSource>(path, offset);
}

}  // namespace headroom::data
