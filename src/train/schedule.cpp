#include "train/schedule.h"

#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace headroom::train {

double learning_rate(const Schedule& s, long step) {
  if (step < s.warmup) return s.lr * static_cast<double>(step + 1) / static_cast<double>(s.warmup);
  const double span_lr = s.lr - s.min_lr;
  if (s.kind == "constant") return s.lr;
  if (s.kind == "cosine" || s.kind == "linear") {
    const long span = std::max(1L, s.total - s.warmup);
    const double t = std::clamp(static_cast<double>(step - s.warmup) / static_cast<double>(span), 0.0, 1.0);
    if (s.kind == "linear") return s.lr - span_lr * t;
    return s.min_lr + 0.5 * span_lr * (1.0 + std::cos(std::numbers::pi * t));
  }
  if (s.kind == "wsd") {
    const long decay_start = s.total - s.decay;
    if (step < decay_start) return s.lr;
    const double t = std::clamp(static_cast<double>(step - decay_start) / static_cast<double>(std::max(1L, s.decay)), 0.0, 1.0);
    return s.lr - span_lr * t;
  }
  fail("unknown learning-rate schedule '", s.kind, "'");
}

}  // namespace headroom::train
