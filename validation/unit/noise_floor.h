// The C++ side of validation/noise_floor.py for the GoogleTest comparisons: the same verdict
// (difference <= kNoiseFactor × floor, a zero floor allowing only a zero difference) and the same
// printed line, which validation/run_across_kernels.sh collects.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

namespace headroom::validation {

constexpr double kNoiseFactor = 10.0;  // noise_floor.py DEFAULT_FACTOR, for the reasons given there

// Prints "noise-floor: WHAT difference D floor F ratio R allowed 10 ok|FAIL"; true when it passes.
inline bool report_noise_floor(const std::string& what, double difference, double floor) {
  const bool ok = difference <= kNoiseFactor * floor;
  const double ratio = floor > 0 ? difference / floor : (difference == 0 ? 0.0 : INFINITY);
  std::printf("noise-floor: %s difference %.3e floor %.3e ratio %.3g allowed %g %s\n", what.c_str(), difference, floor,
              ratio, kNoiseFactor, ok ? "ok" : "FAIL");
  return ok;
}

inline ::testing::AssertionResult within_noise_floor(const std::string& what, double difference, double floor) {
  if (report_noise_floor(what, difference, floor)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": difference " << difference << " > " << kNoiseFactor << " x floor "
                                       << floor;
}

}  // namespace headroom::validation
