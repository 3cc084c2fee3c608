// RULER's variable tracking (vt): one chain of 4 hops, `VAR ABCDE = 12345` then `VAR FGHIJ = VAR
// ABCDE ` and so on, its 5 statements placed in order at random lines of the noise haystack; the
// question gives the number and every variable of the chain is expected. One in-context
// demonstration (3-letter names, as RULER's) precedes the question.
#pragma once

#include "eval/fit.h"
#include "eval/resources.h"

namespace headroom::eval {

inline constexpr const char* kVtTemplate =
    "Memorize and track the chain(s) of variable assignment hidden in the following text.\n\n"
    "{context}\nQuestion: Find all variables that are assigned the value {query} in the text above.";
// RULER's prefix, its spelling included ("assgined"), so prompts match RULER's.
inline constexpr const char* kVtAnswerPrefix =
    " Answer: According to the chain(s) of variable assignment in the text above, {num_v} "
    "variables are assgined the value {query}, they are:";
inline constexpr int kVtHops = 4;
inline constexpr int kVtDemoNoiseLines = 1;  // RULER's demonstration is ~500 tokens; ours fits 1K

Builder vt_builder(const std::string& task, const SampleKey& key);

}  // namespace headroom::eval
