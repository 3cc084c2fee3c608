// safetensors files (Hugging Face's weight format), read and written without a dependency:
//
//   8 bytes      N, the header length, unsigned little-endian
//   N bytes      JSON: {"<tensor>": {"dtype": "BF16", "shape": [rows, cols], "data_offsets": [b, e]},
//                       ..., "__metadata__": {"key": "string", ...}}
//   the rest     raw little-endian data; a tensor's bytes are [8 + N + b, 8 + N + e)
//
// Reading maps the file (mmap, read-only), so a 7-8B model is never held twice in memory: a reader
// copies (and converts to float) only the slice it asks for. F32, F16 and BF16 read (converted
// exactly: every F16 and BF16 value is a float); F32 and BF16 are written (BF16 rounds to nearest
// even). A model split into model-0000x-of-0000y.safetensors files is opened through its
// model.safetensors.index.json ({"weight_map": {"<tensor>": "<file>"}}).
//
// Every error names the file, and the tensor where one is at fault: a bad header (length, JSON, an
// entry without dtype/shape/data_offsets), offsets out of range, reversed or overlapping, a byte
// count that disagrees with dtype × shape, a dtype not supported, a truncated file.
#pragma once

#include "util/bf16.h"

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace headroom::io {

enum class StDtype { kF32, kF16, kBF16, kOther };

// "F32", "F16", "BF16".
std::string st_dtype_name(StDtype d);

struct StTensor {
  std::string name;
  std::string dtype_text;  // as in the header, e.g. "BF16" or "I64"
  StDtype dtype = StDtype::kOther;
  std::vector<int64_t> shape;
  int64_t begin = 0, end = 0;  // byte offsets into the data section
  int64_t numel() const;
};

// One mapped file.
class SafetensorsFile {
 public:
  // Maps and checks the whole header (throws headroom::Error naming the file and tensor).
  static SafetensorsFile open(const std::filesystem::path& path);
  SafetensorsFile(SafetensorsFile&&) noexcept;
  SafetensorsFile& operator=(SafetensorsFile&&) noexcept;
  ~SafetensorsFile();

  const std::filesystem::path& path() const { return path_; }
  const std::map<std::string, StTensor>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // Null when absent.
  const StTensor* find(const std::string& name) const;

  // The block rows [row0, row0 + rows) × cols [col0, col0 + cols) of a 2-D tensor (a 1-D tensor is
  // one column: col0 = 0, cols = 1), converted to float, row-major into out.
  void read_block(const std::string& name, int64_t row0, int64_t rows, int64_t col0, int64_t cols, float* out) const;

 private:
  SafetensorsFile() = default;
  std::filesystem::path path_;
  const unsigned char* map_ = nullptr;
  size_t map_size_ = 0;
  const unsigned char* data_ = nullptr;  // the data section
  std::map<std::string, StTensor> tensors_;
  std::map<std::string, std::string> metadata_;
};

// The weights of a Hugging Face model directory: model.safetensors, or the shards that
// model.safetensors.index.json names (each file mapped once).
class SafetensorsSet {
 public:
  static SafetensorsSet open_dir(const std::filesystem::path& dir);
  // Every tensor name, sorted.
  std::vector<std::string> names() const;
  // The tensor and its file; null when absent.
  const StTensor* find(const std::string& name, const SafetensorsFile** file = nullptr) const;
  void read_block(const std::string& name, int64_t row0, int64_t rows, int64_t col0, int64_t cols, float* out) const;
  // What was opened: "DIR/model.safetensors" or "DIR/model.safetensors.index.json (3 files)".
  const std::string& description() const { return description_; }

 private:
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, size_t> where_;  // tensor -> files_ index
  std::string description_;
};

// One tensor to write: float data, row-major, `shape` elements.
struct StWriteTensor {
  std::string name;
  std::vector<int64_t> shape;
  const float* data = nullptr;
};

// Writes a safetensors file (tensors in the order given, data 8-byte aligned by padding the header
// with spaces), as <path>.tmp renamed over path. dtype kF32 or kBF16.
void write_safetensors(const std::filesystem::path& path, const std::vector<StWriteTensor>& tensors, StDtype dtype,
                       const std::map<std::string, std::string>& metadata = {});

// Exact conversions (bf16's live in util/bf16.h, shared with the bf16 gradient reduction).
using util::bf16_to_float;
using util::float_to_bf16;
float f16_to_float(uint16_t h);

}  // namespace headroom::io
