// The documents a BPE is trained on: a bounded, seeded sample of the training split. Every
// document of the inputs gets a priority, a hash of (seed, text); the training documents of lowest
// priority are kept until their text reaches the budget. The sample is a pure function of (seed,
// corpus): independent of input order, batch size and process layout, and the whole training
// split when it fits the budget (then the merges are those of training on everything).
#pragma once

#include "data/documents.h"

#include <cstdint>
#include <string>
#include <vector>

namespace headroom::data {

struct BpeSampleSpec {
  double val_fraction = 0;
  unsigned long seed = 0;
  int64_t budget_bytes = 0, max_document_bytes = 0;
};

struct BpeSample {
  std::vector<std::string> texts;
  int64_t docs_seen = 0, bytes_seen = 0, bytes_kept = 0;
};

BpeSample sample_training_documents(const std::vector<InputFile>& files, const BpeSampleSpec& spec);

}  // namespace headroom::data
