#include "eval/multiple_choice.h"

#include "util/error.h"

#include <nlohmann/json.hpp>

#include <fstream>

namespace headroom::eval {

std::vector<McItem> read_mc_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) fail("cannot read the multiple-choice file ", path.string(), " (eval.mc_file)");
  std::vector<McItem> items;
  std::string line;
  int64_t no = 0;
  while (std::getline(in, line)) {
    ++no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = cat(path.string(), " line ", no);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const std::exception& e) {
      fail(where, ": not JSON (", e.what(), ")");
    }
    if (!j.is_object() || !j.contains("query") || !j["query"].is_string() || !j.contains("choices") ||
        !j["choices"].is_array() || !j.contains("gold") || !j["gold"].is_number_integer())
      fail(where, ": expected {\"query\": string, \"choices\": [string, ...], \"gold\": integer}");
    McItem item{j["query"].get<std::string>(), {}, j["gold"].get<int64_t>()};
    for (const auto& c : j["choices"]) {
      if (!c.is_string()) fail(where, ": every choice must be a string");
      item.choices.push_back(c.get<std::string>());
    }
    if (item.choices.size() < 2) fail(where, ": needs at least 2 choices");
    if (item.gold < 0 || item.gold >= static_cast<int64_t>(item.choices.size()))
      fail(where, ": gold = ", item.gold, " is not a choice index (0..", item.choices.size() - 1, ")");
    items.push_back(std::move(item));
  }
  if (items.empty()) fail("the multiple-choice file ", path.string(), " (eval.mc_file) holds no items");
  return items;
}

std::pair<std::vector<int32_t>, std::vector<int32_t>> encode_pair(PromptBuilder& prompts, const std::string& query,
                                                                  const std::string& choice) {
  std::string context = prompts.text(query, ""), continuation = choice;
  const size_t kept = context.find_last_not_of(" \t\n\r\v\f") + 1;  // Python's rstrip(); npos + 1 == 0
  continuation = context.substr(kept) + continuation;
  context.resize(kept);
  std::vector<int32_t> whole = prompts.bos, ctx = prompts.bos;
  prompts.encoder.encode(context + continuation, whole);
  prompts.encoder.encode(context, ctx);
  return {ctx, std::vector<int32_t>(whole.begin() + static_cast<std::ptrdiff_t>(ctx.size()), whole.end())};
}

int64_t argmax(const std::vector<double>& v) {
  int64_t best = 0;
  for (size_t i = 1; i < v.size(); ++i)
    if (v[i] > v[static_cast<size_t>(best)]) best = static_cast<int64_t>(i);
  return best;
}

McResult score_mc_item(Decoder& dec, PromptBuilder& prompts, const McItem& item) {
  McResult r;
  std::vector<double> norm;
  for (const auto& choice : item.choices) {
    auto [ctx, cont] = encode_pair(prompts, item.query, choice);
    if (choice.empty() || cont.empty())
      fail("multiple choice: choice '", choice, "' of query '", item.query, "' encodes to no tokens");
    std::vector<int32_t> ids = ctx;
    ids.insert(ids.end(), cont.begin(), cont.end());
    double ll = 0;
    for (double lp : token_logprobs(dec, ids, static_cast<int64_t>(ctx.size()) - 1)) ll += lp;
    r.loglik.push_back(ll);
    norm.push_back(ll / static_cast<double>(choice.size()));
  }
  r.acc = argmax(r.loglik) == item.gold ? 1 : 0;
  r.acc_norm = argmax(norm) == item.gold ? 1 : 0;
  return r;
}

}  // namespace headroom::eval
