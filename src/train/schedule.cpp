#include "train/schedule.h"

#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace headroom::train {

double learning_rate(const Schedule& s, long step) {
  if (step < s.warmup) return s.lr * static_cast<double>(step + 1) / static_cast<double>(s.warmup);
  const double span_lr = s.lr - s.min_lr;
  switch (s.kind) {
    case config::Schedule::kConstant:
      return s.lr;
    case config::Schedule::kCosine:
    case config::Schedule::kLinear: {
      const long span = std::max(1L, s.total - s.warmup);
      const double t = std::clamp(static_cast<double>(step - s.warmup) / static_cast<double>(span), 0.0, 1.0);
      if (s.kind == config::Schedule::kLinear) return s.lr - span_lr * t;
      return s.min_lr + 0.5 * span_lr * (1.0 + std::cos(std::numbers::pi * t));
    }
    case config::Schedule::kWsd: {
      const long decay_start = s.total - s.decay;
      if (step < decay_start) return s.lr;
      const double t =
          std::clamp(static_cast<double>(step - decay_start) / static_cast<double>(std::max(1L, s.decay)), 0.0, 1.0);
      return s.lr - span_lr * t;
    }
  }
  fail("unknown learning-rate schedule ", static_cast<int>(s.kind));
}

}  // namespace headroom::train
