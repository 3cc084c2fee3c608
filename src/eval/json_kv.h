// HELMET-style JSON key-value recall (HELMET's json_kv, from "Lost in the Middle"): a JSON object
// of UUID keys and values, two demonstrations from the same object, then
// "Key: <uuid>\nCorresponding value:"; scored by substring exact match after SQuAD normalisation.
// The queried pair sits at a depth swept over sample indices; the haystack unit is one pair.
#pragma once

#include "eval/fit.h"

namespace headroom::eval {

inline constexpr const char* kJsonKvInstruction =
    "Extract the value corresponding to the specified key in the JSON object below.";
inline constexpr int kJsonKvDemos = 2;

Builder json_kv_builder(const std::string& task, const SampleKey& key);

}  // namespace headroom::eval
