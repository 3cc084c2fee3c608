#include "data/tokenizer.h"

#include "data/hf_tokenizer.h"
#include "data/hf_tokenizer_files.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <functional>
#include <unordered_set>

#include "util/error.h"
#include "util/random.h"

namespace headroom::data {

namespace {

uint64_t pair_key(int32_t left, int32_t right) { return (uint64_t(uint32_t(left)) << 32) | uint32_t(right); }

bool is_special(int32_t id) { return id == kBos || id == kEos || id == kPad; }

}  // namespace

int32_t vocab_size(const Tokenizer& tok) {
  if (tok.hf) return tok.hf->vocab_size;
  return kFirstMerge + int32_t(tok.merges.size());
}

std::optional<int32_t> bos_id(const Tokenizer& tok) { return tok.hf ? tok.hf->bos : std::optional<int32_t>(kBos); }
int32_t eos_id(const Tokenizer& tok) { return tok.hf ? tok.hf->eos : kEos; }
int32_t pad_id(const Tokenizer& tok) { return tok.hf ? tok.hf->pad : kPad; }

int32_t newline_id(const Tokenizer& tok) {
  if (!tok.hf) return '\n';
  if (tok.hf->newline < 0) fail("tokenizer ", tokenizer_id(tok), " does not encode \"\\n\" as one token");
  return tok.hf->newline;
}

std::vector<int32_t> bos_prefix(const Tokenizer& tok) {
  const auto bos = bos_id(tok);
  return bos ? std::vector<int32_t>{*bos} : std::vector<int32_t>{};
}

std::string tokenizer_id(const Tokenizer& tok) {
  static const char* hex = "0123456789abcdef";
  if (tok.hf && !tok.hf->id.empty()) return tok.hf->id;
  if (tok.hf) {
    std::string out = cat("hf", vocab_size(tok), "-");
    const uint64_t h = fnv1a64(tokenizer_record(tok));
    for (int i = 15; i >= 0; --i) out += hex[(h >> (4 * i)) & 0xf];
    return out;
  }
  if (tok.merges.empty()) return "byte";
  uint64_t h = 0xcbf29ce484222325ull;
  auto feed = [&h](int32_t v) {
    const auto u = uint32_t(v);
    for (int i = 0; i < 4; ++i) {
      h ^= (u >> (8 * i)) & 0xffu;
      h *= 0x100000001b3ull;
    }
  };
  for (const auto& [l, r] : tok.merges) {
    feed(l);
    feed(r);
  }
  std::string out = cat("bpe", vocab_size(tok), "-");
  for (int i = 15; i >= 0; --i) out += hex[(h >> (4 * i)) & 0xf];
  return out;
}

void validate(const Tokenizer& tok) {
  if (tok.hf) {  // checked when read; merges belong to Headroom's own tokenizers
    if (!tok.merges.empty()) fail("tokenizer: a Hugging Face tokenizer with Headroom merges");
    return;
  }
  if (tok.merges.size() > size_t(INT32_MAX - kFirstMerge))
    fail("tokenizer: ", tok.merges.size(), " merges is too many");
  std::unordered_set<uint64_t> seen;
  seen.reserve(tok.merges.size() * 2);
  for (size_t i = 0; i < tok.merges.size(); ++i) {
    const int32_t self = kFirstMerge + int32_t(i);
    for (const int32_t part : {tok.merges[i].first, tok.merges[i].second}) {
      if (part < 0 || part >= self || is_special(part))
        fail("tokenizer: merge ", i, " (id ", self, ") has part ", part, ", which is not a byte or an earlier merge");
    }
    if (!seen.insert(pair_key(tok.merges[i].first, tok.merges[i].second)).second)
      fail("tokenizer: merge ", i, " (id ", self, ") repeats the pair ", tok.merges[i].first, " ",
           tok.merges[i].second);
  }
}

std::string decode(const Tokenizer& tok, std::span<const int32_t> ids) {
  if (tok.hf) return hf_decode(*tok.hf, ids);
  const int32_t vocab = vocab_size(tok);
  std::string out;
  out.reserve(ids.size() * (tok.merges.empty() ? 1 : 4));
  std::vector<int32_t> stack;
  for (size_t k = 0; k < ids.size(); ++k) {
    const int32_t id = ids[k];
    if (id < 0 || id >= vocab)
      fail("decode: token id ", id, " at position ", k, " is outside the vocabulary [0, ", vocab, ")");
    if (id < 256) {
      out += char(id);
      continue;
    }
    if (is_special(id)) continue;
    // Expand the merge tree depth-first, left part first. Parts are checked so that a malformed
    // tokenizer throws instead of looping.
    stack.assign(1, id);
    while (!stack.empty()) {
      const int32_t t = stack.back();
      stack.pop_back();
      if (t < 256) {
        out += char(t);
        continue;
      }
      const auto& [l, r] = tok.merges[size_t(t - kFirstMerge)];
      if (l < 0 || r < 0 || l >= t || r >= t || is_special(l) || is_special(r))
        fail("decode: malformed tokenizer: merge id ", t, " has parts ", l, " ", r);
      stack.push_back(r);
      stack.push_back(l);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Encoder

Encoder::~Encoder() = default;
Encoder::Encoder(Encoder&&) noexcept = default;
Encoder& Encoder::operator=(Encoder&&) noexcept = default;

Encoder::Encoder(const Tokenizer& tok) {
  validate(tok);
  vocab_ = data::vocab_size(tok);
  if (tok.hf) {
    hf_ = std::make_unique<HfEncoder>(tok.hf);
    byte_level_ = false;
    return;
  }
  byte_level_ = tok.merges.empty();
  if (byte_level_) return;
  size_t size = 16;
  while (size < tok.merges.size() * 2) size *= 2;
  ranks_.assign(size, RankSlot{0, 0});
  rank_mask_ = size - 1;
  for (size_t i = 0; i < tok.merges.size(); ++i) {
    const uint64_t key = pair_key(tok.merges[i].first, tok.merges[i].second) + 1;
    uint64_t slot = splitmix64_finalize(key) & rank_mask_;
    while (ranks_[slot].key != 0) slot = (slot + 1) & rank_mask_;
    ranks_[slot] = RankSlot{key, int32_t(i)};
  }
  cache_.assign(size_t{1} << 12, CacheSlot{0, 0, 0, 0, 0});
}

int32_t Encoder::rank_of(int32_t left, int32_t right) const {
  const uint64_t key = pair_key(left, right) + 1;
  uint64_t slot = splitmix64_finalize(key) & rank_mask_;
  while (true) {
    const RankSlot& s = ranks_[slot];
    if (s.key == key) return s.rank;
    if (s.key == 0) return INT32_MAX;
    slot = (slot + 1) & rank_mask_;
  }
}

// Standard BPE within one chunk: repeatedly merge the adjacent pair of lowest rank (leftmost first
// among equals) until no adjacent pair is a merge.
void Encoder::bpe_chunk(std::string_view chunk, std::vector<int32_t>& out) {
  auto& ids = work_ids_;
  auto& ranks = work_ranks_;  // ranks[i] = rank of (ids[i], ids[i + 1])
  const size_t n = chunk.size();
  ids.resize(n);
  for (size_t i = 0; i < n; ++i) ids[i] = int32_t(static_cast<unsigned char>(chunk[i]));
  ranks.resize(n - 1);
  for (size_t i = 0; i + 1 < n; ++i) ranks[i] = rank_of(ids[i], ids[i + 1]);
  while (!ranks.empty()) {
    size_t best = 0;
    for (size_t i = 1; i < ranks.size(); ++i)
      if (ranks[i] < ranks[best]) best = i;
    if (ranks[best] == INT32_MAX) break;
    ids[best] = kFirstMerge + ranks[best];
    ids.erase(ids.begin() + ptrdiff_t(best) + 1);
    ranks.erase(ranks.begin() + ptrdiff_t(best));
    if (best > 0) ranks[best - 1] = rank_of(ids[best - 1], ids[best]);
    if (best < ranks.size()) ranks[best] = rank_of(ids[best], ids[best + 1]);
  }
  out.insert(out.end(), ids.begin(), ids.end());
}

void Encoder::cache_clear() {
  std::fill(cache_.begin(), cache_.end(), CacheSlot{0, 0, 0, 0, 0});
  cache_used_ = 0;
  cache_keys_.clear();
  cache_ids_.clear();
}

void Encoder::cache_grow() {
  std::vector<CacheSlot> old = std::move(cache_);
  cache_.assign(old.size() * 2, CacheSlot{0, 0, 0, 0, 0});
  const uint64_t mask = cache_.size() - 1;
  for (const CacheSlot& s : old) {
    if (s.key_len == 0) continue;
    uint64_t slot = s.hash & mask;
    while (cache_[slot].key_len != 0) slot = (slot + 1) & mask;
    cache_[slot] = s;
  }
}

void Encoder::encode_chunk(std::string_view chunk, std::vector<int32_t>& out) {
  if (chunk.size() == 1) {
    out.push_back(int32_t(static_cast<unsigned char>(chunk[0])));
    return;
  }
  const uint64_t hash = splitmix64_finalize(std::hash<std::string_view>{}(chunk));
  const uint64_t mask = cache_.size() - 1;
  uint64_t slot = hash & mask;
  while (true) {
    const CacheSlot& s = cache_[slot];
    if (s.key_len == 0) break;
    if (s.hash == hash && s.key_len == chunk.size() &&
        std::memcmp(cache_keys_.data() + s.key_off, chunk.data(), chunk.size()) == 0) {
      ++hits_;
      const int32_t* p = cache_ids_.data() + s.ids_off;
      out.insert(out.end(), p, p + s.ids_len);
      return;
    }
    slot = (slot + 1) & mask;
  }
  ++misses_;
  const size_t start = out.size();
  bpe_chunk(chunk, out);
  const size_t count = out.size() - start;

  // Insert; empty the cache first if it is full.
  if (cache_used_ + 1 > kCacheMaxEntries ||
      cache_keys_.size() + chunk.size() + 4 * (cache_ids_.size() + count) > kCacheMaxBytes) {
    cache_clear();
  } else if (2 * (cache_used_ + 1) > cache_.size()) {
    cache_grow();
  }
  const uint64_t m = cache_.size() - 1;
  slot = hash & m;
  while (cache_[slot].key_len != 0) slot = (slot + 1) & m;
  cache_[slot] = CacheSlot{hash, uint32_t(cache_keys_.size()), uint32_t(cache_ids_.size()), uint16_t(chunk.size()),
                           uint16_t(count)};
  cache_keys_.append(chunk);
  cache_ids_.insert(cache_ids_.end(), out.begin() + ptrdiff_t(start), out.end());
  ++cache_used_;
}

void Encoder::encode(std::string_view text, std::vector<int32_t>& out) {
  if (hf_) return hf_->encode(text, out);
  if (byte_level_) {
    const size_t base = out.size();
    out.resize(base + text.size());
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    int32_t* o = out.data() + base;
    for (size_t i = 0; i < text.size(); ++i) o[i] = s[i];
    return;
  }
  for_each_chunk(text, [&](std::string_view chunk) { encode_chunk(chunk, out); });
}

}  // namespace headroom::data
