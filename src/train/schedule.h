// Learning-rate schedules as pure functions of the step (0-based: the lr used by optimizer step s).
//   cosine: linear warmup from 0 to lr over `warmup` steps, then cosine decay to min_lr at `total`.
//   wsd:    warmup, stable at lr, then linear decay to min_lr over the last `decay` steps
//           (warmup-stable-decay).
//   linear: warmup, then linear decay from lr to min_lr at `total` (the anneal used by extend).
//   constant: warmup, then lr.
// Warmup is (s + 1) / warmup · lr, so the first step already moves.
#pragma once

#include "config/choices.h"

namespace headroom::train {

struct Schedule {
  config::Schedule kind = config::Schedule::kCosine;
  double lr = 0, min_lr = 0;
  long warmup = 0, total = 0, decay = 0;
};

double learning_rate(const Schedule& s, long step);

}  // namespace headroom::train
