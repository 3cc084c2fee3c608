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
  int64_t bytes = 0;  // on disk (compressed, when it is); a piece's own range
  // A piece of an uncompressed JSON-lines file (split_into_pieces): the lines whose first byte lies
  // in [begin, end). end < 0: the whole file.
  int64_t begin = 0, end = -1;
};

// Every file the inputs name, in the order they are read. Throws naming the input for a missing
// path or a directory without a text file.
std::vector<InputFile> list_input_files(const std::vector<std::string>& inputs);

// The files cut so that several readers can share one: an uncompressed .jsonl file larger than
// piece_bytes becomes ⌈bytes / piece_bytes⌉ pieces of equal byte ranges (each line read by the
// piece its first byte lies in, so the pieces' documents are the file's, in order); anything else
// stays whole (a compressed stream cannot start in the middle, a text file is one document). A
// pure function of the list, in its order.
std::vector<InputFile> split_into_pieces(const std::vector<InputFile>& files, int64_t piece_bytes);

// The documents of one file, one at a time; empty documents are skipped. Throws naming the file
// (and line, for JSONL) for unreadable or truncated data, malformed JSON, text that is not UTF-8,
// and a document (or line) longer than max_document_bytes.
class DocumentReader {
 public:
  explicit DocumentReader(const InputFile& file, int64_t max_document_bytes);
  bool next(std::string& doc);
  int64_t line() const { return line_; }

 private:
  bool next_line(std::string& line);
  bool read_through_newline(std::string* line);
  std::string where(int64_t line) const;  // "file:line", for a piece the line counted from its start
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
  int64_t begin_, end_byte_;  // the piece (InputFile::begin, end)
  int64_t offset_;            // the file offset of the next byte not yet consumed
};

// All documents of the inputs in memory (tests, small inputs).
struct Documents {
  std::vector<std::string> texts;
  std::vector<std::string> files;  // every file read
  int64_t bytes = 0;
};
Documents read_documents(const std::vector<std::string>& inputs, int64_t max_document_bytes = int64_t{1} << 30);

}  // namespace headroom::data
