#include "app/training_stage.h"

#include "app/cli.h"
#include "config/keys.h"
#include "data/loader.h"
#include "io/checkpoint.h"
#include "io/run_dir.h"
#include "parallel/grid.h"
#include "train/trainer.h"
#include "util/clock.h"
#include "util/error.h"

#include <cstring>
#include <iostream>
#include <memory>

namespace headroom::app {
namespace fs = std::filesystem;
namespace po = config::po;
namespace {

constexpr unsigned kSections = config::kModel | config::kTrain | config::kData | config::kParallel;

// --init is needed before the full parse: its checkpoint's configuration is the base layer.
std::string find_flag(int argc, char** argv, const char* flag) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], flag) == 0) return argv[i + 1];
  return "";
}

// Refuses to mix a new run into an old one; with --force, keeps the old checkpoints aside.
void prepare_run_dir(const fs::path& dir, bool resume, bool force) {
  const bool has_checkpoints = !io::list_checkpoints(dir).empty();
  if (io::is_finished(dir) && !force)
    fail("run directory ", dir.string(), " holds a finished run (DONE exists); choose another ",
         "--run-dir or pass --force to start over");
  if (has_checkpoints && !resume && !force)
    fail("run directory ", dir.string(), " has checkpoints of an unfinished run; pass --resume auto ",
         "to continue it or --force to start over");
  if (has_checkpoints && force && !resume) {
    const fs::path aside = dir / ("checkpoints.replaced-" + utc_timestamp());
    fs::rename(dir / "checkpoints", aside);
    std::cout << "previous checkpoints moved to " << aside.string() << std::endl;
  }
}

train::SampleFn window_sampler(const config::Config& cfg, std::shared_ptr<data::ShardReader> shard) {
  const data::StreamSpec stream{cfg.train.seq_len, cfg.train.seed};
  auto window = std::make_shared<std::vector<int32_t>>(static_cast<size_t>(cfg.train.seq_len + 1));
  return [shard, stream, window](int64_t index, int32_t* ids, int32_t* targets) {
    data::read_sample(*shard, stream, index, window->data());
    std::copy(window->begin(), window->end() - 1, ids);
    std::copy(window->begin() + 1, window->end(), targets);
  };
}

}  // namespace

int run_training_stage(const StageSpec& spec, int argc, char** argv) {
  CommonFlags flags;
  std::string run_dir, resume, init;
  po::options_description opts = common_options(flags);
  opts.add_options()
      ("run-dir", po::value(&run_dir)->default_value("runs/" + spec.name),
       "run directory: config.ini, log.txt, metrics.jsonl, checkpoints/, DONE")
      ("resume", po::value(&resume)->default_value(""),
       "auto: continue from the newest checkpoint in --run-dir that loads (a damaged one is "
       "skipped with a warning)");
  if (spec.takes_init)
    opts.add_options()("init", po::value(&init),
                       "checkpoint to start from: a .h5 file, or a run directory meaning its latest "
                       "checkpoint; its configuration is the base the options here override");
  config::Config cfg;
  const config::Schema schema = config::make_schema(cfg, kSections);

  std::vector<config::IniText> bases;
  std::optional<fs::path> init_path;
  io::CheckpointInfo init_info;
  if (spec.takes_init && !find_flag(argc, argv, "--init").empty()) {
    init_path = io::resolve_checkpoint(find_flag(argc, argv, "--init"));
    init_info = io::read_checkpoint_info(*init_path);
    bases.push_back({"checkpoint " + init_path->string(), init_info.config_ini});
  }
  const auto parsed = config::parse_config(argc, argv, opts, schema, bases);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (flags.help) {
    if (rank == 0)
      std::cout << config::help_text("usage: " + spec.name + " [--config FILE]... [--section.key VALUE]... "
                                     "--run-dir DIR" + (spec.takes_init ? " --init CHECKPOINT" : "") +
                                     "\n\n" + spec.description, opts, schema);
    return 0;
  }
  config::validate(cfg, kSections, schema, parsed);
  const std::string ini = config::to_ini(schema);
  if (flags.print_config) {
    if (rank == 0) std::cout << ini;
    return 0;
  }
  if (spec.takes_init && !init_path) fail(spec.name, " needs --init CHECKPOINT_OR_RUN_DIR");
  if (!resume.empty() && resume != "auto") fail("--resume takes 'auto', not '", resume, "'");

  parallel::Grid grid = parallel::make_grid(static_cast<int>(cfg.parallel.tp), static_cast<int>(cfg.parallel.dp));
  std::unique_ptr<io::RunDir> run;
  if (grid.is_root()) {
    prepare_run_dir(run_dir, resume == "auto", flags.force);
    run = std::make_unique<io::RunDir>(io::open_run_dir(run_dir, flags.force));
    io::write_config(*run, ini);
    io::log_line(*run, cat(spec.name, " on ", grid.world->size(), " rank(s), run directory ", run_dir));
  }
  grid.world->barrier();

  auto shard = std::make_shared<data::ShardReader>(data::open_shard(cfg.data.train));
  if (shard->vocab_size != cfg.model.vocab_size)
    fail("model.vocab_size = ", cfg.model.vocab_size, " but the data ", cfg.data.train,
         " was made with tokenizer '", shard->tokenizer_id, "' of vocabulary ", shard->vocab_size,
         "; set model.vocab_size = ", shard->vocab_size);
  if (init_path && init_info.tokenizer_id != shard->tokenizer_id)
    fail("checkpoint ", init_path->string(), " was trained with tokenizer '", init_info.tokenizer_id,
         "' but the data ", cfg.data.train, " uses '", shard->tokenizer_id, "'");

  train::TrainJob job;
  job.stage = spec.name;
  job.cfg = cfg;
  job.config_ini = config::to_ini(schema, false);
  job.run_dir = run_dir;
  job.sample = window_sampler(cfg, shard);
  job.tokenizer_id = shard->tokenizer_id;
  job.merges = data::read_shard_tokenizer(*shard).merges;
  job.init = init_path;
  job.lineage = init_path ? init_info.lineage : "[]";
  job.resume = resume == "auto";
  const train::TrainResult r = train::run_training(job, grid, run.get());
  if (grid.is_root() && r.exit_code == 0) {
    io::mark_finished(*run, cat(spec.name, " steps=", r.steps_done, " loss=", r.final_loss));
    io::log_line(*run, cat("done: ", r.steps_done, " steps, final loss ", r.final_loss,
                           "; checkpoints in ", (fs::path(run_dir) / "checkpoints").string()));
  }
  return r.exit_code;
}

}  // namespace headroom::app
