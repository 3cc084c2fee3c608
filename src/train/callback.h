// Plug-ins of the training loop, in the shape of OLMo-core's Callback (post_step, state_dict,
// load_state_dict): everything run_training does besides the optimizer step itself — the stability
// monitor, the retrieval probe, the metrics log, when to checkpoint, fault injection — is a
// callback, called in order at fixed points. A callback that keeps state hands it to every
// checkpoint as a part under its own name (io::CheckpointPart) and gets it back on resume, so a new
// monitor touches neither the loop nor io/.
//
// Every rank runs the same callbacks at the same points: a callback may use collectives there.
#pragma once

#include "io/checkpoint.h"
#include "io/run_dir.h"
#include "model/activations.h"
#include "parallel/grid.h"
#include "train/trainer.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace headroom::train {

// What the loop shows its callbacks.
struct LoopView {
  const TrainJob& job;
  const parallel::Grid& grid;
  io::RunDir* run;  // the root rank's run directory; null elsewhere
  model::Model<float>& model;
  model::Activations<float>& acts;
  const int64_t& step;    // optimizer steps done (the loop's own counter)
  const int64_t& tokens;  // tokens trained on
};

// One optimizer step as the loop saw it.
struct StepOutcome {
  double loss = 0, grad_norm = 0, lr = 0;
  bool skipped = false;  // a non-finite step whose update was dropped (train.nonfinite = skip)
};

// The progress record of a logged step (every train.log_every steps and the last). Callbacks add
// fields to `extra`; the metrics log writes the record, extra included, to metrics.jsonl.
struct LogRecord {
  StepOutcome outcome;
  double tokens_per_s = 0;
  nlohmann::json extra = nlohmann::json::object();
};

// What callbacks ask of the loop after a step.
struct Requests {
  bool save = false;  // write a checkpoint now
  bool stop = false;  // write one and end this invocation with kExitRequeue
  std::string why;    // the reason to stop, for the log
};

class Callback {
 public:
  virtual ~Callback() = default;
  virtual std::string name() const = 0;  // also the name of its checkpoint part
  virtual void on_start(LoopView&) {}    // once per invocation, after resume, before the first step
  virtual void before_step(LoopView&) {}
  // This rank's gradients once summed over the replicas (with ZeRO-2, its optimizer range only).
  virtual void on_gradients(LoopView&) {}
  virtual void after_step(LoopView&, const StepOutcome&, Requests&) {}
  virtual void on_log(LoopView&, LogRecord&) {}
  // The state a checkpoint keeps (a part named name()), none by default; and its restoration.
  virtual std::optional<io::CheckpointPart> state() const { return std::nullopt; }
  virtual void load_state(const io::CheckpointPart&) {}
};

using Callbacks = std::vector<std::unique_ptr<Callback>>;

// The standard callbacks, in calling order (so that a monitor's fields are in the record before
// the metrics log writes it): the step profile (train.profile_steps), fault injection (only when HEADROOM_INJECT_FAULT is set: tests), the
// spike monitor (train.spike_rules), the retrieval probe (train.probe_every), the metrics log
// (metrics.jsonl) and the checkpoint policy (train.checkpoint_every, train.steps_per_run, stop
// signals).
Callbacks standard_callbacks(const TrainJob& job, int64_t micro_batch);

// train.profile_steps (step_profile.cpp): the steps' time by region, in log.txt and profile.json.
std::unique_ptr<Callback> make_step_profile(int64_t steps);

// The parts of every callback that has state, for a checkpoint.
std::vector<io::CheckpointPart> callback_states(const Callbacks& callbacks);
// Hands each callback its part of a checkpoint being resumed. A callback with state whose part is
// missing is an error naming it (a checkpoint of another monitor set must not resume silently);
// parts nobody claims are ignored.
void restore_callbacks(Callbacks& callbacks, const io::CheckpointInfo& info);

}  // namespace headroom::train
