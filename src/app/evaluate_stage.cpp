#include "app/evaluate_stage.h"

#include "app/cli.h"
#include "app/memory_check.h"
#include "app/plan_flags.h"
#include "app/stage_start.h"
#include "cpu/blas_kernels.h"
#include "config/ini_text.h"
#include "config/keys.h"
#include "eval/checkpoint_facts.h"
#include "eval/eval_config.h"
#include "eval/ruler_pred.h"
#include "eval/run.h"
#include "eval/tasks.h"
#include "io/atomic_file.h"
#include "io/checkpoint.h"
#include "io/run_dir.h"
#include "model/model.h"
#include "parallel/agree.h"
#include "parallel/grid.h"
#include "parallel/nccl_comm.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/peak_memory.h"
#include "util/version.h"

#include <mpi.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <iostream>
#include <memory>

namespace headroom::app {
using namespace eval;
namespace fs = std::filesystem;
namespace po = config::po;
namespace {

constexpr unsigned kSections = config::kModel | config::kTrain | config::kData | config::kParallel;

constexpr const char* kUsage =
    "usage: evaluate --init CHECKPOINT_OR_RUN_DIR --run-dir DIR [--config FILE]... "
    "[--eval.tasks a,b,...] [--eval.lengths 1024,2048] [--eval.samples N] [--eval.seed S] "
    "[--section.key VALUE]...\n"
    "   or: evaluate --memory-plan [--init CHECKPOINT | --config MODEL_FILE] --eval.lengths L "
    "[--section.key VALUE]... [--world-size N] [--device-memory GiB]\n\n"
    "Scores a checkpoint on RULER's 13 tasks (generated from eval.seed at each length, counted in "
    "the checkpoint's tokenizer, scored by RULER's rules), HELMET-style JSON KV recall, held-out "
    "loss by token position (data.val) and multiple choice (eval.mc_file). The prompt template "
    "follows the checkpoint's stage: instruction after sft, else base. Samples are split across "
    "MPI ranks (mpirun -np N); the result does not depend on N. Writes results.json, results.csv, "
    "samples.jsonl, config.ini, log.txt and DONE into --run-dir (see src/eval/README.md).";

// Refuses lengths the model cannot address unless explicitly allowed.
void check_lengths(const std::vector<int64_t>& lengths, int64_t addressable, bool allow, const std::string& ckpt) {
  std::string over;
  for (int64_t L : lengths)
    if (L > addressable) over.append(over.empty() ? "" : ", ").append(std::to_string(L));
  if (!over.empty() && !allow)
    fail("eval.lengths ", over, " exceed what checkpoint ", ckpt, " can address (", addressable,
         " tokens: its longest training length, or original_len · factor with YaRN or llama3 RoPE scaling); pass "
         "--eval.allow_beyond_training true to evaluate beyond it anyway");
}

// Everything that can be wrong with the input is refused here, before any work.
EvalJob make_job(const EvalConfig& ecfg, const config::Config& cfg, const io::CheckpointInfo& info,
                 const fs::path& ckpt, int64_t& addressable) {
  EvalJob job;
  job.eval = ecfg;
  job.tasks = expand_task_list(ecfg.tasks);
  job.tokenizer = checkpoint_tokenizer(info, cfg.model.vocab_size);
  switch (ecfg.prompt_template) {
    case config::PromptChoice::kAuto:
      job.tmpl = checkpoint_template(info);
      break;
    case config::PromptChoice::kBase:
      job.tmpl = data::PromptTemplate::kBase;
      break;
    case config::PromptChoice::kInstruction:
      job.tmpl = data::PromptTemplate::kInstruction;
      break;
    case config::PromptChoice::kChat:
      job.tmpl = data::PromptTemplate::kChat;
      break;
  }
  PromptBuilder(job.tokenizer, job.tmpl);  // a chat template the tokenizer lacks is refused here
  job.val_path = cfg.data.val;
  addressable = addressable_length(info, cfg.model);
  job.lengths = ecfg.lengths.empty() ? std::vector<int64_t>{addressable} : parse_lengths(ecfg.lengths);
  if (job.lengths.empty()) fail("eval.lengths holds no length");
  check_lengths(job.lengths, addressable, ecfg.allow_beyond_training, ckpt.string());
  return job;
}

// Provenance copied into results.json.
Results make_header(const EvalJob& job, const io::CheckpointInfo& info, const fs::path& ckpt,
                    const std::string& model_train_ini, int ranks, int64_t addressable) {
  Results h;
  h.checkpoint = ckpt.string();
  h.stage = info.stage;
  h.step = info.step;
  h.config_id = config_id(model_train_ini);
  h.tokenizer_id = info.tokenizer_id;
  h.prompt_template = data::template_name(job.tmpl);
  h.prompt_template_text = PromptBuilder(job.tokenizer, job.tmpl).text("{prompt}", "{answer_prefix}");
  h.code_version = kCodeVersion;
  h.created_utc = utc_timestamp();
  h.ranks = ranks;
  h.addressable_length = addressable;
  h.allow_beyond_training = job.eval.allow_beyond_training;
  return h;
}

std::string describe(const EvalJob& job) {
  const Results& h = job.header;
  std::string lengths, tasks;
  for (int64_t L : job.lengths) lengths.append(lengths.empty() ? "" : ",").append(std::to_string(L));
  for (const auto& t : job.tasks) tasks.append(tasks.empty() ? "" : ",").append(t);
  return cat("evaluate ", h.checkpoint, " (stage ", h.stage, ", step ", h.step, ", ", h.config_id, ") on ", h.ranks,
             " rank(s); prompt template ", h.prompt_template, "; lengths ", lengths, " (addressable ",
             h.addressable_length, "); tasks ", tasks, "; ", job.eval.samples, " samples each");
}

// Root only: the output files (atomically), the table on stdout, DONE.
void write_outputs(io::RunDir& run, const EvalOutput& out, const EvalConfig& ecfg) {
  if (ecfg.write_samples) {
    std::string lines;
    for (const auto& l : out.sample_lines) lines += l + "\n";
    io::write_file_atomic(run.root / "samples.jsonl", lines);
  }
  if (ecfg.ruler_pred)
    for (const auto& [path, content] : ruler_pred_files(out.sample_lines)) {
      const auto file = run.root / "ruler_pred" / path;
      std::filesystem::create_directories(file.parent_path());
      io::write_file_atomic(file, content);
    }
  io::write_file_atomic(run.root / "results.csv", results_csv(out.results));
  io::write_file_atomic(run.root / "results.json", results_json(out.results));
  std::cout << results_table(out.results) << std::flush;
  const auto& avg = out.results.ruler_average;
  io::mark_finished(run, cat("evaluate ", out.results.checkpoint, " ruler_average=", avg ? std::to_string(*avg) : "-"));
  io::log_line(run, cat("done in ", format_duration(out.results.seconds), ": ", (run.root / "results.json").string()));
}

// Everything after the run directory is open on root (`run`, null elsewhere).
void evaluate_into(io::RunDir* run, EvalJob& job, const io::CheckpointInfo& info, const fs::path& ckpt,
                   const config::Schema& schema, const app::StageStart& start, const std::string& memory,
                   int64_t addressable, const EvalConfig& ecfg, const config::Config& cfg, parallel::Grid& grid) {
  job.header =
      make_header(job, info, ckpt, config::ini_only_sections(config::to_ini(schema, false), {"model", "train"}),
                  grid.world->size(), addressable);
  if (run) io::log_line(*run, describe(job));
  if (run && !start.device_choice.empty()) io::log_line(*run, start.device_choice);
  if (run) io::log_line(*run, kernels::cpu::blas_kernels_description());
  if (run) io::log_line(*run, memory);

  // train.device as the training stages use it: auto (made concrete by start_stage), cpu or cuda.
  // One GPU per rank, as in training; with eval.tp the group's products are reduced over NCCL there.
  const bool cuda = cfg.train.device == config::Device::kCuda;
  if (cuda) parallel::select_local_gpu();
  const auto& ops = cuda ? kernels::cuda_ops(cfg.train.attention_kernel) : kernels::cpu_ops();
  std::unique_ptr<parallel::Comm> nccl_tp;
  if (cuda && grid.tp > 1) nccl_tp = parallel::make_nccl_comm(grid.tp_group->handle());
  parallel::Comm* tp_comm = nccl_tp ? nccl_tp.get() : grid.tp_group.get();
  const model::TpContext tp{grid.tp > 1 ? tp_comm : nullptr, grid.tp_rank, grid.tp, false};
  // Every weight comes from the checkpoint: drawing the random init first would be most of the
  // start-up on a large model. Evaluation runs no backward pass: no gradient arena, and where the
  // GEMMs read bf16 weights no fp32 copy of them.
  model::Model<float> model =
      model::make_model(cfg.model, ops, tp, {.random_weights = false, .gradients = false, .master_weights = false});
  io::load_checkpoint_tensors(ckpt, model, nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  std::function<void(const std::string&)> log;
  if (run) log = [&](const std::string& line) { io::log_line(*run, line); };
  EvalOutput out = run_evaluation(job, model, *grid.dp_group, log);
  out.results.seconds = seconds_since(t0);
  if (run) write_outputs(*run, out, ecfg);
  grid.world->barrier();
}

// --memory-plan: one rank's plan at the longest of eval.lengths, from --init's configuration or,
// without one, from --config files alone. Every rank holds a whole model (or 1/eval.tp of one) and
// one sequence's cache (or 1/eval.tp of it), so --world-size only counts the ranks that share a node.
int answer_plan(const config::Config& cfg, const EvalConfig& ecfg, const StageStart& start, const PlanFlags& plan) {
  if (cfg.model.vocab_size == 0)
    fail(
        "--memory-plan: model.vocab_size = 0 (the data's vocabulary) has no checkpoint or data to take it from; set "
        "model.vocab_size");
  std::vector<int64_t> lengths = parse_lengths(ecfg.lengths);
  if (lengths.empty()) {
    if (!start.init) fail("--memory-plan without --init needs eval.lengths (the default is the checkpoint's length)");
    lengths = {addressable_length(start.init_info, cfg.model)};
  }
  const int64_t longest = *std::max_element(lengths.begin(), lengths.end());
  const bool cuda = plans_for_gpu(plan, cfg.train.device, !start.device_choice.empty());
  const int tp = static_cast<int>(ecfg.tp);
  if (plan.world_size % tp != 0)
    fail("--world-size ", plan.world_size, " is not a multiple of eval.tp = ", tp, " (each model spans tp ranks)");
  MemoryPlan p = evaluation_plan(cfg.model, cuda,
                                 {.max_length = longest,
                                  .prefill_chunk = ecfg.prefill_chunk,
                                  .tp = tp,
                                  .kv_bytes = cuda ? kernels::cuda_kv_bytes(cfg.train.attention_kernel) : 4});
  count_program(p, resident_bytes());  // this process stands in for a rank of the job
  int rank = 0;
  parallel::mpi_check(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
  if (rank != 0) return 0;
  std::cout << "evaluate --memory-plan: " << plan.world_size << " rank(s), each "
            << (tp == 1 ? std::string("a whole model") : cat("1/", tp, " of a model (eval.tp = ", tp, ")"))
            << " and one sequence of " << longest << " tokens, train.device = " << (cuda ? "cuda" : "cpu") << "\n";
  return answer_memory_plan(p, plan);
}

}  // namespace

int run_evaluate_stage(int argc, char** argv) {
  app::CommonFlags flags;
  app::PlanFlags plan;
  std::string run_dir, init;
  po::options_description opts = app::common_options(flags);
  add_plan_options(opts, plan);
  opts.add_options()("run-dir", po::value(&run_dir)->default_value("runs/evaluate"),
                     "run directory: results.json, results.csv, samples.jsonl, config.ini, log.txt, DONE")(
      "init", po::value(&init),
      "checkpoint to evaluate: a .h5 file, or a run directory meaning its latest checkpoint; its "
      "configuration is the base the options here override");
  config::Config cfg;
  EvalConfig ecfg;
  config::Schema schema = config::make_schema(cfg, kSections);
  add_eval_keys(schema, ecfg);

  const app::StageStart start = app::start_stage(argc, argv, opts, schema, cfg, kSections, flags, kUsage, true);
  if (start.answered) return 0;
  if (plan.memory_plan) return answer_plan(cfg, ecfg, start, plan);
  const std::optional<fs::path>& ckpt = start.init;
  const io::CheckpointInfo& info = start.init_info;
  const std::string& ini = start.ini;
  if (!ckpt) fail("evaluate needs --init CHECKPOINT_OR_RUN_DIR");
  int64_t addressable = 0;
  EvalJob job = make_job(ecfg, cfg, info, *ckpt, addressable);

  // eval.tp ranks share one model; the groups split the samples (dp = the rest).
  int world_size = 1;
  parallel::mpi_check(MPI_Comm_size(MPI_COMM_WORLD, &world_size), "MPI_Comm_size");
  if (world_size % ecfg.tp != 0)
    fail("eval.tp = ", ecfg.tp, " does not divide the job's ", world_size,
         " ranks (mpirun -np / srun -n): each model spans eval.tp ranks");
  parallel::Grid grid = parallel::make_grid(static_cast<int>(ecfg.tp), 0);
  // Before the model, the KV cache or the run directory (app/memory_check.h).
  const bool cuda = cfg.train.device == config::Device::kCuda;
  const app::EvalShape shape{.max_length = *std::max_element(job.lengths.begin(), job.lengths.end()),
                             .prefill_chunk = ecfg.prefill_chunk,
                             .tp = grid.tp,
                             .kv_bytes = cuda ? kernels::cuda_kv_bytes(cfg.train.attention_kernel) : 4};
  app::MemoryPlan memory_plan = app::evaluation_plan(cfg.model, cuda, shape);
  app::count_program(memory_plan, resident_bytes());
  const std::string memory = app::check_memory_plan(memory_plan, *grid.world);
  std::unique_ptr<io::RunDir> run;
  // Root's, agreed: a refusal (a training run's directory, another writer) stops every rank, exit 2.
  parallel::agree(*grid.world, [&] {
    if (!grid.is_root()) return;
    run = std::make_unique<io::RunDir>(
        io::open_run_dir(run_dir, flags.force, io::claim_run_dir(run_dir, io::RunKind::kEvaluation, "evaluate")));
    io::write_config(*run, ini);
  });
  // Whatever ends the evaluation from here on is said in its log too, when the log can take it.
  try {
    evaluate_into(run.get(), job, info, *ckpt, schema, start, memory, addressable, ecfg, cfg, grid);
  } catch (const std::exception& e) {
    if (run) io::log_fatal(*run, e.what());
    throw;
  }
  return 0;
}

}  // namespace headroom::app
