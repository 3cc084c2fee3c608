// RULER's needle-in-a-haystack family (niah_single_1..3, niah_multikey_1..3, niah_multivalue,
// niah_multiquery). A needle is "One of the special magic {numbers|words|uuids} for {key} is:
// {value}."; the haystack is the noise line repeated, natural essay text, or distractor needles.
// Needle depths spread evenly over the context (depth of the first needle swept over sample
// indices by a golden-ratio sequence, the others at equal spacing after it); needles are shuffled
// before they are placed.
#pragma once

#include "eval/fit.h"
#include "eval/resources.h"

namespace headroom::eval {

enum class Haystack { kNoise, kEssay, kNeedles };
enum class NeedleType { kWords, kNumbers, kUuids };

struct NiahSpec {
  Haystack haystack = Haystack::kNoise;
  NeedleType key_type = NeedleType::kWords;
  NeedleType value_type = NeedleType::kNumbers;
  int n_keys = 1;     // needles with distinct keys (the ones not queried are distractors)
  int n_values = 1;   // values per key
  int n_queries = 1;  // keys asked about
};

inline constexpr const char* kNoiseLine =
    "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again.";

// RULER's niah template; the singular form is derived from it as RULER does (niah.py).
inline constexpr const char* kNiahTemplate =
    "Some special magic {type_needle_v} are hidden within the following text. Make sure to memorize "
    "it. I will quiz you about the {type_needle_v} afterwards.\n{context}\nWhat are all the special "
    "magic {type_needle_v} for {query} mentioned in the provided text?";
inline constexpr const char* kNiahAnswerPrefix =
    " The special magic {type_needle_v} for {query} mentioned in the provided text are";

const char* needle_type_name(NeedleType t);  // "words", "numbers", "uuids"

// The template and answer prefix for `n_answers` = queries × values (singular forms when 1),
// with {type_needle_v} filled in; {context} and {query} are left for the caller.
std::pair<std::string, std::string> niah_template(NeedleType value_type, int n_answers);

// The samples of (spec, key) by haystack size; `res` must outlive the builder.
Builder niah_builder(const std::string& task, const NiahSpec& spec, const Resources& res, const SampleKey& key);

}  // namespace headroom::eval
