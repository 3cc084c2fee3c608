#include "eval/combine.h"

#include "util/error.h"

#include <cstring>

namespace headroom::eval {

void combine_exact(parallel::Comm& comm, std::vector<double>& values) {
  if (comm.size() > 1 && !values.empty()) comm.allreduce_sum(values.data(), static_cast<int64_t>(values.size()));
}

std::vector<std::string> gather_strings(parallel::Comm& comm, const std::vector<std::pair<int64_t, std::string>>& mine,
                                        int64_t n) {
  std::vector<std::string> out(static_cast<size_t>(n));
  // Each rank in turn broadcasts its pairs packed as [index:int64][length:int64][bytes]...
  for (int r = 0; r < comm.size(); ++r) {
    std::string packed;
    if (r == comm.rank())
      for (const auto& [index, text] : mine) {
        const int64_t header[2] = {index, static_cast<int64_t>(text.size())};
        packed.append(reinterpret_cast<const char*>(header), sizeof header);
        packed += text;
      }
    int64_t bytes = static_cast<int64_t>(packed.size());
    comm.broadcast(&bytes, sizeof bytes, r);
    packed.resize(static_cast<size_t>(bytes));
    if (bytes > 0) comm.broadcast(packed.data(), static_cast<size_t>(bytes), r);
    for (size_t pos = 0; pos < packed.size();) {
      int64_t header[2];
      std::memcpy(header, packed.data() + pos, sizeof header);
      pos += sizeof header;
      if (header[0] < 0 || header[0] >= n) fail("internal: gathered sample index ", header[0], " outside [0, ", n, ")");
      out[static_cast<size_t>(header[0])] = packed.substr(pos, static_cast<size_t>(header[1]));
      pos += static_cast<size_t>(header[1]);
    }
  }
  return out;
}

}  // namespace headroom::eval
