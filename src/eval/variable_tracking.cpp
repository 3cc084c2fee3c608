#include "eval/variable_tracking.h"

#include "eval/draws.h"
#include "eval/niah.h"
#include "eval/text.h"

#include <algorithm>
#include <set>

namespace headroom::eval {
namespace {

constexpr std::string_view kUpper = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";

struct Chain {
  std::vector<std::string> vars;        // hops + 1 distinct names
  std::vector<std::string> statements;  // in chain order
  std::string value;
};

Chain draw_chain(Draws& d, int name_len) {
  Chain c;
  std::set<std::string> seen;
  while (static_cast<int>(c.vars.size()) < kVtHops + 1) {
    std::string v = d.letters(name_len, kUpper);
    if (seen.insert(v).second) c.vars.push_back(std::move(v));
  }
  c.value = std::to_string(d.between(10000, 99998));  // np.random.randint(10000, 99999)
  c.statements.push_back("VAR " + c.vars[0] + " = " + c.value);
  for (int j = 0; j < kVtHops; ++j)
    c.statements.push_back("VAR " + c.vars[static_cast<size_t>(j + 1)] + " = VAR " + c.vars[static_cast<size_t>(j)] +
                           " ");
  return c;
}

// RULER's layout: noise lines (each ending in a newline) with the statements inserted in order at
// sorted random positions, all joined by spaces.
std::string chain_context(Draws& d, const Chain& c, int64_t n_noise) {
  std::vector<std::string> parts(static_cast<size_t>(n_noise), std::string(data::kNoiseLine) + "\n");
  std::vector<int64_t> pos;
  for (size_t j = 0; j < c.statements.size(); ++j) pos.push_back(d.below(n_noise + 1));
  std::sort(pos.begin(), pos.end());
  for (size_t j = 0; j < c.statements.size(); ++j)
    parts.insert(parts.begin() + static_cast<std::ptrdiff_t>(pos[j] + static_cast<int64_t>(j)), c.statements[j]);
  return replace_all(join(parts, " "), ". \n", ".\n");
}

std::string question(const std::string& context, const Chain& c) {
  return fill(kVtTemplate, {{"query", c.value}, {"context", context}});
}

std::string answer_prefix(const Chain& c) {
  return fill(kVtAnswerPrefix, {{"num_v", std::to_string(kVtHops + 1)}, {"query", c.value}});
}

}  // namespace

Builder vt_builder(const std::string& task, const SampleKey& key) {
  auto build = [task, key](int64_t n) {
    Draws d = sample_draws(key.seed, task, key.length, key.index);
    const Chain demo = draw_chain(d, 3), chain = draw_chain(d, 5);
    const std::string demo_text = question(chain_context(d, demo, kVtDemoNoiseLines), demo) + answer_prefix(demo) +
                                  " " + join(demo.vars, " ") + "\n\n";
    Sample s;
    s.prompt = demo_text + question(chain_context(d, chain, n), chain);
    s.answer_prefix = answer_prefix(chain);
    s.references = chain.vars;
    return s;
  };
  return {build, 1, int64_t{1} << 24, nullptr};  // at least one haystack unit (niah.cpp says why)
}

}  // namespace headroom::eval
