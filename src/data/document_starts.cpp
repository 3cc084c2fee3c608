#include "data/document_starts.h"

namespace headroom::data {

void document_starts(const int32_t* ids, int64_t B, int64_t T, int32_t bos, int32_t* starts) {
  for (int64_t b = 0; b < B; ++b) {
    int32_t begin = 0;
    for (int64_t t = 0; t < T; ++t) {
      if (ids[b * T + t] == bos) begin = static_cast<int32_t>(t);
      starts[b * T + t] = begin;
    }
  }
}

}  // namespace headroom::data
