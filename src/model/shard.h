// Megatron-style tensor parallelism, as data: which slice of each logical parameter a TP rank
// holds, and how many heads / MLP columns it computes. Q/K/V and the MLP gate/up projections are
// split by output rows (column-parallel), the attention output and MLP down projections by input
// columns (row-parallel); everything else is replicated.
//
// KV heads: with n_kv_heads ≥ tp each rank holds n_kv_heads / tp of them. With n_kv_heads < tp
// (tp a multiple of n_kv_heads) each rank holds the one KV head its query heads read, so
// tp / n_kv_heads ranks hold the same slice: their gradients are partial sums (summed over the TP
// group) and the first of them owns the slice (writes it, counts it in global norms).
#pragma once

#include "config/config.h"
#include "model/params.h"

#include <cstdint>
#include <vector>

namespace headroom::parallel {
class Comm;
}

namespace headroom::model {

struct TpContext {
  parallel::Comm* comm = nullptr;  // null when tp == 1
  int rank = 0, size = 1;
  bool sequence_parallel = false;  // the residual stream is split over the group by tokens
};

// Context parallelism: the ranks that share the tokens of one window (token_layout.h).
struct CpContext {
  parallel::Comm* comm = nullptr;  // null when cp == 1
  int rank = 0, size = 1;
};

struct Shard {
  int axis = -1;       // -1 whole tensor, 0 rows, 1 columns
  int64_t offset = 0;  // first row/column of the logical tensor held here
  int64_t count = 0;   // rows/columns held
  std::vector<int64_t> local_shape;
  bool partial_grad = false;  // gradient must be summed over the TP group
  bool owner = true;          // this rank's copy is the one written and counted in norms
  int64_t numel() const;
};

// Refuses a tp that does not divide the model, naming the keys.
void check_tp(const config::ModelConfig& m, int tp, const char* key = "parallel.tp");  // key: the one that sets tp

// The per-rank model: n_heads, n_kv_heads and d_ff replaced by what one TP rank computes.
config::ModelConfig local_config(const config::ModelConfig& m, int tp);

// How many TP ranks hold the same KV head (1 unless n_kv_heads < tp).
int64_t kv_replication(const config::ModelConfig& m, int tp);

Shard make_shard(const ParamSpec& spec, const config::ModelConfig& m, int tp_rank, int tp);

// Initial values of this rank's slice (see init_values), local row-major layout.
template <class T>
void init_shard(const ParamSpec& spec, const Shard& shard, unsigned long seed, T* out);

}  // namespace headroom::model
