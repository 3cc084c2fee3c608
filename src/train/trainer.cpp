#include "train/trainer.h"

#include "data/document_starts.h"
#include "data/loader.h"
#include "io/checkpoint_files.h"
#include "model/activations.h"
#include "model/forward.h"
#include "model/params.h"
#include "parallel/agree.h"
#include "parallel/nccl_comm.h"
#include "train/callback.h"
#include "train/grad_reduction.h"
#include "train/optimizer.h"
#include "train/schedule.h"
#include "train/signals.h"
#include "train/throughput.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/peak_memory.h"
#include "util/text.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

namespace headroom::train {
namespace fs = std::filesystem;
namespace {

struct Loop {
  const TrainJob& job;
  parallel::Grid& grid;
  io::RunDir* run;
  model::Model<float> model;
  AdamW<float> opt;
  GradReduction reduction;  // over cp × dp: MPI on CPU, NCCL on GPU (device buffers)
  Callbacks callbacks;
  int64_t step = 0, samples = 0, tokens = 0;
};

void log(Loop& L, const std::string& line) {
  if (L.run) io::log_line(*L.run, line);
}

Schedule schedule_of(const config::TrainConfig& t) {
  return {t.schedule, t.lr, t.min_lr, t.warmup_steps, t.steps, t.decay_steps};
}

AdamWConfig adamw_of(const config::Config& c) {
  return {c.train.beta1, c.train.beta2, c.train.adam_eps, c.train.weight_decay, c.train.decay_embeddings,
          c.model.freeze};
}

io::CheckpointInfo info_of(const Loop& L) {
  io::CheckpointInfo c;
  c.stage = L.job.stage;
  c.step = L.step;
  c.tokens_seen = L.tokens;
  c.samples_consumed = L.samples;
  c.seed = L.job.cfg.model.seed;
  c.data_seed = L.job.cfg.train.seed;
  c.config_ini = L.job.config_ini;
  c.tokenizer_id = L.job.tokenizer_id;
  c.merges = L.job.merges;
  c.tokenizer_hf = L.job.tokenizer_hf;
  c.parts = callback_states(L.callbacks);
  auto lineage = nlohmann::json::parse(L.job.lineage.empty() ? "[]" : L.job.lineage);
  lineage.push_back({{"stage", L.job.stage},
                     {"steps", L.step},
                     {"tokens", L.tokens},
                     {"run_dir", L.job.run_dir.string()},
                     {"config", L.job.config_ini}});
  c.lineage = lineage.dump();
  return c;
}

void save(Loop& L) {
  const fs::path path = io::checkpoint_path(L.job.run_dir, L.step);
  const auto t0 = std::chrono::steady_clock::now();
  const io::OptimizerMoments moments = checkpoint_moments(L.opt);
  io::save_checkpoint(path, L.grid, L.model, &moments, info_of(L));
  // Root's files, agreed: a failure here must stop every rank, not leave them in the next step.
  parallel::agree(*L.grid.world, [&] {
    if (!L.grid.is_root()) return;
    io::write_latest(L.job.run_dir, path);
    io::prune_checkpoints(L.job.run_dir, L.job.cfg.train.keep_last);
  });
  const double secs = seconds_since(t0);
  std::error_code ec;
  const double mb = static_cast<double>(fs::file_size(path, ec)) / 1e6;
  log(L, cat("checkpoint ", path.string(), " (", mb, " MB) written in ", secs, " s (", mb / secs, " MB/s)"));
}

// model.freeze: a pattern that matches no parameter (a typo) would train everything silently, so it
// is refused; what is frozen goes to the log.
void log_frozen(Loop& L) {
  const std::string& freeze = L.job.cfg.model.freeze;
  if (freeze.empty()) return;
  const auto& specs = L.model.specs;
  for (const auto& pattern : split_list(freeze)) {
    if (std::none_of(specs.begin(), specs.end(), [&](const auto& s) { return model::matches_any(s.name, pattern); }))
      fail("model.freeze = ", freeze, ": the pattern '", pattern, "' matches no parameter (names are like '",
           specs.front().name, "', listed in a checkpoint's /model group)");
  }
  std::string names;
  for (size_t i = 0; i < specs.size(); ++i)
    if (L.opt.frozen[i]) names += cat(names.empty() ? "" : ", ", specs[i].name);
  log(L, cat("model.freeze = ", freeze, ": frozen ", names));
}

// A warmup longer than the run never reaches train.lr. Warned, not refused: smoke runs of a step or
// two under a recipe's warmup are common and harmless.
void warn_long_warmup(Loop& L) {
  const auto& t = L.job.cfg.train;
  if (t.warmup_steps > t.steps)
    log(L, cat("warning: train.warmup_steps = ", t.warmup_steps, " exceeds train.steps = ", t.steps,
               ": the learning rate never reaches train.lr = ", t.lr));
}

// Restores from the newest checkpoint that loads; a damaged one is skipped with a warning. False
// when there is no checkpoint at all; an error when none of them loads (a changed architecture
// must not silently start over).
bool resume(Loop& L) {
  const auto all = io::list_checkpoints(L.job.run_dir);
  std::string last_error;
  for (const auto& path : all) {
    try {
      const auto t0 = std::chrono::steady_clock::now();
      const auto info = io::read_checkpoint_info(path);
      io::OptimizerMoments moments = checkpoint_moments(L.opt);
      io::load_checkpoint_tensors(path, L.model, &moments);
      L.opt.step = static_cast<long>(moments.step);
      restore_callbacks(L.callbacks, info);
      std::error_code ec;
      const double mb = static_cast<double>(fs::file_size(path, ec)) / 1e6, secs = seconds_since(t0);
      L.step = info.step;
      L.samples = info.samples_consumed;
      L.tokens = info.tokens_seen;
      log(L, cat("resumed from ", path.string(), " at step ", L.step, " (", mb, " MB read in ", secs, " s, ", mb / secs,
                 " MB/s)"));
      return true;
    } catch (const Error& e) {
      last_error = e.what();
      log(L, cat("warning: cannot resume from ", path.string(), ": ", e.what(), "; trying the previous checkpoint"));
    }
  }
  if (!all.empty())
    fail("--resume auto: none of the ", all.size(), " checkpoints in ", (L.job.run_dir / "checkpoints").string(),
         " loads; the newest failed with: ", last_error);
  return false;
}

// The windows of one step on this rank: whole (as sampled) and this rank's tokens of them.
struct StepBatch {
  std::vector<int32_t> ids, targets;              // [share, T]
  std::vector<int32_t> local_ids, local_targets;  // [micro, T / cp]: one micro-batch's tokens of this rank
  // data.document_mask: each token's document start (a position in its window), whole and local;
  // empty without the mask.
  std::vector<int32_t> doc_starts, local_doc_starts;
};

// train.profile_steps' region for what is neither data, model, reduction nor optimizer.
constexpr const char* kOther = "other: zeroing, target counts, loss sums, non-finite checks";

// One optimizer step over this rank's share of the global batch: the global mean loss, the
// pre-clipping gradient norm, and the number of targets (the LM head's rows) in the global batch.
StepOutcome train_step(Loop& L, LoopView& view, StepBatch& batch, double lr, int64_t& head_rows) {
  const auto& t = L.job.cfg.train;
  const int64_t T = t.seq_len;
  mark(L.model.timer, "data loading");
  // This rank's slice of the step's global batch, which starts at sample L.samples. The cp ranks
  // of a data-parallel rank sample the same windows and keep their own chunks of them.
  const auto slice = data::dp_slice(0, t.global_batch, L.grid.dp, L.grid.dp_rank);
  const int64_t first = L.samples + slice.first, micro = view.acts.B;
  for (int64_t s = 0; s < slice.count; ++s)
    L.job.sample(first + s, batch.ids.data() + s * T, batch.targets.data() + s * T);
  // Documents are found in whole windows, so their starts are global positions whatever the layout.
  const bool masked = !batch.doc_starts.empty();
  if (masked) data::document_starts(batch.ids.data(), slice.count, T, L.job.bos, batch.doc_starts.data());
  mark(L.model.timer, kOther);
  // The loss is a mean over every unmasked target of the global batch, whatever the layout.
  int64_t count = std::count_if(batch.targets.begin(), batch.targets.end(), [](int32_t v) { return v >= 0; });
  L.grid.dp_group->allreduce_sum(&count, 1);
  if (count == 0) fail("step ", L.step, ": the global batch has no unmasked target");
  head_rows = count;
  model::zero_grads(L.model);
  double loss_sum = 0;
  // The last micro-batch's backward starts the buckets of the reduction as it finishes them.
  const std::function<void(size_t)> start_ready = [&](size_t k) {
    start_ready_buckets(L.model, L.opt, L.reduction, k);
  };
  const bool overlap = L.reduction.buckets.size() > 1;
  for (int64_t m0 = 0; m0 < slice.count; m0 += micro) {
    model::take_local(view.acts.layout, micro, batch.ids.data() + m0 * T, batch.local_ids.data());
    model::take_local(view.acts.layout, micro, batch.targets.data() + m0 * T, batch.local_targets.data());
    if (masked)
      model::take_local(view.acts.layout, micro, batch.doc_starts.data() + m0 * T, batch.local_doc_starts.data());
    const auto l = model::forward_backward<float>(
        L.model, view.acts, batch.local_ids.data(), batch.local_targets.data(), 1.0f / static_cast<float>(count),
        masked ? batch.local_doc_starts.data() : nullptr, overlap && m0 + micro >= slice.count ? start_ready : nullptr);
    loss_sum += l.sum;
  }
  mark(L.model.timer, "gradient reduction (what the backward pass did not hide)");
  finish_reduction(L.model, L.opt, L.reduction);
  mark(L.model.timer, kOther);
  for (auto& cb : L.callbacks) cb->on_gradients(view);
  L.grid.replica_group->allreduce_sum(&loss_sum, 1);
  StepOutcome out{loss_sum / static_cast<double>(count), 0, lr, false};

  // Non-finite values: every rank must take the same decision.
  const std::string bad = first_nonfinite_grad(L.model);
  int64_t flag = (!std::isfinite(out.loss) || !bad.empty()) ? 1 : 0;
  L.grid.world->allreduce_max(&flag, 1);
  mark(L.model.timer, "optimizer: gradient norm, clipping, AdamW, ZeRO all-gather");
  out.grad_norm = grad_norm(L.model, L.opt);
  if (flag) {
    const std::string what =
        cat("step ", L.step + 1, ": non-finite ", std::isfinite(out.loss) ? "gradient" : "loss", " (loss ", out.loss,
            bad.empty() ? std::string() : cat("; first parameter with a non-finite gradient: ", bad), ")");
    if (t.nonfinite == config::Nonfinite::kStop) fail(what, "; stopping (train.nonfinite = stop)");
    log(L, what + "; update skipped (train.nonfinite = skip)");
    out.skipped = true;
    return out;
  }
  adamw_step(L.model, L.opt, lr, clip_scale(out.grad_norm, t.grad_clip));
  return out;
}

// Throughput between progress lines: tokens over the time spent in optimizer steps (probes,
// checkpoints and logging excluded), and MFU with the LM head counted on the rows it ran on.
struct Throughput {
  double flops_per_token = 0, head_flops = 0, peak = 0;  // peak: FLOP/s over all ranks
  double step_seconds = 0;
  int64_t tokens = 0, head_rows = 0;
};

// The progress line and the callbacks' log record of the step just taken.
void log_step(Loop& L, LoopView& view, const StepOutcome& o, Throughput& tp, double elapsed, int64_t first_step) {
  const auto& t = L.job.cfg.train;
  const double dt = std::max(tp.step_seconds, 1e-9);
  const double tps = static_cast<double>(tp.tokens) / dt;
  const double flops = static_cast<double>(tp.tokens) * (tp.flops_per_token - tp.head_flops) +
                       static_cast<double>(tp.head_rows) * tp.head_flops;
  const double mfu = flops / dt / tp.peak;
  LogRecord record{o, tps};
  for (auto& cb : L.callbacks) cb->on_log(view, record);
  const double eta = elapsed / static_cast<double>(L.step - first_step) * static_cast<double>(t.steps - L.step);
  log(L, cat("step ", L.step, "/", t.steps, " | loss ", o.loss, " | gnorm ", o.grad_norm, " | lr ", o.lr, " | ",
             static_cast<int64_t>(tps), " tok/s | MFU ", static_cast<int>(100 * mfu), "% | elapsed ",
             format_duration(elapsed), " | ETA ", format_duration(eta), o.skipped ? " | skipped" : ""));
  tp.step_seconds = 0;
  tp.tokens = tp.head_rows = 0;
}

// The highest and lowest peak resident memory of the ranks (VmHWM), to hold against the memory
// plan's host figure (bench/memory_vs_plan.sh reads this line).
void log_peak_memory(Loop& L) {
  int64_t high = peak_resident_bytes(), low = -high;
  L.grid.world->allreduce_max(&high, 1);
  L.grid.world->allreduce_max(&low, 1);
  log(L, cat("peak resident memory per rank (VmHWM): highest ", high, " bytes, lowest ", -low, " bytes, over ",
             L.grid.world->size(), " rank(s)"));
}

// How many times rank 0 captured and launched a micro-batch's passes as CUDA graphs (step_graphs.h).
void log_graphs(Loop& L, const model::StepGraphs& g) {
  if (!g.enabled) return;
  log(L, cat("CUDA graphs: ", g.captures, " captures and ", g.replays,
             " launches (a micro-batch's forward and backward passes, or the backward pass's pieces)",
             g.failed ? "; then off, a capture having failed (stderr says why)" : ""));
}

// Weights from the newest checkpoint of the run (--resume), else from --init, else fresh.
void start(Loop& L) {
  const auto& job = L.job;
  const bool resumed = job.resume && resume(L);
  if (!resumed && job.init) {
    io::load_checkpoint_tensors(*job.init, L.model, nullptr);
    log(L, cat("initialised weights from ", job.init->string()));
  }
  if (!resumed) log(L, cat("starting ", job.stage, " from ", job.init ? "the --init checkpoint" : "fresh weights"));
}

}  // namespace

TrainResult run_training(const TrainJob& job, parallel::Grid& grid, io::RunDir* run) {
  const auto& c = job.cfg;
  // On GPUs the collectives over device buffers go through NCCL; host scalars may use either.
  const bool cuda = c.train.device == config::Device::kCuda;
  std::unique_ptr<parallel::Comm> nccl_tp, nccl_cp, nccl_replicas;
  if (cuda) {
    parallel::select_local_gpu();
    nccl_tp = parallel::make_nccl_comm(grid.tp_group->handle());
    nccl_cp = parallel::make_nccl_comm(grid.cp_group->handle());
    nccl_replicas = parallel::make_nccl_comm(grid.replica_group->handle());
  }
  parallel::Comm* tp_comm = cuda ? nccl_tp.get() : grid.tp_group.get();
  parallel::Comm* cp_comm = cuda ? nccl_cp.get() : grid.cp_group.get();
  parallel::Comm* replica_comm = cuda ? nccl_replicas.get() : grid.replica_group.get();
  const kernels::Ops& ops = cuda ? kernels::cuda_ops(c.train.attention_kernel) : kernels::cpu_ops();
  model::TpContext tp{grid.tp > 1 ? tp_comm : nullptr, grid.tp_rank, grid.tp,
                      c.parallel.sequence_parallel && grid.tp > 1};
  if (c.train.global_batch % grid.dp != 0)
    fail("train.global_batch = ", c.train.global_batch, " is not divisible by the data-parallel size ", grid.dp);
  const int64_t share = c.train.global_batch / grid.dp;
  const int64_t micro = c.train.micro_batch > 0 ? c.train.micro_batch : share;
  if (share % micro != 0)
    fail("train.micro_batch = ", micro, " does not divide the per-rank share of the global batch (", share,
         " = global_batch / dp)");
  // With --init every weight comes from a checkpoint (the resumed one or the init), so the random
  // init is not drawn: on a large model it would be most of the start-up.
  Loop L{job,
         grid,
         run,
         model::make_model(c.model, ops, tp, {.random_weights = !job.init}),
         {},
         {},
         standard_callbacks(job, micro)};
  L.model.cp = {grid.cp > 1 ? cp_comm : nullptr, grid.cp_rank, grid.cp};
  if (c.parallel.zero2 && !c.parallel.zero1)
    fail(
        "parallel.zero2 = true needs parallel.zero1 = true: ZeRO-2 reduces the gradients to the ranges whose "
        "AdamW moments ZeRO-1 shards");
  L.opt = make_adamw(L.model, adamw_of(c), c.parallel.zero1 ? replica_comm : nullptr);
  L.reduction = make_grad_reduction(L.model, L.opt, replica_comm, c.parallel.zero2, c.parallel.grad_bucket_mib,
                                    c.parallel.grad_reduce_dtype == config::GradReduceDtype::kBf16
                                        ? parallel::WirePrecision::kBf16
                                        : parallel::WirePrecision::kFp32);
  L.opt.scattered_grads = L.reduction.scatter;
  log_frozen(L);
  warn_long_warmup(L);
  start(L);

  std::string peak_source;
  Throughput tput{flops_per_token(c.model, c.train.seq_len), head_flops_per_row(c.model),
                  mfu_peak(c.train, ops, peak_source) * grid.world->size()};
  log(L, cat("layout tp=", grid.tp, tp.sequence_parallel ? " (sequence-parallel)" : "", " cp=", grid.cp,
             " dp=", grid.dp, L.opt.zero ? (L.reduction.scatter ? " (ZeRO-2)" : " (ZeRO-1)") : "",
             L.reduction.buckets.size() > 1 ? cat(", gradients reduced in ", L.reduction.buckets.size(), " buckets")
                                            : std::string(),
             grid.cp * grid.dp > 1 && c.parallel.grad_reduce_dtype == config::GradReduceDtype::kBf16
                 ? ", gradients summed in bf16"
                 : "",
             cuda && c.train.cuda_graphs ? ", micro-batch passes as CUDA graphs" : "", ", recompute ",
             config::name_of(c.train.recompute), ", micro-batch ", micro, " × ", share / micro, " per rank; ",
             L.model.n_params, " parameters on this rank; ", tput.flops_per_token / 1e6, " MFLOP/token; MFU against ",
             tput.peak / grid.world->size() / 1e9, " GFLOP/s/rank (", peak_source, ")"));
  model::Activations<float> acts = model::make_activations(L.model, micro, c.train.seq_len, c.train.recompute);
  acts.graphs.enabled = cuda && c.train.cuda_graphs;
  StepBatch batch;
  batch.ids.resize(static_cast<size_t>(share * c.train.seq_len));
  batch.targets.resize(batch.ids.size());
  batch.local_ids.resize(static_cast<size_t>(acts.rows));
  batch.local_targets.resize(batch.local_ids.size());
  if (c.data.document_mask) {
    batch.doc_starts.resize(batch.ids.size());
    batch.local_doc_starts.resize(batch.local_ids.size());
  }
  const Schedule sched = schedule_of(c.train);
  LoopView view{job, grid, run, L.model, acts, L.step, L.tokens};
  for (auto& cb : L.callbacks) cb->on_start(view);
  const auto t_start = std::chrono::steady_clock::now();
  const int64_t first_step = L.step;
  TrainResult result;
  while (L.step < c.train.steps) {
    for (auto& cb : L.callbacks) cb->before_step(view);
    const auto t0 = std::chrono::steady_clock::now();
    int64_t head_rows = 0;
    const StepOutcome o = train_step(L, view, batch, learning_rate(sched, L.step), head_rows);
    tput.step_seconds += seconds_since(t0);
    tput.tokens += c.train.global_batch * c.train.seq_len;
    tput.head_rows += head_rows;
    ++L.step;
    L.samples += c.train.global_batch;
    L.tokens += c.train.global_batch * c.train.seq_len;
    result.final_loss = o.loss;
    Requests req;
    for (auto& cb : L.callbacks) cb->after_step(view, o, req);
    if (L.step % c.train.log_every == 0 || L.step == c.train.steps)
      log_step(L, view, o, tput, seconds_since(t_start), first_step);
    if (req.save) save(L);
    if (req.stop) {
      // After the checkpoint (a stop always saves): the marker promises one to resume from.
      parallel::agree(*L.grid.world, [&] {
        if (L.run) io::mark_stopped(*L.run, cat(req.why, " at step ", L.step));
      });
      log(L, cat(req.why, ": checkpoint written at step ", L.step, "; exiting with ", kExitRequeue,
                 " so the job can be requeued (--resume auto continues)"));
      result.exit_code = kExitRequeue;
      result.steps_done = L.step;
      return result;
    }
  }
  if (L.step > first_step) save(L);
  log_graphs(L, acts.graphs);
  log_peak_memory(L);
  result.steps_done = L.step;
  return result;
}

}  // namespace headroom::train
