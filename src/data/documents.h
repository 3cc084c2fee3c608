// Reading text inputs as documents, as a stream. A `.jsonl` file holds one document per line as a
// JSON object with a string field "text"; any other file is one document. A `.gz` or `.zst` suffix
// is decompressed on the fly (`a.jsonl.gz` is JSON lines). A directory is read recursively (files
// ending .txt, .text, .md or .jsonl, optionally compressed, in sorted path order, hidden files
// skipped). Documents must be UTF-8 and at most `max_document_bytes` long: what prepare holds of
// one document at a time.
#pragma once

#include "data/byte_source.h"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace headroom::data {

struct InputFile {
  std::filesystem::path path;
  int64_t bytes = 0;  // on disk (compressed, when it is)
};

// Every file the inputs name, in the order they are read. Throws naming the input for a missing
// path or a directory without a text file.
std::vector<InputFile> list_input_files(const std::vector<std::string>& inputs);

// The documents of one file, one at a time; empty documents are skipped. Throws naming the file
// (and line, for JSONL) for unreadable or truncated data, malformed JSON, text that is not UTF-8,
// and a document (or line) longer than max_document_bytes.
class DocumentReader {
 public:
  DocumentReader(const std::filesystem::path& path, int64_t max_document_bytes);
  bool next(std::string& doc);
  int64_t line() const { return line_; }

 private:
  bool next_line(std::string& line);
  bool next_jsonl(std::string& doc);
  bool next_whole(std::string& doc);
  void check_utf8(const std::string& doc) const;

  std::filesystem::path path_;
  std::unique_ptr<ByteSource> src_;
  int64_t max_bytes_;
  bool jsonl_;
  bool done_ = false;
  int64_t line_ = 0;
  std::vector<char> buf_;
  std::size_t pos_ = 0, end_ = 0;
};

// All documents of the inputs in memory (tests, small inputs).
struct Documents {
  std::vector<std::string> texts;
  std::vector<std::string> files;  // every file read
  int64_t bytes = 0;
};
Documents read_documents(const std::vector<std::string>& inputs, int64_t max_document_bytes = int64_t{1} << 30);

}  // namespace headroom::data
