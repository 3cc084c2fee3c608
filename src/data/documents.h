// Reading text inputs as documents. A `.jsonl` file holds one document per line as a JSON object
// with a string field "text"; any other file is one document. A directory is read recursively
// (files ending .txt, .text, .md or .jsonl, in sorted path order, hidden files skipped).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace headroom::data {

struct Documents {
  std::vector<std::string> texts;
  std::vector<std::string> files;  // every file read
  int64_t bytes = 0;
};

// Throws headroom::Error naming the path (and line, for JSONL) for a missing or unreadable input,
// a malformed JSONL line, or inputs that hold no non-empty document at all.
Documents read_documents(const std::vector<std::string>& inputs);

}  // namespace headroom::data
