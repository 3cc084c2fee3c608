#include "io/safetensors.h"

#include "io/atomic_file.h"
#include "util/error.h"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>

namespace headroom::io {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Headers larger than this are refused (the format's own readers use the same bound).
constexpr uint64_t kMaxHeader = uint64_t{100} << 20;

int64_t dtype_bytes(const std::string& d) {
  if (d == "BOOL" || d == "U8" || d == "I8" || d == "F8_E4M3" || d == "F8_E5M2") return 1;
  if (d == "I16" || d == "U16" || d == "F16" || d == "BF16") return 2;
  if (d == "I32" || d == "U32" || d == "F32") return 4;
  if (d == "I64" || d == "U64" || d == "F64") return 8;
  return 0;
}

StDtype dtype_of(const std::string& d) {
  if (d == "F32") return StDtype::kF32;
  if (d == "F16") return StDtype::kF16;
  if (d == "BF16") return StDtype::kBF16;
  return StDtype::kOther;
}

uint64_t read_le64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

StTensor parse_entry(const std::string& file, const std::string& name, const json& e, int64_t data_bytes) {
  auto bad = [&](const std::string& why) { fail("safetensors ", file, ": tensor '", name, "': ", why); };
  if (!e.is_object()) bad("header entry is not an object");
  for (const char* k : {"dtype", "shape", "data_offsets"})
    if (!e.contains(k)) bad(cat("header entry has no '", k, "'"));
  StTensor t;
  t.name = name;
  if (!e["dtype"].is_string()) bad("dtype is not a string");
  t.dtype_text = e["dtype"].get<std::string>();
  t.dtype = dtype_of(t.dtype_text);
  const int64_t width = dtype_bytes(t.dtype_text);
  if (width == 0) bad(cat("unknown dtype '", t.dtype_text, "'"));
  if (!e["shape"].is_array()) bad("shape is not an array");
  for (const auto& d : e["shape"]) {
    if (!d.is_number_unsigned())
      bad(cat("shape ", e["shape"].dump(), " has an entry that is not a non-negative integer"));
    t.shape.push_back(d.get<int64_t>());
  }
  const auto& off = e["data_offsets"];
  if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
    bad(cat("data_offsets ", off.dump(), " is not [begin, end] of non-negative integers"));
  t.begin = off[0].get<int64_t>();
  t.end = off[1].get<int64_t>();
  if (t.end < t.begin) bad(cat("data_offsets [", t.begin, ", ", t.end, "] end before they begin"));
  if (t.end > data_bytes)
    bad(cat("data_offsets [", t.begin, ", ", t.end, "] run past the end of the data (", data_bytes,
            " bytes): the file is truncated or the offsets are out of range"));
  if (t.end - t.begin != t.numel() * width)
    bad(cat("data_offsets [", t.begin, ", ", t.end, "] hold ", t.end - t.begin, " bytes but dtype ", t.dtype_text,
            " × shape ", e["shape"].dump(), " needs ", t.numel() * width));
  return t;
}

void convert(const unsigned char* src, StDtype d, int64_t n, float* out) {
  switch (d) {
    case StDtype::kF32:
      std::memcpy(out, src, static_cast<size_t>(n) * 4);
      return;
    case StDtype::kBF16:
      for (int64_t i = 0; i < n; ++i) out[i] = bf16_to_float(static_cast<uint16_t>(src[2 * i] | (src[2 * i + 1] << 8)));
      return;
    case StDtype::kF16:
      for (int64_t i = 0; i < n; ++i) out[i] = f16_to_float(static_cast<uint16_t>(src[2 * i] | (src[2 * i + 1] << 8)));
      return;
    case StDtype::kOther:
      break;
  }
}

int64_t width_of(StDtype d) { return d == StDtype::kF32 ? 4 : 2; }

}  // namespace

std::string st_dtype_name(StDtype d) {
  switch (d) {
    case StDtype::kF32:
      return "F32";
    case StDtype::kF16:
      return "F16";
    case StDtype::kBF16:
      return "BF16";
    case StDtype::kOther:
      break;
  }
  return "?";
}

int64_t StTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

float f16_to_float(uint16_t h) {
  const int sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  float v;
  if (exp == 0)
    v = std::ldexp(static_cast<float>(man), -24);  // zero or subnormal: exact in float
  else if (exp == 31)
    v = man ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  else
    v = std::ldexp(static_cast<float>(man | 0x400), exp - 25);
  return sign ? -v : v;
}

SafetensorsFile SafetensorsFile::open(const fs::path& path) {
  SafetensorsFile f;
  f.path_ = path;
  const std::string p = path.string();
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) fail("safetensors ", p, ": cannot open (", std::strerror(errno), ")");
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    fail("safetensors ", p, ": cannot stat (", std::strerror(err), ")");
  }
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size < 8) {
    ::close(fd);
    fail("safetensors ", p, ": truncated file (", size, " bytes; the header length alone takes 8)");
  }
  void* m = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int err = errno;
  ::close(fd);
  if (m == MAP_FAILED) fail("safetensors ", p, ": cannot map (", std::strerror(err), ")");
  f.map_ = static_cast<const unsigned char*>(m);
  f.map_size_ = size;
  const uint64_t n = read_le64(f.map_);
  if (n > kMaxHeader) fail("safetensors ", p, ": bad header: length ", n, " exceeds ", kMaxHeader, " bytes");
  if (8 + n > size)
    fail("safetensors ", p, ": truncated file: the header says ", n, " bytes but only ", size - 8, " follow");
  json header;
  try {
    header = json::parse(f.map_ + 8, f.map_ + 8 + n);
  } catch (const std::exception& e) {
    fail("safetensors ", p, ": bad header: not JSON (", e.what(), ")");
  }
  if (!header.is_object()) fail("safetensors ", p, ": bad header: not a JSON object");
  f.data_ = f.map_ + 8 + n;
  const auto data_bytes = static_cast<int64_t>(size - 8 - n);
  for (const auto& [name, e] : header.items()) {
    if (name == "__metadata__") {
      if (!e.is_object()) fail("safetensors ", p, ": bad header: __metadata__ is not an object");
      for (const auto& [k, v] : e.items()) {
        if (!v.is_string()) fail("safetensors ", p, ": bad header: __metadata__ value of '", k, "' is not a string");
        f.metadata_[k] = v.get<std::string>();
      }
      continue;
    }
    f.tensors_[name] = parse_entry(p, name, e, data_bytes);
  }
  std::vector<const StTensor*> by_begin;
  for (const auto& [name, t] : f.tensors_)
    if (t.end > t.begin) by_begin.push_back(&t);
  std::sort(by_begin.begin(), by_begin.end(), [](auto* a, auto* b) { return a->begin < b->begin; });
  for (size_t i = 1; i < by_begin.size(); ++i)
    if (by_begin[i]->begin < by_begin[i - 1]->end)
      fail("safetensors ", p, ": tensors '", by_begin[i - 1]->name, "' [", by_begin[i - 1]->begin, ", ",
           by_begin[i - 1]->end, ") and '", by_begin[i]->name, "' [", by_begin[i]->begin, ", ", by_begin[i]->end,
           ") overlap");
  return f;
}

SafetensorsFile::SafetensorsFile(SafetensorsFile&& o) noexcept { *this = std::move(o); }

SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&& o) noexcept {
  if (this != &o) {
    if (map_) ::munmap(const_cast<unsigned char*>(map_), map_size_);
    path_ = std::move(o.path_);
    map_ = std::exchange(o.map_, nullptr);
    map_size_ = std::exchange(o.map_size_, 0);
    data_ = std::exchange(o.data_, nullptr);
    tensors_ = std::move(o.tensors_);
    metadata_ = std::move(o.metadata_);
  }
  return *this;
}

SafetensorsFile::~SafetensorsFile() {
  if (map_) ::munmap(const_cast<unsigned char*>(map_), map_size_);
}

const StTensor* SafetensorsFile::find(const std::string& name) const {
  const auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

void SafetensorsFile::read_block(const std::string& name, int64_t row0, int64_t rows, int64_t col0, int64_t cols,
                                 float* out) const {
  const StTensor* t = find(name);
  if (!t) fail("safetensors ", path_.string(), ": no tensor '", name, "'");
  if (t->dtype == StDtype::kOther)
    fail("safetensors ", path_.string(), ": tensor '", name, "' has dtype ", t->dtype_text,
         ", which is not supported (F32, F16 and BF16 are)");
  if (t->shape.empty() || t->shape.size() > 2)
    fail("safetensors ", path_.string(), ": tensor '", name, "' has ", t->shape.size(),
         " dimensions; only 1-D and 2-D tensors are read");
  const int64_t R = t->shape[0], C = t->shape.size() == 2 ? t->shape[1] : 1;
  if (row0 < 0 || rows < 0 || row0 + rows > R || col0 < 0 || cols < 0 || col0 + cols > C)
    fail("safetensors ", path_.string(), ": tensor '", name, "': block rows [", row0, ", ", row0 + rows, ") × cols [",
         col0, ", ", col0 + cols, ") is outside its shape [", R, ", ", C, "]");
  const int64_t w = width_of(t->dtype);
  const unsigned char* base = data_ + t->begin;
  for (int64_t r = 0; r < rows; ++r) convert(base + ((row0 + r) * C + col0) * w, t->dtype, cols, out + r * cols);
}

SafetensorsSet SafetensorsSet::open_dir(const fs::path& dir) {
  SafetensorsSet s;
  const fs::path index = dir / "model.safetensors.index.json", single = dir / "model.safetensors";
  std::vector<std::string> file_names;
  std::map<std::string, std::string> weight_map;
  if (fs::exists(index)) {
    json j;
    try {
      j = json::parse(read_file(index));
    } catch (const std::exception& e) {
      fail(index.string(), ": not JSON (", e.what(), ")");
    }
    if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
      fail(index.string(), ": no \"weight_map\" object");
    for (const auto& [name, file] : j["weight_map"].items()) {
      if (!file.is_string()) fail(index.string(), ": weight_map entry '", name, "' is not a file name");
      const std::string fname = file.get<std::string>();
      if (fname.find('/') != std::string::npos)
        fail(index.string(), ": weight_map entry '", name, "' names '", fname, "' outside the directory");
      weight_map[name] = fname;
      if (std::find(file_names.begin(), file_names.end(), fname) == file_names.end()) file_names.push_back(fname);
    }
    s.description_ = cat(index.string(), " (", file_names.size(), " files)");
  } else if (fs::exists(single)) {
    file_names.push_back("model.safetensors");
    s.description_ = single.string();
  } else {
    fail("Hugging Face directory ", dir.string(), " has neither model.safetensors nor model.safetensors.index.json");
  }
  for (size_t i = 0; i < file_names.size(); ++i) {
    s.files_.push_back(std::make_unique<SafetensorsFile>(SafetensorsFile::open(dir / file_names[i])));
    for (const auto& [name, t] : s.files_.back()->tensors()) {
      if (s.where_.count(name))
        fail("safetensors ", (dir / file_names[i]).string(), ": tensor '", name, "' is also in ",
             s.files_[s.where_[name]]->path().string());
      s.where_[name] = i;
    }
  }
  for (const auto& [name, fname] : weight_map) {
    const auto it = s.where_.find(name);
    if (it == s.where_.end())
      fail(index.string(), ": tensor '", name, "' is mapped to ", fname, ", which does not hold it");
    if (s.files_[it->second]->path().filename() != fname)
      fail(index.string(), ": tensor '", name, "' is mapped to ", fname, " but found in ",
           s.files_[it->second]->path().string());
  }
  if (!weight_map.empty())
    for (const auto& [name, i] : s.where_)
      if (!weight_map.count(name))
        fail(index.string(), ": tensor '", name, "' of ", s.files_[i]->path().string(), " is not in the weight_map");
  return s;
}

std::vector<std::string> SafetensorsSet::names() const {
  std::vector<std::string> out;
  for (const auto& [name, i] : where_) out.push_back(name);
  return out;
}

const StTensor* SafetensorsSet::find(const std::string& name, const SafetensorsFile** file) const {
  const auto it = where_.find(name);
  if (it == where_.end()) return nullptr;
  if (file) *file = files_[it->second].get();
  return files_[it->second]->find(name);
}

void SafetensorsSet::read_block(const std::string& name, int64_t row0, int64_t rows, int64_t col0, int64_t cols,
                                float* out) const {
  const auto it = where_.find(name);
  if (it == where_.end()) fail(description_, ": no tensor '", name, "'");
  files_[it->second]->read_block(name, row0, rows, col0, cols, out);
}

void write_safetensors(const fs::path& path, const std::vector<StWriteTensor>& tensors, StDtype dtype,
                       const std::map<std::string, std::string>& metadata) {
  if (dtype != StDtype::kF32 && dtype != StDtype::kBF16)
    fail("safetensors ", path.string(), ": writing ", st_dtype_name(dtype), " is not supported (F32, BF16 are)");
  const int64_t w = width_of(dtype);
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  int64_t offset = 0;
  for (const auto& t : tensors) {
    if (t.name == "__metadata__" || header.contains(t.name))
      fail("safetensors ", path.string(), ": cannot write tensor name '", t.name, "' twice or as __metadata__");
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    header[t.name] = {{"dtype", st_dtype_name(dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + n * w}}};
    offset += n * w;
  }
  std::string text = header.dump();
  while ((8 + text.size()) % 8 != 0) text.push_back(' ');
  write_file_atomic(path, [&](std::ostream& f) {
    unsigned char len[8];
    for (int i = 0; i < 8; ++i)
      len[i] = static_cast<unsigned char>((static_cast<uint64_t>(text.size()) >> (8 * i)) & 0xff);
    f.write(reinterpret_cast<const char*>(len), 8);
    f.write(text.data(), static_cast<std::streamsize>(text.size()));
    std::vector<unsigned char> buf;
    for (const auto& t : tensors) {
      int64_t n = 1;
      for (int64_t d : t.shape) n *= d;
      constexpr int64_t kChunk = int64_t{1} << 20;
      for (int64_t a = 0; a < n; a += kChunk) {
        const int64_t m = std::min(kChunk, n - a);
        buf.resize(static_cast<size_t>(m * w));
        if (dtype == StDtype::kF32) {
          std::memcpy(buf.data(), t.data + a, static_cast<size_t>(m) * 4);  // little-endian host
        } else {
          for (int64_t i = 0; i < m; ++i) {
            const uint16_t b = float_to_bf16(t.data[a + i]);
            buf[2 * i] = static_cast<unsigned char>(b & 0xff);
            buf[2 * i + 1] = static_cast<unsigned char>(b >> 8);
          }
        }
        f.write(reinterpret_cast<const char*>(buf.data()), static_cast<std::streamsize>(buf.size()));
      }
    }
  });
}

}  // namespace headroom::io
