// train.profile_steps: where a step's time goes, region by region (util/region_timer.h). The
// regions are marked by the model and the trainer while a timer is attached to the model; this
// callback attaches it on the profiled steps and reports the mean over them and over the ranks.
#include "io/atomic_file.h"
#include "train/callback.h"
#include "util/error.h"

#include <algorithm>
#include <cstdio>

namespace headroom::train {
namespace {

class StepProfile : public Callback {
 public:
  explicit StepProfile(int64_t steps) : steps_(steps) {}
  std::string name() const override { return "step_profile"; }
  void on_start(LoopView& v) override { first_ = v.step + 1; }  // the invocation's first step warms up
  void before_step(LoopView& v) override {
    if (v.step < first_ || done_ >= steps_) return;
    timer_.synchronize = v.model.ops->synchronize;
    v.model.timer = &timer_;
  }
  void after_step(LoopView& v, const StepOutcome&, Requests&) override {
    if (v.model.timer != &timer_) return;
    timer_.mark("");
    v.model.timer = nullptr;
    if (++done_ == steps_ || v.step == v.job.cfg.train.steps) report(v);
  }

 private:
  void report(LoopView& v) {
    // Every rank marks the same regions in the same order; a mismatch would sum unrelated times.
    int64_t n = static_cast<int64_t>(timer_.seconds.size()), bounds[2] = {n, -n};
    v.grid.world->allreduce_max(bounds, 2);
    if (bounds[0] != -bounds[1]) fail("train.profile_steps: the ranks timed different regions (", n, " on this one)");
    std::vector<double> ms;
    for (const auto& r : timer_.seconds) ms.push_back(1e3 * r.second);
    v.grid.world->allreduce_sum(ms.data(), n);
    const double per = 1.0 / static_cast<double>(done_ * v.grid.world->size());
    std::vector<size_t> order(ms.size());
    double total = 0;
    for (size_t i = 0; i < ms.size(); ++i) order[i] = i, total += (ms[i] *= per);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ms[a] > ms[b]; });
    if (!v.run) return;
    const int64_t last = v.step;
    io::log_line(*v.run,
                 cat("profile of steps ", last - done_ + 1, "-", last, " (mean over ", done_, " steps and ",
                     v.grid.world->size(), " ranks; the device synchronized at each region): ", total, " ms per step"));
    nlohmann::json regions = nlohmann::json::array();
    for (size_t i : order) {
      char line[160];
      std::snprintf(line, sizeof line, "  %-62s %10.3f ms %5.1f%%", timer_.seconds[i].first.c_str(), ms[i],
                    100 * ms[i] / total);
      io::log_line(*v.run, line);
      regions.push_back({{"name", timer_.seconds[i].first}, {"ms_per_step", ms[i]}, {"share", ms[i] / total}});
    }
    const nlohmann::json doc = {{"first_step", last - done_ + 1},
                                {"last_step", last},
                                {"ranks", v.grid.world->size()},
                                {"ms_per_step", total},
                                {"regions", std::move(regions)}};
    io::write_file_atomic(v.job.run_dir / "profile.json", doc.dump(2) + "\n");
  }

  int64_t steps_, first_ = 0, done_ = 0;
  RegionTimer timer_;
};

}  // namespace

std::unique_ptr<Callback> make_step_profile(int64_t steps) { return std::make_unique<StepProfile>(steps); }

}  // namespace headroom::train
