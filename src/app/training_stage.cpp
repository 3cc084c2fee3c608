#include "app/training_stage.h"

#include "app/cli.h"
#include "app/memory_check.h"
#include "app/plan_flags.h"
#include "app/stage_start.h"
#include "cpu/blas_kernels.h"
#include "config/ini_text.h"
#include "config/keys.h"
#include "config/task_names.h"
#include "data/dataset.h"
#include "data/hf_tokenizer_files.h"
#include "data/loader.h"
#include "data/long_context.h"
#include "data/mixture.h"
#include "data/sft.h"
#include "data/synthetic.h"
#include "io/checkpoint.h"
#include "io/checkpoint_files.h"
#include "io/run_dir.h"
#include "parallel/agree.h"
#include "parallel/grid.h"
#include "parallel/nccl_comm.h"
#include "train/probe.h"
#include "train/trainer.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/peak_memory.h"

#include <mpi.h>

#include <iostream>
#include <memory>
#include <sstream>

namespace headroom::app {
namespace fs = std::filesystem;
namespace po = config::po;
namespace {

constexpr unsigned kSections = config::kModel | config::kTrain | config::kData | config::kParallel;

constexpr const char* kSizingHelp =
    "Sizing a long-context job: each rank holds 16 bytes per parameter of its 1/tp of the model (weights, "
    "gradients, AdamW moments; parallel.zero1 splits the moments over the cp × dp ranks) and the fp32 activations "
    "of a micro-batch of train.seq_len / cp tokens per window. train.recompute = full keeps one layer's "
    "activations and every layer's input; parallel.sequence_parallel splits the residual streams over the tp "
    "ranks; parallel.cp splits the tokens. The layout rule: world = tp × cp × dp, tp divides n_heads, n_kv_heads "
    "and d_ff, seq_len is a multiple of 2·cp. --memory-plan --world-size N --device-memory GiB --train.device cuda "
    "prints the plan of one rank and exits 0 when it fits, 2 when not.";

// replaced-<time>/, or replaced-<time>-N/ when a run replaced in the same second took that name.
fs::path aside_dir(const fs::path& dir) {
  const std::string base = "replaced-" + utc_timestamp();
  fs::path aside = dir / base;
  for (int n = 2; fs::exists(aside); ++n) aside = dir / cat(base, "-", n);
  return aside;
}

// A checkpoint here that another run wrote (copied in, or the directory reused with other seeds or
// another model) must not be continued as this run's: refused, naming what differs and both values,
// before this run's config.ini replaces the one that describes the checkpoints. Compared: the model
// and data-order seeds, every [model] key both configurations hold (a key added since the checkpoint
// was written is not), except model.freeze, which may change between invocations; and the step
// against the file's name. A checkpoint whose metadata does not read is left to resume, which skips
// a damaged file.
void refuse_foreign_checkpoints(const fs::path& dir, const config::Config& cfg, const std::string& config_ini) {
  const auto ours = config::ini_map(config_ini);
  for (const auto& path : io::list_checkpoints(dir)) {
    io::CheckpointInfo info;
    try {
      info = io::read_checkpoint_info(path);
    } catch (const Error&) {
      continue;
    }
    const auto refuse = [&](const std::string& key, const auto& there, const auto& here) {
      fail("--resume auto: checkpoint ", path.string(), " is another run's: its ", key, " is ", there,
           ", this run's is ", here, "; resume with the configuration that wrote it, or choose another --run-dir");
    };
    if (io::checkpoint_path(dir, info.step).filename() != path.filename())
      fail("--resume auto: checkpoint ", path.string(), " holds step ", info.step, ", not the step of its name ",
           "(a file renamed or copied from another run); move it out of ", (dir / "checkpoints").string());
    if (info.seed != cfg.model.seed) refuse("model.seed", info.seed, cfg.model.seed);
    if (info.data_seed != cfg.train.seed) refuse("train.seed", info.data_seed, cfg.train.seed);
    for (const auto& [key, value] : config::ini_map(info.config_ini)) {
      if (key.rfind("model.", 0) != 0 || key == "model.freeze" || key == "model.seed") continue;
      const auto it = ours.find(key);
      if (it != ours.end() && it->second != value) refuse(key, value, it->second);
    }
  }
}

// Refuses to mix a new run into an old one. With --force, the old run's checkpoints, metrics and
// probe logs, configuration and DONE move aside into replaced-<time>/ (nothing is deleted, and the
// new run's jsonl files do not continue the old ones); log.txt keeps both runs, one after the other.
// Called with the directory locked (io/run_lock.h).
void prepare_run_dir(const fs::path& dir, bool resume, bool force) {
  const bool has_checkpoints = !io::list_checkpoints(dir).empty();
  if (io::is_finished(dir) && !force)
    fail("run directory ", dir.string(), " holds a finished run (DONE exists); choose another ",
         "--run-dir or pass --force to start over");
  if (has_checkpoints && !resume && !force)
    fail("run directory ", dir.string(), " has checkpoints of an unfinished run; pass --resume auto ",
         "to continue it or --force to start over");
  if (!force || resume) return;
  const fs::path aside = aside_dir(dir);
  for (const char* name : {"checkpoints", "metrics.jsonl", "probe.jsonl", "config.ini", "DONE"}) {
    if (!fs::exists(dir / name)) continue;
    std::error_code ec;
    fs::create_directories(aside, ec);
    if (!ec) fs::rename(dir / name, aside / name, ec);
    if (ec) fail("--force: cannot move ", (dir / name).string(), " aside to ", aside.string(), " (", ec.message(), ")");
  }
  if (fs::exists(aside)) std::cout << "the previous run's outputs moved to " << aside.string() << std::endl;
}

// sft: packed prompt/response examples (data/sft.h).
train::SampleFn sft_sampler(const config::Config& cfg, std::shared_ptr<data::ShardReader> shard,
                            std::string& description) {
  const auto& d = cfg.data;
  std::vector<data::SftPair> pairs;
  if (!d.sft_file.empty()) pairs = data::read_sft_jsonl(d.sft_file);
  data::SftSpec spec{
      cfg.train.seq_len,  d.seed, d.sft_file_share, d.synthetic_ratio, config::parse_task_list(d.synthetic_tasks),
      d.synthetic_min_len};
  auto packer = std::make_shared<data::SftPacker>(spec, data::read_shard_tokenizer(*shard), pairs,
                                                  data::shard_haystack(*shard, data::read_doc_offsets(*shard)));
  description =
      cat("sft examples packed into windows of ", cfg.train.seq_len + 1, " tokens, loss on responses + EOS; ");
  if (pairs.empty())
    description += "no data.sft_file: all examples generated";
  else
    description += cat(packer->file_examples(), " pairs from ", d.sft_file, " (", packer->dropped_too_long(),
                       " longer than a window dropped), share ", d.sft_file_share);
  if (pairs.empty() || d.sft_file_share < 1)
    description +=
        cat("; generated: synthetic tasks (", d.synthetic_tasks, ") with probability ", d.synthetic_ratio,
            ", else docqa over ", d.train, "; sizes [", packer->min_generated(), ", ", cfg.train.seq_len + 1, "]");
  return [packer, shard](int64_t index, int32_t* ids, int32_t* targets) { packer->sample(index, ids, targets); };
}

// The training data: data.train alone, or the datasets of data.mix with the mixture that picks
// each window's source. All share the first one's tokenizer (a mismatch is refused naming both).
struct DataSources {
  std::vector<std::shared_ptr<data::ShardReader>> readers;
  std::shared_ptr<data::Mixture> mixture;
};

DataSources open_sources(const config::Config& cfg) {
  DataSources out;
  if (cfg.data.mix.empty()) {
    out.readers.push_back(std::make_shared<data::ShardReader>(data::open_dataset(cfg.data.train, "train")));
    return out;
  }
  auto sources = data::parse_mix(cfg.data.mix);
  for (const auto& src : sources)
    out.readers.push_back(std::make_shared<data::ShardReader>(
        data::open_dataset(src.path, "train", out.readers.empty() ? "" : out.readers[0]->tokenizer_id)));
  out.mixture = std::make_shared<data::Mixture>(std::move(sources), cfg.train.seed);
  return out;
}

std::string mixture_text(const data::Mixture& m) {
  std::string s = "a mixture of";
  for (const auto& src : m.sources()) s += cat(" ", src.name, " (", src.path, ") ", 100 * src.weight, "%");
  return s;
}

// pretrain/extend: text windows (fixed grid, or whole documents for long context), with synthetic
// retrieval examples mixed in at data.synthetic_ratio.
train::SampleFn text_sampler(config::Stage stage, const config::Config& cfg, std::shared_ptr<data::ShardReader> shard,
                             const DataSources& sources, std::string& description) {
  const auto& d = cfg.data;
  const int64_t T = cfg.train.seq_len;
  const config::Sampler kind = d.sampler != config::Sampler::kAuto ? d.sampler
                               : stage == config::Stage::kExtend   ? config::Sampler::kDocuments
                                                                   : config::Sampler::kWindows;
  std::vector<std::shared_ptr<data::DocumentStream>> docs(sources.readers.size());
  const std::string over = sources.mixture ? mixture_text(*sources.mixture) : d.train;
  if (kind == config::Sampler::kDocuments) {
    for (size_t k = 0; k < docs.size(); ++k)
      docs[k] = std::make_shared<data::DocumentStream>(data::read_doc_offsets(*sources.readers[k]), T, cfg.train.seed);
    description = cat("whole documents of ", over, " concatenated (BOS-separated) into windows of ", T + 1, " tokens");
  } else {
    description = cat("windows of ", T + 1, " tokens on a fixed grid over ", over);
  }
  std::shared_ptr<data::SyntheticMixer> mixer;
  if (d.synthetic_ratio > 0) {
    data::MixerSpec spec{d.synthetic_ratio, config::parse_task_list(d.synthetic_tasks), d.seed, d.synthetic_min_len,
                         d.synthetic_loss == config::SyntheticLoss::kAll};
    if (d.warmup_steps > 0) {
      if (!d.warmup_tasks.empty()) spec.warmup_tasks = config::parse_task_list(d.warmup_tasks);
      spec.warmup_samples = d.warmup_steps * cfg.train.global_batch;
      spec.warmup_max_len = d.warmup_max_len;
    }
    mixer = std::make_shared<data::SyntheticMixer>(spec, data::read_shard_tokenizer(*shard), T);
    description +=
        cat("; synthetic tasks (", d.synthetic_tasks, ") end ", 100 * d.synthetic_ratio, "% of the windows, loss on ",
            d.synthetic_loss == config::SyntheticLoss::kAll ? "every token" : "the answer");
    if (d.warmup_steps > 0)
      description +=
          cat(" (the first ", d.warmup_steps, " steps: ", d.warmup_tasks,
              d.warmup_max_len > 0 ? cat(" of at most ", d.warmup_max_len, " tokens growing to the window") : "", ")");
  }
  const data::StreamSpec stream{T, cfg.train.seed};
  auto window = std::make_shared<std::vector<int32_t>>(static_cast<size_t>(T + 1));
  return [sources, stream, window, docs, mixer](int64_t index, int32_t* ids, int32_t* targets) {
    const size_t k = sources.mixture ? static_cast<size_t>(sources.mixture->source_of(index)) : 0;
    if (docs[k])
      docs[k]->read(*sources.readers[k], index, window->data());
    else
      data::read_sample(*sources.readers[k], stream, index, window->data());
    std::copy(window->begin() + 1, window->end(), targets);
    if (mixer) mixer->apply(index, window->data(), targets);
    std::copy(window->begin(), window->end() - 1, ids);
  };
}

// The retrieval probe (train/probe.h): val-shard windows each ending in a whole-window example.
train::SampleFn probe_sampler(const config::Config& cfg) {
  auto val = std::make_shared<data::ShardReader>(data::open_dataset(cfg.data.val, "val"));
  const int64_t T = cfg.train.seq_len;
  data::MixerSpec spec{1.0, config::parse_task_list(cfg.train.probe_tasks), train::kProbeSeed, T + 1, false};
  auto mixer = std::make_shared<data::SyntheticMixer>(spec, data::read_shard_tokenizer(*val), T);
  const data::StreamSpec stream{T, train::kProbeSeed};
  auto window = std::make_shared<std::vector<int32_t>>(static_cast<size_t>(T + 1));
  return [val, stream, window, mixer](int64_t index, int32_t* ids, int32_t* targets) {
    data::read_sample(*val, stream, index, window->data());
    std::fill(targets, targets + stream.seq_len, -1);
    mixer->apply(index, window->data(), targets);
    std::copy(window->begin(), window->end() - 1, ids);
  };
}

// model.vocab_size = 0 means the vocabulary of the data's tokenizer (the stored config says which).
void resolve_vocab(config::Config& cfg, const data::ShardReader& shard) {
  if (cfg.model.vocab_size == 0) cfg.model.vocab_size = shard.vocab_size;
}

// --memory-plan: the plan of rank 0 of a job of --world-size ranks, printed on rank 0.
int answer_plan(const StageSpec& spec, config::Config cfg, const PlanFlags& plan, bool device_was_auto) {
  const parallel::Degrees d =
      parallel::resolve_degrees(static_cast<int>(cfg.parallel.tp), static_cast<int>(cfg.parallel.dp),
                                static_cast<int>(cfg.parallel.cp), plan.world_size);
  if (cfg.model.vocab_size == 0) {
    // With data.mix the vocabulary is the first source's (all sources share one tokenizer).
    const std::string key = cfg.data.mix.empty() ? "data.train" : "data.mix's first source";
    const std::string data = cfg.data.mix.empty() ? cfg.data.train : data::parse_mix(cfg.data.mix)[0].path;
    if (!fs::exists(data))
      fail("--memory-plan: model.vocab_size = 0 takes the vocabulary of ", key, " = ", data,
           ", which does not exist; set model.vocab_size");
    resolve_vocab(cfg, data::open_dataset(data, "train"));
  }
  if (plans_for_gpu(plan, cfg.train.device, device_was_auto)) cfg.train.device = config::Device::kCuda;
  MemoryPlan p = training_plan(config::name_of(spec.stage), cfg, {d.tp, d.cp, d.dp, cfg.parallel.sequence_parallel});
  count_program(p, resident_bytes());  // this process stands in for a rank of the job
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) return 0;
  std::cout << config::name_of(spec.stage) << " --memory-plan: " << plan.world_size << " rank(s) as tp=" << d.tp
            << " cp=" << d.cp << " dp=" << d.dp << ", train.device = " << config::name_of(cfg.train.device) << "\n";
  return answer_memory_plan(p, plan);
}

}  // namespace

int run_training_stage(const StageSpec& spec, int argc, char** argv) {
  const std::string name = config::name_of(spec.stage);  // for messages, logs and checkpoints
  CommonFlags flags;
  PlanFlags plan;
  std::string run_dir, resume, init;
  po::options_description opts = common_options(flags);
  add_plan_options(opts, plan);
  opts.add_options()("run-dir", po::value(&run_dir)->default_value("runs/" + name),
                     "run directory: config.ini, log.txt, metrics.jsonl, checkpoints/, DONE")(
      "resume", po::value(&resume)->default_value(""),
      "auto: continue from the newest checkpoint in --run-dir that loads (a damaged one is "
      "skipped with a warning)");
  if (spec.takes_init)
    opts.add_options()("init", po::value(&init),
                       "checkpoint to start from: a .h5 file, or a run directory meaning its latest "
                       "checkpoint; its configuration is the base the options here override");
  config::Config cfg;
  const config::Schema schema = config::make_schema(cfg, kSections);

  // The process layout of the stage that wrote an --init checkpoint is no property of the model
  // (checkpoints load under any layout), so [parallel] is not inherited.
  const StageStart start = start_stage(
      argc, argv, opts, schema, cfg, kSections, flags,
      "usage: " + name + " [--config FILE]... [--section.key VALUE]... --run-dir DIR" +
          (spec.takes_init ? " --init CHECKPOINT" : "") + "\n   or: " + name +
          " --memory-plan [--config FILE]... [--section.key VALUE]... [--world-size N] [--device-memory GiB]\n\n" +
          spec.description + "\n\n" + kSizingHelp,
      spec.takes_init, {"parallel"});
  if (start.answered) return 0;
  if (plan.memory_plan) return answer_plan(spec, cfg, plan, !start.device_choice.empty());
  const std::optional<fs::path>& init_path = start.init;
  const io::CheckpointInfo& init_info = start.init_info;
  if (spec.takes_init && !init_path) fail(name, " needs --init CHECKPOINT_OR_RUN_DIR");
  if (!resume.empty() && resume != "auto") fail("--resume takes 'auto', not '", resume, "'");

  parallel::Grid grid = parallel::make_grid(static_cast<int>(cfg.parallel.tp), static_cast<int>(cfg.parallel.dp),
                                            static_cast<int>(cfg.parallel.cp));
  const DataSources sources = open_sources(cfg);
  auto shard = sources.readers[0];
  resolve_vocab(cfg, *shard);
  // Like every check of the inputs: refused before the run directory is touched.
  if (shard->vocab_size != cfg.model.vocab_size)
    fail("model.vocab_size = ", cfg.model.vocab_size, " but the data ", shard->path, " was made with tokenizer '",
         shard->tokenizer_id, "' of vocabulary ", shard->vocab_size, "; set model.vocab_size = ", shard->vocab_size);
  if (init_path && init_info.tokenizer_id != shard->tokenizer_id)
    fail("checkpoint ", init_path->string(), " was trained with tokenizer '", init_info.tokenizer_id, "' but the data ",
         shard->path, " uses '", shard->tokenizer_id, "'");
  const data::Tokenizer shard_tok = data::read_shard_tokenizer(*shard);
  const std::optional<int32_t> bos = data::bos_id(shard_tok);
  if (cfg.data.document_mask && !bos)
    fail(
        "data.document_mask = true needs a tokenizer with a BOS token to find where documents begin, but "
        "the data ",
        shard->path, " uses tokenizer '", shard->tokenizer_id, "', which has none");
  // Before anything large is allocated or the run directory is touched (app/memory_check.h); the
  // GPU plan against this rank's own GPU.
  if (cfg.train.device == config::Device::kCuda) parallel::select_local_gpu();
  MemoryPlan memory_plan = training_plan(name, cfg, {grid.tp, grid.cp, grid.dp, cfg.parallel.sequence_parallel});
  count_program(memory_plan, resident_bytes());
  const std::string memory = check_memory_plan(memory_plan, *grid.world);
  std::unique_ptr<io::RunDir> run;
  // Root's, agreed: a refusal (another writer holds the directory) stops every rank with exit 2.
  parallel::agree(*grid.world, [&] {
    if (!grid.is_root()) return;
    io::RunLock lock = io::claim_run_dir(run_dir, io::RunKind::kTraining, name);
    prepare_run_dir(run_dir, resume == "auto", flags.force);
    if (resume == "auto") refuse_foreign_checkpoints(run_dir, cfg, config::to_ini(schema, false));
    run = std::make_unique<io::RunDir>(io::open_run_dir(run_dir, flags.force, std::move(lock)));
    io::write_config(*run, config::to_ini(schema));
    io::log_line(*run, cat(name, " on ", grid.world->size(), " rank(s), run directory ", run_dir));
    if (!start.device_choice.empty()) io::log_line(*run, start.device_choice);
    io::log_line(*run, kernels::cpu::blas_kernels_description());
    io::log_line(*run, memory);
  });
  // Whatever ends the run from here on is said in its log too, when the log can take it.
  try {
    train::TrainJob job;
    job.stage = name;
    job.cfg = cfg;
    job.config_ini = config::to_ini(schema, false);
    job.run_dir = run_dir;
    std::string data_description;
    job.sample = spec.stage == config::Stage::kSft ? sft_sampler(cfg, shard, data_description)
                                                   : text_sampler(spec.stage, cfg, shard, sources, data_description);
    job.mixture = sources.mixture;
    if (grid.is_root()) io::log_line(*run, "data: " + data_description);
    if (cfg.train.probe_every > 0) job.probe = probe_sampler(cfg);
    job.tokenizer_id = shard->tokenizer_id;
    job.bos = bos.value_or(-1);
    job.merges = shard_tok.merges;
    job.tokenizer_hf = data::tokenizer_record(shard_tok);
    job.init = init_path;
    job.lineage = init_path ? init_info.lineage : "[]";
    job.resume = resume == "auto";
    const train::TrainResult r = train::run_training(job, grid, run.get());
    if (grid.is_root() && r.exit_code == 0) {
      io::mark_finished(*run, cat(name, " steps=", r.steps_done, " loss=", r.final_loss));
      io::log_line(*run, cat("done: ", r.steps_done, " steps, final loss ", r.final_loss, "; checkpoints in ",
                             (fs::path(run_dir) / "checkpoints").string()));
    }
    return r.exit_code;
  } catch (const std::exception& e) {
    if (run) io::log_fatal(*run, e.what());
    throw;
  }
}

}  // namespace headroom::app
