#include "data/synthetic.h"

#include "config/task_names.h"
#include "data/prompt_template.h"
#include "data/ruler_niah.h"
#include "util/error.h"
#include "util/random.h"
#include "util/text.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <optional>
#include <set>

namespace headroom::data {
namespace {

using Rng = SplitMix64;

constexpr std::array<const char*, 40> kAdjectives{
    "quiet",  "bright", "hollow", "ancient", "silver",  "frozen", "gentle", "crimson",  "rapid",   "humble",
    "golden", "narrow", "wooden", "bitter",  "distant", "hidden", "velvet", "restless", "shallow", "sturdy",
    "amber",  "brisk",  "clever", "dusty",   "eager",   "faint",  "grand",  "hasty",    "idle",    "jolly",
    "keen",   "lively", "mellow", "noble",   "olive",   "proud",  "rustic", "solemn",   "tidy",    "vivid"};
constexpr std::array<const char*, 40> kNouns{
    "river",   "lantern", "harbor", "meadow",  "falcon",  "compass", "orchard", "anchor",  "candle", "glacier",
    "thimble", "castle",  "pepper", "violin",  "ladder",  "island",  "marble",  "forest",  "kettle", "beacon",
    "canyon",  "pillow",  "saddle", "tunnel",  "garden",  "helmet",  "jacket",  "ribbon",  "mirror", "bucket",
    "cottage", "feather", "quarry", "spindle", "trumpet", "wagon",   "cabinet", "dolphin", "engine", "fountain"};
constexpr const char* kNoise =
    " The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again.";

std::string hex_string(Rng& r, int n) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s(static_cast<size_t>(n), '0');
  for (auto& c : s) c = kHex[r.below(16)];
  return s;
}

std::string digits(Rng& r, int n) {
  std::string s(static_cast<size_t>(n), '0');
  s[0] = static_cast<char>('1' + r.below(9));
  for (size_t i = 1; i < s.size(); ++i) s[i] = static_cast<char>('0' + r.below(10));
  return s;
}

// RFC 4122 version 4, as evaluate draws them (eval/draws.cpp).
std::string uuid(Rng& r) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  for (int i = 0; i < 32; ++i) {
    if (i == 8 || i == 12 || i == 16 || i == 20) s += '-';
    s += i == 12 ? '4' : i == 16 ? kHex[8 + r.below(4)] : kHex[r.below(16)];
  }
  return s;
}

std::string upper_name(Rng& r) {
  std::string s(5, 'A');
  for (auto& c : s) c = static_cast<char>('A' + r.below(26));
  return s;
}

// Inserts each text (in order) before a whitespace at or after fraction u of the haystack; the
// fractions must be sorted. Insertions at the same place keep their order.
std::string insert_at_words(const std::string& hay, const std::vector<std::pair<double, std::string>>& items) {
  std::string out;
  size_t done = 0;
  auto word_end = [&hay](size_t p) {
    while (p < hay.size() && hay[p] != ' ' && hay[p] != '\n') ++p;
    return p;
  };
  for (const auto& [u, text] : items) {
    const size_t from = std::max(done, static_cast<size_t>(u * static_cast<double>(hay.size())));
    // After the end of a sentence when one is near, else after the current word.
    size_t p = word_end(from);
    for (size_t q = p; q < hay.size() && q < from + 240; q = word_end(q + 1))
      if (q > 0 && (hay[q - 1] == '.' || hay[q - 1] == '!' || hay[q - 1] == '?' || hay[q - 1] == '"')) {
        p = q;
        break;
      }
    out.append(hay, done, p - done);
    out += text;
    done = p;
  }
  out.append(hay, done, std::string::npos);
  return out;
}

// Draws everything an example needs except its size, so that retries with another size keep the
// same keys and values.
struct Draw {
  uint64_t key;
  Rng rng() const { return Rng{key}; }
};

// The copy warm-ups' one format: "<Items>: <list>\nRepeat the <items>." -> the list.
TaskExample repeat_example(const char* task, const std::string& label, const std::string& plural,
                           const std::string& list) {
  return TaskExample{task, label + ": " + list + "\nRepeat the " + plural + ".", list};
}

// The induction warm-up: a random string of digits and its repetition. Copying what followed the
// previous occurrence of the current token is the circuit retrieval is built on; a model learns it
// here before the needle tasks can teach anything (how much sooner: docs/studies/toy_ruler.md).
TaskExample build_copy(const Draw& d, int64_t n_digits) {
  Rng r = d.rng();
  std::string s;
  for (int64_t i = 0; i < std::max<int64_t>(n_digits, 1); ++i) {
    if (i) s += ' ';
    s += static_cast<char>('0' + r.below(10));
  }
  return repeat_example("copy", "Digits", "digits", s);
}

constexpr size_t kWordPool = kAdjectives.size() + kNouns.size();

std::vector<std::string> word_pool() {
  std::vector<std::string> pool(kAdjectives.begin(), kAdjectives.end());
  pool.insert(pool.end(), kNouns.begin(), kNouns.end());
  return pool;
}

TaskExample words_example(const std::string& s) { return repeat_example("words", "Words", "words", s); }

// The induction warm-up without ambiguity: distinct words (no word twice, so the token before each
// position names it), then their repetition. With digits, each of 10 symbols recurs every few
// positions and a previous-token + induction circuit cannot tell where to continue. The first n
// words of n + 1 are the n words (a partial Fisher-Yates shuffle), so examples grow by appending.
TaskExample build_words(const Draw& d, int64_t n_words) {
  Rng r = d.rng();
  std::vector<std::string> pool = word_pool();
  n_words = std::clamp<int64_t>(n_words, 1, static_cast<int64_t>(kWordPool));
  std::string s;
  for (int64_t i = 0; i < n_words; ++i) {
    std::swap(pool[static_cast<size_t>(i)],
              pool[static_cast<size_t>(i + r.below(static_cast<int64_t>(kWordPool) - i))]);
    if (i) s += ' ';
    s += pool[static_cast<size_t>(i)];
  }
  return words_example(s);
}

// The copy warm-up in the symbols of RULER's UUID needles: a list of UUIDs and its repetition. A
// UUID is ~30 tokens of hex letters, digits and dashes; models warmed up on digit copies and trained
// on 7-digit needles answered a UUID needle with 7 digits, skipping its letters.
TaskExample build_uuids(const Draw& d, int64_t n_uuids) {
  Rng r = d.rng();
  std::string s;
  for (int64_t i = 0; i < std::max<int64_t>(n_uuids, 1); ++i) {
    if (i) s += ' ';
    s += uuid(r);
  }
  return repeat_example("uuids", "UUIDs", "UUIDs", s);
}

TaskExample build_kv(const Draw& d, int64_t n_pairs) {
  Rng r = d.rng();
  n_pairs = std::max<int64_t>(n_pairs, 1);
  std::set<std::string> seen;
  std::vector<std::pair<std::string, std::string>> pairs;
  while (static_cast<int64_t>(pairs.size()) < n_pairs) {
    std::string k = hex_string(r, 8);
    if (!seen.insert(k).second) continue;
    pairs.emplace_back(k, hex_string(r, 8));
  }
  const int64_t q = Rng{mix64(d.key ^ 0x4b56ull)}.below(n_pairs);
  TaskExample ex{"kv", "Key-value pairs:\n", pairs[static_cast<size_t>(q)].second};
  for (const auto& [k, v] : pairs) ex.prompt += k + ": " + v + "\n";
  ex.prompt += "What is the value of " + pairs[static_cast<size_t>(q)].first + "?";
  return ex;
}

struct NeedleDraw {
  bool noise;
  std::vector<std::string> keys, values;
  std::vector<double> where;  // sorted fractions
  size_t query;
};

NeedleDraw draw_needles(const Draw& d, int max_needles, int min_needles = 1) {
  Rng r = d.rng();
  NeedleDraw n;
  n.noise = r.below(2) == 0;
  const int count = min_needles + static_cast<int>(r.below(max_needles - min_needles + 1));
  std::set<std::string> seen;
  while (static_cast<int>(n.keys.size()) < count) {
    std::string k = cat(kAdjectives[r.below(kAdjectives.size())], "-", kNouns[r.below(kNouns.size())]);
    if (!seen.insert(k).second) continue;
    n.keys.push_back(k);
    n.values.push_back(digits(r, 7));
    n.where.push_back(r.unit());
  }
  std::sort(n.where.begin(), n.where.end());
  n.query = static_cast<size_t>(r.below(count));
  return n;
}

TaskExample build_needle(const NeedleDraw& n, const std::string& hay) {
  std::vector<std::pair<double, std::string>> items;
  for (size_t i = 0; i < n.keys.size(); ++i)
    items.emplace_back(n.where[i], cat(" The special magic number for ", n.keys[i], " is ", n.values[i], "."));
  TaskExample ex{"needle", insert_at_words(hay, items), n.values[n.query]};
  ex.prompt += cat("\nWhat is the special magic number for ", n.keys[n.query], "?");
  return ex;
}

// RULER's own niah format (data/ruler_niah.h) with the same draws: the needles become RULER's
// sentence, the question RULER's singular template and the answer follows RULER's answer prefix,
// so evaluate's niah prompts are exactly what the model was trained to complete. Without the
// template's header (niah_keys) several needles fit a short window.
TaskExample build_niah(const NeedleDraw& n, const std::string& hay, bool header = true) {
  std::vector<std::pair<double, std::string>> items;
  for (size_t i = 0; i < n.keys.size(); ++i)
    items.emplace_back(n.where[i], cat(" ", niah_needle("numbers", n.keys[i], n.values[i])));
  auto [tmpl, prefix] = niah_template("numbers", 1);
  if (!header) tmpl.erase(0, tmpl.find("{context}"));
  const std::string& query = n.keys[n.query];
  TaskExample ex{header ? "niah" : "niah_keys",
                 fill(tmpl, {{"query", query}, {"context", insert_at_words(hay, items)}}), n.values[n.query]};
  ex.answer_prefix = fill(prefix, {{"query", query}});
  return ex;
}

// One of RULER's eight niah shapes (data/ruler_niah.h) with its keys, values and depths: what
// does not depend on the haystack's size.
struct MixDraw {
  RulerNiahShape shape;
  std::vector<std::string> keys;
  std::vector<std::vector<std::string>> values;
  std::vector<std::string> needles;  // RULER's sentences, shuffled
  std::vector<double> where;         // sorted fractions, one per needle
  std::vector<size_t> queried;
  uint64_t lines_key;  // the distractor needles of a "needles" haystack
};

template <class T>
void shuffle(std::vector<T>& v, Rng& r) {  // Fisher-Yates
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[static_cast<size_t>(r.below(static_cast<int64_t>(i)))]);
}

std::string draw_token(Rng& r, const std::string& type) {
  if (type == "uuids") return uuid(r);
  if (type == "numbers") return digits(r, 7);
  return cat(kAdjectives[r.below(kAdjectives.size())], "-", kNouns[r.below(kNouns.size())]);
}

MixDraw draw_mix(const Draw& d, const RulerNiahShape& shape) {
  Rng r = d.rng();
  MixDraw m{shape, {}, {}, {}, {}, {}, r.next()};
  const int n_keys = std::max(shape.n_keys, shape.n_queries);
  std::set<std::string> seen;
  while (static_cast<int>(m.keys.size()) < n_keys) {
    std::string k = draw_token(r, shape.key_type);
    if (seen.insert(k).second) m.keys.push_back(std::move(k));
  }
  for (const auto& k : m.keys) {
    m.values.emplace_back();
    for (int v = 0; v < shape.n_values; ++v) {
      m.values.back().push_back(draw_token(r, shape.value_type));
      m.needles.push_back(niah_needle(shape.value_type, k, m.values.back().back()));
    }
  }
  shuffle(m.needles, r);
  for (size_t i = 0; i < m.needles.size(); ++i) m.where.push_back(r.unit());
  std::sort(m.where.begin(), m.where.end());
  std::vector<size_t> order(m.keys.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  shuffle(order, r);
  m.queried.assign(order.begin(), order.begin() + shape.n_queries);
  return m;
}

// `n` lines of distractor needles (keys that are none of the real ones), as RULER's multikey_2/3
// haystack; line i is the same whatever n is.
std::string distractor_lines(const MixDraw& m, int64_t n) {
  Rng r{m.lines_key};
  const std::set<std::string> real(m.keys.begin(), m.keys.end());
  std::string out;
  for (int64_t i = 0; i < n;) {
    std::string k = draw_token(r, m.shape.key_type), v = draw_token(r, m.shape.value_type);
    if (real.count(k)) continue;
    out += cat(i ? "\n" : "", niah_needle(m.shape.value_type, k, v));
    ++i;
  }
  return out;
}

// RULER's prompt for the shape: needles at their depths (between sentences of text or noise, or
// as lines among distractor lines), RULER's template for queries x values answers, and the
// answer: every value of every queried key, in order, comma-separated (RULER scores each one as a
// substring of the prediction).
TaskExample build_niah_mix(const MixDraw& m, const std::string& hay) {
  std::vector<std::pair<double, std::string>> items;
  const bool lines = std::string(m.shape.haystack) == "needles";
  for (size_t i = 0; i < m.needles.size(); ++i) items.emplace_back(m.where[i], cat(lines ? "\n" : " ", m.needles[i]));
  std::vector<std::string> queries;
  std::string answer;
  for (size_t q : m.queried) {
    queries.push_back(m.keys[q]);
    for (const auto& v : m.values[q]) answer += (answer.empty() ? "" : ", ") + v;
  }
  const std::string query = niah_query(queries);
  const auto [tmpl, prefix] = niah_template(m.shape.value_type, m.shape.n_queries * m.shape.n_values);
  TaskExample ex{"niah_mix", fill(tmpl, {{"query", query}, {"context", insert_at_words(hay, items)}}), answer};
  ex.answer_prefix = fill(prefix, {{"query", query}});
  return ex;
}

struct ChainDraw {
  std::vector<std::string> names, distractor;
  std::string value, distractor_value;
  std::vector<double> where, where_distractor;
};

ChainDraw draw_chain(const Draw& d, int max_len, bool allow_distractor) {
  Rng r = d.rng();
  ChainDraw c;
  const int len = 2 + static_cast<int>(r.below(std::max(1, max_len - 1)));
  const bool distract = allow_distractor && r.below(2) == 0;
  std::set<std::string> seen;
  auto fresh = [&] {
    for (;;) {
      std::string s = upper_name(r);
      if (seen.insert(s).second) return s;
    }
  };
  for (int i = 0; i < len; ++i) c.names.push_back(fresh()), c.where.push_back(r.unit());
  c.value = digits(r, 5);
  if (distract) {
    for (int i = 0; i < 2; ++i) c.distractor.push_back(fresh()), c.where_distractor.push_back(r.unit());
    do c.distractor_value = digits(r, 5);
    while (c.distractor_value == c.value);
  }
  std::sort(c.where.begin(), c.where.end());
  std::sort(c.where_distractor.begin(), c.where_distractor.end());
  return c;
}

TaskExample build_vt(const ChainDraw& c, const std::string& hay) {
  std::vector<std::pair<double, std::string>> items;
  auto chain = [&](const std::vector<std::string>& names, const std::vector<double>& where, const std::string& value) {
    for (size_t i = 0; i < names.size(); ++i)
      items.emplace_back(where[i], cat(" VAR ", names[i], " = ", i == 0 ? value : names[i - 1], "."));
  };
  chain(c.names, c.where, c.value);
  chain(c.distractor, c.where_distractor, c.distractor_value);
  std::stable_sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string answer;
  for (const auto& n : c.names) answer += (answer.empty() ? "" : " ") + n;
  TaskExample ex{"vt", insert_at_words(hay, items), answer};
  ex.prompt += cat("\nWhich variables are assigned the value ", c.value, "?");
  return ex;
}

std::string docqa_question(const std::string& phrase) {
  return cat("\nIn the text above, which word comes right after \"", phrase, "\"?");
}

// Whitespace-separated words with a unique 4-word phrase before a random one; false when the text
// has none (too short or too repetitive).
bool build_docqa(const Draw& d, const std::string& text, TaskExample& ex) {
  std::vector<std::string> words;
  for (size_t i = 0; i < text.size();) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    size_t j = i;
    while (j < text.size() && !std::isspace(static_cast<unsigned char>(text[j]))) ++j;
    if (j > i) words.push_back(text.substr(i, j - i));
    i = j;
  }
  if (words.size() < 6) return false;
  Rng r = d.rng();
  // The last word may be cut by the haystack's end: never use it as the answer.
  const int64_t last = static_cast<int64_t>(words.size()) - 6;
  for (int attempt = 0; attempt < 16; ++attempt) {
    const int64_t i = r.below(last + 1);
    int occurrences = 0;
    for (int64_t k = 0; k + 4 <= static_cast<int64_t>(words.size()) && occurrences < 2; ++k)
      occurrences += std::equal(words.begin() + k, words.begin() + k + 4, words.begin() + i);
    if (occurrences != 1) continue;
    const std::string phrase = cat(words[i], " ", words[i + 1], " ", words[i + 2], " ", words[i + 3]);
    ex = TaskExample{"docqa", text + docqa_question(phrase), words[static_cast<size_t>(i + 4)]};
    return true;
  }
  return false;
}

}  // namespace

EncodedExample encode_example(const Tokenizer& tok, Encoder& enc, const TaskExample& ex, ExampleFormat fmt) {
  EncodedExample e{ex, bos_prefix(tok), 0};
  const bool own_prefix = !ex.answer_prefix.empty();
  if (fmt == ExampleFormat::kRaw) {
    enc.encode(ex.prompt + (own_prefix ? ex.answer_prefix : std::string(kRawAnswerPrefix)), e.tokens);
    e.answer_begin = static_cast<int64_t>(e.tokens.size());
    enc.encode(" " + ex.answer, e.tokens);
  } else {
    // As evaluate asks (eval/prompt.cpp): the answer prefix without its leading whitespace after
    // the response header, and the answer's separating space after the prefix.
    const size_t lead = ex.answer_prefix.find_first_not_of(" \n");
    const std::string prefix = own_prefix && lead != std::string::npos ? ex.answer_prefix.substr(lead) : "";
    enc.encode(format_prompt(PromptTemplate::kInstruction, ex.prompt) + prefix, e.tokens);
    e.answer_begin = static_cast<int64_t>(e.tokens.size());
    enc.encode(own_prefix ? " " + ex.answer : ex.answer, e.tokens);
  }
  e.tokens.push_back(eos_id(tok));
  return e;
}

void specials_to_newlines(const Tokenizer& tok, std::vector<int32_t>& tokens, size_t from) {
  const int32_t bos = bos_id(tok).value_or(-1), eos = eos_id(tok), pad = pad_id(tok), nl = newline_id(tok);
  for (size_t i = from; i < tokens.size(); ++i)
    if (tokens[i] == bos || tokens[i] == eos || tokens[i] == pad) tokens[i] = nl;
}

uint64_t sample_key(uint64_t seed, int64_t index, int64_t slot, uint64_t purpose) {
  return mix64(mix64(mix64(seed ^ mix64(purpose)) ^ static_cast<uint64_t>(index)) ^ static_cast<uint64_t>(slot));
}

TaskGenerator::TaskGenerator(const Tokenizer& tok) : tok_(tok), enc_(tok) {}

namespace {

// The tokenizer and format an example is encoded in, for the sizing loops below.
struct Encoding {
  const Tokenizer& tok;
  Encoder& enc;
  ExampleFormat fmt;
  EncodedExample operator()(const TaskExample& ex) const { return encode_example(tok, enc, ex, fmt); }
  int64_t size(const TaskExample& ex) const { return static_cast<int64_t>((*this)(ex).tokens.size()); }
};

// Counted tasks: an example of n items (pairs, digits, words, UUIDs).
struct CountedTask {
  SyntheticTask kind;
  TaskExample (*build)(const Draw&, int64_t n);
  int64_t max_items;  // 0: any number; else items differ in length and run out at this many
};

constexpr CountedTask kCountedTasks[] = {
    {SyntheticTask::kKv, build_kv, 0},
    {SyntheticTask::kCopy, build_copy, 0},
    {SyntheticTask::kWords, build_words, static_cast<int64_t>(kWordPool)},
    {SyntheticTask::kUuids, build_uuids, 0},
};

// Tokens per item from one and two items, then shrink until it fits.
EncodedExample make_counted(const CountedTask& task, const Draw& d, int64_t budget, const Encoding& encode) {
  const int64_t one = encode.size(task.build(d, 1)), two = encode.size(task.build(d, 2));
  const int64_t per = std::max<int64_t>(1, two - one);
  int64_t n = std::max<int64_t>(1, 1 + (budget - one) / per);
  for (;;) {
    EncodedExample e = encode(task.build(d, n));
    const int64_t len = static_cast<int64_t>(e.tokens.size());
    if (len <= budget && task.max_items > 0) {
      // Items differ in length, so the estimate can undershoot by several: add while they fit.
      for (; n < task.max_items; ++n) {
        EncodedExample more = encode(task.build(d, n + 1));
        if (static_cast<int64_t>(more.tokens.size()) > budget) break;
        e = std::move(more);
      }
      return e;
    }
    if (len <= budget || n == 1) return e;
    n = std::max<int64_t>(1, n - std::max<int64_t>(1, (len - budget + per - 1) / per));
  }
}

// The haystack of one example: about n tokens of RULER's noise or of the caller's text.
struct Haystack {
  const Tokenizer& tok;
  Encoder& enc;
  const HaystackFn& text;
  uint64_t key;
  std::vector<int32_t> noise_tokens = {};  // kNoise, encoded once
  int64_t line_tokens = 0;                 // of a distractor line, measured once

  std::string fill(bool noise, int64_t n) {
    std::vector<int32_t> tokens;
    if (noise) {
      if (noise_tokens.empty()) enc.encode(kNoise, noise_tokens);
      for (int64_t i = 0; i < n; ++i) tokens.push_back(noise_tokens[static_cast<size_t>(i) % noise_tokens.size()]);
    } else if (n > 0) {
      text(mix64(key ^ 0x4a59ull), n, tokens);
    }
    return decode(tok, tokens);
  }
  // About n tokens of distractor lines (RULER's multikey_2/3 haystack).
  std::string lines(const MixDraw& m, int64_t n) {
    if (line_tokens == 0) {
      std::vector<int32_t> t;
      enc.encode(distractor_lines(m, 8), t);
      line_tokens = std::max<int64_t>(1, static_cast<int64_t>(t.size()) / 8);
    }
    return distractor_lines(m, n / line_tokens);
  }
};

// Builds a haystack task's example with about n haystack tokens: `full` the example as drawn, else
// its smallest form (one needle, the shortest chain); false when none can be built (docqa without
// a usable phrase).
using HaystackBuild = bool (*)(const Draw&, bool full, int64_t n, Haystack&, TaskExample&);

bool make_needle(const Draw& d, bool full, int64_t n, Haystack& hay, TaskExample& ex) {
  const NeedleDraw needles = draw_needles(d, full ? 3 : 1);
  ex = build_needle(needles, hay.fill(needles.noise, n));
  return true;
}

bool make_niah(const Draw& d, bool full, int64_t n, Haystack& hay, TaskExample& ex) {
  const NeedleDraw needles = draw_needles(d, full ? 3 : 1);
  ex = build_niah(needles, hay.fill(needles.noise, n));
  return true;
}

// At least two needles: the nearest needle is not always the answer.
bool make_niah_keys(const Draw& d, bool full, int64_t n, Haystack& hay, TaskExample& ex) {
  const NeedleDraw needles = draw_needles(d, full ? 3 : 2, 2);
  ex = build_niah(needles, hay.fill(needles.noise, n), false);
  return true;
}

// One of RULER's shapes, drawn by the key; too big for the budget, a single needle in the same
// kind of haystack (noise, else text).
bool make_niah_mix(const Draw& d, bool full, int64_t n, Haystack& hay, TaskExample& ex) {
  const RulerNiahShape& shape =
      kRulerNiahShapes[static_cast<size_t>(mix64(d.key ^ 0x5e4aull) % kRulerNiahShapes.size())];
  const bool noise = std::string(shape.haystack) == "noise";
  const MixDraw m = draw_mix(d, full ? shape : kRulerNiahShapes[noise ? 0 : 1]);
  const std::string kind = m.shape.haystack;
  ex = build_niah_mix(m, kind == "needles" ? hay.lines(m, n) : hay.fill(kind == "noise", n));
  return true;
}

bool make_vt(const Draw& d, bool full, int64_t n, Haystack& hay, TaskExample& ex) {
  ex = build_vt(full ? draw_chain(d, 4, true) : draw_chain(d, 2, false), hay.fill(false, n));
  return true;
}

bool make_docqa(const Draw& d, bool, int64_t n, Haystack& hay, TaskExample& ex) {
  return build_docqa(d, hay.fill(false, n), ex);
}

struct HaystackTask {
  SyntheticTask kind;
  HaystackBuild build;
};

constexpr HaystackTask kHaystackTasks[] = {
    {SyntheticTask::kNeedle, make_needle},
    {SyntheticTask::kNiah, make_niah},
    {SyntheticTask::kNiahKeys, make_niah_keys},
    {SyntheticTask::kNiahMix, make_niah_mix},
    {SyntheticTask::kVt, make_vt},
    {SyntheticTask::kDocqa, make_docqa},
};

// Measures the fixed part (no haystack), then fills the rest with haystack text. docqa needs text
// to be built at all, so its fixed part is its question alone; without a usable phrase it returns
// nothing, and the caller makes a key-value example instead.
std::optional<EncodedExample> make_haystack(const HaystackTask& task, const Draw& d, int64_t budget, Haystack& hay,
                                            const Encoding& encode) {
  const bool docqa = task.kind == SyntheticTask::kDocqa;
  TaskExample ex;
  bool full = true;
  int64_t fixed = 0;
  if (docqa) {
    fixed = encode.size(TaskExample{"docqa", docqa_question("a b c d"), "x"});
  } else {
    task.build(d, true, 0, hay, ex);
    fixed = encode.size(ex);
    if (fixed > budget) {
      full = false;
      task.build(d, false, 0, hay, ex);
      fixed = encode.size(ex);
    }
  }
  int64_t n = std::max<int64_t>(0, budget - fixed);
  for (int attempt = 0; attempt < 12; ++attempt) {
    if (!task.build(d, full, n, hay, ex)) break;
    EncodedExample e = encode(ex);
    const int64_t len = static_cast<int64_t>(e.tokens.size());
    if (len <= budget || n == 0) return e;
    n = std::max<int64_t>(0, n - (len - budget) - attempt);
  }
  if (docqa) return std::nullopt;
  return encode(ex);  // the smallest: callers check the size
}

}  // namespace

EncodedExample TaskGenerator::make(SyntheticTask task, uint64_t key, int64_t budget, const HaystackFn& haystack,
                                   ExampleFormat fmt) {
  const Draw d{key};
  const Encoding encode{tok_, enc_, fmt};
  for (const CountedTask& t : kCountedTasks)
    if (t.kind == task) return make_counted(t, d, budget, encode);
  for (const HaystackTask& t : kHaystackTasks) {
    if (t.kind != task) continue;
    Haystack hay{tok_, enc_, haystack, key};
    if (auto e = make_haystack(t, d, budget, hay, encode)) return std::move(*e);
    return make(SyntheticTask::kKv, key, budget, haystack, fmt);  // docqa: not enough usable text
  }
  fail("synthetic task '", config::name_of(task), "' has no generator (tasks are ", config::synthetic_task_names(),
       ")");
}

int64_t TaskGenerator::min_tokens(SyntheticTask task, ExampleFormat fmt) {
  int64_t most = 0;
  const HaystackFn none = [](uint64_t, int64_t, std::vector<int32_t>&) {};
  const bool docqa = task == SyntheticTask::kDocqa;
  const SyntheticTask t = docqa ? SyntheticTask::kKv : task;  // docqa falls back to kv when text is short
  for (uint64_t k = 0; k < 32; ++k)
    most = std::max<int64_t>(most, static_cast<int64_t>(make(t, mix64(k + 17), 1, none, fmt).tokens.size()));
  if (docqa) most += 24;              // room for a few words of text besides the question
  if (task == SyntheticTask::kWords)  // one word of any length, not only the sampled ones
    for (const std::string& w : word_pool())
      most = std::max<int64_t>(most,
                               static_cast<int64_t>(encode_example(tok_, enc_, words_example(w), fmt).tokens.size()));
  return most;
}

SyntheticMixer::SyntheticMixer(MixerSpec spec, const Tokenizer& tok, int64_t seq_len)
    : spec_(std::move(spec)), seq_len_(seq_len), gen_(tok) {
  // A curriculum over synthetic examples that never occur would be ignored without a word.
  if (spec_.ratio <= 0 && spec_.warmup_samples > 0)
    fail(
        "data.warmup_steps > 0 with data.synthetic_ratio = 0: the warm-up replaces synthetic "
        "examples and there are none; set data.warmup_steps = 0 or a synthetic_ratio above 0");
  if (spec_.ratio <= 0) return;
  if (spec_.tasks.empty()) fail("data.synthetic_tasks names no task");
  if (spec_.min_len > seq_len + 1)
    fail("data.synthetic_min_len = ", spec_.min_len, " exceeds the window of train.seq_len + 1 = ", seq_len + 1,
         " tokens");
  if (spec_.warmup_samples > 0 && spec_.warmup_tasks.empty()) fail("data.warmup_steps > 0 needs data.warmup_tasks");
  if (spec_.warmup_samples > 0 && spec_.warmup_max_len > 0 && spec_.warmup_max_len < spec_.min_len)
    fail("data.warmup_max_len = ", spec_.warmup_max_len, " is below data.synthetic_min_len = ", spec_.min_len);
  const auto check_fits = [&](const std::vector<SyntheticTask>& tasks, const char* key) {
    for (const SyntheticTask t : tasks) {
      const int64_t m = gen_.min_tokens(t, ExampleFormat::kRaw);
      const std::string name = config::name_of(t);
      if (m > seq_len + 1)
        fail("synthetic task '", name, "' needs at least ", m,
             " tokens with this tokenizer but a "
             "window is train.seq_len + 1 = ",
             seq_len + 1, "; raise train.seq_len or drop '", name, "' from ", key);
    }
  };
  check_fits(spec_.tasks, "data.synthetic_tasks");
  if (spec_.warmup_samples > 0) check_fits(spec_.warmup_tasks, "data.warmup_tasks");
}

bool SyntheticMixer::selects(int64_t index) const {
  if (spec_.ratio <= 0) return false;
  const uint64_t h = sample_key(spec_.seed, index, 0, 0x5e1ec7ull);
  return static_cast<double>(h >> 11) * 0x1.0p-53 < spec_.ratio;
}

MixInfo SyntheticMixer::apply(int64_t index, int32_t* window, int32_t* targets) {
  MixInfo info;
  if (!selects(index)) return info;
  const int64_t W = seq_len_ + 1;
  Rng r{sample_key(spec_.seed, index, 1, 0x1e46ull)};
  const bool warmup = index < spec_.warmup_samples;
  // The warm-up's cap grows linearly from warmup_max_len to the window: a copy circuit learnt on
  // short copies alone scored worse on whole-window copies as it trained (RoPE on every
  // dimension: it never saw those distances), so the distances are widened step by step.
  int64_t hi = W;
  if (warmup && spec_.warmup_max_len > 0 && spec_.warmup_max_len < W)
    hi = spec_.warmup_max_len + (W - spec_.warmup_max_len) * index / spec_.warmup_samples;
  const int64_t lo = std::min(spec_.min_len, hi);
  const int64_t L = lo + r.below(hi - lo + 1);
  const auto& tasks = warmup ? spec_.warmup_tasks : spec_.tasks;
  const SyntheticTask task = tasks[static_cast<size_t>(r.below(static_cast<int64_t>(tasks.size())))];
  text_.assign(window + (W - L), window + W);
  specials_to_newlines(gen_.tokenizer(), text_);
  const HaystackFn hay = [this](uint64_t, int64_t n, std::vector<int32_t>& out) {
    out.insert(out.end(), text_.begin(), text_.begin() + std::min<int64_t>(n, static_cast<int64_t>(text_.size())));
  };
  const EncodedExample e = gen_.make(task, sample_key(spec_.seed, index, 2, 0x7a5cull), L, hay, ExampleFormat::kRaw);
  const int64_t n = static_cast<int64_t>(e.tokens.size());
  if (n > W) return info;  // cannot happen past the constructor's check; keep the text window
  const int64_t b = W - n;
  std::copy(e.tokens.begin(), e.tokens.end(), window + b);
  for (int64_t t = std::max<int64_t>(0, b - 1); t < seq_len_; ++t) {
    const bool loss = spec_.loss_on_prompt || t + 1 >= b + e.answer_begin;
    targets[t] = loss ? window[t + 1] : -1;
  }
  info = MixInfo{true, e.text.task, e.text.answer, b, b + e.answer_begin, W};
  return info;
}

}  // namespace headroom::data
