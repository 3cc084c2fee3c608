#include "analysis/analyze_config.h"

#include "analysis/features.h"
#include "analysis/findings.h"
#include "eval/eval_config.h"
#include "util/error.h"

#include <functional>
#include <sstream>

namespace headroom::analysis {

std::vector<double> parse_doubles(const std::string& s, const std::string& key) {
  std::vector<double> out;
  for (const auto& item : split_list(s)) {
    size_t used = 0;
    double v = 0;
    try {
      v = std::stod(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size()) fail(key, ": '", item, "' is not a number");
    out.push_back(v);
  }
  return out;
}

void add_analyze_keys(config::Schema& s, AnalyzeConfig& a) {
  using config::add_key;
  config::section(s, "", "analyze options (also accepted as top-level keys in a --config file)");
  config::add_list_key(s, "", "runs", a.runs,
                       "evaluate run directories (each holds results.json; samples.jsonl is used when present); "
                       "the checkpoint each evaluated is followed through its lineage to the training runs");
  add_key(
      s, "", "out", a.out, std::string("runs/analyze"),
      "output directory: report.md, tables/*.csv, plots/*.png (+ plot_data.json, plots.py), config.ini, log.txt, DONE");

  config::section(s, "analyze", "Analysis [analyze]");
  add_key(s, "analyze", "long_score", a.long_score, std::string("ruler"),
          "the long-context score that regressions, seed swings and config differences use: ruler (RULER "
          "average over tasks and lengths), ruler@LENGTH (RULER average at one evaluated length) or helmet_recall "
          "(HELMET's recall category: json_kv, niah_multikey_2, niah_multikey_3, niah_multivalue, averaged over "
          "lengths; evaluate with eval.tasks including helmet_recall)");
  add_key(s, "analyze", "short_score", a.short_score, std::string("mc_acc"),
          "the short-context benchmark average used as a predictor: mc_acc, mc_acc_norm (multiple choice) or "
          "ruler@LENGTH");
  add_key(s, "analyze", "perplexity_length", a.perplexity_length, 0L,
          "loss_by_position length whose exp(mean loss) is the perplexity predictor; 0 = the shortest",
          config::at_least<long>(0));
  add_key(s, "analyze", "final_loss_steps", a.final_loss_steps, 10L,
          "final pretraining/extension loss = mean loss of the last N logged steps of metrics.jsonl",
          config::at_least<long>(1));
  add_key(s, "analyze", "seed_keys", a.seed_keys, std::string("model.seed,train.seed,data.seed"),
          "keys that only choose a seed: runs whose lineage configs agree on every other key are seed replicates");
  add_key(
      s, "analyze", "ignore_keys", a.ignore_keys,
      std::string("parallel.*,train.log_every,train.checkpoint_every,train.keep_last,train.steps_per_run,train.probe_*,"
                  "train.peak_tflops"),
      "keys that change neither the model nor its training (process layout, logging, checkpoint cadence); "
      "ignored when configurations are compared. 'section.*' ignores a section");
  config::add_list_key(s, "analyze", "feature", a.features,
                       "a feature of the feature-count model, as name=PREDICATE (repeatable). PREDICATE is "
                       "'KEY OP VALUE' with OP one of == != < <= > >= contains !contains; KEY is section.key of "
                       "the evaluated checkpoint's config, or STAGE.section.key of a lineage stage (e.g. "
                       "pretrain.train.seq_len); VALUE is a literal or another KEY. Default: qk_norm=model.qk_norm "
                       "!= none, gqa=model.n_kv_heads < model.n_heads, sliding=model.layer_pattern contains S, "
                       "short_pretrain=pretrain.train.seq_len < 8192");
  add_key(s, "analyze", "regression_configs", a.regression_configs, std::string(""),
          "the configurations the regressions and the feature-count model are fitted over, as a conjunction "
          "'KEY OP VALUE & ...' (as a side of analyze.finding), e.g. one extension recipe of a study that has "
          "several; empty = every configuration of the pool");
  add_key(s, "analyze", "bootstrap_samples", a.bootstrap_samples, 2000L,
          "resamples of the paired bootstrap of config differences", config::at_least<long>(100));
  config::add_list_key(s, "analyze", "finding", a.findings,
                       "a finding to test, as 'NAME: A over B' (repeatable): A and B are conjunctions 'KEY OP VALUE & "
                       "KEY OP VALUE ...' with KEY and OP as in analyze.feature, each selecting configurations; the "
                       "Findings table gives effect = mean score of A's configurations − B's (means over seeds), the "
                       "mean seed swing, and the verdict: reproduces when effect > 2 × mean swing, reversed when "
                       "effect < −2 × mean swing, else not resolved");
  add_key(s, "analyze", "finding_scores", a.finding_scores, std::string(""),
          "scores the findings are tested on, comma-separated (names as analyze.long_score); empty = long_score");
  add_key(s, "analyze", "bootstrap_seed", a.bootstrap_seed, 1UL, "seed of the bootstrap resampling");
  add_key(s, "analyze", "confidence", a.confidence, 0.95, "confidence level of bootstrap intervals",
          config::in_range(0.5, 0.999));
  add_key(s, "analyze", "diagnostics", a.diagnostics, true,
          "compute attention diagnostics (entropy, sinks, needle mass, retrieval heads, effective rank) on each "
          "run's evaluated checkpoint");
  add_key(s, "analyze", "probe_lengths", a.probe_lengths, std::string(""),
          "comma-separated probe context lengths in tokens (1024 or 1K); empty = each run's shortest evaluation "
          "length");
  add_key(s, "analyze", "probe_depths", a.probe_depths, std::string("0.1,0.5,0.9"),
          "comma-separated needle depths in [0, 1] (share of the haystack before the needle)");
  add_key(s, "analyze", "probe_samples", a.probe_samples, 2L, "probes (different needles) per length and depth",
          config::at_least<long>(1));
  add_key(s, "analyze", "probe_seed", a.probe_seed, 1UL, "seed of the probes' keys and values");
  add_key(s, "analyze", "max_new_tokens", a.max_new_tokens, 16L,
          "tokens generated per probe for the retrieval score and the answer check", config::at_least<long>(1));
  add_key(s, "analyze", "query_rows", a.query_rows, 128L,
          "query positions per probe whose attention rows are computed (evenly spaced, the last prompt token "
          "included); 0 = every position",
          config::at_least<long>(0));
  add_key(s, "analyze", "sink_tokens", a.sink_tokens, 100L,
          "sink share = attention mass on the first k tokens (the second study uses 100)", config::at_least<long>(1));
  add_key(s, "analyze", "sink_epsilon", a.sink_epsilon, 0.3,
          "Gu et al.'s sink rate: share of heads whose mean attention to the first token exceeds this",
          config::in_range(0.0, 1.0));
  add_key(s, "analyze", "retrieval_threshold", a.retrieval_threshold, 0.1,
          "a head whose retrieval score exceeds this is a retrieval head (Wu et al.)", config::in_range(0.0, 1.0));
  add_key(s, "analyze", "needle_span", a.needle_span, std::string("value"),
          "needle span for the needle mass and the retrieval score: value (the answer's tokens, so a perfect copy "
          "scores 1) or sentence (the whole needle sentence)",
          config::one_of({"value", "sentence"}));
  add_key(s, "analyze", "retrieval_all_tests", a.retrieval_all_tests, false,
          "average retrieval scores over every probe instead of only correctly answered ones (Wu et al.)");
  add_key(s, "analyze", "rank_tokens", a.rank_tokens, 256L,
          "residual-stream rows (pooled over the probes) per layer for the effective rank", config::at_least<long>(2));
  add_key(s, "analyze", "rank_center", a.rank_center, false,
          "subtract the mean residual before the singular values (the seed paper's definition does not)");
  config::add_choice_key(s, "analyze", "device", a.device, config::Device::kAuto,
                         "where the diagnostics pass runs the model: auto (cuda when this process sees a GPU, "
                         "else cpu; logged), cpu, or cuda (the forward pass, the attention rows' scores and the "
                         "KV cache on the GPU, bf16 GEMMs and flash attention as in training; the statistics "
                         "on the host)");
  add_key(s, "analyze", "prefill_chunk", a.prefill_chunk, 256L, "tokens per prefill block of the diagnostics pass",
          config::at_least<long>(1));
  add_key(s, "analyze", "word_dir", a.word_dir, std::string("inputs/eval"),
          "directory of adjectives.txt and nouns.txt (the probes' needle keys, as evaluate's)");
  add_key(s, "analyze", "plots", a.plots, true, "draw the PNG plots (matplotlib)");
  add_key(s, "analyze", "python", a.python, std::string("/usr/bin/python3"),
          "Python with matplotlib and numpy for the plots (Debian's python3-matplotlib)");
}

void check_analyze_config(const AnalyzeConfig& a) {
  std::string problems;
  auto check = [&](const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      problems += cat("\n  ", e.what());
    }
  };
  check([&] { eval::parse_lengths(a.probe_lengths); });
  check([&] {
    for (double d : parse_doubles(a.probe_depths, "analyze.probe_depths"))
      if (!(d >= 0 && d <= 1)) fail("analyze.probe_depths: ", d, " is outside [0, 1]");
  });
  check([&] { parse_score_name(a.long_score, "analyze.long_score"); });
  check([&] { parse_score_name(a.short_score, "analyze.short_score"); });
  for (const auto& f : a.features) check([&] { parse_feature(f); });
  for (const auto& f : a.findings) check([&] { parse_finding(f); });
  if (!a.regression_configs.empty())
    check([&] { parse_conjunction(a.regression_configs, "analyze.regression_configs"); });
  for (const auto& n : split_list(a.finding_scores)) check([&] { parse_score_name(n, "analyze.finding_scores"); });
  if (!problems.empty()) fail("invalid analyze configuration:", problems);
}

}  // namespace headroom::analysis
