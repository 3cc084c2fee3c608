// The long-context sampler (extend): windows are whole documents concatenated in their stored form
// (BOS-separated), only the last one cut; deterministic from (seed, index); an epoch uses every
// document; any index can be read first (resume).
#include "data/long_context.h"
#include "stage_data_fixtures.h"

#include <gtest/gtest.h>

#include <set>

using namespace headroom;
using namespace headroom::data;

namespace {

// Documents of lengths 3..90 whose tokens name them: doc d holds BOS then (d % 200) repeated.
std::filesystem::path numbered_shard(std::vector<std::vector<int32_t>>& docs, int n_docs) {
  ShardContents c;
  c.doc_offsets.push_back(0);
  for (int d = 0; d < n_docs; ++d) {
    std::vector<int32_t> doc{kBos};
    const int len = 2 + (d * 37) % 89;
    for (int k = 0; k < len; ++k) doc.push_back(d % 200);
    if (d == 7) doc.resize(700, 7);  // one document longer than a window
    docs.push_back(doc);
    c.tokens.insert(c.tokens.end(), doc.begin(), doc.end());
    c.doc_offsets.push_back(c.tokens.size());
  }
  const auto path = fixtures::test_dir("long_context") / "numbered.h5";
  write_shard(path, c, Tokenizer{}, ShardMeta{"train", ""});
  return path;
}

}  // namespace

TEST(LongContext, WindowsAreWholeDocumentsBosSeparated) {
  std::vector<std::vector<int32_t>> docs;
  const auto path = numbered_shard(docs, 150);
  const ShardReader shard = open_shard(path);
  const int64_t T = 255;
  DocumentStream stream(read_doc_offsets(shard), T, 3);
  std::vector<int32_t> window(T + 1);
  int multi = 0;
  for (int64_t i = 0; i < 200; ++i) {
    const auto pieces = stream.pieces(i);
    stream.read(shard, i, window.data());
    std::vector<int32_t> expected;
    int64_t total = 0;
    for (size_t p = 0; p < pieces.size(); ++p) {
      const auto& doc = docs[static_cast<size_t>(pieces[p].doc)];
      // Every document but the last is whole; each starts at its own beginning (BOS).
      if (p + 1 < pieces.size()) {
        EXPECT_TRUE(pieces[p].whole) << "sample " << i << " piece " << p;
      }
      EXPECT_EQ(pieces[p].whole, pieces[p].length == static_cast<int64_t>(doc.size()));
      expected.insert(expected.end(), doc.begin(), doc.begin() + pieces[p].length);
      total += pieces[p].length;
    }
    ASSERT_EQ(total, T + 1);
    ASSERT_EQ(window, expected) << "sample " << i;
    // BOS exactly at the document starts.
    int64_t at = 0;
    std::set<int64_t> starts;
    for (const auto& p : pieces) starts.insert(at), at += p.length;
    for (int64_t k = 0; k <= T; ++k) EXPECT_EQ(window[k] == kBos, starts.count(k) == 1) << k;
    multi += pieces.size() > 2;
  }
  EXPECT_GT(multi, 100) << "most windows should hold several documents";
}

TEST(LongContext, DeterministicEpochsCoverEveryDocumentAndResumeAnywhere) {
  std::vector<std::vector<int32_t>> docs;
  const auto path = numbered_shard(docs, 150);
  const ShardReader shard = open_shard(path);
  const auto offsets = read_doc_offsets(shard);
  const int64_t T = 255;
  DocumentStream a(offsets, T, 11), b(offsets, T, 11), other(offsets, T, 12);
  const int64_t n0 = a.windows_in_epoch(0);
  std::set<int64_t> used;
  int differ = 0;
  for (int64_t i = 0; i < n0; ++i) {
    const auto pa = a.pieces(i);
    for (const auto& p : pa) used.insert(p.doc);
    const auto pb = b.pieces(i);
    ASSERT_EQ(pa.size(), pb.size());
    for (size_t k = 0; k < pa.size(); ++k) EXPECT_EQ(pa[k].doc, pb[k].doc);
    differ += other.pieces(i).front().doc != pa.front().doc;
  }
  EXPECT_EQ(used.size(), docs.size()) << "epoch 0 must use every document";
  EXPECT_GT(differ, n0 / 2);
  // Epoch 1 is another order of the same documents.
  EXPECT_NE(a.pieces(n0).front().doc, a.pieces(0).front().doc);
  // A fresh stream asked for a late sample first gives what the sequential one gives.
  DocumentStream fresh(offsets, T, 11);
  const int64_t late = 5 * n0 + 3;
  const auto direct = fresh.pieces(late);
  for (int64_t i = n0; i <= late; ++i) a.pieces(i);
  const auto sequential = a.pieces(late);
  ASSERT_EQ(direct.size(), sequential.size());
  for (size_t k = 0; k < direct.size(); ++k) EXPECT_EQ(direct[k].doc, sequential[k].doc);
}

TEST(LongContext, LongDocumentFillsAWindowAlone) {
  std::vector<std::vector<int32_t>> docs;
  const auto path = numbered_shard(docs, 150);
  const ShardReader shard = open_shard(path);
  DocumentStream s(read_doc_offsets(shard), 255, 3);
  bool found = false;
  for (int64_t i = 0; i < s.windows_in_epoch(0); ++i) {
    const auto p = s.pieces(i);
    for (size_t k = 0; k < p.size(); ++k)
      if (p[k].doc == 7) {
        found = true;
        if (k == 0) {
          EXPECT_EQ(p.size(), 1u);
          EXPECT_EQ(p[0].length, 256);
          EXPECT_FALSE(p[0].whole);
        } else {
          EXPECT_EQ(k + 1, p.size()) << "a document cut short must end its window";
        }
      }
  }
  EXPECT_TRUE(found);
}
