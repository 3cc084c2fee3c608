#include "data/bpe_sample.h"

#include "data/prepare_pass.h"
#include "util/random.h"

#include <algorithm>
#include <queue>

namespace headroom::data {
namespace {

struct Candidate {
  uint64_t priority = 0;
  DocId id;
  std::string text;
  bool operator<(const Candidate& o) const { return priority != o.priority ? priority < o.priority : id < o.id; }
};

}  // namespace

BpeSample sample_training_documents(const std::vector<InputFile>& files, const BpeSampleSpec& spec) {
  std::priority_queue<Candidate> kept;  // the largest priority on top, evicted first
  BpeSample out;
  int64_t kept_bytes = 0, val_docs = 0;
  Extreme lowest{2.0, {}}, highest{-1.0, {}};
  std::string highest_text, doc;
  for (size_t f = 0; f < files.size(); ++f) {
    DocumentReader reader(files[f], spec.max_document_bytes);
    for (int64_t k = 0; reader.next(doc); ++k) {
      const DocId id{static_cast<int64_t>(f), k};
      const double draw = split_draw(doc, spec.seed);
      ++out.docs_seen;
      out.bytes_seen += static_cast<int64_t>(doc.size());
      if (draw < lowest.draw) lowest = {draw, id};
      if (draw > highest.draw) highest = {draw, id}, highest_text = doc;
      if (draw < spec.val_fraction) {
        ++val_docs;
        continue;
      }
      kept_bytes += static_cast<int64_t>(doc.size());
      kept.push({mix64(mix64(spec.seed ^ 0xb9e5a3d1ull) ^ fnv1a64(doc)), id, std::move(doc)});
      while (kept_bytes > spec.budget_bytes && kept.size() > 1) {
        kept_bytes -= static_cast<int64_t>(kept.top().text.size());
        kept.pop();
      }
    }
  }
  // The stage's rule for a split left empty (prepare.h): the lowest draw goes to val, the highest
  // to train.
  const bool move_lowest = val_docs == 0 && spec.val_fraction > 0 && out.docs_seen >= 2;
  const bool add_highest = val_docs == out.docs_seen && out.docs_seen >= 2;
  for (; !kept.empty(); kept.pop()) {
    if (move_lowest && kept.top().id == lowest.id) continue;
    out.bytes_kept += static_cast<int64_t>(kept.top().text.size());
    out.texts.push_back(kept.top().text);
  }
  if (add_highest) out.texts.push_back(highest_text);
  return out;
}

}  // namespace headroom::data
