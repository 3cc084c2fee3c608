// bench_eval: speed and memory of evaluate (figures, not a test).
//
//   mpirun -np 2 bench_eval suite  [--lengths 1024,2048,4096,8192,16384] [--samples 20]
//                                  [--d-model 32 --layers 2 --heads 4 --head-dim 8]
//       RULER's 13 tasks at every length on a toy model (random weights, byte tokenizer: it never
//       emits EOS, so every sample decodes its full token budget, the slowest case), split over
//       the ranks exactly as evaluate splits them. Prints wall time per length and in total.
//   bench_eval diagnostics [--lengths 16384,65536] [--d-model 256 --layers 4 --heads 4 --head-dim 64]
//       analyze's attention diagnostics (analysis/diagnostics.h: streaming prefill, 128 sampled
//       query rows per layer and head, greedy answer) of one niah probe per length, ascending:
//       time and the peak RSS after each length (memory is linear in length when the growth
//       from one length to the next follows the lengths' ratio).
//   mpirun -np 2 bench_eval all [the keys of both]
//       suite, then diagnostics on the first rank: the evaluation figures of docs/performance.md in one run.
//   bench_eval sample [--length 65536] [--d-model 256 --layers 4 --heads 4 --head-dim 64]
//                     [--task niah_single_2]
//       One sample of one task at one length: prefill and decode time, peak RSS.
//
// Inputs come from HEADROOM_SOURCE_DIR (default: the current directory): inputs/eval word lists
// and the committed essay sample. Run with OMP_NUM_THREADS=1 per rank on a shared machine.
#include "analysis/diagnostics.h"
#include "app/mpi_main.h"
#include "config/keys.h"
#include "eval/decoder.h"
#include "eval/run.h"
#include "eval/tasks.h"
#include "parallel/grid.h"
#include "util/clock.h"
#include "util/error.h"

#include <omp.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>

using namespace headroom;

namespace {

struct Args {
  std::string mode;
  std::map<std::string, std::string> kv;
  std::string get(const std::string& k, const std::string& dflt) const {
    const auto it = kv.find(k);
    return it == kv.end() ? dflt : it->second;
  }
  long num(const std::string& k, long dflt) const { return std::stol(get(k, std::to_string(dflt))); }
};

Args parse(int argc, char** argv) {
  const std::string mode = argc < 2 ? "" : argv[1];
  if (mode != "suite" && mode != "sample" && mode != "diagnostics" && mode != "all")
    fail("usage: bench_eval suite|diagnostics|all|sample [--key value]... (see bench/bench_eval.cpp)");
  Args a{argv[1], {}};
  for (int i = 2; i + 1 < argc; i += 2) {
    if (std::strncmp(argv[i], "--", 2) != 0) fail("bench_eval: expected --key value, got ", argv[i]);
    a.kv[argv[i] + 2] = argv[i + 1];
  }
  return a;
}

config::ModelConfig toy_model(const Args& a, long d, long layers, long heads, long head_dim) {
  return config::make_config(config::kModel, {{"model.vocab_size", "259"},
                                              {"model.d_model", a.get("d-model", std::to_string(d))},
                                              {"model.n_layers", a.get("layers", std::to_string(layers))},
                                              {"model.d_ff", std::to_string(2 * a.num("d-model", d))},
                                              {"model.n_heads", a.get("heads", std::to_string(heads))},
                                              {"model.n_kv_heads", a.get("heads", std::to_string(heads))},
                                              {"model.head_dim_qk", a.get("head-dim", std::to_string(head_dim))},
                                              {"model.head_dim_v", a.get("head-dim", std::to_string(head_dim))}})
      .model;
}

std::filesystem::path source_dir() {
  const char* s = std::getenv("HEADROOM_SOURCE_DIR");
  return s ? s : ".";
}

eval::EvalConfig inputs() {
  eval::EvalConfig e{};
  e.samples = 20;
  e.seed = 1;
  e.loss_windows = 1;
  e.prefill_chunk = 512;
  e.word_dir = (source_dir() / "inputs/eval").string();
  e.essay = (source_dir() / "validation/data/sample_corpus/essay/sample.jsonl").string();
  return e;
}

double peak_rss_gib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / (1024.0 * 1024.0);  // ru_maxrss is in KiB
}

int suite(const Args& a) {
  parallel::Grid grid = parallel::make_grid(1, 0);
  model::Model<float> m = model::make_model(toy_model(a, 32, 2, 4, 8), kernels::cpu_ops());
  eval::EvalJob job;
  job.eval = inputs();
  job.eval.samples = a.num("samples", 20);
  job.tasks = eval::expand_task_list("ruler");
  const std::vector<int64_t> lengths = eval::parse_lengths(a.get("lengths", "1024,2048,4096,8192,16384"));
  double total = 0;
  std::vector<std::string> lines;
  for (int64_t L : lengths) {  // one length at a time, to report each
    job.lengths = {L};
    grid.world->barrier();
    const auto t0 = std::chrono::steady_clock::now();
    const eval::EvalOutput out = eval::run_evaluation(job, m, *grid.world, nullptr);
    grid.world->barrier();
    const double s = seconds_since(t0);
    total += s;
    int64_t scored = 0, skipped = 0;
    for (const auto& t : out.results.task_scores) scored += t.n, skipped += t.skipped;
    lines.push_back(cat("  length ", L, ": ", scored, " samples scored, ", skipped, " skipped (too long), ",
                        format_duration(s), " (", s, " s)"));
    if (grid.is_root()) std::printf("%s\n", lines.back().c_str()), std::fflush(stdout);
  }
  if (grid.is_root())
    std::printf(
        "suite: 13 RULER tasks x %zu lengths x %ld samples on %d rank(s), toy model d_model %ld, "
        "%ld layers: %.1f s (%s)\n",
        lengths.size(), a.num("samples", 20), grid.world->size(), a.num("d-model", 32), a.num("layers", 2), total,
        format_duration(total).c_str());
  return 0;
}

int diagnostics(const Args& a) {
  model::Model<float> m = model::make_model(toy_model(a, 256, 4, 4, 64), kernels::cpu_ops());
  const eval::EvalConfig e = inputs();
  const eval::Resources res = eval::load_resources(e.word_dir, e.essay);
  const data::Tokenizer tok{};
  eval::PromptBuilder prompts(tok, data::PromptTemplate::kBase);
  const int64_t max_new = eval::find_task("niah_single_1").max_new;
  std::printf("diagnostics: d_model %ld, %ld layers, %ld heads of width %ld, %d thread(s); start: peak RSS %.2f GiB\n",
              a.num("d-model", 256), a.num("layers", 4), a.num("heads", 4), a.num("head-dim", 64),
              omp_get_max_threads(), peak_rss_gib());
  for (int64_t L : eval::parse_lengths(a.get("lengths", "16384,65536"))) {
    const analysis::Probe p = analysis::make_probe(tok, prompts, res, 1, L, 0.5, 0, max_new);
    const auto t0 = std::chrono::steady_clock::now();
    const analysis::Diagnostics d = analysis::run_diagnostics(m, tok, {p}, analysis::DiagOptions{}, nullptr);
    const double s = seconds_since(t0);
    std::printf("  length %ld (%zu prompt tokens, %zu layer-heads): %.1f s (%s), peak RSS %.2f GiB\n",
                static_cast<long>(L), p.ids.size(), d.heads.size(), s, format_duration(s).c_str(), peak_rss_gib());
    std::fflush(stdout);
  }
  return 0;
}

int sample(const Args& a) {
  const int64_t L = a.num("length", 65536);
  const std::string task = a.get("task", "niah_single_2");
  model::Model<float> m = model::make_model(toy_model(a, 256, 4, 4, 64), kernels::cpu_ops());
  const eval::EvalConfig e = inputs();
  const eval::Resources res = eval::load_resources(e.word_dir, e.essay);
  eval::PromptBuilder prompts(data::Tokenizer{}, data::PromptTemplate::kBase);
  eval::TaskContext ctx = eval::make_task_context(res, prompts);
  const eval::TaskSpec& spec = eval::find_task(task);
  auto t0 = std::chrono::steady_clock::now();
  const eval::Sample s = eval::generate_sample(spec, ctx, {1, L, 0, spec.max_new});
  const double t_gen = seconds_since(t0);
  const auto ids = prompts.ids(s.prompt, s.answer_prefix);
  eval::Decoder dec{m, a.num("chunk", 512), {}};
  t0 = std::chrono::steady_clock::now();
  const auto out = eval::generate(dec, data::eos_id(data::Tokenizer{}), ids, spec.max_new,
                                  L);  // chunked prefill, then greedy decoding
  const double t_all = seconds_since(t0);
  std::printf(
      "sample: %s at %lld tokens (%lld prompt tokens, %lld haystack units) on d_model %ld, %ld layers: "
      "sample generated in %.2f s, prefill + %zu decoded tokens %.1f s, peak RSS %.2f GiB\n",
      task.c_str(), static_cast<long long>(L), static_cast<long long>(s.tokens), static_cast<long long>(s.units),
      a.num("d-model", 256), a.num("layers", 4), t_gen, out.size(), t_all, peak_rss_gib());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return app::mpi_main("bench_eval", argc, argv, [&] {
    const Args a = parse(argc, argv);
    if (a.mode == "sample") return sample(a);
    if (a.mode == "diagnostics") return diagnostics(a);
    if (a.mode == "suite") return suite(a);
    suite(a);  // all: the suite on every rank, then the diagnostics on the first
    parallel::Grid grid = parallel::make_grid(1, 0);
    if (grid.is_root()) diagnostics(a);
    grid.world->barrier();
    return 0;
  });
}
