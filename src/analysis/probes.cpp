#include "analysis/probes.h"

#include "eval/draws.h"
#include "eval/fit.h"
#include "eval/niah.h"
#include "eval/text.h"
#include "util/error.h"

#include <algorithm>
#include <cmath>

namespace headroom::analysis {

std::pair<int64_t, int64_t> token_span(const data::Tokenizer& tok, const std::vector<int32_t>& ids,
                                       const std::string& text, size_t a, size_t b) {
  size_t pos = 0;
  int64_t begin = -1, end = -1;
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::string piece = data::decode(tok, std::span<const int32_t>(&ids[i], 1));
    if (text.compare(pos, piece.size(), piece) != 0)
      fail("probe: token ", i, " (id ", ids[i], ") does not decode to the prompt text at byte ", pos);
    const size_t next = pos + piece.size();
    if (!piece.empty() && pos < b && next > a) {
      if (begin < 0) begin = static_cast<int64_t>(i);
      end = static_cast<int64_t>(i) + 1;
    }
    pos = next;
  }
  if (pos != text.size()) fail("probe: the prompt tokens decode to ", pos, " bytes, the text has ", text.size());
  if (begin < 0) fail("probe: no token covers bytes [", a, ", ", b, ")");
  return {begin, end};
}

Probe make_probe(const data::Tokenizer& tok, eval::PromptBuilder& prompts, const eval::Resources& res, uint64_t seed,
                 int64_t length, double depth, int64_t index, int64_t max_new) {
  if (res.adjectives.empty() || res.nouns.empty()) fail("probe: the word lists are empty (analyze.word_dir)");
  if (!(depth >= 0 && depth <= 1)) fail("probe: depth ", depth, " is outside [0, 1]");
  // The draws of niah_single_1 (key: adjective-noun; value: 7 digits), from the probe's own stream.
  eval::Draws d = eval::sample_draws(seed, "analyze_probe", length, index);
  const std::string key = d.pick(res.adjectives) + "-" + d.pick(res.nouns);
  const std::string value = d.number(7);
  const std::string needle = data::niah_needle(eval::needle_type_name(eval::NeedleType::kNumbers), key, value);
  const auto [tmpl, prefix_tmpl] = eval::niah_template(eval::NeedleType::kNumbers, 1);
  auto build = [&](int64_t n) {
    std::vector<std::string> lines(static_cast<size_t>(n), data::kNoiseLine);
    const auto at = std::min<size_t>(static_cast<size_t>(std::floor(depth * static_cast<double>(n))), lines.size());
    lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(at), needle);
    eval::Sample s;
    s.prompt = fill(tmpl, {{"query", key}, {"context", join(lines, "\n")}});
    s.answer_prefix = fill(prefix_tmpl, {{"query", key}});
    s.references = {value};
    return s;
  };
  const eval::Sample s = eval::fit_to_length("analyze probe", eval::Builder{build, 0, int64_t{1} << 24, nullptr},
                                             prompts, length, max_new);
  Probe p;
  p.length = length, p.depth = depth, p.index = index, p.max_new = max_new, p.value = value;
  p.ids = prompts.ids(s.prompt, s.answer_prefix);
  const std::string text = prompts.text(s.prompt, s.answer_prefix);
  const size_t at = text.find(needle);
  if (at == std::string::npos) fail("probe: the needle is missing from the prompt text");
  const size_t v = at + needle.size() - 1 - value.size();  // the value ends before the final '.'
  std::tie(p.sentence_begin, p.sentence_end) = token_span(tok, p.ids, text, at, at + needle.size());
  std::tie(p.value_begin, p.value_end) = token_span(tok, p.ids, text, v, v + value.size());
  return p;
}

}  // namespace headroom::analysis
