#include "eval/run.h"

#include "data/dataset.h"
#include "data/loader.h"
#include "data/shard.h"
#include "eval/combine.h"
#include "eval/decoder.h"
#include "eval/fit.h"
#include "eval/loss_by_position.h"
#include "eval/multiple_choice.h"
#include "eval/sample_log.h"
#include "eval/score_groups.h"
#include "eval/scoring.h"
#include "eval/tasks.h"
#include "util/clock.h"
#include "util/error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>

namespace headroom::eval {
namespace {

// Values kept per generated sample, combined across ranks.
enum GenSlot { kScore, kTokens, kUnits, kStatus, kGenSlots };
constexpr double kScored = 1, kSkipped = 2;

struct Item {
  enum Kind { kGenerate, kLoss, kMc } kind;
  size_t task = 0;     // index into job.tasks (kGenerate)
  int64_t length = 0;  // kGenerate, kLoss
  int64_t index = 0;   // sample, window or mc item
  size_t slot = 0;     // index among the items of its kind (where its results go)
};

// Rough cost for the ETA: linear parts plus attention's quadratic part.
double cost_of(const Item& it) {
  const auto L = static_cast<double>(it.kind == Item::kMc ? 64 : it.length);
  return L * (1.0 + L / 2048.0);
}

bool is_generated(const std::string& task) { return task != kLossTask && task != kMcTask; }

struct Work {
  std::vector<Item> items;
  int64_t n_gen = 0, n_loss = 0, n_mc = 0;
  std::vector<int64_t> loss_windows;  // per length
  std::vector<McItem> mc;
};

Work plan_work(const EvalJob& job, const data::ShardReader* val) {
  Work w;
  const bool want_mc = std::find(job.tasks.begin(), job.tasks.end(), kMcTask) != job.tasks.end();
  if (want_mc) w.mc = read_mc_file(job.eval.mc_file);
  for (int64_t L : job.lengths) {
    for (size_t t = 0; t < job.tasks.size(); ++t)
      if (is_generated(job.tasks[t]))
        for (int64_t i = 0; i < job.eval.samples; ++i)
          w.items.push_back({Item::kGenerate, t, L, i, static_cast<size_t>(w.n_gen++)});
    if (val) {
      // Distinct windows only: a small val shard gives fewer than loss_windows.
      const int64_t n = std::min<int64_t>(job.eval.loss_windows, data::window_count(val->n_tokens, L));
      if (n < 1)
        fail("loss_by_position: the val shard ", val->path, " (data.val) holds ", val->n_tokens,
             " tokens, fewer than one window of ", L + 1, " tokens; use a larger shard or shorter eval.lengths");
      w.loss_windows.push_back(n);
      for (int64_t i = 0; i < n; ++i) w.items.push_back({Item::kLoss, 0, L, i, static_cast<size_t>(w.n_loss++)});
    }
  }
  for (size_t i = 0; i < w.mc.size(); ++i)
    w.items.push_back({Item::kMc, 0, 0, static_cast<int64_t>(i), static_cast<size_t>(w.n_mc++)});
  return w;
}

// Everything one rank computes, in arrays indexed by global slot (zero where another rank works).
struct Partial {
  std::vector<double> gen, loss, mc;
  std::vector<std::pair<int64_t, std::string>> lines;  // samples.jsonl lines by generated slot
};

SampleRecord sample_record(const std::string& task, const Item& it) {
  SampleRecord r;
  r.task = task;
  r.length = it.length;
  r.index = it.index;
  return r;
}

void run_generate(const EvalJob& job, const Item& it, TaskContext& ctx, Decoder& dec, Partial& p) {
  const TaskSpec& spec = find_task(job.tasks[it.task]);
  const int64_t max_new = job.eval.max_new_tokens > 0 ? job.eval.max_new_tokens : spec.max_new;
  double* out = &p.gen[it.slot * kGenSlots];
  Sample s;
  try {
    s = generate_sample(spec, ctx, {job.eval.seed, it.length, it.index, max_new});
  } catch (const TooLong& e) {
    out[kStatus] = kSkipped;
    SampleRecord r = sample_record(spec.name, it);
    r.skipped = e.what();
    p.lines.emplace_back(static_cast<int64_t>(it.slot), sample_line(r));
    return;
  }
  const std::vector<int32_t> prompt = ctx.prompts.ids(s.prompt, s.answer_prefix);
  const std::vector<int32_t> gen = generate(dec, data::eos_id(job.tokenizer), prompt, max_new, it.length);
  const std::string prediction = data::decode(job.tokenizer, gen);
  const double score = score_prediction(spec.metric, prediction, s.references);
  out[kScore] = score;
  out[kTokens] = static_cast<double>(s.tokens);
  out[kUnits] = static_cast<double>(s.units);
  out[kStatus] = kScored;
  SampleRecord r = sample_record(spec.name, it);
  r.score = score;
  r.tokens = s.tokens;
  r.units = s.units;
  r.prediction = prediction;
  r.references = s.references;
  if (job.eval.ruler_pred) r.input = ctx.prompts.text(s.prompt, s.answer_prefix);
  p.lines.emplace_back(static_cast<int64_t>(it.slot), sample_line(r));
}

// Offsets of each loss window's bucket values: windows of one length are contiguous.
std::vector<size_t> loss_offsets(const EvalJob& job, const Work& w) {
  std::vector<size_t> off;
  size_t pos = 0, li = 0;
  for (int64_t L : job.lengths) {
    const size_t per = 2 * position_buckets(L).size();
    for (int64_t i = 0; i < (w.loss_windows.empty() ? 0 : w.loss_windows[li]); ++i) off.push_back(pos), pos += per;
    ++li;
  }
  off.push_back(pos);
  return off;
}

Results aggregate(const EvalJob& job, const Work& w, const Partial& all, const std::vector<std::string>& lines,
                  const std::vector<size_t>& loss_off) {
  Results r = job.header;
  r.lengths = job.lengths;
  r.tasks = job.tasks;
  r.samples = job.eval.samples;
  r.seed = job.eval.seed;
  // Generated tasks: task-major output, samples in index order.
  std::map<std::pair<size_t, int64_t>, TaskScore> cells;
  for (const Item& it : w.items) {
    if (it.kind != Item::kGenerate) continue;
    const TaskSpec& spec = find_task(job.tasks[it.task]);
    TaskScore& c = cells[{it.task, it.length}];
    c.task = spec.name;
    c.metric = metric_name(spec.metric);
    c.length = it.length;
    const double* v = &all.gen[it.slot * kGenSlots];
    if (v[kStatus] == kScored) {
      c.score = c.score.value_or(0) + v[kScore];
      c.mean_tokens += v[kTokens];
      c.mean_units += v[kUnits];
      ++c.n;
    } else {
      ++c.skipped;
      if (c.skip_reason.empty()) c.skip_reason = parse_sample_line(lines[it.slot]).skipped;
    }
  }
  for (size_t t = 0; t < job.tasks.size(); ++t)
    for (int64_t L : job.lengths) {
      auto it = cells.find({t, L});
      if (it == cells.end()) continue;
      TaskScore c = it->second;
      if (c.n > 0) {
        c.score = 100.0 * *c.score / static_cast<double>(c.n);
        c.mean_tokens /= static_cast<double>(c.n);
        c.mean_units /= static_cast<double>(c.n);
      }
      r.task_scores.push_back(c);
    }
  // The suites' summary scores (eval/score_groups.h).
  bool any_ruler = false;
  for (const auto& t : job.tasks) any_ruler |= is_generated(t) && find_task(t).ruler;
  if (any_ruler) {
    GroupScore g = ruler_score(r.task_scores, job.lengths);
    r.ruler_by_length = std::move(g.by_length);
    r.ruler_average = g.average;
  }
  if (auto g = helmet_recall_score(r.task_scores, job.lengths, job.tasks)) {
    r.helmet_recall_by_length = std::move(g->by_length);
    r.helmet_recall = g->average;
  }
  // Loss by position: bucket sums over the windows of each length, in window order.
  size_t window = 0;
  for (size_t li = 0; li < w.loss_windows.size(); ++li) {
    const int64_t L = job.lengths[li];
    const auto buckets = position_buckets(L);
    LossCurve c{L, w.loss_windows[li], 0, {}};
    std::vector<double> sum(buckets.size(), 0), count(buckets.size(), 0);
    for (int64_t i = 0; i < w.loss_windows[li]; ++i, ++window)
      for (size_t b = 0; b < buckets.size(); ++b) {
        sum[b] += all.loss[loss_off[window] + 2 * b];
        count[b] += all.loss[loss_off[window] + 2 * b + 1];
      }
    double total = 0, tokens = 0;
    for (size_t b = 0; b < buckets.size(); ++b) {
      c.buckets.push_back({buckets[b].first, buckets[b].second, sum[b] / count[b], static_cast<int64_t>(count[b])});
      total += sum[b], tokens += count[b];
    }
    c.mean_loss = total / tokens;
    r.loss.push_back(c);
  }
  if (!w.mc.empty()) {
    McSummary m{job.eval.mc_file, w.n_mc, 0, 0};
    for (int64_t i = 0; i < w.n_mc; ++i) m.acc += all.mc[2 * i], m.acc_norm += all.mc[2 * i + 1];
    m.acc *= 100.0 / static_cast<double>(w.n_mc);
    m.acc_norm *= 100.0 / static_cast<double>(w.n_mc);
    r.mc = m;
  }
  return r;
}

// Progress on the root: share of its own (cost-weighted) work, elapsed time and ETA.
struct Progress {
  double total = 0, done = 0;
  int64_t items = 0, items_done = 0;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now(), last = start;

  void step(double cost, const std::function<void(const std::string&)>& log, const std::string& what) {
    done += cost;
    ++items_done;
    const auto now = std::chrono::steady_clock::now();
    if (!log || (std::chrono::duration<double>(now - last).count() < 10 && items_done != items)) return;
    last = now;
    const double elapsed = seconds_since(start);
    const double eta = done > 0 ? elapsed * (total - done) / done : 0;
    log(cat("progress: ", items_done, "/", items, " items on rank 0 (", static_cast<int>(100 * done / total),
            "% of its work), last ", what, ", elapsed ", format_duration(elapsed), ", ETA ", format_duration(eta)));
  }
};

}  // namespace

EvalOutput run_evaluation(const EvalJob& job, model::Model<float>& model, parallel::Comm& samples_comm,
                          const std::function<void(const std::string&)>& log) {
  bool want_gen = false, want_essay = false, want_loss = false;
  for (const auto& t : job.tasks) {
    if (t == kLossTask) want_loss = true;
    if (!is_generated(t)) continue;
    want_gen = true;
    want_essay |= find_task(t).needs_essay;
  }
  std::unique_ptr<data::ShardReader> val;
  if (want_loss) {
    if (job.val_path.empty()) fail("loss_by_position needs a val shard: set data.val");
    try {
      val = std::make_unique<data::ShardReader>(
          data::open_dataset(job.val_path, "val", data::tokenizer_id(job.tokenizer)));
    } catch (const std::exception& e) {
      fail("loss_by_position reads the held-out shard data.val = ", job.val_path,
           " (the checkpoint's, or --data.val): ", e.what());
    }
  }
  const Resources res = want_gen ? load_resources(job.eval.word_dir, want_essay ? job.eval.essay : "") : Resources{};
  PromptBuilder prompts(job.tokenizer, job.tmpl);
  TaskContext ctx = make_task_context(res, prompts);
  const Work w = plan_work(job, val.get());
  const std::vector<size_t> loss_off = loss_offsets(job, w);

  Partial p;
  p.gen.assign(static_cast<size_t>(w.n_gen * kGenSlots), 0.0);
  p.loss.assign(loss_off.back(), 0.0);
  p.mc.assign(static_cast<size_t>(2 * w.n_mc), 0.0);
  Decoder dec{model, job.eval.prefill_chunk, {}};
  const int rank = samples_comm.rank(), size = samples_comm.size();
  Progress progress;
  for (size_t j = 0; j < w.items.size(); ++j)
    if (static_cast<int>(j % static_cast<size_t>(size)) == rank)
      progress.total += cost_of(w.items[j]), ++progress.items;
  for (size_t j = rank; j < w.items.size(); j += static_cast<size_t>(size)) {
    const Item& it = w.items[j];
    std::string what;
    if (it.kind == Item::kGenerate) {
      run_generate(job, it, ctx, dec, p);
      what = cat(job.tasks[it.task], " @", it.length, " #", it.index);
    } else if (it.kind == Item::kLoss) {
      const auto v = window_bucket_losses(dec, *val, it.length, job.eval.seed, it.index);
      std::copy(v.begin(), v.end(), p.loss.begin() + static_cast<std::ptrdiff_t>(loss_off[it.slot]));
      what = cat("loss @", it.length, " window ", it.index);
    } else {
      const McResult m = score_mc_item(dec, prompts, w.mc[static_cast<size_t>(it.index)]);
      p.mc[2 * it.slot] = m.acc;
      p.mc[2 * it.slot + 1] = m.acc_norm;
      what = cat("mc item ", it.index);
    }
    progress.step(cost_of(it), log, what);
  }
  combine_exact(samples_comm, p.gen);
  combine_exact(samples_comm, p.loss);
  combine_exact(samples_comm, p.mc);
  EvalOutput out;
  out.sample_lines = gather_strings(samples_comm, p.lines, w.n_gen);
  out.results = aggregate(job, w, p, out.sample_lines, loss_off);
  return out;
}

}  // namespace headroom::eval
