// The parameter registry: every named logical tensor of a model configuration, its full shape,
// how tensor parallelism splits it, how it is initialised, and whether weight decay applies.
// Checkpoints, the optimizer, the reference comparison and the parallel layers all work from
// this one list (names and shapes: validation/reference/MODEL_SPEC.md).
#pragma once

#include "config/config.h"

#include <cstdint>
#include <string>
#include <vector>

namespace headroom::model {

enum class Init { kNormal, kOnes };

// Which axis tensor parallelism splits: none (replicated), rows (output features: column-parallel
// projections), or columns (input features: row-parallel projections).
enum class Split { kNone, kRows, kCols };

struct ParamSpec {
  std::string name;
  std::vector<int64_t> shape;
  Split split = Split::kNone;
  Init init = Init::kNormal;
  double std = 0;            // for kNormal
  bool matrix = false;       // a 2-D weight (candidate for weight decay)
  bool embedding = false;    // embed.weight / lm_head.weight
  bool kv = false;           // belongs to the key/value side (wk, wv, layerwise k_norm)
  bool head_shared = false;  // one weight shared by every head (headwise QK norm)

  int64_t numel() const;
};

std::vector<ParamSpec> param_specs(const config::ModelConfig& m);

// Initial value of elements [first, first + count) (row-major over the full logical shape) of a
// parameter: a pure function of (seed, name, element index), so any rank can initialise any slice
// and two configurations that share a parameter name and shape share its initial values.
template <class T>
void init_values(const ParamSpec& spec, unsigned long seed, int64_t first, int64_t count, T* out);

// Parameter count without the input embedding (the N of the FLOP formula).
int64_t count_non_embedding(const std::vector<ParamSpec>& specs);

// Comma-separated glob patterns ("layers.*.attn.w?", "embed.weight") over parameter names.
bool matches_any(const std::string& name, const std::string& patterns);

}  // namespace headroom::model
