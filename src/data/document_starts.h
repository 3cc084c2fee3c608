// Where each token's document begins in packed training windows: the document mask's input
// (data.document_mask; kernels/ops.h's doc_start).
#pragma once

#include <cstdint>

namespace headroom::data {

// For B windows of T token ids (row-major), starts[b·T + t] = the position in window b where the
// document holding token t begins: a document begins at each `bos` token (shards store every
// document as BOS followed by its tokens), and the window's first token begins one whatever it is
// (a document cut by the window's start is attended from there).
void document_starts(const int32_t* ids, int64_t B, int64_t T, int32_t bos, int32_t* starts);

}  // namespace headroom::data
