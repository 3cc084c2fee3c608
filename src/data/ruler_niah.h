// RULER's needle-in-a-haystack text format (RULER's niah.py: template, answer prefix, needle
// sentence, noise line), in one place for the two that must agree on it: evaluate's niah tasks
// (eval/niah.h) and the trainer's `niah` synthetic task (synthetic.h), so a model trained on the
// task is asked in exactly the words it was trained on.
#pragma once

#include <array>
#include <string>
#include <utility>
#include <vector>

namespace headroom::data {

inline constexpr const char* kNoiseLine =
    "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again.";

inline constexpr const char* kNiahTemplate =
    "Some special magic {type_needle_v} are hidden within the following text. Make sure to memorize "
    "it. I will quiz you about the {type_needle_v} afterwards.\n{context}\nWhat are all the special "
    "magic {type_needle_v} for {query} mentioned in the provided text?";
inline constexpr const char* kNiahAnswerPrefix =
    " The special magic {type_needle_v} for {query} mentioned in the provided text are";

// The template and answer prefix for `n_answers` = queries × values, with {type_needle_v} filled by
// `type_plural` ("numbers", "words", "uuids"; RULER's singular forms when n_answers is 1); {context}
// and {query} are left for the caller.
std::pair<std::string, std::string> niah_template(const std::string& type_plural, int n_answers);

// RULER's {query} for several keys: "a", "a, and b", "a, b, and c".
std::string niah_query(const std::vector<std::string>& keys);

// "One of the special magic {type_plural} for {key} is: {value}."
std::string niah_needle(const std::string& type_plural, const std::string& key, const std::string& value);

// RULER's eight needle-in-a-haystack tasks as shapes: evaluate's niah suite (eval/tasks.cpp) and
// the trainer's `niah_mix` synthetic task (synthetic.h) draw from this one table.
struct RulerNiahShape {
  const char* task;
  const char* haystack;    // "noise" (RULER's noise line), "essay" (text), "needles" (distractor needles)
  const char* key_type;    // "words" (adjective-noun), "uuids"
  const char* value_type;  // "numbers" (7 digits), "uuids"
  int n_keys;              // needles with distinct keys; the ones not queried are distractors
  int n_values;            // values per key
  int n_queries;           // keys asked about
};

inline constexpr std::array<RulerNiahShape, 8> kRulerNiahShapes{{
    {"niah_single_1", "noise", "words", "numbers", 1, 1, 1},
    {"niah_single_2", "essay", "words", "numbers", 1, 1, 1},
    {"niah_single_3", "essay", "words", "uuids", 1, 1, 1},
    {"niah_multikey_1", "essay", "words", "numbers", 4, 1, 1},
    {"niah_multikey_2", "needles", "words", "numbers", 1, 1, 1},
    {"niah_multikey_3", "needles", "uuids", "uuids", 1, 1, 1},
    {"niah_multivalue", "essay", "words", "numbers", 1, 4, 1},
    {"niah_multiquery", "essay", "words", "numbers", 4, 1, 4},
}};

}  // namespace headroom::data
