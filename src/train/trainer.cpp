#include "train/trainer.h"

#include "data/loader.h"
#include "model/activations.h"
#include "parallel/nccl_comm.h"
#include "model/forward.h"
#include "train/optimizer.h"
#include "train/probe.h"
#include "train/schedule.h"
#include "train/signals.h"
#include "train/spike_monitor.h"
#include "train/throughput.h"
#include "util/clock.h"
#include "util/error.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <fstream>
#include <iostream>

namespace headroom::train {
namespace fs = std::filesystem;
namespace {

struct Loop {
  const TrainJob& job;
  parallel::Grid& grid;
  parallel::Comm* dp;  // gradient all-reduce: MPI on CPU, NCCL on GPU (device buffers)
  io::RunDir* run;
  model::Model<float> model;
  AdamW<float> opt;
  SpikeMonitor monitor;
  std::vector<io::MetricRow> metrics;
  int64_t step = 0, samples = 0, tokens = 0;
  int64_t head_rows = 0;  // targets of the global batches run so far in this process (MFU's LM-head share)
  double matmul_rate = 0, flops_per_token = 0, head_flops = 0;
};

void log(Loop& L, const std::string& line) {
  if (L.run) io::log_line(*L.run, line);
}

Schedule schedule_of(const config::TrainConfig& t) {
  return {t.schedule, t.lr, t.min_lr, t.warmup_steps, t.steps, t.decay_steps};
}

AdamWConfig adamw_of(const config::Config& c) {
  return {c.train.beta1, c.train.beta2, c.train.adam_eps, c.train.weight_decay,
          c.train.decay_embeddings, c.model.freeze};
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
  c.metrics = L.metrics;
  c.monitor_state = monitor_state(L.monitor);
  auto lineage = nlohmann::json::parse(L.job.lineage.empty() ? "[]" : L.job.lineage);
  lineage.push_back({{"stage", L.job.stage}, {"steps", L.step}, {"tokens", L.tokens},
                     {"run_dir", L.job.run_dir.string()}, {"config", L.job.config_ini}});
  c.lineage = lineage.dump();
  return c;
}

// The optimizer's state as the checkpoint holds it (io/ knows no optimizer).
io::OptimizerMoments moments_of(AdamW<float>& opt) {
  return {opt.m.get(), opt.v.get(), opt.lo, opt.hi, opt.zero, static_cast<int64_t>(opt.step)};
}

void save(Loop& L) {
  const fs::path path = io::checkpoint_path(L.job.run_dir, L.step);
  const auto t0 = std::chrono::steady_clock::now();
  const io::OptimizerMoments moments = moments_of(L.opt);
  io::save_checkpoint(path, L.grid, L.model, &moments, info_of(L));
  if (L.grid.is_root()) {
    io::write_latest(L.job.run_dir, path);
    io::prune_checkpoints(L.job.run_dir, L.job.cfg.train.keep_last);
  }
  L.grid.world->barrier();
  const double secs = seconds_since(t0);
  std::error_code ec;
  const double mb = static_cast<double>(fs::file_size(path, ec)) / 1e6;
  log(L, cat("checkpoint ", path.string(), " (", mb, " MB) written in ", secs, " s (", mb / secs,
             " MB/s)"));
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
      io::OptimizerMoments moments = moments_of(L.opt);
      io::load_checkpoint_tensors(path, L.model, &moments);
      L.opt.step = static_cast<long>(moments.step);
      std::error_code ec;
      const double mb = static_cast<double>(fs::file_size(path, ec)) / 1e6, secs = seconds_since(t0);
      L.step = info.step;
      L.samples = info.samples_consumed;
      L.tokens = info.tokens_seen;
      L.metrics = info.metrics;
      restore_monitor(L.monitor, info.monitor_state);
      log(L, cat("resumed from ", path.string(), " at step ", L.step, " (", mb, " MB read in ", secs,
                 " s, ", mb / secs, " MB/s)"));
      return true;
    } catch (const Error& e) {
      last_error = e.what();
      log(L, cat("warning: cannot resume from ", path.string(), ": ", e.what(),
                 "; trying the previous checkpoint"));
    }
  }
  if (!all.empty())
    fail("--resume auto: none of the ", all.size(), " checkpoints in ",
         (L.job.run_dir / "checkpoints").string(), " loads; the newest failed with: ", last_error);
  return false;
}


// Testing aids, off unless the environment asks: HEADROOM_INJECT_FAULT="error,rank=R,step=S"
// makes world rank R fail at step S (every rank must then stop promptly with R's message);
// "nan,rank=R,step=S" poisons one gradient element on rank R at step S (the non-finite policy).
bool fault_requested(const Loop& L, const char* kind) {
  const char* spec = std::getenv("HEADROOM_INJECT_FAULT");
  if (!spec) return false;
  char what[16] = {};
  int rank = -1;
  long step = -1;
  return std::sscanf(spec, "%15[a-z],rank=%d,step=%ld", what, &rank, &step) == 3 &&
         std::strcmp(what, kind) == 0 && rank == L.grid.world_rank() && step == L.step + 1;
}

void maybe_inject_fault(const Loop& L) {
  if (fault_requested(L, "error"))
    fail("injected fault at step ", L.step + 1, " (HEADROOM_INJECT_FAULT)");
}

void maybe_poison_gradient(Loop& L) {
  if (!fault_requested(L, "nan")) return;
  const int i = model::find_param(L.model, "layers.0.mlp.w_up");
  const float nan = std::numeric_limits<float>::quiet_NaN();
  L.model.ops->copy_from_host(L.model.grads.get() + L.model.offsets[static_cast<size_t>(i)], &nan,
                              sizeof nan);
}

// One optimizer step over this rank's share of the global batch. Returns the global mean loss.
double train_step(Loop& L, model::Activations<float>& acts, std::vector<int32_t>& ids,
                  std::vector<int32_t>& targets, double lr, double& norm_out, bool& skipped) {
  const auto& t = L.job.cfg.train;
  const int64_t T = t.seq_len;
  // This rank's slice of the step's global batch, which starts at sample L.samples.
  const auto slice = data::dp_slice(0, t.global_batch, L.grid.dp, L.grid.dp_rank);
  const int64_t first = L.samples + slice.first, micro = acts.B;
  for (int64_t s = 0; s < slice.count; ++s)
    L.job.sample(first + s, ids.data() + s * T, targets.data() + s * T);
  // The loss is a mean over every unmasked target of the global batch, whatever the layout.
  int64_t count = std::count_if(targets.begin(), targets.end(), [](int32_t v) { return v >= 0; });
  L.grid.dp_group->allreduce_sum(&count, 1);
  if (count == 0) fail("step ", L.step, ": the global batch has no unmasked target");
  L.head_rows += count;
  model::zero_grads(L.model);
  double loss_sum = 0;
  for (int64_t m0 = 0; m0 < slice.count; m0 += micro) {
    const auto l = model::forward_backward<float>(L.model, acts, ids.data() + m0 * T,
                                                  targets.data() + m0 * T,
                                                  1.0f / static_cast<float>(count));
    loss_sum += l.sum;
  }
  maybe_poison_gradient(L);
  L.grid.dp_group->allreduce_sum(&loss_sum, 1);
  model::sync_partial_grads(L.model);
  L.dp->allreduce_sum(L.model.grads.get(), L.model.n_params);
  const double loss = loss_sum / static_cast<double>(count);

  // Non-finite values: every rank must take the same decision.
  const std::string bad = first_nonfinite_grad(L.model);
  int64_t flag = (!std::isfinite(loss) || !bad.empty()) ? 1 : 0;
  L.grid.world->allreduce_max(&flag, 1);
  norm_out = grad_norm(L.model, L.opt);
  skipped = false;
  if (flag) {
    const std::string what = cat("step ", L.step + 1, ": non-finite ",
                                 std::isfinite(loss) ? "gradient" : "loss", " (loss ", loss,
                                 bad.empty() ? std::string() : cat("; first parameter with a non-finite gradient: ", bad),
                                 ")");
    if (t.nonfinite == "stop") fail(what, "; stopping (train.nonfinite = stop)");
    log(L, what + "; update skipped (train.nonfinite = skip)");
    skipped = true;
    return loss;
  }
  adamw_step(L.model, L.opt, lr, clip_scale(norm_out, t.grad_clip));
  return loss;
}

void append_jsonl(const fs::path& path, const nlohmann::json& j) {
  std::ofstream f(path, std::ios::app);
  f << j.dump() << '\n';
  if (!f) fail(path.string(), ": write failed");
}

void write_metrics_line(Loop& L, const io::MetricRow& row, const SpikeScores& sc) {
  if (!L.grid.is_root()) return;
  nlohmann::json j{{"step", L.step}, {"loss", row.loss}, {"grad_norm", row.grad_norm},
                   {"lr", row.lr}, {"tokens_per_s", row.tokens_per_s}, {"tokens", L.tokens}};
  for (const auto& r : sc.rules)
    j["spike"][r.name] = {{"loss", r.loss}, {"grad_norm", r.grad_norm}, {"combined", r.combined}};
  append_jsonl(L.job.run_dir / "metrics.jsonl", j);
}

// The retrieval probe at step 0, every probe_every steps and the last step: probe.jsonl and the log.
void maybe_probe(Loop& L, model::Activations<float>& acts) {
  const auto& t = L.job.cfg.train;
  if (t.probe_every <= 0 || !L.job.probe) return;
  if (L.step % t.probe_every != 0 && L.step != t.steps) return;
  const ProbeScores p = run_probe(L.model, acts, L.job.probe, t.probe_samples, L.grid);
  log(L, cat("probe at step ", L.step, ": answer loss ", p.loss, ", token accuracy ", p.token_acc,
             ", exact ", p.exact, " (", p.examples, " examples of ", t.probe_tasks, ")"));
  if (!L.grid.is_root()) return;
  const nlohmann::json j{{"step", L.step}, {"tokens", L.tokens}, {"loss", p.loss}, {"token_acc", p.token_acc},
                         {"exact", p.exact}, {"examples", p.examples}, {"answer_tokens", p.answer_tokens},
                         {"tasks", t.probe_tasks}};
  append_jsonl(L.job.run_dir / "probe.jsonl", j);
}

}  // namespace

TrainResult run_training(const TrainJob& job, parallel::Grid& grid, io::RunDir* run) {
  const auto& c = job.cfg;
  // On GPUs the collectives over device buffers go through NCCL; host scalars may use either.
  const bool cuda = c.train.device == "cuda";
  std::unique_ptr<parallel::Comm> nccl_tp, nccl_dp;
  if (cuda) {
    parallel::select_local_gpu();
    nccl_tp = parallel::make_nccl_comm(grid.tp_group->handle());
    nccl_dp = parallel::make_nccl_comm(grid.dp_group->handle());
  }
  parallel::Comm* tp_comm = cuda ? nccl_tp.get() : grid.tp_group.get();
  parallel::Comm* dp_comm = cuda ? nccl_dp.get() : grid.dp_group.get();
  const kernels::Ops& ops = cuda ? kernels::cuda_ops() : kernels::cpu_ops();
  model::TpContext tp{grid.tp > 1 ? tp_comm : nullptr, grid.tp_rank, grid.tp};
  Loop L{job, grid, dp_comm, run, model::make_model(c.model, ops, tp), {},
         make_spike_monitor(default_spike_rules()), {}, 0, 0, 0, 0, 0};
  L.opt = make_adamw(L.model, adamw_of(c), c.parallel.zero1 ? dp_comm : nullptr);
  if (c.train.global_batch % grid.dp != 0)
    fail("train.global_batch = ", c.train.global_batch, " is not divisible by the data-parallel size ",
         grid.dp);
  const int64_t share = c.train.global_batch / grid.dp;
  const int64_t micro = c.train.micro_batch > 0 ? c.train.micro_batch : share;
  if (share % micro != 0)
    fail("train.micro_batch = ", micro, " does not divide the per-rank share of the global batch (",
         share, " = global_batch / dp)");

  bool resumed = false;
  if (job.resume) resumed = resume(L);
  if (!resumed && job.init) {
    io::load_checkpoint_tensors(*job.init, L.model, nullptr);
    log(L, cat("initialised weights from ", job.init->string()));
  }
  if (!resumed) log(L, cat("starting ", job.stage, " from ", job.init ? "the --init checkpoint" : "fresh weights"));

  L.flops_per_token = flops_per_token(c.model, c.train.seq_len);
  L.head_flops = head_flops_per_row(c.model);
  std::string peak_source;
  L.matmul_rate = mfu_peak(c.train, ops, peak_source);
  log(L, cat("layout tp=", grid.tp, " dp=", grid.dp, ", micro-batch ", micro, " × ", share / micro,
             " per rank; ", L.model.n_params, " parameters on this rank; ",
             L.flops_per_token / 1e6, " MFLOP/token; MFU against ", L.matmul_rate / 1e9,
             " GFLOP/s/rank (", peak_source, ")"));

  // The probe takes whole logits of a micro-batch to the host (train/probe.h): refuse before any
  // work rather than run out of memory at its first score.
  const double probe_gib = static_cast<double>(micro) * static_cast<double>(c.train.seq_len) *
                           static_cast<double>(c.model.vocab_size) * sizeof(float) / (1024.0 * 1024 * 1024);
  if (c.train.probe_every > 0 && probe_gib > 4)
    fail("train.probe_every = ", c.train.probe_every, " needs micro-batch × seq_len × vocab_size floats of host "
         "logits (", probe_gib, " GiB > 4 GiB); lower train.micro_batch (now ", micro, ")");
  model::Activations<float> acts = model::make_activations(L.model, micro, c.train.seq_len);
  std::vector<int32_t> ids(static_cast<size_t>(share * c.train.seq_len)), targets(ids.size());
  const Schedule sched = schedule_of(c.train);
  install_stop_signals();
  const auto t_start = std::chrono::steady_clock::now();
  const int64_t first_step = L.step;
  auto t_log = t_start;
  int64_t tokens_at_log = L.tokens, head_rows_at_log = L.head_rows;
  TrainResult result;
  if (L.step == 0) maybe_probe(L, acts);
  while (L.step < c.train.steps) {
    const double lr = learning_rate(sched, L.step);
    double norm = 0;
    bool skipped = false;
    maybe_inject_fault(L);
    const double loss = train_step(L, acts, ids, targets, lr, norm, skipped);
    ++L.step;
    L.samples += c.train.global_batch;
    L.tokens += c.train.global_batch * c.train.seq_len;
    observe(L.monitor, loss, norm);
    result.final_loss = loss;
    const auto probe_start = std::chrono::steady_clock::now();
    maybe_probe(L, acts);
    t_log += std::chrono::steady_clock::now() - probe_start;  // probe time is not training throughput

    const bool log_now = L.step % c.train.log_every == 0 || L.step == c.train.steps;
    if (log_now) {
      const double dt = seconds_since(t_log);
      const double tps = static_cast<double>(L.tokens - tokens_at_log) / std::max(dt, 1e-9);
      const double flops = static_cast<double>(L.tokens - tokens_at_log) * (L.flops_per_token - L.head_flops) +
                           static_cast<double>(L.head_rows - head_rows_at_log) * L.head_flops;
      const double mfu = flops / std::max(dt, 1e-9) / (L.matmul_rate * grid.world->size());
      const io::MetricRow row{static_cast<double>(L.step), loss, norm, lr, tps};
      L.metrics.push_back(row);
      const SpikeScores sc = spike_scores(L.monitor);
      write_metrics_line(L, row, sc);
      const double el = seconds_since(t_start);
      const double eta = el / static_cast<double>(L.step - first_step) * static_cast<double>(c.train.steps - L.step);
      log(L, cat("step ", L.step, "/", c.train.steps, " | loss ", loss, " | gnorm ", norm,
                 " | lr ", lr, " | ", static_cast<int64_t>(tps), " tok/s | MFU ",
                 static_cast<int>(100 * mfu), "% | elapsed ", format_duration(el), " | ETA ",
                 format_duration(eta), skipped ? " | skipped" : ""));
      t_log = std::chrono::steady_clock::now();
      tokens_at_log = L.tokens;
      head_rows_at_log = L.head_rows;
    }
    int64_t stop = stop_requested() ? stop_signal() : 0;
    grid.world->allreduce_max(&stop, 1);
    const bool slice_done = c.train.steps_per_run > 0 && L.step - first_step >= c.train.steps_per_run &&
                            L.step < c.train.steps;
    const bool periodic = c.train.checkpoint_every > 0 && L.step % c.train.checkpoint_every == 0;
    if (stop || slice_done) {
      save(L);
      log(L, cat(stop ? cat("signal ", stop, " received") : cat("train.steps_per_run = ", c.train.steps_per_run, " reached"),
                 ": checkpoint written at step ", L.step, "; exiting with ", kExitRequeue,
                 " so the job can be requeued (--resume auto continues)"));
      result.exit_code = kExitRequeue;
      result.steps_done = L.step;
      return result;
    }
    if (periodic && L.step != c.train.steps) {
      save(L);
      t_log = std::chrono::steady_clock::now();  // checkpoint time is not training throughput
    }
  }
  if (L.step > first_step) save(L);
  result.steps_done = L.step;
  return result;
}

}  // namespace headroom::train
