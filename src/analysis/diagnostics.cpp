#include "analysis/diagnostics.h"

#include "analysis/linalg.h"
#include "eval/scoring.h"
#include "model/layer.h"
#include "util/clock.h"
#include "util/error.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace headroom::analysis {
namespace {

// The scores of one query row for every head: on the model's device, and their host copy.
struct RowBuffers {
  kernels::Buffer<float, kernels::Ops> scores_dev;
  int64_t capacity = 0;
  std::vector<float> scores;
  std::vector<double> probs;
  void reserve(const kernels::Ops& ops, int64_t n_scores, int64_t n_keys) {
    if (n_scores > capacity) {
      capacity = std::max(n_scores, 2 * capacity);
      scores_dev = kernels::Buffer<float, kernels::Ops>(ops, capacity);
      scores.resize(static_cast<size_t>(capacity));
    }
    if (static_cast<int64_t>(probs.size()) < n_keys) probs.resize(static_cast<size_t>(n_keys));
  }
};

// Attention rows of one layer for the query rows of the current chunk that are in `rows`. The
// queries and cached keys live where the model runs (m.ops: host or device memory); the scores are
// computed there into `scores_dev` and copied to the host, one query row (all heads) at a time.
void layer_rows(const model::Model<float>& m, long layer, const float* q_chunk, int64_t pos0, int64_t n_rows,
                const float* k_all, const std::vector<int64_t>& rows, RowSink& sink, RowBuffers& buf) {
  const auto& c = m.local;
  const int64_t Hq = c.n_heads, Hkv = c.n_kv_heads, dqk = c.head_dim_qk, G = Hq / Hkv;
  const int64_t K = Hkv * dqk;
  const bool sliding = model::is_sliding(c, layer);
  const float scale = static_cast<float>(config::attention_scale(dqk));
  auto it = std::lower_bound(rows.begin(), rows.end(), pos0);
  for (; it != rows.end() && *it < pos0 + n_rows; ++it) {
    const int64_t t = *it;
    const int64_t first = sliding ? std::max<int64_t>(0, t - c.window + 1) : 0;
    const int64_t nk = t - first + 1;
    buf.reserve(*m.ops, Hq * nk, nk);
    const float* q = q_chunk + (t - pos0) * Hq * dqk;
    for (int64_t g = 0; g < Hkv; ++g)
      // scores[g·G .. g·G+G, nk] = scale · Q_g[G, dqk] · K_g[first..t, dqk]ᵀ (K rows strided by K).
      m.ops->matmul_strided(q + g * G * dqk, dqk, k_all + first * K + g * dqk, K, buf.scores_dev.get() + g * G * nk, nk,
                            G, nk, dqk, false, true, scale, 0.f);
    m.ops->copy_to_host(buf.scores.data(), buf.scores_dev.get(), sizeof(float) * static_cast<size_t>(Hq * nk));
    for (int64_t h = 0; h < Hq; ++h) {
      std::span<double> p(buf.probs.data(), static_cast<size_t>(nk));
      softmax(std::span<const float>(buf.scores.data() + h * nk, static_cast<size_t>(nk)), p);
      sink.row(layer, t, h, RowView{p, first});
    }
  }
}

}  // namespace

std::vector<float> stream_prefill(model::Model<float>& m, model::KvCache<float>& cache, const int32_t* tokens,
                                  int64_t n, const std::vector<int64_t>& rows,
                                  const std::vector<int64_t>& residual_rows, RowSink& sink) {
  if (m.tp.size > 1) fail("attention diagnostics need the whole model on one process (tp = 1)");
  const int64_t d = m.local.d_model;
  RowBuffers buf;
  std::vector<float> residual(static_cast<size_t>(d));
  // The attention rows and residuals are read between layers, while the chunk's keys are cached.
  const model::LayerObserver<float> observe = [&](const model::LayerOutput<float>& o) {
    // A kCompute cache's call keeps its queries in T (LayerActs::q).
    layer_rows(m, o.layer, reinterpret_cast<const float*>(o.acts.q), o.pos, o.rows, o.cache.keys(o.layer), rows, sink,
               buf);
    for (auto it = std::lower_bound(residual_rows.begin(), residual_rows.end(), o.pos);
         it != residual_rows.end() && *it < o.pos + o.rows; ++it) {
      m.ops->copy_to_host(residual.data(), o.out + (*it - o.pos) * d, sizeof(float) * static_cast<size_t>(d));
      sink.residual(o.layer, *it, residual.data(), d);
    }
  };
  return model::prefill<float>(m, cache, tokens, n, nullptr, observe);
}

std::vector<int64_t> sample_positions(int64_t n, int64_t count) {
  std::vector<int64_t> out;
  if (count <= 0 || count >= n) {
    for (int64_t i = 0; i < n; ++i) out.push_back(i);
    return out;
  }
  for (int64_t j = 0; j < count; ++j) {
    const int64_t t = (j + 1) * n / count - 1;
    if (out.empty() || out.back() != t) out.push_back(t);
  }
  return out;
}

namespace {

struct ProbeSink : RowSink {
  Diagnostics& diag;
  const DiagOptions& opt;
  int64_t H, needle_begin, needle_end, prompt_last;
  int64_t decode_pos = -1;                      // position whose rows feed the retrieval score
  std::vector<int64_t> top1;                    // per (layer, head) at decode_pos
  std::vector<std::vector<double>>& residuals;  // per layer, rows × d
  bool prompt_phase = true;

  ProbeSink(Diagnostics& d, const DiagOptions& o, int64_t heads, std::vector<std::vector<double>>& res)
      : diag(d),
        opt(o),
        H(heads),
        needle_begin(0),
        needle_end(0),
        prompt_last(0),
        top1(static_cast<size_t>(d.n_layers * heads), -1),
        residuals(res) {}

  void row(long layer, int64_t pos, int64_t head, RowView r) override {
    const size_t idx = static_cast<size_t>(layer * H + head);
    if (prompt_phase) {
      diag.heads[idx].add_row(r, opt.sink_tokens);
      if (pos == prompt_last) diag.heads[idx].add_needle(r, needle_begin, needle_end);
    }
    if (pos == decode_pos) top1[idx] = row_top1(r);
  }
  void residual(long layer, int64_t, const float* x, int64_t d) override {
    auto& v = residuals[static_cast<size_t>(layer)];
    v.insert(v.end(), x, x + d);
  }
};

}  // namespace

Diagnostics run_diagnostics(model::Model<float>& m, const data::Tokenizer& tok, const std::vector<Probe>& probes,
                            const DiagOptions& opt, const std::function<void(const std::string&)>& log) {
  const auto& c = m.local;
  Diagnostics diag;
  diag.n_layers = c.n_layers;
  diag.n_heads = c.n_heads;
  const size_t n_heads_total = static_cast<size_t>(c.n_layers * c.n_heads);
  diag.heads.assign(n_heads_total, HeadAccum{});
  diag.retrieval = RetrievalAccum(n_heads_total);
  std::vector<std::vector<double>> residuals(static_cast<size_t>(c.n_layers));
  const int64_t rank_per_probe = probes.empty() ? 0
                                                : (opt.rank_tokens + static_cast<int64_t>(probes.size()) - 1) /
                                                      static_cast<int64_t>(probes.size());
  model::KvCache<float> cache;
  const auto t_all = std::chrono::steady_clock::now();
  for (size_t pi = 0; pi < probes.size(); ++pi) {
    const Probe& p = probes[pi];
    const auto t0 = std::chrono::steady_clock::now();
    const int64_t n = static_cast<int64_t>(p.ids.size());
    const int64_t capacity = n + std::max<int64_t>(1, p.max_new);
    if (cache.capacity < capacity) cache = model::make_kv_cache(m, capacity, opt.chunk);
    cache.len = 0;
    ProbeSink sink(diag, opt, c.n_heads, residuals);
    sink.needle_begin = opt.needle_sentence ? p.sentence_begin : p.value_begin;
    sink.needle_end = opt.needle_sentence ? p.sentence_end : p.value_end;
    sink.prompt_last = n - 1;
    sink.decode_pos = n - 1;
    const std::vector<int64_t> rows = sample_positions(n, opt.query_rows);
    std::vector<int64_t> res_rows;
    for (int64_t t : sample_positions(static_cast<int64_t>(rows.size()), rank_per_probe))
      res_rows.push_back(rows[static_cast<size_t>(t)]);
    std::vector<float> logits = stream_prefill(m, cache, p.ids.data(), n, rows, res_rows, sink);
    diag.rank_rows += static_cast<int64_t>(res_rows.size());
    // Greedy generation; the rows of the query that produced each token give the top-1 positions.
    sink.prompt_phase = false;
    RetrievalTest test{sink.needle_begin, sink.needle_end, p.ids.data(), n};
    std::vector<double> score(n_heads_total, 0.0);
    std::vector<int32_t> gen;
    for (int64_t g = 0; g < p.max_new; ++g) {
      const auto next = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
      gen.push_back(next);
      for (size_t h = 0; h < n_heads_total; ++h) score[h] += test.step(sink.top1[h], next);
      if (next == data::eos_id(tok) || g + 1 == p.max_new) break;
      sink.decode_pos = cache.len;
      logits = stream_prefill(m, cache, &next, 1, {cache.len}, {}, sink);
    }
    ProbeOutcome o;
    o.length = p.length, o.index = p.index, o.depth = p.depth, o.prompt_tokens = n;
    o.needle_begin = sink.needle_begin, o.needle_end = sink.needle_end;
    o.prediction = data::decode(tok, gen);
    o.correct = eval::score_prediction(eval::Metric::kMatchAll, o.prediction, {p.value}) >= 1.0;
    if (o.correct || opt.retrieval_all_tests) diag.retrieval.add_test(score);
    o.seconds = seconds_since(t0);
    diag.probes.push_back(o);
    if (log)
      log(cat("diagnostics: probe ", pi + 1, "/", probes.size(), " (length ", p.length, ", depth ", p.depth, ", ", n,
              " prompt tokens) ", o.correct ? "answered" : "missed", " in ", format_duration(o.seconds), "; ",
              format_duration(seconds_since(t_all)), " so far"));
  }
  diag.retrieval_scores = diag.retrieval.scores();
  diag.retrieval_heads = count_above(diag.retrieval_scores, opt.retrieval_threshold);
  if (diag.retrieval.tests == 0)
    diag.notes.push_back(cat("retrieval-head scores: none of the ", probes.size(),
                             " probes was answered correctly, and Wu et al.'s score averages over correct answers "
                             "only (set analyze.retrieval_all_tests = true to average over every probe)"));
  diag.sink_rate = sink_rate(diag.heads, opt.sink_eps);
  // Effective rank of each block's output over the pooled residual rows.
  for (long i = 0; i < c.n_layers; ++i) {
    auto& x = residuals[static_cast<size_t>(i)];
    const int64_t rows = static_cast<int64_t>(x.size()) / c.d_model;
    if (rows == 0) {
      diag.effective_rank.push_back(std::nan(""));
      continue;
    }
    if (opt.rank_center) {
      for (int64_t k = 0; k < c.d_model; ++k) {
        double mean = 0;
        for (int64_t r = 0; r < rows; ++r) mean += x[static_cast<size_t>(r * c.d_model + k)];
        mean /= static_cast<double>(rows);
        for (int64_t r = 0; r < rows; ++r) x[static_cast<size_t>(r * c.d_model + k)] -= mean;
      }
    }
    diag.effective_rank.push_back(effective_rank(singular_values(x, rows, c.d_model)));
  }
  return diag;
}

}  // namespace headroom::analysis
