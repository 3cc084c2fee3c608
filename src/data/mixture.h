// A mixture of datasets by weight (data.mix): each window of the run is drawn from one source, and
// which one is a pure function of (seed, sample index), so it is the same for every process layout
// and after a resume, with no state to checkpoint. Sources follow a Weyl sequence in 64-bit fixed
// point, u_i = seed' + i · 2^64/φ (mod 2^64), cut at the cumulative weights: a low-discrepancy
// draw, so over any n consecutive windows each source's count is within a few windows of n · weight
// (random draws would be off by about √n). Window i of the run is then window i of its source's own
// stream (loader.h or long_context.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace headroom::data {

struct MixSource {
  std::string name, path;
  double weight = 0;
};

// "NAME=PATH:WEIGHT,..." or "PATH:WEIGHT,..." (the name is then the path's last component); weights
// are positive and normalised to sum to 1. Throws naming the key, the entry and what is wrong.
std::vector<MixSource> parse_mix(const std::string& spec, const std::string& key = "data.mix");

class Mixture {
 public:
  Mixture(std::vector<MixSource> sources, uint64_t seed);
  const std::vector<MixSource>& sources() const { return sources_; }
  int source_of(int64_t index) const;
  // Windows of each source among samples [0, n); incremental when n grows, as it does in a run.
  const std::vector<int64_t>& counts_through(int64_t n);

 private:
  std::vector<MixSource> sources_;
  std::vector<uint64_t> upper_;  // source s covers [upper_[s-1], upper_[s]); the last one ends at 2^64
  uint64_t offset_;
  int64_t counted_ = 0;
  std::vector<int64_t> counts_;
};

}  // namespace headroom::data
