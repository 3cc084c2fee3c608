// The training loop's standard callbacks (train/callback.h).
#include "train/callback.h"

#include "config/spike_rules.h"
#include "model/forward.h"
#include "train/probe.h"
#include "train/run_logs.h"
#include "train/signals.h"
#include "train/spike_monitor.h"
#include "util/error.h"
#include "util/jsonl.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <string>

namespace headroom::train {
namespace fs = std::filesystem;
namespace {

void log(LoopView& v, const std::string& line) {
  if (v.run) io::log_line(*v.run, line);
}

// A testing aid, read from the environment once when the callbacks are made and installed only when
// set: HEADROOM_INJECT_FAULT="error,rank=R,step=S" makes world rank R fail at step S (every rank
// must then stop promptly with R's message); "nan,rank=R,step=S" poisons one gradient element on
// rank R at step S (the non-finite policy).
struct FaultRequest {
  std::string kind;  // "error" or "nan"
  int rank = -1;
  long step = -1;
};

// Unset or empty: none. A value that does not parse is refused, so that a test never runs without
// the fault it meant to inject.
std::optional<FaultRequest> fault_request_from_environment() {
  const char* spec = std::getenv("HEADROOM_INJECT_FAULT");
  if (!spec || !*spec) return std::nullopt;
  char what[16] = {};
  FaultRequest r;
  if (std::sscanf(spec, "%15[a-z],rank=%d,step=%ld", what, &r.rank, &r.step) != 3 ||
      (std::strcmp(what, "error") != 0 && std::strcmp(what, "nan") != 0))
    fail("HEADROOM_INJECT_FAULT = '", spec, "' is not \"error,rank=R,step=S\" or \"nan,rank=R,step=S\"");
  r.kind = what;
  return r;
}

class FaultInjection : public Callback {
 public:
  explicit FaultInjection(FaultRequest request) : request_(std::move(request)) {}
  std::string name() const override { return "fault_injection"; }
  void before_step(LoopView& v) override {
    if (due(v, "error")) fail("injected fault at step ", v.step + 1, " (HEADROOM_INJECT_FAULT)");
  }
  void on_gradients(LoopView& v) override {
    if (!due(v, "nan")) return;
    const int i = model::find_param(v.model, "layers.0.mlp.w_up");
    const float nan = std::numeric_limits<float>::quiet_NaN();
    v.model.ops->copy_from_host(v.model.grads.get() + v.model.offsets[static_cast<size_t>(i)], &nan, sizeof nan);
  }

 private:
  bool due(const LoopView& v, const char* kind) const {
    return request_.kind == kind && request_.rank == v.grid.world_rank() && request_.step == v.step + 1;
  }

  FaultRequest request_;
};

// Spike scores of the loss and the gradient norm (train/spike_monitor.h) under train.spike_rules.
class SpikeMonitorCallback : public Callback {
 public:
  explicit SpikeMonitorCallback(const std::string& rules)
      : monitor_(make_spike_monitor(config::parse_spike_rules(rules))) {}
  std::string name() const override { return "spike_monitor"; }
  void after_step(LoopView&, const StepOutcome& o, Requests&) override { observe(monitor_, o.loss, o.grad_norm); }
  void on_log(LoopView&, LogRecord& r) override {
    for (const auto& s : spike_scores(monitor_).rules)
      r.extra["spike"][s.name] = {{"loss", s.loss}, {"grad_norm", s.grad_norm}, {"combined", s.combined}};
  }
  std::optional<io::CheckpointPart> state() const override { return monitor_part(monitor_, name()); }
  void load_state(const io::CheckpointPart& p) override { restore_monitor(monitor_, p); }

 private:
  SpikeMonitor monitor_;
};

// The retrieval probe (train/probe.h) at step 0, every train.probe_every steps and the last step:
// probe.jsonl (train/run_logs.h) and the log.
class ProbeCallback : public Callback {
 public:
  ProbeCallback(const TrainJob& job, int64_t micro) {
    // The probe takes whole logits of a micro-batch to the host: refuse before any work rather
    // than run out of memory at its first score.
    const auto& c = job.cfg;
    const double gib = static_cast<double>(micro) * static_cast<double>(c.train.seq_len) *
                       static_cast<double>(c.model.vocab_size) * sizeof(float) / (1024.0 * 1024 * 1024);
    if (gib > 4)
      fail("train.probe_every = ", c.train.probe_every,
           " needs micro-batch × seq_len × vocab_size floats of host "
           "logits (",
           gib, " GiB > 4 GiB); lower train.micro_batch (now ", micro, ")");
  }
  std::string name() const override { return "probe"; }
  void on_start(LoopView& v) override {
    if (v.step == 0) probe(v);
  }
  void after_step(LoopView& v, const StepOutcome&, Requests&) override {
    const auto& t = v.job.cfg.train;
    if (v.step % t.probe_every == 0 || v.step == t.steps) probe(v);
  }

 private:
  void probe(LoopView& v) {
    const auto& t = v.job.cfg.train;
    const ProbeScores p = run_probe(v.model, v.acts, v.job.probe, t.probe_samples, v.grid, logits_);
    log(v, cat("probe at step ", v.step, ": answer loss ", p.loss, ", token accuracy ", p.token_acc, ", exact ",
               p.exact, " (", p.examples, " examples of ", t.probe_tasks, ")"));
    if (!v.grid.is_root()) return;
    append_jsonl(v.job.run_dir / "probe.jsonl", probe_line(v.step, v.tokens, p, t.probe_tasks));
  }

  std::vector<float> logits_;  // one micro-batch's logits, reused by every probe
};

// metrics.jsonl (train/run_logs.h), one line per logged step; the logged history is its checkpoint part ("metrics":
// step, loss, grad_norm, lr, tokens_per_s), which h5py readers find at /metrics/<column>.
class MetricsLogCallback : public Callback {
 public:
  std::string name() const override { return "metrics"; }
  void on_log(LoopView& v, LogRecord& r) override {
    const double row[5] = {static_cast<double>(v.step), r.outcome.loss, r.outcome.grad_norm, r.outcome.lr,
                           r.tokens_per_s};
    for (int c = 0; c < 5; ++c) columns_[c].push_back(row[c]);
    if (!v.grid.is_root()) return;
    append_jsonl(v.job.run_dir / "metrics.jsonl", metrics_line(v.step, v.tokens, r.outcome.loss, r.outcome.grad_norm,
                                                               r.outcome.lr, r.tokens_per_s, r.extra));
  }
  std::optional<io::CheckpointPart> state() const override {
    io::CheckpointPart p{name(), {}};
    for (int c = 0; c < 5; ++c) p.arrays.emplace_back(kColumns[c], columns_[c]);
    return p;
  }
  void load_state(const io::CheckpointPart& p) override {
    for (int c = 0; c < 5; ++c) columns_[c] = p.at(kColumns[c]);
    for (int c = 1; c < 5; ++c)
      if (columns_[c].size() != columns_[0].size())
        fail("checkpoint part 'metrics': column ", kColumns[c], " has ", columns_[c].size(), " rows, step has ",
             columns_[0].size());
  }

 private:
  static constexpr const char* kColumns[5] = {"step", "loss", "grad_norm", "lr", "tokens_per_s"};
  std::vector<double> columns_[5];
};

// When to write a checkpoint: every train.checkpoint_every steps; and, ending the invocation with
// kExitRequeue, on a stop signal (agreed over every rank) or after train.steps_per_run steps.
class CheckpointPolicy : public Callback {
 public:
  std::string name() const override { return "checkpoint_policy"; }
  void on_start(LoopView& v) override {
    first_step_ = v.step;
    install_stop_signals();
  }
  void after_step(LoopView& v, const StepOutcome&, Requests& req) override {
    const auto& t = v.job.cfg.train;
    int64_t signal = stop_requested() ? stop_signal() : 0;
    v.grid.world->allreduce_max(&signal, 1);
    const bool slice_done = t.steps_per_run > 0 && v.step - first_step_ >= t.steps_per_run && v.step < t.steps;
    if (signal || slice_done) {
      req.stop = req.save = true;
      req.why =
          signal ? cat("signal ", signal, " received") : cat("train.steps_per_run = ", t.steps_per_run, " reached");
    }
    if (t.checkpoint_every > 0 && v.step % t.checkpoint_every == 0 && v.step != t.steps) req.save = true;
  }

 private:
  int64_t first_step_ = 0;
};

}  // namespace

// data.mix: the tokens trained on from each source so far, in every logged record. A pure function
// of the step (data/mixture.h), so it needs no checkpoint part and a resumed run logs the same.
class MixtureLogCallback : public Callback {
 public:
  explicit MixtureLogCallback(const TrainJob& job) : job_(job) {}
  std::string name() const override { return "mixture_log"; }
  void on_log(LoopView& v, LogRecord& r) override {
    const auto& counts = job_.mixture->counts_through(v.step * job_.cfg.train.global_batch);
    nlohmann::json by_source = nlohmann::json::object();
    for (size_t s = 0; s < counts.size(); ++s)
      by_source[job_.mixture->sources()[s].name] = counts[s] * job_.cfg.train.seq_len;
    r.extra["tokens_by_source"] = std::move(by_source);
  }

 private:
  const TrainJob& job_;
};

Callbacks standard_callbacks(const TrainJob& job, int64_t micro_batch) {
  Callbacks out;
  // First, so that its timer is detached before any other callback runs the model (the probe).
  if (job.cfg.train.profile_steps > 0) out.push_back(make_step_profile(job.cfg.train.profile_steps));
  if (auto fault = fault_request_from_environment()) out.push_back(std::make_unique<FaultInjection>(std::move(*fault)));
  out.push_back(std::make_unique<SpikeMonitorCallback>(job.cfg.train.spike_rules));
  if (job.cfg.train.probe_every > 0 && job.probe) out.push_back(std::make_unique<ProbeCallback>(job, micro_batch));
  if (job.mixture) out.push_back(std::make_unique<MixtureLogCallback>(job));
  out.push_back(std::make_unique<MetricsLogCallback>());
  out.push_back(std::make_unique<CheckpointPolicy>());
  return out;
}

}  // namespace headroom::train
