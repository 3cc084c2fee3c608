// data.mix: parsing, and the deterministic draw of each window's source (data/mixture.h).
#include "data/mixture.h"
#include "util/error.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace headroom;
using namespace headroom::data;

namespace {

std::string error_of_mix(const std::string& spec) {
  try {
    parse_mix(spec);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Mixture, ParsesNamesPathsAndNormalisesWeights) {
  const auto m = parse_mix("web=data/w:3,data/code/:1,/x/long:1");
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0].name, "web");
  EXPECT_EQ(m[0].path, "data/w");
  EXPECT_EQ(m[1].name, "code");
  EXPECT_EQ(m[2].name, "long");
  EXPECT_DOUBLE_EQ(m[0].weight, 0.6);
  EXPECT_DOUBLE_EQ(m[1].weight + m[2].weight, 0.4);
  EXPECT_NE(error_of_mix("a:1,b").find("'b'"), std::string::npos);
  EXPECT_NE(error_of_mix("a:0,b:1").find("positive"), std::string::npos);
  EXPECT_NE(error_of_mix("a:x").find("not a number"), std::string::npos);
  EXPECT_NE(error_of_mix("d/a:1,e/a:1").find("two sources are named 'a'"), std::string::npos);
}

// Over 1,000 steps of 8 windows every source's share is within 1% of its weight (relative), and
// over every prefix the count is within a few windows of n · weight: a low-discrepancy sequence,
// where independent random draws would wander by about sqrt(n · w).
TEST(Mixture, SharesFollowTheWeightsAtEveryPrefix) {
  for (const uint64_t seed : {1ull, 2ull, 77ull}) {
    Mixture m(parse_mix("web:0.6,code:0.2,long:0.2"), seed);
    const int64_t n = 1000 * 8;
    std::vector<int64_t> counts(3, 0);
    double worst = 0;
    for (int64_t i = 0; i < n; ++i) {
      ++counts[static_cast<size_t>(m.source_of(i))];
      for (size_t s = 0; s < 3; ++s)
        worst = std::max(worst, std::abs(static_cast<double>(counts[s]) - (i + 1) * m.sources()[s].weight));
    }
    for (size_t s = 0; s < 3; ++s) {
      const double share = static_cast<double>(counts[s]) / n;
      EXPECT_NEAR(share / m.sources()[s].weight, 1.0, 0.01) << m.sources()[s].name << " seed " << seed;
    }
    EXPECT_LT(worst, 8.0) << "seed " << seed;
    EXPECT_EQ(m.counts_through(n), counts);
    EXPECT_EQ(m.counts_through(100), Mixture(parse_mix("web:0.6,code:0.2,long:0.2"), seed).counts_through(100));
  }
}

// The draw is a pure function of (seed, index): another object, or indices visited out of order
// (a resume, another data-parallel slice), give the same sources; another seed gives others.
TEST(Mixture, SourceIsAPureFunctionOfSeedAndIndex) {
  Mixture a(parse_mix("a:0.5,b:0.3,c:0.2"), 5), b(parse_mix("a:0.5,b:0.3,c:0.2"), 5),
      c(parse_mix("a:0.5,b:0.3,c:0.2"), 6);
  int differ = 0;
  for (int64_t i = 999; i >= 0; --i) {
    EXPECT_EQ(a.source_of(i), b.source_of(i));
    differ += a.source_of(i) != c.source_of(i);
  }
  EXPECT_GT(differ, 100);
}
