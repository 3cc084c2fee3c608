#include "data/mixture.h"

#include "util/error.h"
#include "util/random.h"

#include <cmath>
#include <filesystem>
#include <set>
#include <sstream>

namespace headroom::data {

std::vector<MixSource> parse_mix(const std::string& spec, const std::string& key) {
  std::vector<MixSource> out;
  std::stringstream entries(spec);
  std::string entry;
  double total = 0;
  std::set<std::string> names;
  while (std::getline(entries, entry, ',')) {
    const auto colon = entry.rfind(':');
    if (colon == std::string::npos || colon == 0)
      fail(key, " = '", spec, "': entry '", entry, "' is not NAME=PATH:WEIGHT or PATH:WEIGHT");
    MixSource s;
    const std::string target = entry.substr(0, colon);
    const auto eq = target.find('=');
    s.path = eq == std::string::npos ? target : target.substr(eq + 1);
    s.name = eq == std::string::npos ? std::filesystem::path(s.path).lexically_normal().filename().string()
                                     : target.substr(0, eq);
    if (s.name.empty()) s.name = std::filesystem::path(s.path).lexically_normal().parent_path().filename().string();
    try {
      std::size_t used = 0;
      s.weight = std::stod(entry.substr(colon + 1), &used);
      if (used != entry.size() - colon - 1) throw std::invalid_argument("trailing");
    } catch (const std::exception&) {
      fail(key, " = '", spec, "': the weight of '", entry, "' is not a number");
    }
    if (!(s.weight > 0) || !std::isfinite(s.weight))
      fail(key, " = '", spec, "': the weight of '", entry, "' must be positive");
    if (s.name.empty() || s.path.empty()) fail(key, " = '", spec, "': entry '", entry, "' names no dataset");
    if (!names.insert(s.name).second)
      fail(key, " = '", spec, "': two sources are named '", s.name, "'; name them: NAME=PATH:WEIGHT");
    total += s.weight;
    out.push_back(std::move(s));
  }
  if (out.empty()) fail(key, " = '", spec, "' names no source");
  for (auto& s : out) s.weight /= total;
  return out;
}

Mixture::Mixture(std::vector<MixSource> sources, uint64_t seed)
    : sources_(std::move(sources)), offset_(mix64(seed ^ 0x6d697874ull)), counts_(sources_.size(), 0) {
  double cumulative = 0;
  for (size_t s = 0; s + 1 < sources_.size(); ++s) {
    cumulative += sources_[s].weight;
    upper_.push_back(cumulative >= 1.0 ? ~uint64_t{0} : static_cast<uint64_t>(std::ldexp(cumulative, 64)));
  }
}

int Mixture::source_of(int64_t index) const {
  const uint64_t u = offset_ + static_cast<uint64_t>(index) * 0x9E3779B97F4A7C15ull;  // wraps: mod 2^64
  int s = 0;
  while (s < static_cast<int>(upper_.size()) && u >= upper_[static_cast<size_t>(s)]) ++s;
  return s;
}

const std::vector<int64_t>& Mixture::counts_through(int64_t n) {
  if (n < counted_) {
    std::fill(counts_.begin(), counts_.end(), 0);
    counted_ = 0;
  }
  for (; counted_ < n; ++counted_) ++counts_[static_cast<size_t>(source_of(counted_))];
  return counts_;
}

}  // namespace headroom::data
