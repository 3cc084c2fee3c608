// The configuration layer: precedence of sources, printing round trips, and every refusal path
// names the file (or command line), the section and the key.
#include "app/cli.h"
#include "config/ini_text.h"
#include "config/keys.h"
#include "config/load.h"
#include "config/spike_rules.h"
#include "util/error.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

using namespace headroom;
using namespace headroom::config;
namespace fs = std::filesystem;

namespace {

struct Fixture {
  Config cfg;
  Schema schema = make_schema(cfg, kModel | kTrain | kData);
  po::options_description app{"app"};
  Parsed parsed;

  Fixture() { app.add_options()("config", po::value<std::vector<std::string>>()->composing(), ""); }

  void parse(std::vector<std::string> args, std::vector<IniText> bases = {}) {
    std::vector<const char*> argv{"test"};
    for (auto& a : args) argv.push_back(a.c_str());
    parsed = parse_config(static_cast<int>(argv.size()), argv.data(), app, schema, bases);
    validate(cfg, kModel | kTrain | kData, schema, parsed);
  }
};

std::string write_ini(const std::string& name, const std::string& text) {
  const fs::path dir = fs::temp_directory_path() / "headroom_test_config";
  fs::create_directories(dir);
  const fs::path p = dir / name;
  std::ofstream(p) << text;
  return p.string();
}

// Runs f, expects headroom::Error, and checks that every needle occurs in the message.
template <class F>
void expect_error(F f, std::initializer_list<std::string> needles) {
  try {
    f();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const auto& n : needles) EXPECT_NE(msg.find(n), std::string::npos) << "'" << n << "' not in: " << msg;
  }
}

}  // namespace

TEST(Config, DefaultsAreValid) {
  Fixture f;
  f.parse({});
  EXPECT_EQ(f.cfg.model.n_heads, 4);
  EXPECT_EQ(f.cfg.model.qk_norm, QkNorm::kNone);
  EXPECT_EQ(origin_of(f.parsed, "model.n_heads"), "default");
}

TEST(Config, LaterFilesOverrideEarlierAndCommandLineWins) {
  const auto a = write_ini("a.ini", "[model]\nn_heads = 8\nn_kv_heads = 2\nd_model = 128\n");
  const auto b = write_ini("b.ini", "[model]\nn_heads = 16\n");
  Fixture f;
  f.parse({"--config", a, "--config", b, "--model.n_kv_heads", "4"});
  EXPECT_EQ(f.cfg.model.n_heads, 16);
  EXPECT_EQ(f.cfg.model.n_kv_heads, 4);
  EXPECT_EQ(f.cfg.model.d_model, 128);
  EXPECT_EQ(origin_of(f.parsed, "model.n_heads"), "config file " + b);
  EXPECT_EQ(origin_of(f.parsed, "model.d_model"), "config file " + a);
  EXPECT_EQ(origin_of(f.parsed, "model.n_kv_heads"), "command line");
}

TEST(Config, BaseTextHasLowestPrecedence) {
  const auto a = write_ini("base_override.ini", "[model]\nrope_base_full = 8000000\n");
  Fixture f;
  f.parse({"--config", a}, {IniText{"checkpoint x.h5", "[model]\nrope_base_full = 500000\nd_model = 96\n"}});
  EXPECT_EQ(f.cfg.model.rope_base_full, 8e6);
  EXPECT_EQ(f.cfg.model.d_model, 96);
  EXPECT_EQ(origin_of(f.parsed, "model.d_model"), "checkpoint x.h5");
}

TEST(Config, PrintRoundTrip) {
  Fixture f;
  f.parse({"--model.rope_base_full", "123456.789", "--model.qk_norm", "head", "--model.layer_pattern", "SSF",
           "--model.window", "7", "--train.seq_len", "64", "--model.norm_eps", "1e-5", "--model.tie_embeddings",
           "true"});
  const std::string ini = to_ini(f.schema);
  Fixture g;
  g.parse({}, {IniText{"printed", ini}});
  EXPECT_EQ(to_ini(g.schema), ini);
  EXPECT_EQ(g.cfg.model.rope_base_full, 123456.789);
  EXPECT_EQ(g.cfg.model.norm_eps, 1e-5);
  EXPECT_EQ(g.cfg.model.qk_norm, QkNorm::kHead);  // a choice key reads back as its enum
  EXPECT_TRUE(g.cfg.model.tie_embeddings);
  EXPECT_EQ(g.cfg.model.layer_pattern, "SSF");
}

TEST(Config, UnknownKeyInFileNamesFileSectionKeyAndSuggests) {
  const auto a = write_ini("unknown.ini", "[model]\nn_head = 8\n");
  expect_error([&] { Fixture().parse({"--config", a}); }, {a, "n_head", "[model]", "did you mean 'model.n_heads'"});
}

TEST(Config, UnknownSectionIsRefused) {
  const auto a = write_ini("unknown_section.ini", "[modle]\nn_heads = 8\n");
  expect_error([&] { Fixture().parse({"--config", a}); }, {a, "[modle]", "n_heads"});
}

TEST(Config, UnknownCommandLineOption) {
  expect_error([&] { Fixture().parse({"--model.nheads", "4"}); }, {"command line", "model.nheads", "model.n_heads"});
}

TEST(Config, WrongTypeNamesFileAndKey) {
  const auto a = write_ini("wrong_type.ini", "[model]\nn_heads = four\n");
  expect_error([&] { Fixture().parse({"--config", a}); }, {a, "n_heads", "[model]", "four"});
  expect_error([&] { Fixture().parse({"--train.seq_len", "1.5"}); }, {"command line", "seq_len", "[train]"});
}

TEST(Config, MissingConfigFile) {
  expect_error(
      [&] {
        Fixture().parse({"--config", "/nonexistent/x.ini"});
      },
      {"/nonexistent/x.ini", "cannot be opened"});
}

TEST(Config, OutOfRangeNamesKeyAndOrigin) {
  const auto a = write_ini("range.ini", "[model]\nhead_dim_qk = 2048\n");
  expect_error([&] { Fixture().parse({"--config", a}); }, {"model.head_dim_qk = 2048", a, "[1, 1024]"});
  expect_error(
      [&] {
        Fixture().parse({"--model.n_layers", "0"});
      },
      {"model.n_layers = 0", "command line", "at least 1"});
}

TEST(Config, ChoicesAreChecked) {
  expect_error([&] { Fixture().parse({"--model.qk_norm", "both"}); }, {"model.qk_norm = both", "none, layer, head"});
  expect_error([&] { Fixture().parse({"--model.norm_order", "sandwich"}); }, {"model.norm_order", "pre, post"});
  expect_error(
      [&] {
        Fixture().parse({"--train.schedule", "step"});
      },
      {"train.schedule = step", "cosine, wsd, linear, constant"});
  expect_error([&] { Fixture().parse({"--model.layer_pattern", "SSXF"}); }, {"model.layer_pattern", "'X'"});
}

TEST(Config, HeadsMustDivideIntoKvHeads) {
  const auto a = write_ini("gqa.ini", "[model]\nn_heads = 6\n");
  expect_error(
      [&] {
        Fixture().parse({"--config", a, "--model.n_kv_heads", "4"});
      },
      {"model.n_heads = 6", a, "model.n_kv_heads = 4", "command line"});
}

TEST(Config, WindowLongerThanSequenceIsRefused) {
  expect_error(
      [&] {
        Fixture().parse({"--model.layer_pattern", "SF", "--model.window", "1024", "--train.seq_len", "512"});
      },
      {"model.window = 1024", "train.seq_len = 512"});
  // The same window is fine when no layer slides.
  Fixture f;
  f.parse({"--model.layer_pattern", "F", "--model.window", "1024", "--train.seq_len", "512"});
}

TEST(Config, SpikeRulesAreBuiltinsOrWrittenOut) {
  Fixture f;
  f.parse({"--train.spike_rules", "paper,tight:500:5.5:one:200"});
  const auto rules = parse_spike_rules(f.cfg.train.spike_rules);
  ASSERT_EQ(rules.size(), 2u);
  EXPECT_EQ(rules[0].name, "paper");
  EXPECT_EQ(rules[0].lookback, 1000);
  EXPECT_EQ(rules[1].name, "tight");
  EXPECT_EQ(rules[1].window, 500);
  EXPECT_EQ(rules[1].sigmas, 5.5);
  EXPECT_FALSE(rules[1].two_sided);
  EXPECT_EQ(rules[1].lookback, 200);
  EXPECT_EQ(parse_spike_rules(Fixture().cfg.train.spike_rules).size(), 2u);  // the default: paper, olmo
  expect_error(
      [&] {
        Fixture().parse({"--train.spike_rules", "zscore"});
      },
      {"train.spike_rules", "'zscore' is not a built-in rule"});
  expect_error(
      [&] {
        Fixture().parse({"--train.spike_rules", "t:500:5:both:200"});
      },
      {"train.spike_rules", "name:window:sigmas:one|two:lookback"});
  expect_error([&] { Fixture().parse({"--train.spike_rules", "t:500:5:two:1"}); }, {"train.spike_rules", "lookback 1"});
  expect_error([&] { Fixture().parse({"--train.spike_rules", "olmo,olmo"}); }, {"'olmo' twice"});
  expect_error([&] { Fixture().parse({"--train.spike_rules", ""}); }, {"at least one rule"});
}

TEST(Config, RopeDimsMustFitTheHead) {
  expect_error(
      [&] {
        Fixture().parse({"--model.rope_dims_full", "96", "--model.head_dim_qk", "64"});
      },
      {"model.rope_dims_full = 96", "model.head_dim_qk = 64"});
  expect_error([&] { Fixture().parse({"--model.rope_dims_full", "31"}); }, {"model.rope_dims_full = 31", "even"});
  expect_error([&] { Fixture().parse({"--model.head_dim_qk", "33"}); }, {"model.head_dim_qk = 33", "odd"});
  Fixture f;  // odd head with NoPE is fine
  f.parse({"--model.head_dim_qk", "33", "--model.rope_dims_full", "0"});
}

TEST(Config, YarnBetasOrdered) {
  expect_error(
      [&] {
        Fixture().parse({"--model.rope_scaling", "yarn", "--model.yarn_beta_fast", "1", "--model.yarn_beta_slow", "2"});
      },
      {"model.yarn_beta_fast = 1", "model.yarn_beta_slow = 2"});
}

TEST(Config, Llama3FrequencyFactorsOrdered) {
  expect_error(
      [&] {
        Fixture().parse({"--model.rope_scaling", "llama3", "--model.llama3_low_freq_factor", "4",
                         "--model.llama3_high_freq_factor", "4"});
      },
      {"model.llama3_high_freq_factor = 4", "model.llama3_low_freq_factor = 4"});
  Fixture().parse({"--model.rope_scaling", "llama3"});  // Llama 3.1's own 8 / 1 / 4 / 8192
}

TEST(Config, AllProblemsAreListedAtOnce) {
  try {
    Fixture().parse({"--model.n_layers", "0", "--model.qk_norm", "x"});
    FAIL();
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("model.n_layers"), std::string::npos);
    EXPECT_NE(msg.find("model.qk_norm"), std::string::npos);
  }
}

TEST(Config, RepeatedCommandLineKeyTakesTheLastValue) {
  Fixture f;
  f.parse({"--model.n_heads", "8", "--model.n_kv_heads", "2", "--model.n_heads", "16"});
  EXPECT_EQ(f.cfg.model.n_heads, 16);
}

// --init is read before the full parse (its checkpoint's configuration is the base layer), in both
// spellings Boost accepts: "--init=PATH" used to be missed, so the checkpoint's model was not
// inherited and the defaults were used instead.
TEST(FlagValue, BothSpellingsOfAFlagBeforeTheParse) {
  const char* a[] = {"evaluate", "--eval.samples", "3", "--init", "runs/x", "--force"};
  EXPECT_EQ(headroom::app::flag_value(6, const_cast<char**>(a), "--init"), "runs/x");
  const char* b[] = {"evaluate", "--init=runs/y/pretrain", "--eval.samples", "3"};
  EXPECT_EQ(headroom::app::flag_value(4, const_cast<char**>(b), "--init"), "runs/y/pretrain");
  const char* c[] = {"evaluate", "--initial", "z", "--init"};  // another flag; a flag without its value
  EXPECT_EQ(headroom::app::flag_value(4, const_cast<char**>(c), "--init"), "");
}

// The one reader of stored configuration text (config/ini_text.h), with Boost's comment rules.
TEST(IniText, EntriesValuesMapsAndSectionFilters) {
  const std::string t =
      "# resolved configuration\n[model]\nn_heads = 8 # inline, as Boost reads it\n; a comment line\n"
      "qk_norm = layer\n[analyze]\nfinding = a: x == 1 over x == 2\nfinding = b: y == 1 over y == 2\n"
      "[parallel]\ntp = 2\n[model]\nn_heads = 4\n";
  const auto e = headroom::config::ini_entries(t);
  ASSERT_EQ(e.size(), 6u);
  EXPECT_EQ(e[0].section, "model");
  EXPECT_EQ(e[0].key, "n_heads");
  EXPECT_EQ(e[0].value, "8");
  EXPECT_EQ(headroom::config::ini_value(t, "model", "n_heads"), std::optional<std::string>("4")) << "the last wins";
  EXPECT_EQ(headroom::config::ini_value(t, "parallel", "n_heads"), std::nullopt);
  const auto m = headroom::config::ini_map(t);
  EXPECT_EQ(m.at("analyze.finding"), "a: x == 1 over x == 2\nb: y == 1 over y == 2");
  EXPECT_EQ(m.at("parallel.tp"), "2");
  const std::string no_parallel = headroom::config::ini_without(t, {"parallel", "model.qk_norm"});
  EXPECT_EQ(no_parallel.find("tp = 2"), std::string::npos);
  EXPECT_EQ(no_parallel.find("qk_norm"), std::string::npos) << "a dropped key";
  EXPECT_NE(no_parallel.find("n_heads = 4"), std::string::npos) << "the section's other keys stay";
  EXPECT_NE(no_parallel.find("# resolved configuration\n[model]\nn_heads = 8 # inline"), std::string::npos)
      << "the other lines verbatim";
  EXPECT_EQ(
      headroom::config::ini_only_sections(t, {"model"}),
      "[model]\nn_heads = 8 # inline, as Boost reads it\n; a comment line\nqk_norm = layer\n[model]\nn_heads = 4\n");
}
