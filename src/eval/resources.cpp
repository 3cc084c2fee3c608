#include "eval/resources.h"

#include "util/error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>

namespace headroom::eval {
namespace fs = std::filesystem;

std::vector<std::string> read_word_list(const fs::path& path, const std::string& what) {
  std::ifstream in(path);
  if (!in) fail("cannot read the word list ", path.string(), " (", what, ")");
  std::vector<std::string> words;
  std::string line;
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (!line.empty() && line[0] != '#') words.push_back(line);
  }
  if (words.empty()) fail("the word list ", path.string(), " (", what, ") is empty");
  return words;
}

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

bool ends_sentence(const std::string& w) {
  size_t i = w.size();
  while (i > 0 && (w[i - 1] == '"' || w[i - 1] == '\'' || w[i - 1] == ')' || w[i - 1] == ']')) --i;
  return i > 0 && (w[i - 1] == '.' || w[i - 1] == '!' || w[i - 1] == '?');
}

void read_jsonl(const fs::path& file, Essay& essay) {
  std::ifstream in(file);
  if (!in) fail("cannot read the essay file ", file.string());
  std::string line;
  int64_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json doc;
    try {
      doc = nlohmann::json::parse(line);
    } catch (const std::exception& e) {
      fail("essay file ", file.string(), " line ", line_no, ": not JSON (", e.what(), ")");
    }
    if (!doc.is_object() || !doc.contains("text") || !doc["text"].is_string())
      fail("essay file ", file.string(), " line ", line_no, ": expected {\"text\": \"...\"}");
    append_essay_text(essay, doc["text"].get<std::string>());
  }
}

}  // namespace

void append_essay_text(Essay& essay, const std::string& text) {
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && is_space(text[i])) ++i;
    size_t j = i;
    while (j < text.size() && !is_space(text[j])) ++j;
    if (j > i) {
      essay.words.push_back(text.substr(i, j - i));
      essay.sentence_end.push_back(ends_sentence(essay.words.back()) ? 1 : 0);
    }
    i = j;
  }
}

Essay read_essay(const fs::path& path) {
  Essay essay;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(path))
      if (e.path().extension() == ".jsonl") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) read_jsonl(f, essay);
  } else if (fs::exists(path, ec)) {
    read_jsonl(path, essay);
  } else {
    fail("essay haystack ", path.string(), " (eval.essay) does not exist; run jobs/fetch_corpus.sh, ",
         "or point eval.essay at a JSONL file such as validation/data/sample_corpus/essay/sample.jsonl");
  }
  if (essay.words.size() < 100)
    fail("essay haystack ", path.string(), " (eval.essay) holds ", essay.words.size(),
         " words; it needs natural text ({\"text\": ...} per line)");
  // The haystack wraps around; the last word closes a sentence so a wrapped text stays well formed.
  essay.sentence_end.back() = 1;
  return essay;
}

Resources load_resources(const fs::path& word_dir, const fs::path& essay_path) {
  Resources r;
  r.adjectives = read_word_list(word_dir / "adjectives.txt", "eval.word_dir");
  r.nouns = read_word_list(word_dir / "nouns.txt", "eval.word_dir");
  r.verbs = read_word_list(word_dir / "verbs.txt", "eval.word_dir");
  if (!essay_path.empty()) r.essay = read_essay(essay_path);
  return r;
}

}  // namespace headroom::eval
