#include "data/documents.h"

#include "io/atomic_file.h"
#include "util/error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <sstream>

namespace headroom::data {
namespace fs = std::filesystem;
namespace {

bool is_text_file(const fs::path& p) {
  const std::string ext = p.extension().string();
  return ext == ".txt" || ext == ".text" || ext == ".md" || ext == ".jsonl";
}

void read_jsonl(const fs::path& path, Documents& out) {
  std::istringstream lines(io::read_file(path));
  std::string line;
  int64_t line_no = 0;
  while (std::getline(lines, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      fail(path.string(), ":", line_no, ": not valid JSON (", e.what(), ")");
    }
    if (!j.is_object() || !j.contains("text") || !j["text"].is_string())
      fail(path.string(), ":", line_no, ": expected an object with a string field \"text\"");
    std::string text = j["text"].get<std::string>();
    if (text.empty()) continue;
    out.bytes += static_cast<int64_t>(text.size());
    out.texts.push_back(std::move(text));
  }
}

void read_file_into(const fs::path& path, Documents& out) {
  out.files.push_back(path.string());
  if (path.extension() == ".jsonl") return read_jsonl(path, out);
  std::string text = io::read_file(path);
  if (text.empty()) return;
  out.bytes += static_cast<int64_t>(text.size());
  out.texts.push_back(std::move(text));
}

}  // namespace

Documents read_documents(const std::vector<std::string>& inputs) {
  if (inputs.empty()) fail("no input given: pass --input FILE_OR_DIR (repeatable)");
  Documents out;
  for (const auto& input : inputs) {
    const fs::path p(input);
    std::error_code ec;
    const auto status = fs::status(p, ec);
    if (ec || !fs::exists(status)) fail("input ", input, ": does not exist");
    if (fs::is_directory(status)) {
      std::vector<fs::path> files;
      for (auto it = fs::recursive_directory_iterator(p, ec); !ec && it != fs::end(it); it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (!name.empty() && name[0] == '.') {
          if (it->is_directory()) it.disable_recursion_pending();
          continue;
        }
        if (it->is_regular_file() && is_text_file(it->path())) files.push_back(it->path());
      }
      if (ec) fail("input ", input, ": cannot list directory (", ec.message(), ")");
      std::sort(files.begin(), files.end());
      if (files.empty()) fail("input ", input, ": directory holds no .txt/.text/.md/.jsonl file");
      for (const auto& f : files) read_file_into(f, out);
    } else {
      read_file_into(p, out);
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
