#include "data/documents.h"

#include "data/utf8.h"
#include "util/error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace headroom::data {
namespace fs = std::filesystem;
namespace {

bool is_text_file(const fs::path& p) {
  const std::string ext = without_compression_suffix(p).extension().string();
  return ext == ".txt" || ext == ".text" || ext == ".md" || ext == ".jsonl";
}

std::vector<fs::path> list_directory(const std::string& input) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(input, ec); !ec && it != fs::end(it); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!name.empty() && name[0] == '.') {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file() && is_text_file(it->path())) files.push_back(it->path());
  }
  if (ec) fail("input ", input, ": cannot list directory (", ec.message(), ")");
  std::sort(files.begin(), files.end());
  if (files.empty()) fail("input ", input, ": directory holds no .txt/.text/.md/.jsonl file (optionally .gz or .zst)");
  return files;
}

std::string mib(int64_t bytes) { return cat(static_cast<double>(bytes) / (1 << 20), " MiB"); }

}  // namespace

std::vector<InputFile> list_input_files(const std::vector<std::string>& inputs) {
  if (inputs.empty()) fail("no input given: pass --input FILE_OR_DIR (repeatable)");
  std::vector<InputFile> out;
  for (const auto& input : inputs) {
    std::error_code ec;
    const auto status = fs::status(input, ec);
    if (ec || !fs::exists(status)) fail("input ", input, ": does not exist");
    const std::vector<fs::path> files = fs::is_directory(status) ? list_directory(input) : std::vector<fs::path>{input};
    for (const auto& f : files) {
      const auto size = fs::file_size(f, ec);
      if (ec) fail("input ", f.string(), ": cannot stat (", ec.message(), ")");
      out.push_back({f, static_cast<int64_t>(size)});
    }
  }
  return out;
}

std::vector<InputFile> split_into_pieces(const std::vector<InputFile>& files, int64_t piece_bytes) {
  std::vector<InputFile> out;
  for (const InputFile& f : files) {
    const bool splittable = f.path.extension() == ".jsonl" && f.end < 0 && piece_bytes > 0;
    const int64_t n = splittable ? (f.bytes + piece_bytes - 1) / piece_bytes : 1;
    if (n <= 1) {
      out.push_back(f);
      continue;
    }
    for (int64_t k = 0; k < n; ++k) {
      const int64_t begin = f.bytes * k / n, end = f.bytes * (k + 1) / n;
      out.push_back({f.path, end - begin, begin, end});
    }
  }
  return out;
}

// A piece that starts inside the file opens one byte early and drops the line that byte ends: the
// line in progress at `begin` (or just the newline before it) belongs to the piece before.
DocumentReader::DocumentReader(const InputFile& file, int64_t max_document_bytes)
    : path_(file.path),
      src_(open_byte_source(file.path, std::max<int64_t>(file.begin - 1, 0))),
      max_bytes_(max_document_bytes),
      jsonl_(without_compression_suffix(file.path).extension() == ".jsonl"),
      buf_(std::size_t{1} << 20),
      begin_(file.begin),
      end_byte_(file.end),
      offset_(std::max<int64_t>(file.begin - 1, 0)) {
  if ((begin_ > 0 || end_byte_ >= 0) && (!jsonl_ || file.path.extension() != ".jsonl"))
    fail(path_.string(), ": only an uncompressed JSON-lines file is read in pieces");
  if (begin_ > 0 && !read_through_newline(nullptr)) done_ = true;
}

// Reads through the next newline, or to the end of the data (then returns false), appending what
// comes before it to *line; line null skips the line, unbounded. A line held is bounded like a
// document (JSON needs it whole).
bool DocumentReader::read_through_newline(std::string* line) {
  for (;;) {
    if (pos_ == end_) {
      end_ = src_->read(buf_.data(), buf_.size());
      pos_ = 0;
      if (end_ == 0) return false;
    }
    const char* start = buf_.data() + pos_;
    const auto* nl = static_cast<const char*>(std::memchr(start, '\n', end_ - pos_));
    const std::size_t take = nl ? static_cast<std::size_t>(nl - start) : end_ - pos_;
    if (line != nullptr) {
      if (static_cast<int64_t>(line->size() + take) > max_bytes_)
        fail(where(line_), ": a line longer than the limit of ", mib(max_bytes_),
             " (--max-document-mib) without a newline; is this JSON lines?");
      line->append(start, take);
    }
    pos_ += take + (nl ? 1 : 0);
    offset_ += static_cast<int64_t>(take + (nl ? 1 : 0));
    if (nl) return true;
  }
}

std::string DocumentReader::where(int64_t line) const {
  if (begin_ == 0) return cat(path_.string(), ":", line);
  return cat(path_.string(), ": line ", line, " of those that begin at byte ", begin_, " or later");
}

bool DocumentReader::next(std::string& doc) {
  while (jsonl_ ? next_jsonl(doc) : next_whole(doc))
    if (!doc.empty()) return true;
  return false;
}

bool DocumentReader::next_line(std::string& line) {
  line.clear();
  if (done_) return false;
  if (end_byte_ >= 0 && offset_ >= end_byte_) {  // the next line begins in the next piece
    done_ = true;
    return false;
  }
  ++line_;
  if (read_through_newline(&line)) return true;
  done_ = true;
  return !line.empty();
}

bool DocumentReader::next_jsonl(std::string& doc) {
  std::string line;
  if (!next_line(line)) return false;
  doc.clear();
  if (line.find_first_not_of(" \t\r") == std::string::npos) return true;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(line);  // refuses ill-formed UTF-8 inside strings too
  } catch (const nlohmann::json::exception& e) {
    fail(where(line_), ": not valid JSON (", e.what(), ")");
  }
  if (!j.is_object() || !j.contains("text") || !j["text"].is_string())
    fail(where(line_), ": expected an object with a string field \"text\"");
  doc = j["text"].get<std::string>();
  return true;
}

bool DocumentReader::next_whole(std::string& doc) {
  doc.clear();
  if (done_) return false;
  std::size_t got;
  while ((got = src_->read(buf_.data(), buf_.size())) > 0) {
    if (static_cast<int64_t>(doc.size() + got) > max_bytes_)
      fail(path_.string(), ": a document longer than the limit of ", mib(max_bytes_),
           " (--max-document-mib); split it into several files or JSON lines");
    doc.append(buf_.data(), got);
  }
  done_ = true;
  check_utf8(doc);
  return true;
}

void DocumentReader::check_utf8(const std::string& doc) const {
  const int64_t bad = first_invalid_utf8(doc);
  if (bad < 0) return;
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned char>(doc[static_cast<std::size_t>(bad)]));
  fail(path_.string(), ": not UTF-8 text (byte ", bad, " = ", hex,
       " begins no valid UTF-8 sequence); convert it to UTF-8 (iconv) first");
}

Documents read_documents(const std::vector<std::string>& inputs, int64_t max_document_bytes) {
  Documents out;
  for (const auto& f : list_input_files(inputs)) {
    out.files.push_back(f.path.string());
    DocumentReader reader(f, max_document_bytes);
    std::string doc;
    while (reader.next(doc)) {
      out.bytes += static_cast<int64_t>(doc.size());
      out.texts.push_back(std::move(doc));
    }
  }
  if (out.texts.empty()) {
    std::string list;
    for (const auto& f : out.files) list += " " + f;
    fail("inputs hold no non-empty document (read:", list, ")");
  }
  return out;
}

}  // namespace headroom::data
