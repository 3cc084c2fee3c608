#include "eval/json_kv.h"

#include "eval/draws.h"
#include "eval/text.h"

#include <set>

namespace headroom::eval {
namespace {

// Lost in the Middle's layout: {"k1": "v1",\n "k2": "v2",\n ... "kn": "vn"}
std::string json_object(const std::vector<std::pair<std::string, std::string>>& kv) {
  std::string s;
  for (size_t i = 0; i < kv.size(); ++i) {
    s += i == 0 ? "{" : " ";
    s += "\"" + kv[i].first + "\": \"" + kv[i].second + "\"";
    s += i + 1 == kv.size() ? "}" : ",\n";
  }
  return kv.empty() ? "{}" : s;
}

}  // namespace

Builder json_kv_builder(const std::string& task, const SampleKey& key) {
  auto build = [task, key](int64_t n) {
    Draws d = sample_draws(key.seed, task, key.length, key.index);
    const double depth = sweep_depth(key.index, sweep_offset(key.seed, task, key.length));
    // Pair 0 is queried, 1 and 2 are the demonstrations; pairs are drawn one after another so
    // pair i is the same whatever n is.
    std::vector<std::pair<std::string, std::string>> kv;
    for (int64_t i = 0; i < n; ++i) kv.emplace_back(d.uuid(), d.uuid());
    const auto query = kv[0];
    std::vector<std::pair<std::string, std::string>> demos(kv.begin() + 1, kv.begin() + 1 + kJsonKvDemos);
    // Place the query at its depth among the others, which keep a random order.
    std::vector<std::pair<std::string, std::string>> rest(kv.begin() + 1, kv.end());
    d.shuffle(rest);
    rest.insert(rest.begin() + static_cast<std::ptrdiff_t>(depth * static_cast<double>(rest.size() + 1)), query);
    std::string demo_text;
    for (const auto& [k, v] : demos) demo_text += "Key: \"" + k + "\"\nCorresponding value: \"" + v + "\"\n\n";
    Sample s;
    s.prompt = "JSON data:\n" + json_object(rest) + "\n\n" + kJsonKvInstruction + "\n\n" + demo_text + "Key: \"" +
               query.first + "\"";
    s.answer_prefix = "\nCorresponding value:";
    s.references = {query.second};
    return s;
  };
  return {build, 1 + kJsonKvDemos, int64_t{1} << 22, nullptr};
}

}  // namespace headroom::eval
