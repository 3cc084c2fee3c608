// RULER's two QA tasks with generated documents (SQuAD and HotpotQA are not available offline).
// qa_1 (single hop, SQuAD-like): each document tells of one invented person (birthplace,
// profession, employer); the question asks one fact of one person. qa_2 (two hops,
// HotpotQA-like): person documents say who founded which company, company documents say where a
// company is headquartered; the question asks where the company founded by a person is, so two
// documents must be combined. Distractor documents have the same shapes (in qa_2 both hops have
// distractors). Names are invented from syllables so no answer can come from pretraining. The
// haystack unit is one document; documents are shuffled; RULER's QA template and
// string_match_part scoring.
#pragma once

#include "eval/fit.h"
#include "eval/resources.h"

namespace headroom::eval {

inline constexpr const char* kQaTemplate =
    "Answer the question based on the given documents. Only give me the answer and do not output "
    "any other words.\n\nThe following are given documents.\n\n{context}\n\nAnswer the question "
    "based on the given documents. Only give me the answer and do not output any other words.\n\n"
    "Question: {query}";
inline constexpr const char* kQaAnswerPrefix = " Answer:";

// `res` must outlive the builder.
Builder qa_builder(const std::string& task, int hops, const Resources& res, const SampleKey& key);

}  // namespace headroom::eval
