// What the task generators draw from besides randomness: word lists (inputs/eval/*.txt, made from
// WordNet by inputs/eval/make_words.py) and the essay haystack (natural text held out from
// training: jobs/fetch_corpus.sh writes data/corpus/essay/*.jsonl).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace headroom::eval {

// The essay haystack as RULER uses it: all documents joined, whitespace collapsed, split into
// words. sentence_end[i] says word i ends a sentence (ends in . ! or ?, possibly followed by
// closing quotes or brackets), which is where needles may be inserted.
struct Essay {
  std::vector<std::string> words;
  std::vector<uint8_t> sentence_end;
};

struct Resources {
  std::vector<std::string> adjectives, nouns, verbs;
  Essay essay;  // empty when no essay task is asked for
};

// One word per line; blank lines and lines starting with '#' are skipped. Throws naming the file
// (and `what`, e.g. "eval.word_dir") when it is missing or empty.
std::vector<std::string> read_word_list(const std::filesystem::path& path, const std::string& what);

// `path`: a JSONL file ({"text": ...} per line) or a directory whose *.jsonl files are read in
// name order. Throws naming the path when nothing is found.
Essay read_essay(const std::filesystem::path& path);

// Splits text on whitespace into `essay` (appending), marking sentence ends.
void append_essay_text(Essay& essay, const std::string& text);

// Word lists from word_dir (adjectives.txt, nouns.txt, verbs.txt); the essay only when
// essay_path is non-empty.
Resources load_resources(const std::filesystem::path& word_dir, const std::filesystem::path& essay_path);

}  // namespace headroom::eval
