#include "eval/qa.h"

#include "eval/draws.h"
#include "eval/text.h"

#include <functional>
#include <set>
#include <utility>

namespace headroom::eval {
namespace {

const std::vector<std::string> kOnsets = {"b",  "c",  "d",  "f",  "g",  "h",  "j",  "k",  "l",  "m",  "n",
                                          "p",  "r",  "s",  "t",  "v",  "w",  "z",  "br", "cr", "dr", "gr",
                                          "pr", "tr", "st", "sh", "ch", "th", "fl", "gl", "pl", "sl"};
const std::vector<std::string> kVowels = {"a", "e", "i", "o", "u", "ai", "ea", "ou", "io"};
const std::vector<std::string> kCodas = {"", "", "", "n", "r", "l", "s", "th", "m", "nd", "rk", "st"};
const std::vector<std::string> kTownEnds = {"", "ford", "ton", "ville", "mouth", "bury", "field", "haven"};
const std::vector<std::string> kOrgKinds = {"Works",         "Company",      "Mills",     "Press", "Foundry",
                                            "Trading House", "Laboratories", "Shipyards", "Bank"};
const std::vector<std::string> kProfessions = {
    "baker",    "carpenter", "chemist",    "surveyor",   "teacher",     "pilot",        "weaver", "printer",
    "engineer", "librarian", "gardener",   "tailor",     "potter",      "sailor",       "nurse",  "architect",
    "jeweller", "miller",    "clockmaker", "bookbinder", "glassblower", "cartographer", "brewer", "translator"};

// Unique invented names within one sample.
struct Names {
  Draws& d;
  std::set<std::string> seen;

  std::string word(int syllables) {
    std::string w;
    for (int i = 0; i < syllables; ++i)
      w += d.pick(kOnsets) + d.pick(kVowels) + (i + 1 == syllables ? d.pick(kCodas) : "");
    w[0] = static_cast<char>(w[0] - 'a' + 'A');
    return w;
  }
  std::string unique(const std::function<std::string()>& make) {
    for (;;) {
      std::string s = make();
      if (seen.insert(s).second) return s;
    }
  }
  std::string person() {
    return unique([&] { return word(2) + " " + word(static_cast<int>(d.between(2, 3))); });
  }
  std::string town() {
    return unique([&] { return word(2) + d.pick(kTownEnds); });
  }
  std::string org() {
    return unique([&] { return word(2) + " " + d.pick(kOrgKinds); });
  }
};

std::string thing(Draws& d, const Resources& res) { return d.pick(res.adjectives) + " " + d.pick(res.nouns); }
std::string year(Draws& d) { return std::to_string(d.between(1820, 1990)); }

struct Person {
  std::string name, town, org, job, doc;
};

// qa_1 document: one person, three facts.
Person person_doc(Names& n, const Resources& res) {
  Person p{n.person(), n.town(), n.org(), n.d.pick(kProfessions), ""};
  p.doc = p.name + " was born in " + p.town + " in " + year(n.d) + ". After school " + p.name + " trained as a " +
          p.job + " and later worked at " + p.org + ". " + p.name + " is known among friends for a " + thing(n.d, res) +
          ".";
  return p;
}

// qa_2 documents: who founded a company, and where a company is.
std::string founder_doc(const std::string& person, const std::string& org, Draws& d, const Resources& res) {
  return person + "\n" + person + " founded " + org + " in " + year(d) + ". Before that " + person +
         " had worked as a " + d.pick(kProfessions) + ", and is still remembered for a " + thing(d, res) + ".";
}
std::string company_doc(const std::string& org, const std::string& town, Draws& d, const Resources& res) {
  return org + "\n" + org + " is headquartered in " + town + ". It employs " + std::to_string(d.between(12, 4000)) +
         " people and is best known for its work on the " + thing(d, res) + ".";
}

struct QaPlan {
  std::vector<std::string> gold_docs;
  std::string question, answer;
};

QaPlan plan_one_hop(Names& n, const Resources& res) {
  const Person p = person_doc(n, res);
  if (n.d.below(2) == 0) return {{p.doc}, "In which town was " + p.name + " born?", p.town};
  return {{p.doc}, "Where did " + p.name + " work?", p.org};
}

QaPlan plan_two_hop(Names& n, const Resources& res) {
  const std::string person = n.person(), org = n.org(), town = n.town();
  return {{founder_doc(person, org, n.d, res), company_doc(org, town, n.d, res)},
          "In which town is the company founded by " + person + " headquartered?",
          town};
}

// Distractor i: qa_1, another person; qa_2, alternately a founder and that founder's company, so
// both hops have distractors.
std::string distractor(Names& n, int hops, const Resources& res, int64_t i, std::string& pending) {
  if (hops == 1) return person_doc(n, res).doc;
  if (i % 2 == 1 && !pending.empty()) return std::exchange(pending, "");
  const std::string person = n.person(), org = n.org();
  pending = company_doc(org, n.town(), n.d, res);
  return founder_doc(person, org, n.d, res);
}

}  // namespace

Builder qa_builder(const std::string& task, int hops, const Resources& res, const SampleKey& key) {
  auto build = [task, hops, &res, key](int64_t n_docs) {
    Draws d = sample_draws(key.seed, task, key.length, key.index);
    Names names{d, {}};
    const QaPlan plan = hops == 1 ? plan_one_hop(names, res) : plan_two_hop(names, res);
    std::vector<std::string> docs = plan.gold_docs;
    std::string pending;
    for (int64_t i = 0; static_cast<int64_t>(docs.size()) < n_docs; ++i)
      docs.push_back(distractor(names, hops, res, i, pending));
    d.shuffle(docs);
    std::vector<std::string> parts;
    for (size_t i = 0; i < docs.size(); ++i) parts.push_back("Document " + std::to_string(i + 1) + ":\n" + docs[i]);
    Sample s;
    s.prompt = fill(kQaTemplate, {{"query", plan.question}, {"context", join(parts, "\n\n")}});
    s.answer_prefix = kQaAnswerPrefix;
    s.references = {plan.answer};
    return s;
  };
  const int64_t gold = hops == 1 ? 1 : 2;
  return {build, gold, int64_t{1} << 22, nullptr};
}

}  // namespace headroom::eval
