// Attention diagnostics of a checkpoint over needle probes (probes.h), computed streaming: the
// prompt runs through the model chunk by chunk exactly as model::prefill does (KV cache, memory
// linear in context length), and after each layer's forward the attention rows of the sampled
// query positions are recomputed from that chunk's post-RoPE queries and the cached keys, one query
// row at a time (scores q·k / √head_dim_qk over the keys the layer lets the query see: all earlier
// positions, or the last `window` ones including itself on sliding layers; GQA: query head h reads
// KV head h / (n_heads / n_kv_heads)), turned into probabilities in double and reduced at once
// (attention_stats.h). Nothing of size length² exists at any time.
//
// The model runs on its own backend (m.ops: CPU, or a GPU with analyze.device): the forward pass,
// the KV cache and each row's scores stay there; one row of scores (all heads) and the sampled
// residuals are copied to the host, where the probabilities and statistics are computed in double.
#pragma once

#include "analysis/attention_stats.h"
#include "analysis/probes.h"
#include "data/tokenizer.h"
#include "model/decode.h"

#include <functional>
#include <string>
#include <vector>

namespace headroom::analysis {

// Receives what the streaming pass computes.
struct RowSink {
  virtual ~RowSink() = default;
  // The attention row of query head `head` at absolute position `pos` in layer `layer`.
  virtual void row(long layer, int64_t pos, int64_t head, RowView r) = 0;
  // The residual stream after block `layer` at position `pos` (d_model floats), for positions in
  // the `residual_rows` set.
  virtual void residual(long, int64_t, const float*, int64_t) {}
};

// Appends tokens[0, n) to the cache (as model::prefill) and reports the attention rows of the
// absolute positions in `rows` (ascending; positions outside [cache.len, cache.len + n) are ignored)
// and the residuals at `residual_rows`. Returns the logits of the last token.
std::vector<float> stream_prefill(model::Model<float>& m, model::KvCache<float>& cache, const int32_t* tokens,
                                  int64_t n, const std::vector<int64_t>& rows,
                                  const std::vector<int64_t>& residual_rows, RowSink& sink);

struct DiagOptions {
  int64_t query_rows = 128;   // sampled query positions per probe (evenly spaced, last included); 0 = all
  int64_t sink_tokens = 100;  // k of the sink share
  double sink_eps = 0.3;      // ε of Gu et al.'s sink rate
  double retrieval_threshold = 0.1;
  bool needle_sentence = false;      // needle span: the value's tokens (false) or the whole needle sentence
  bool retrieval_all_tests = false;  // average retrieval scores over every probe, not only correct ones
  int64_t rank_tokens = 256;         // residual rows pooled over the probes for the effective rank
  bool rank_center = false;          // subtract the per-dimension mean before the SVD
  int64_t chunk = 256;               // prefill chunk
};

struct ProbeOutcome {
  int64_t length = 0, index = 0, prompt_tokens = 0;
  double depth = 0;
  int64_t needle_begin = 0, needle_end = 0;
  std::string prediction;
  bool correct = false;
  double seconds = 0;
};

struct Diagnostics {
  int64_t n_layers = 0, n_heads = 0;
  std::vector<HeadAccum> heads;          // [layer · n_heads + head]
  RetrievalAccum retrieval;              // per head, over the counted tests
  std::vector<double> retrieval_scores;  // [layer · n_heads + head], NaN when no test counted
  int64_t retrieval_heads = 0;
  double sink_rate = 0;
  std::vector<double> effective_rank;  // per block output
  int64_t rank_rows = 0;
  std::vector<ProbeOutcome> probes;
  std::vector<std::string> notes;  // what could not be computed and why
};

// Evenly spaced positions in [0, n): `count` of them (all when count ≤ 0 or ≥ n), n − 1 included.
std::vector<int64_t> sample_positions(int64_t n, int64_t count);

// Runs every probe. `log` gets one progress line per probe.
Diagnostics run_diagnostics(model::Model<float>& m, const data::Tokenizer& tok, const std::vector<Probe>& probes,
                            const DiagOptions& opt, const std::function<void(const std::string&)>& log);

}  // namespace headroom::analysis
