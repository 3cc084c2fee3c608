// The deterministic loader: sample i is a pure function of (seed, i); an epoch visits every window
// exactly once; data-parallel ranks partition a global batch without overlap or gap.
#include "data/loader.h"
#include "data/shard.h"
#include "util/error.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <numeric>
#include <set>

using namespace headroom::data;
namespace fs = std::filesystem;

TEST(Loader, PermutationIsABijectionForManySizes) {
  for (int64_t n : {1, 2, 3, 5, 16, 17, 100, 1000, 4097}) {
    std::vector<char> seen(static_cast<size_t>(n), 0);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t j = permute_index(i, n, 12345);
      ASSERT_GE(j, 0);
      ASSERT_LT(j, n);
      ASSERT_FALSE(seen[static_cast<size_t>(j)]) << "n=" << n << " i=" << i;
      seen[static_cast<size_t>(j)] = 1;
    }
  }
}

TEST(Loader, PermutationDependsOnKeyAndShuffles) {
  const int64_t n = 1000;
  int same = 0, identity = 0;
  for (int64_t i = 0; i < n; ++i) {
    same += permute_index(i, n, 1) == permute_index(i, n, 2);
    identity += permute_index(i, n, 1) == i;
  }
  EXPECT_LT(same, 20);
  EXPECT_LT(identity, 20);
}

TEST(Loader, EpochVisitsEachWindowOnceAndEpochsDiffer) {
  const int64_t n_tokens = 10 * 64 + 1, seq = 64;
  const StreamSpec spec{seq, 7};
  ASSERT_EQ(window_count(n_tokens, seq), 10);
  std::set<int64_t> e0, e1;
  std::vector<int64_t> order0, order1;
  for (int64_t i = 0; i < 10; ++i) {
    order0.push_back(window_start(n_tokens, spec, i));
    order1.push_back(window_start(n_tokens, spec, 10 + i));
    e0.insert(order0.back());
    e1.insert(order1.back());
  }
  EXPECT_EQ(e0.size(), 10u);
  EXPECT_EQ(e0, e1);
  EXPECT_NE(order0, order1);
  for (int64_t s : e0) {
    EXPECT_EQ(s % seq, 0);
    EXPECT_LE(s + seq + 1, n_tokens);
  }
}

TEST(Loader, SameSeedSameStreamOtherSeedOtherStream) {
  const StreamSpec a{128, 1}, b{128, 2};
  int differ = 0;
  for (int64_t i = 0; i < 100; ++i) {
    EXPECT_EQ(window_start(1 << 20, a, i), window_start(1 << 20, a, i));
    differ += window_start(1 << 20, a, i) != window_start(1 << 20, b, i);
  }
  EXPECT_GT(differ, 90);
}

TEST(Loader, DataParallelSlicesPartitionTheGlobalBatch) {
  const int64_t batch = 8;
  for (int dp : {1, 2, 4}) {
    for (int64_t step : {0, 1, 5}) {
      std::vector<int64_t> covered;
      for (int r = 0; r < dp; ++r) {
        const auto s = dp_slice(step, batch, dp, r);
        EXPECT_EQ(s.count, batch / dp);
        for (int64_t i = 0; i < s.count; ++i) covered.push_back(s.first + i);
      }
      std::vector<int64_t> expected(batch);
      std::iota(expected.begin(), expected.end(), step * batch);
      EXPECT_EQ(covered, expected) << "dp=" << dp << " step=" << step;
    }
  }
  EXPECT_THROW(dp_slice(0, 6, 4, 0), headroom::Error);
}

TEST(Loader, ReadSampleGivesTheSameTokensForAnyDataParallelSize) {
  const fs::path path = fs::temp_directory_path() / "headroom_test_loader.h5";
  ShardContents c;
  for (uint32_t i = 0; i < 5000; ++i) c.tokens.push_back(i % 259);
  c.doc_offsets = {0, 2000, 5000};
  write_shard(path, c, Tokenizer{}, ShardMeta{"train", ""});
  const ShardReader shard = open_shard(path, "byte");
  const StreamSpec spec{32, 3};
  const int64_t batch = 8;
  std::vector<std::vector<int32_t>> single;
  for (int64_t i = 0; i < 2 * batch; ++i) {
    std::vector<int32_t> w(33);
    read_sample(shard, spec, i, w.data());
    const int64_t start = window_start(shard.n_tokens, spec, i);
    for (int64_t t = 0; t < 33; ++t) ASSERT_EQ(static_cast<uint32_t>(w[t]), c.tokens[start + t]);
    single.push_back(w);
  }
  for (int dp : {2, 4}) {
    for (int64_t step = 0; step < 2; ++step) {
      for (int r = 0; r < dp; ++r) {
        const auto s = dp_slice(step, batch, dp, r);
        for (int64_t i = s.first; i < s.first + s.count; ++i) {
          std::vector<int32_t> w(33);
          read_sample(shard, spec, i, w.data());
          EXPECT_EQ(w, single[static_cast<size_t>(i)]);
        }
      }
    }
  }
  fs::remove(path);
}
