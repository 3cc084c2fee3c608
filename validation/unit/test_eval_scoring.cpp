// Scoring against hand-worked cases: RULER's postprocessing (strip, control characters to
// newlines, strip), string_match_all / string_match_part, HELMET's normalised substring match,
// lm-eval's multiple-choice argmax, and the per-sample results that feed results.json/csv.
#include "eval/multiple_choice.h"
#include "eval/results.h"
#include "eval/scoring.h"

#include <gtest/gtest.h>

using namespace headroom::eval;

TEST(EvalScoring, PostprocessStripsAndTurnsControlCharactersIntoNewlines) {
  EXPECT_EQ(postprocess_prediction("  1234567 \n"), "1234567");
  EXPECT_EQ(postprocess_prediction(std::string("\x01"
                                               "12\x02"
                                               "34\x1b",
                                               7)),
            "12\n34");
  EXPECT_EQ(postprocess_prediction(std::string("ab\0cd", 5)), "ab\ncd");
  // \x1c-\x1f are whitespace to Python's strip(); \x7f is not a control character in RULER's [\x00-\x1f].
  EXPECT_EQ(postprocess_prediction("\x1c x\x7f \x1f"), "x\x7f");
  EXPECT_EQ(postprocess_prediction(" \t\r\n"), "");
}

TEST(EvalScoring, StringMatchAllIsTheMeanOverReferences) {
  const std::vector<std::string> refs{"123", "456", "789"};
  EXPECT_DOUBLE_EQ(string_match_all("The numbers are 123 and 456.", refs), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(string_match_all("123456789", refs), 1.0);
  EXPECT_DOUBLE_EQ(string_match_all("", refs), 0.0);
  EXPECT_DOUBLE_EQ(string_match_all("ABCDE fghij", {"abcde", "FGHIJ"}), 1.0) << "case-insensitive";
}

TEST(EvalScoring, StringMatchPartIsTheMaxOverReferences) {
  EXPECT_DOUBLE_EQ(string_match_part("It is london.", {"Paris", "London"}), 1.0);
  EXPECT_DOUBLE_EQ(string_match_part("Berlin", {"Paris", "London"}), 0.0);
}

TEST(EvalScoring, RulerMetricsSeeThePostprocessedPrediction) {
  // A control character splits the number: no longer a substring.
  EXPECT_DOUBLE_EQ(score_prediction(Metric::kMatchAll,
                                    std::string("123\x01"
                                                "4567",
                                                8),
                                    {"1234567"}),
                   0.0);
  EXPECT_DOUBLE_EQ(score_prediction(Metric::kMatchAll,
                                    std::string("123\x01"
                                                "4567",
                                                8),
                                    {"4567"}),
                   1.0);
  EXPECT_DOUBLE_EQ(score_prediction(Metric::kMatchAll, " 1234567.\n\nThe", {"1234567"}), 1.0);
  EXPECT_DOUBLE_EQ(score_prediction(Metric::kMatchPart, "Oakford", {"oakford", "x"}), 1.0);
}

TEST(EvalScoring, HelmetNormalisationAndSubstringExactMatch) {
  EXPECT_EQ(normalize_answer("The  Quick, brown-fox!"), "quick brownfox");
  EXPECT_EQ(normalize_answer("a theater, an apple and THE end"), "theater apple and end");
  EXPECT_EQ(normalize_answer("\"4c1d-ab\""), "4c1dab");
  EXPECT_DOUBLE_EQ(substring_exact_match(" \"0b1e-42ff\", then more", {"0B1E-42FF"}), 1.0);
  EXPECT_DOUBLE_EQ(substring_exact_match("0b1e42f", {"0b1e-42ff"}), 0.0);
  EXPECT_DOUBLE_EQ(score_prediction(Metric::kSubstringExact, "The value is x-y.", {"XY"}), 1.0);
}

TEST(EvalScoring, MultipleChoiceArgmaxTakesTheFirstOnTies) {
  EXPECT_EQ(argmax({-3.0, -1.0, -1.0, -2.0}), 1);
  EXPECT_EQ(argmax({-5.0}), 0);
}

TEST(EvalResults, CsvHasOneRowPerTaskAndLengthAndQuotesPaths) {
  Results r;
  r.checkpoint = "runs/a,b/step_1.h5";
  r.config_id = "cfg-0123456789abcdef";
  r.lengths = {1024, 2048};
  r.task_scores = {{"vt", "string_match_all", 1024, 50.0, 2, 0, "", 900, 3},
                   {"vt", "string_match_all", 2048, std::nullopt, 0, 2, "too long", 0, 0}};
  r.ruler_by_length = {{1024, 50.0, 1}, {2048, std::nullopt, 0}};
  r.ruler_average = 50.0;
  r.mc = McSummary{"mc.jsonl", 4, 75, 50};
  EXPECT_EQ(results_csv(r),
            "task,length,score,n,checkpoint,config_id\n"
            "vt,1024,50,2,\"runs/a,b/step_1.h5\",cfg-0123456789abcdef\n"
            "vt,2048,,0,\"runs/a,b/step_1.h5\",cfg-0123456789abcdef\n"
            "ruler_average,1024,50,1,\"runs/a,b/step_1.h5\",cfg-0123456789abcdef\n"
            "ruler_average,2048,,0,\"runs/a,b/step_1.h5\",cfg-0123456789abcdef\n"
            "ruler_average,0,50,2,\"runs/a,b/step_1.h5\",cfg-0123456789abcdef\n"
            "mc_acc,0,75,4,\"runs/a,b/step_1.h5\",cfg-0123456789abcdef\n"
            "mc_acc_norm,0,50,4,\"runs/a,b/step_1.h5\",cfg-0123456789abcdef\n");
  const std::string json = results_json(r);
  EXPECT_NE(json.find("\"format\": \"headroom-eval-results\""), std::string::npos);
  EXPECT_NE(json.find("\"score\": null"), std::string::npos) << "an unscored cell is null, not 0";
  EXPECT_NE(json.find("\"skip_reason\": \"too long\""), std::string::npos);
}
