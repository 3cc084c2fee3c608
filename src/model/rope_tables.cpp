#include "model/rope_tables.h"

#include "config/keys.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace headroom::model {
namespace {

// transformers' find_correction_dim: the dimension whose wavelength fits n_rot times into the
// original context.
double correction_dim(double n_rot, double dim, double base, double original_len) {
  return (dim * std::log(original_len / (n_rot * 2.0 * std::numbers::pi))) / (2.0 * std::log(base));
}

void apply_yarn(const config::ModelConfig& m, double base, RopeTable& t) {
  const double r = static_cast<double>(t.rot_dims);
  const double factor = m.yarn_factor;
  double low = std::floor(correction_dim(m.yarn_beta_fast, r, base, m.yarn_original_len));
  double high = std::ceil(correction_dim(m.yarn_beta_slow, r, base, m.yarn_original_len));
  low = std::max(low, 0.0);
  high = std::min(high, r - 1);
  if (low == high) high += 0.001;
  for (size_t i = 0; i < t.inv_freq.size(); ++i) {
    const double extrapolation = t.inv_freq[i];
    const double interpolation = extrapolation / factor;
    const double ramp = std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
    const double extrapolation_factor = 1.0 - ramp;
    t.inv_freq[i] = interpolation * (1.0 - extrapolation_factor) + extrapolation * extrapolation_factor;
  }
  t.attention_factor = factor > 1.0 ? 0.1 * std::log(factor) + 1.0 : 1.0;
}

// transformers' _compute_llama3_parameters: wavelengths longer than the original context over
// low_freq_factor are interpolated by the factor, those shorter than it over high_freq_factor kept,
// and the band between blended linearly in original_len / wavelength. No attention factor.
void apply_llama3(const config::ModelConfig& m, RopeTable& t) {
  const double factor = m.llama3_factor, low = m.llama3_low_freq_factor, high = m.llama3_high_freq_factor;
  const double old_len = static_cast<double>(m.llama3_original_len);
  const double low_freq_wavelen = old_len / low, high_freq_wavelen = old_len / high;
  for (double& f : t.inv_freq) {
    const double wavelen = 2.0 * std::numbers::pi / f;
    const double scaled = wavelen > low_freq_wavelen ? f / factor : f;
    const bool medium = !(wavelen < high_freq_wavelen) && !(wavelen > low_freq_wavelen);
    const double smooth = (old_len / wavelen - low) / (high - low);
    f = medium ? (1.0 - smooth) * scaled / factor + smooth * scaled : scaled;
  }
}

}  // namespace

RopeTable rope_frequencies(const config::ModelConfig& m, bool sliding) {
  RopeTable t;
  t.rot_dims = config::rope_dims(m, sliding);
  if (t.rot_dims == 0) return t;
  const double base = sliding ? m.rope_base_swa : m.rope_base_full;
  for (int64_t i = 0; i < t.rot_dims / 2; ++i)
    t.inv_freq.push_back(1.0 / std::pow(base, static_cast<double>(2 * i) / static_cast<double>(t.rot_dims)));
  const bool yarn_here =
      m.rope_scaling == config::RopeScaling::kYarn && (m.yarn_layers == config::YarnLayers::kAll || !sliding);
  if (yarn_here) apply_yarn(m, base, t);
  if (m.rope_scaling == config::RopeScaling::kLlama3) apply_llama3(m, t);
  return t;
}

template <class T>
void rope_fill(const RopeTable& t, int64_t n_pos, std::vector<T>& cos, std::vector<T>& sin) {
  const int64_t half = t.rot_dims / 2;
  cos.resize(static_cast<size_t>(n_pos * half));
  sin.resize(static_cast<size_t>(n_pos * half));
  for (int64_t p = 0; p < n_pos; ++p)
    for (int64_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(p) * t.inv_freq[static_cast<size_t>(i)];
      cos[static_cast<size_t>(p * half + i)] = static_cast<T>(std::cos(angle) * t.attention_factor);
      sin[static_cast<size_t>(p * half + i)] = static_cast<T>(std::sin(angle) * t.attention_factor);
    }
}

template void rope_fill<float>(const RopeTable&, int64_t, std::vector<float>&, std::vector<float>&);
template void rope_fill<double>(const RopeTable&, int64_t, std::vector<double>&, std::vector<double>&);

}  // namespace headroom::model
