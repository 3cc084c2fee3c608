// Wall-clock helpers for logs, progress lines and file attributes.
#pragma once

#include <chrono>
#include <string>

namespace headroom {

// "2026-11-29T08:30:00Z"
std::string utc_timestamp();

// "1h02m", "3m05s", "12s" — for ETAs.
std::string format_duration(double seconds);

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace headroom
