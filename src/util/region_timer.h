// Where a training step's time goes, by region (train.profile_steps). mark(next) ends the region
// running and starts `next`; mark("") stops. Each mark first waits for the device (the backend's
// synchronize), so a region's time is the device time of the work enqueued in it, at the price of
// the overlap between regions: profiled steps run a little slower than unprofiled ones.
#pragma once

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace headroom {

struct RegionTimer {
  void (*synchronize)() = nullptr;
  std::vector<std::pair<std::string, double>> seconds;  // per region, in the order first seen
  std::string running;
  std::chrono::steady_clock::time_point since{};

  void mark(const std::string& next) {
    if (synchronize) synchronize();
    const auto now = std::chrono::steady_clock::now();
    if (!running.empty()) {
      const double dt = std::chrono::duration<double>(now - since).count();
      auto it = std::find_if(seconds.begin(), seconds.end(), [&](const auto& r) { return r.first == running; });
      if (it == seconds.end())
        seconds.emplace_back(running, dt);
      else
        it->second += dt;
    }
    running = next;
    since = now;
  }
};

// Marks a region when a timer is attached (profiled steps); nothing otherwise.
inline void mark(RegionTimer* t, const char* next) {
  if (t) t->mark(next);
}

}  // namespace headroom
