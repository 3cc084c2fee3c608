// The depth sweep shared by the task generators (string helpers: util/text.h).
#pragma once

#include "util/text.h"

#include <cstdint>

namespace headroom::eval {

// Golden-ratio sequence: sample index i gets a depth in [0, 1) such that any run of consecutive
// indices covers the unit interval evenly (a low-discrepancy sweep, like RULER's depth grid).
inline double sweep_depth(int64_t index, double offset) {
  const double x = static_cast<double>(index) * 0.6180339887498949 + offset;
  return x - static_cast<double>(static_cast<int64_t>(x));
}

}  // namespace headroom::eval
