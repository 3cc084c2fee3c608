#include "eval/niah.h"

#include "eval/draws.h"
#include "eval/text.h"
#include "util/error.h"

#include <algorithm>
#include <set>

namespace headroom::eval {
namespace {

std::string draw_needle(Draws& d, NeedleType t, const Resources& res) {
  switch (t) {
    case NeedleType::kWords:
      return d.pick(res.adjectives) + "-" + d.pick(res.nouns);
    case NeedleType::kNumbers:
      return d.number(7);
    case NeedleType::kUuids:
      return d.uuid();
  }
  return {};
}

std::string needle_text(NeedleType value_type, const std::string& key, const std::string& value) {
  return data::niah_needle(needle_type_name(value_type), key, value);
}

// What does not depend on the haystack size: keys, values, needles (shuffled), the query and
// the depths.
struct Plan {
  std::vector<std::string> keys;
  std::vector<std::vector<std::string>> values;
  std::vector<std::string> needles;
  std::vector<int64_t> queried;
  std::vector<double> depths;  // one per needle, in [0, 1)
  double essay_start = 0;      // where the essay window starts, as a share of the essay
};

Plan draw_plan(Draws& d, const NiahSpec& spec, const Resources& res, int64_t index, double sweep) {
  Plan p;
  const int n_keys = std::max(spec.n_keys, spec.n_queries);
  std::set<std::string> seen;
  while (static_cast<int>(p.keys.size()) < n_keys) {
    std::string k = draw_needle(d, spec.key_type, res);
    if (seen.insert(k).second) p.keys.push_back(std::move(k));
  }
  for (const auto& k : p.keys) {
    p.values.emplace_back();
    for (int v = 0; v < spec.n_values; ++v) {
      p.values.back().push_back(draw_needle(d, spec.value_type, res));
      p.needles.push_back(needle_text(spec.value_type, k, p.values.back().back()));
    }
  }
  d.shuffle(p.needles);
  p.queried = d.distinct(spec.n_queries, n_keys);
  const double first = sweep_depth(index, sweep);
  const auto n = static_cast<double>(p.needles.size());
  for (size_t i = 0; i < p.needles.size(); ++i) {
    const double x = first + static_cast<double>(i) / n;
    p.depths.push_back(x - static_cast<double>(static_cast<int64_t>(x)));
  }
  std::sort(p.depths.begin(), p.depths.end());
  p.essay_start = d.uniform();
  return p;
}

// Needles inserted into a list of lines at their depths, joined by newlines.
std::string line_context(std::vector<std::string> lines, const Plan& p) {
  const auto n = static_cast<double>(lines.size());
  // Insert from the deepest needle up so earlier positions stay valid.
  for (size_t i = p.needles.size(); i-- > 0;) {
    const auto pos = static_cast<size_t>(p.depths[i] * n);
    lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(pos), p.needles[i]);
  }
  return join(lines, "\n");
}

// n essay words from the plan's start (wrapping), cut into sentences, needles inserted between
// sentences at their depths (RULER: sentence positions int(len(sentences) · depth)).
std::string essay_context(const Essay& essay, int64_t n, const Plan& p) {
  const auto total = static_cast<int64_t>(essay.words.size());
  // Start at a sentence beginning so the window reads as text.
  auto start = static_cast<int64_t>(p.essay_start * static_cast<double>(total));
  while (start > 0 && !essay.sentence_end[static_cast<size_t>(start - 1)]) --start;
  std::vector<std::string> sentences;
  std::string cur;
  for (int64_t i = 0; i < n; ++i) {
    const auto w = static_cast<size_t>((start + i) % total);
    if (!cur.empty()) cur += ' ';
    cur += essay.words[w];
    if (essay.sentence_end[w]) sentences.push_back(std::move(cur)), cur.clear();
  }
  if (!cur.empty()) sentences.push_back(std::move(cur));
  const auto s = static_cast<double>(sentences.size());
  std::vector<std::string> parts;
  size_t next = 0;
  for (size_t i = 0; i < p.needles.size(); ++i) {
    const auto pos = static_cast<size_t>(p.depths[i] * s);
    for (; next < pos; ++next) parts.push_back(sentences[next]);
    parts.push_back(p.needles[i]);
  }
  for (; next < sentences.size(); ++next) parts.push_back(sentences[next]);
  return join(parts, " ");
}

}  // namespace

const char* needle_type_name(NeedleType t) {
  switch (t) {
    case NeedleType::kWords:
      return "words";
    case NeedleType::kNumbers:
      return "numbers";
    case NeedleType::kUuids:
      return "uuids";
  }
  return "";
}

std::pair<std::string, std::string> niah_template(NeedleType value_type, int n_answers) {
  return data::niah_template(needle_type_name(value_type), n_answers);
}

Builder niah_builder(const std::string& task, const NiahSpec& spec, const Resources& res, const SampleKey& key) {
  if (spec.haystack == Haystack::kEssay && res.essay.words.empty())
    fail(task, ": no essay haystack loaded (eval.essay)");
  auto [tmpl, prefix_tmpl] = niah_template(spec.value_type, spec.n_queries * spec.n_values);
  auto build = [task, spec, &res, key, tmpl, prefix_tmpl](int64_t n) {
    Draws d = sample_draws(key.seed, task, key.length, key.index);
    const Plan p = draw_plan(d, spec, res, key.index, sweep_offset(key.seed, task, key.length));
    std::vector<std::string> queries;
    Sample s;
    for (int64_t q : p.queried) {
      queries.push_back(p.keys[static_cast<size_t>(q)]);
      for (const auto& v : p.values[static_cast<size_t>(q)]) s.references.push_back(v);
    }
    const std::string query = data::niah_query(queries);
    std::string context;
    if (spec.haystack == Haystack::kNoise) {
      context = line_context(std::vector<std::string>(static_cast<size_t>(n), data::kNoiseLine), p);
    } else if (spec.haystack == Haystack::kEssay) {
      context = essay_context(res.essay, n, p);
    } else {
      // Every line a distractor needle whose key is none of the real ones (drawn after the plan,
      // one after another, so line i is the same whatever n is).
      std::set<std::string> real(p.keys.begin(), p.keys.end());
      std::vector<std::string> lines;
      while (static_cast<int64_t>(lines.size()) < n) {
        std::string k = draw_needle(d, spec.key_type, res);
        std::string v = draw_needle(d, spec.value_type, res);
        if (!real.count(k)) lines.push_back(needle_text(spec.value_type, k, v));
      }
      context = line_context(std::move(lines), p);
    }
    s.prompt = fill(tmpl, {{"query", query}, {"context", context}});
    s.answer_prefix = fill(prefix_tmpl, {{"query", query}});
    return s;
  };
  const int64_t max_units = spec.haystack == Haystack::kEssay ? int64_t{1} << 26 : int64_t{1} << 24;
  // At least one unit of haystack: a prompt of needles and template alone is not a long-context
  // sample, so a length too short for any haystack is skipped (reported apart), never scored.
  return {build, 1, max_units, nullptr};
}

}  // namespace headroom::eval
