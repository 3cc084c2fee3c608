// RULER's needle-in-a-haystack family (niah_single_1..3, niah_multikey_1..3, niah_multivalue,
// niah_multiquery). A needle is "One of the special magic {numbers|words|uuids} for {key} is:
// {value}."; the haystack is the noise line repeated, natural essay text, or distractor needles.
// Needle depths spread evenly over the context (depth of the first needle swept over sample
// indices by a golden-ratio sequence, the others at equal spacing after it); needles are shuffled
// before they are placed.
#pragma once

#include "data/ruler_niah.h"
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

const char* needle_type_name(NeedleType t);  // "words", "numbers", "uuids"

// data::niah_template for a needle type (the format itself: data/ruler_niah.h).
std::pair<std::string, std::string> niah_template(NeedleType value_type, int n_answers);

// The samples of (spec, key) by haystack size; `res` must outlive the builder.
Builder niah_builder(const std::string& task, const NiahSpec& spec, const Resources& res, const SampleKey& key);

}  // namespace headroom::eval
