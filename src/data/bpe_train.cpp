#include "data/bpe_train.h"

#include <algorithm>
#include <queue>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "util/error.h"
#include "util/random.h"

namespace headroom::data {

namespace {

uint64_t pair_key(int32_t left, int32_t right) { return (uint64_t(uint32_t(left)) << 32) | uint32_t(right); }
int32_t key_left(uint64_t k) { return int32_t(uint32_t(k >> 32)); }
int32_t key_right(uint64_t k) { return int32_t(uint32_t(k)); }

struct KeyHash {  // std::hash<uint64_t> is the identity
  size_t operator()(uint64_t k) const { return size_t(splitmix64_finalize(k)); }
};

struct Word {
  std::vector<int32_t> ids;
  int64_t count;
};

struct HeapEntry {
  int64_t count;
  int32_t left, right;
};

// Priority: count descending, then left ascending, then right ascending. priority_queue pops the
// greatest, so "less" means lower priority.
struct LowerPriority {
  bool operator()(const HeapEntry& a, const HeapEntry& b) const {
    if (a.count != b.count) return a.count < b.count;
    if (a.left != b.left) return a.left > b.left;
    return a.right > b.right;
  }
};

}  // namespace

Tokenizer train_bpe(std::span<const std::string_view> docs, int32_t vocab_size,
                    const std::function<void(int32_t done, int32_t total)>& progress, bool split_digits) {
  if (vocab_size < kFirstMerge || vocab_size > (int32_t{1} << 20))
    fail("train_bpe: vocab_size ", vocab_size, " is outside [", kFirstMerge, ", ", int32_t{1} << 20, "]");
  const int32_t total = vocab_size - kFirstMerge;
  Tokenizer tok;
  if (total == 0) return tok;

  // 1. Distinct chunks with their frequencies. Single-byte chunks hold no pair and are skipped.
  std::vector<Word> words;
  {
    std::unordered_map<std::string_view, int64_t> counts;
    for (const std::string_view doc : docs)
      for_each_chunk(doc, [&](std::string_view c) {
        const bool digits = split_digits && c.find_first_of("0123456789") != std::string_view::npos;
        if (c.size() >= 2 && !digits) ++counts[c];
      });
    std::vector<std::pair<std::string_view, int64_t>> distinct(counts.begin(), counts.end());
    counts = {};
    std::sort(distinct.begin(), distinct.end());  // deterministic word order
    words.reserve(distinct.size());
    for (const auto& [chunk, count] : distinct) {
      Word w{std::vector<int32_t>(chunk.size()), count};
      for (size_t i = 0; i < chunk.size(); ++i) w.ids[i] = static_cast<unsigned char>(chunk[i]);
      words.push_back(std::move(w));
    }
  }

  // 2. Pair counts and the index pair -> words containing it (ascending, no repeats; entries go
  // stale when a word loses the pair and are skipped when used).
  std::unordered_map<uint64_t, int64_t, KeyHash> pair_counts;
  std::unordered_map<uint64_t, std::vector<int32_t>, KeyHash> index;
  for (size_t w = 0; w < words.size(); ++w) {
    const auto& ids = words[w].ids;
    for (size_t i = 0; i + 1 < ids.size(); ++i) {
      const uint64_t k = pair_key(ids[i], ids[i + 1]);
      pair_counts[k] += words[w].count;
      auto& list = index[k];
      if (list.empty() || list.back() != int32_t(w)) list.push_back(int32_t(w));
    }
  }

  // 3. A max-heap of (count, pair) with lazy deletion: an entry is live only while its count equals
  // the pair's current count. Every change of a pair's count pushes a fresh entry.
  using Heap = std::priority_queue<HeapEntry, std::vector<HeapEntry>, LowerPriority>;
  auto rebuild_heap = [&pair_counts]() {
    std::vector<HeapEntry> entries;
    entries.reserve(pair_counts.size());
    for (const auto& [k, c] : pair_counts) entries.push_back({c, key_left(k), key_right(k)});
    return Heap(LowerPriority{}, std::move(entries));
  };
  Heap heap = rebuild_heap();

  std::unordered_map<uint64_t, int64_t, KeyHash> delta;
  tok.merges.reserve(size_t(total));
  for (int32_t m = 0; m < total; ++m) {
    HeapEntry best{0, 0, 0};
    while (!heap.empty()) {
      const HeapEntry e = heap.top();
      heap.pop();
      const auto it = pair_counts.find(pair_key(e.left, e.right));
      if (it != pair_counts.end() && it->second == e.count) {
        best = e;
        break;
      }
    }
    if (best.count < 2) break;  // no pair occurs twice: stop early

    const int32_t a = best.left, b = best.right, merged = kFirstMerge + m;
    const uint64_t best_key = pair_key(a, b);
    tok.merges.emplace_back(a, b);
    std::vector<int32_t> list = std::move(index[best_key]);
    index.erase(best_key);
    pair_counts.erase(best_key);

    delta.clear();
    for (const int32_t w : list) {
      auto& ids = words[size_t(w)].ids;
      const int64_t c = words[size_t(w)].count;
      const size_t n = ids.size();
      // Only the span from one before the first occurrence to one after the last changes.
      size_t first = n, last = 0;
      for (size_t i = 0; i + 1 < n; ++i)
        if (ids[i] == a && ids[i + 1] == b) {
          if (first == n) first = i;
          last = i + 1;
        }
      if (first == n) continue;  // stale index entry
      const size_t lo = first > 0 ? first - 1 : 0;
      const size_t hi = std::min(n - 1, last + 1);  // inclusive
      for (size_t i = lo; i < hi; ++i) delta[pair_key(ids[i], ids[i + 1])] -= c;
      size_t o = lo;
      for (size_t r = lo; r < n;) {
        if (r + 1 < n && r < last + 1 && ids[r] == a && ids[r + 1] == b) {
          ids[o++] = merged;
          r += 2;
        } else {
          ids[o++] = ids[r++];
        }
      }
      const size_t removed = n - o;
      ids.resize(o);
      const size_t new_hi = hi - removed;
      for (size_t i = lo; i < new_hi; ++i) {
        const uint64_t k = pair_key(ids[i], ids[i + 1]);
        delta[k] += c;
        if (ids[i] == merged || ids[i + 1] == merged) {
          auto& l = index[k];
          if (l.empty() || l.back() != w) l.push_back(w);
        }
      }
    }
    for (const auto& [k, d] : delta) {
      if (d == 0 || k == best_key) continue;
      auto it = pair_counts.try_emplace(k, 0).first;
      it->second += d;
      if (it->second <= 0) {
        pair_counts.erase(it);
      } else {
        heap.push({it->second, key_left(k), key_right(k)});
      }
    }
    if (heap.size() > 4 * pair_counts.size() + (size_t{1} << 20)) heap = rebuild_heap();
    if (progress) progress(m + 1, total);
  }
  return tok;
}

}  // namespace headroom::data
