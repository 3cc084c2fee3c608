#include "app/analyze_stage.h"

#include "analysis/diagnostics.h"
#include "analysis/config_groups.h"
#include "analysis/study.h"

#include "analysis/analyze_config.h"
#include "analysis/plots_script.h"
#include "analysis/build_report.h"
#include "app/cli.h"
#include "app/device_choice.h"
#include "app/memory_check.h"
#include "config/keys.h"
#include "eval/checkpoint_facts.h"
#include "eval/eval_config.h"
#include "eval/fit.h"
#include "io/atomic_file.h"
#include "io/checkpoint.h"
#include "io/run_dir.h"
#include "ops.h"
#include "parallel/nccl_comm.h"
#include "util/clock.h"
#include "util/error.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>

namespace headroom::app {
using namespace analysis;
namespace fs = std::filesystem;
namespace po = config::po;
namespace {

constexpr unsigned kSections = config::kModel | config::kTrain | config::kData | config::kParallel;

constexpr const char* kUsage =
    "usage: analyze --runs EVAL_RUN_DIR... --out DIR [--config FILE]... [--analyze.key VALUE]...\n\n"
    "Reads each evaluate run directory (results.json, samples.jsonl), follows the evaluated checkpoint's lineage "
    "to the pretrain/extend run directories (metrics.jsonl), groups runs into configurations (lineage configs "
    "without the seed keys) and writes DIR/report.md with tables (also DIR/tables/*.csv) and plots "
    "(DIR/plots/*.png, matplotlib): RULER by length, multiple choice, loss by position, final losses and spike "
    "scores, seed-pair swings, configuration differences with paired-bootstrap intervals, R² of single predictors "
    "and of the feature-count model (in-sample and leave-one-out), and attention diagnostics of each checkpoint "
    "(entropy, sinks, needle mass, retrieval heads, effective rank). What cannot be computed is reported, with why, "
    "in report.md and on stderr; the rest is computed.";

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

DiagOptions diag_options(const AnalyzeConfig& a) {
  DiagOptions o;
  o.query_rows = a.query_rows;
  o.sink_tokens = a.sink_tokens;
  o.sink_eps = a.sink_epsilon;
  o.retrieval_threshold = a.retrieval_threshold;
  o.needle_sentence = a.needle_span == "sentence";
  o.retrieval_all_tests = a.retrieval_all_tests;
  o.rank_tokens = a.rank_tokens;
  o.rank_center = a.rank_center;
  o.chunk = a.prefill_chunk;
  return o;
}

void diagnose_run(RunData& r, const AnalyzeConfig& cfg, const DiagOptions& opt, const eval::Resources& res,
                  const std::function<void(const std::string&)>& log) {
  const auto t0 = std::chrono::steady_clock::now();
  const io::CheckpointInfo info = io::read_checkpoint_info(r.checkpoint);
  const config::Config c = config::make_config(kSections, {}, {{"checkpoint " + r.checkpoint, info.config_ini}});
  const bool cuda = cfg.device == config::Device::kCuda;
  if (cuda) parallel::select_local_gpu();
  // Weights from the checkpoint, no backward pass: neither a random init nor a gradient arena, nor
  // an fp32 copy of the weights the GEMMs read in bf16.
  model::Model<float> m = model::make_model(c.model, cuda ? kernels::cuda_ops() : kernels::cpu_ops(), {},
                                            {.random_weights = false, .gradients = false, .master_weights = false});
  io::load_checkpoint_tensors(r.checkpoint, m, nullptr);
  const data::Tokenizer tok = eval::checkpoint_tokenizer(info, c.model.vocab_size);
  eval::PromptBuilder prompts(tok, eval::checkpoint_template(info));
  std::vector<int64_t> lengths = eval::parse_lengths(cfg.probe_lengths);
  if (lengths.empty()) {
    if (r.results.lengths.empty()) fail("analyze.probe_lengths is empty and results.json lists no evaluation length");
    lengths = {*std::min_element(r.results.lengths.begin(), r.results.lengths.end())};
  }
  // Before the probes' text, the KV cache or any row is allocated (app/memory_plan.h).
  const int64_t longest = *std::max_element(lengths.begin(), lengths.end());
  const std::string memory = app::check_memory_plan(app::evaluation_plan(
      c.model, cuda, {longest, cfg.prefill_chunk, "analyze", "analyze.probe_lengths", "analyze.prefill_chunk"}));
  if (log) log(cat("diagnostics of ", r.name, ": ", memory));
  std::vector<Probe> probes;
  for (int64_t L : lengths)
    for (double depth : parse_doubles(cfg.probe_depths, "analyze.probe_depths"))
      for (long i = 0; i < cfg.probe_samples; ++i) {
        try {
          probes.push_back(make_probe(tok, prompts, res, cfg.probe_seed, L, depth, i, cfg.max_new_tokens));
        } catch (const eval::TooLong& e) {
          r.problems.push_back(cat("diagnostics: no probe at length ", L, ": ", e.what()));
          break;
        }
      }
  if (probes.empty()) fail("no probe fits the probe lengths");
  if (log)
    log(cat("diagnostics of ", r.name, ": checkpoint ", r.checkpoint, ", ", probes.size(), " probes, ",
            c.model.n_layers, " layers × ", c.model.n_heads, " heads"));
  r.diag = run_diagnostics(m, tok, probes, opt, log);
  if (log) log(cat("diagnostics of ", r.name, " done in ", format_duration(seconds_since(t0))));
}

// A report of no evaluated run is a mistake (a glob that matched training directories, an evaluate
// that never finished), not an empty success: refused with the first run's problem.
void refuse_empty_study(const Study& study) {
  for (const auto& r : study.runs)
    if (r.has_results) return;
  const auto& first = study.runs.front();
  fail("none of the ", study.runs.size(),
       " --runs holds evaluation results; the first: ", first.problems.empty() ? first.dir : first.problems.front());
}

}  // namespace

int run_analyze_stage(int argc, char** argv) {
  app::CommonFlags flags;
  std::string run_dir_alias;
  po::options_description opts = app::common_options(flags);
  opts.add_options()("run-dir", po::value(&run_dir_alias), "the output directory (the same as --out)");
  AnalyzeConfig a;
  config::Schema schema;
  add_analyze_keys(schema, a);
  const auto parsed = config::parse_config(argc, argv, opts, schema);
  if (app::wants_info(flags)) {
    std::cout << app::info_text(flags, kUsage, opts, schema);
    return 0;
  }
  config::check_keys(schema, parsed);
  check_analyze_config(a);
  if (!run_dir_alias.empty() && config::origin_of(parsed, "out") == "default") a.out = run_dir_alias;
  const std::string ini = config::to_ini(schema);
  if (flags.print_config) {
    std::cout << ini;
    return 0;
  }
  if (a.runs.empty()) fail("no runs given: pass --runs EVAL_RUN_DIR... (evaluate run directories)");

  // The runs are read before the output directory is made, so that a study with nothing to report
  // is refused without leaving a directory behind; what was logged meanwhile goes to its log after.
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::string> early{cat("analyze: ", a.runs.size(), " run(s) into ", a.out)};
  Study study = load_study(a, [&](const std::string& line) { early.push_back(line); });
  refuse_empty_study(study);

  io::RunDir run = io::open_run_dir(a.out, flags.force, io::claim_run_dir(a.out, io::RunKind::kAnalysis, "analyze"));
  io::write_config(run, ini);
  auto log = [&](const std::string& line) { io::log_line(run, line); };
  for (const auto& line : early) log(line);

  if (a.diagnostics && a.device == config::Device::kAuto) {
    a.device = app::auto_device(kernels::cuda_device_count());
    log(a.device == config::Device::kCuda ? "analyze.device = auto: cuda (this process sees a GPU)"
                                          : "analyze.device = auto: cpu (no GPU visible to this process)");
  }
  group_configs(study, a);
  const DiagOptions dopt = diag_options(a);
  if (a.diagnostics) {
    std::optional<eval::Resources> res;
    std::string res_problem;
    try {
      res = eval::load_resources(a.word_dir, "");
    } catch (const std::exception& e) {
      res_problem = e.what();
    }
    std::map<std::string, size_t> done;  // checkpoint -> run that holds its diagnostics
    for (auto& r : study.runs) {
      if (!r.has_results || r.config_source != "checkpoint lineage") continue;
      if (!res) {
        r.problems.push_back(cat("no attention diagnostics: the probe word lists could not be read (", res_problem,
                                 "; set analyze.word_dir)"));
        continue;
      }
      const fs::path key = fs::weakly_canonical(r.checkpoint);
      if (auto it = done.find(key.string()); it != done.end()) {
        r.diag = study.runs[it->second].diag;
        continue;
      }
      try {
        diagnose_run(r, a, dopt, *res, log);
        done[key.string()] = static_cast<size_t>(&r - study.runs.data());
      } catch (const std::exception& e) {
        r.problems.push_back(cat("no attention diagnostics: ", e.what()));
      }
    }
  }

  Report rep = build_report(study, a, dopt);
  const fs::path out(a.out);
  std::error_code ec;
  fs::create_directories(out / "tables", ec);
  fs::create_directories(out / "plots", ec);
  if (ec) fail("cannot create ", (out / "plots").string(), ": ", ec.message());
  for (const auto& t : rep.tables) io::write_file_atomic(out / "tables" / (t.name + ".csv"), to_csv(t));

  std::string plot_problem;
  if (a.plots) {
    io::write_file_atomic(out / "plots" / "plot_data.json", rep.plot_data.dump(1) + "\n");
    io::write_file_atomic(out / "plots" / "plots.py", plots_script());
    log("drawing plots with " + a.python);
    const fs::path err = out / "plots" / "plots.log";
    const std::string cmd = shell_quote(a.python) + " " + shell_quote((out / "plots" / "plots.py").string()) + " " +
                            shell_quote(out.string()) + " > " + shell_quote(err.string()) + " 2>&1";
    const int rc = std::system(cmd.c_str());
    if (rc != 0) {
      std::string tail;
      try {
        tail = io::read_file(err);
      } catch (const std::exception&) {}
      if (tail.size() > 600) tail = "…" + tail.substr(tail.size() - 600);
      while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' ')) tail.pop_back();
      plot_problem =
          cat(a.python, " plots.py failed (status ", rc, "; log ", err.string(), ")", tail.empty() ? "" : ": " + tail);
      rep.cannot_compute("some or all plots", plot_problem +
                                                  ". Debian's python3-matplotlib provides matplotlib for "
                                                  "/usr/bin/python3 (jobs/setup.sh installs it)");
    }
  } else {
    plot_problem = "analyze.plots = false";
  }

  // Run problems and what could not be computed: report.md and stderr.
  std::vector<std::string> preamble{
      cat("Generated by analyze from ", a.runs.size(), " evaluate run(s) on ", utc_timestamp(),
          ". Tables are also under tables/ as CSV; plots under plots/ (drawn by plots/plots.py from "
          "plots/plot_data.json). "
          "Scores are on RULER's 0–100 scale; losses in nats per token."),
      cat("Long-context score: ", a.long_score, ". Short-context score: ", a.short_score, ". Seed keys: ", a.seed_keys,
          ". Ignored keys: ", a.ignore_keys, ".")};
  for (const auto& r : study.runs)
    for (const auto& p : r.problems) std::cerr << "analyze: run " << r.name << ": " << p << "\n";
  for (const auto& n : study.notes) std::cerr << "analyze: " << n << "\n";
  for (const auto& c : rep.cannot) std::cerr << "analyze: not computed: " << c << "\n";
  const std::string md = report_markdown(rep, "Headroom study report", preamble, out / "plots", plot_problem);
  io::write_file_atomic(out / "report.md", md);
  io::mark_finished(run, cat("analyze ", a.runs.size(), " runs, ", study.configs.size(), " configurations, ",
                             rep.cannot.size(), " items not computed"));
  log(cat("done in ", format_duration(seconds_since(t0)), ": ", (out / "report.md").string(), " (", rep.tables.size(),
          " tables, ", rep.cannot.size(), " items not computed)"));
  return 0;
}

}  // namespace headroom::app
