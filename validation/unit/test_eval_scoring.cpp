// Scoring against hand-worked cases: RULER's postprocessing (strip, control characters to
// newlines, strip), string_match_all / string_match_part, HELMET's normalised substring match,
// lm-eval's multiple-choice argmax, and the per-sample results that feed results.json/csv.
#include "eval/multiple_choice.h"
#include "eval/results.h"
#include "eval/score_groups.h"
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

// HELMET's recall category: the mean of its four tasks at each length where all four are scored,
// then over lengths; RULER's average takes whatever RULER tasks are scored (json_kv is not one).
TEST(EvalResults, HelmetRecallAveragesItsFourTasksWhereAllAreScored) {
  auto cell = [](const char* task, int64_t L, std::optional<double> score) {
    return TaskScore{task, "m", L, score, score ? 10 : 0, 0, "", 0, 0};
  };
  const std::vector<TaskScore> scores{cell("json_kv", 512, 10.0),
                                      cell("json_kv", 1024, 20.0),
                                      cell("niah_multikey_2", 512, 30.0),
                                      cell("niah_multikey_2", 1024, 40.0),
                                      cell("niah_multikey_3", 512, 50.0),
                                      cell("niah_multikey_3", 1024, std::nullopt),
                                      cell("niah_multivalue", 512, 70.0),
                                      cell("niah_multivalue", 1024, 80.0),
                                      cell("vt", 512, 100.0)};
  const std::vector<std::string> tasks{"json_kv", "niah_multikey_2", "niah_multikey_3", "niah_multivalue", "vt"};
  const auto h = helmet_recall_score(scores, {512, 1024}, tasks);
  ASSERT_TRUE(h);
  ASSERT_EQ(h->by_length.size(), 2u);
  EXPECT_DOUBLE_EQ(*h->by_length[0].score, (10.0 + 30 + 50 + 70) / 4);
  EXPECT_FALSE(h->by_length[1].score) << "three of four scored: no HELMET-recall score at that length";
  EXPECT_DOUBLE_EQ(*h->average, 40.0);
  EXPECT_FALSE(helmet_recall_score(scores, {512, 1024}, {"json_kv", "niah_multikey_2", "niah_multivalue"}))
      << "not computed unless all four tasks were asked for";
  const GroupScore r = ruler_score(scores, {512, 1024});
  EXPECT_DOUBLE_EQ(*r.by_length[0].score, (30.0 + 50 + 70 + 100) / 4);
  EXPECT_DOUBLE_EQ(*r.by_length[1].score, (40.0 + 80) / 2);
  EXPECT_DOUBLE_EQ(*r.average, (62.5 + 60.0) / 2);
}
