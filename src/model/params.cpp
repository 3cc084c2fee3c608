#include "model/params.h"

#include "util/error.h"
#include "util/random.h"
#include "util/text.h"

#include <fnmatch.h>

#include <cmath>

namespace headroom::model {

int64_t ParamSpec::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::vector<ParamSpec> param_specs(const config::ModelConfig& m) {
  const double std = m.init_std;
  const double out_std = m.init_std / std::sqrt(2.0 * static_cast<double>(m.n_layers));
  const int64_t d = m.d_model;
  std::vector<ParamSpec> p;
  auto matrix = [&](std::string name, int64_t rows, int64_t cols, Split split, double s, bool kv = false) {
    p.push_back({std::move(name), {rows, cols}, split, Init::kNormal, s, true, false, kv, false});
  };
  auto norm = [&](std::string name, int64_t n, Split split, bool kv = false, bool head_shared = false) {
    p.push_back({std::move(name), {n}, split, Init::kOnes, 0, false, false, kv, head_shared});
  };
  p.push_back({"embed.weight", {m.vocab_size, d}, Split::kNone, Init::kNormal, std, true, true, false, false});
  for (long i = 0; i < m.n_layers; ++i) {
    const std::string l = cat("layers.", i, ".");
    norm(l + "attn_norm.weight", d, Split::kNone);
    matrix(l + "attn.wq", config::q_width(m), d, Split::kRows, std);
    matrix(l + "attn.wk", config::k_width(m), d, Split::kRows, std, true);
    matrix(l + "attn.wv", config::v_width(m), d, Split::kRows, std, true);
    matrix(l + "attn.wo", d, config::attn_out_width(m), Split::kCols, out_std);
    if (m.qk_norm == config::QkNorm::kLayer) {
      norm(l + "attn.q_norm.weight", config::q_width(m), Split::kRows);
      norm(l + "attn.k_norm.weight", config::k_width(m), Split::kRows, true);
    } else if (m.qk_norm == config::QkNorm::kHead) {
      norm(l + "attn.q_norm.weight", m.head_dim_qk, Split::kNone, false, true);
      norm(l + "attn.k_norm.weight", m.head_dim_qk, Split::kNone, true, true);
    }
    norm(l + "mlp_norm.weight", d, Split::kNone);
    matrix(l + "mlp.w_gate", m.d_ff, d, Split::kRows, std);
    matrix(l + "mlp.w_up", m.d_ff, d, Split::kRows, std);
    matrix(l + "mlp.w_down", d, m.d_ff, Split::kCols, out_std);
  }
  norm("final_norm.weight", d, Split::kNone);
  if (!m.tie_embeddings)
    p.push_back({"lm_head.weight", {m.vocab_size, d}, Split::kNone, Init::kNormal, std, true, true, false, false});
  return p;
}

template <class T>
void init_values(const ParamSpec& spec, unsigned long seed, int64_t first, int64_t count, T* out) {
  if (spec.init == Init::kOnes) {
    for (int64_t i = 0; i < count; ++i) out[i] = T(1);
    return;
  }
  const CounterRng rng{mix64(seed) ^ fnv1a64(spec.name), 0};
  for (int64_t i = 0; i < count; ++i) out[i] = static_cast<T>(spec.std * rng.normal(static_cast<uint64_t>(first + i)));
}

template void init_values<float>(const ParamSpec&, unsigned long, int64_t, int64_t, float*);
template void init_values<double>(const ParamSpec&, unsigned long, int64_t, int64_t, double*);

int64_t count_non_embedding(const std::vector<ParamSpec>& specs) {
  int64_t n = 0;
  for (const auto& s : specs)
    if (s.name != "embed.weight") n += s.numel();
  return n;
}

bool matches_any(const std::string& name, const std::string& patterns) {
  for (const std::string& pat : split_list(patterns))
    if (fnmatch(pat.c_str(), name.c_str(), 0) == 0) return true;
  return false;
}

}  // namespace headroom::model
