// The operation graphs cuDNN runs for attention (cudnn_attention.cu), described in plain C++: which
// tensors (dims, strides, types), which operations in which order. cuDNN 9.19 has no causal
// single-op attention, so these are the composite graphs its runtime fusion recognises as flash
// attention (the pattern cuDNN's own frontend emits for backends before 9.21):
//
//   forward   S = Q·Kᵀ·scale, causal mask (generated row/column indices, row >= column, -inf
//             elsewhere), the sliding window (column + W > row), softmax as reductions and
//             pointwise ops with Stats = max + log(sum) (ops.h's lse), P in bf16, O = P·V
//   backward  D = rowsum(dO∘O), P recomputed as exp(mask(S − Stats)), dV = Pᵀ·dO, dP = dO·Vᵀ,
//             dS = P∘(dP − D)·scale, dK = dSᵀ·Q, dQ = dS·K in an fp32 accumulator, then bf16;
//             with GQA dK and dV per query head, summed over each KV head's group
//
// Kept apart from cuDNN so the description is unit-tested without a GPU (test_attention_graph:
// every shape consistent, every intermediate produced before it is used, the bound tensors).
#pragma once

#include "cuda/attention_choice.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace headroom::kernels::cuda::attention_graph {

enum class DType { kBf16, kFloat, kInt32, kBool };
enum class Storage { kDevice, kVirtual, kByValue };  // by value: a host scalar in the variant pack

struct Tensor {
  DType type;
  std::vector<int64_t> dims, strides;
  Storage storage;
};

enum class Kind { kMatmul, kPointwise, kReduction, kReshape };
enum class Mode {
  kNone,
  kMul,
  kSub,
  kAdd,
  kDiv,
  kExp,
  kLog,
  kIdentity,
  kGenIndex,
  kCmpGe,
  kCmpGt,
  kSelect,
  kMax,
  kSum
};

// y = mode(x[, b][, t]); a matmul is y = x·b; BINARY_SELECT is y = t ? x : b; GEN_INDEX numbers
// the elements of x along `axis`.
struct Op {
  Kind kind;
  Mode mode;
  int64_t x, b, t, y;
  int64_t axis;
  DType prec;
};

// The user tensors' unique ids (the variant pack's keys); intermediates count up from 100.
enum Uid : int64_t {
  kQ = 1,
  kKT,
  kV,
  kO,
  kStats,
  kScale,
  kNegInf1,
  kNegInf2,
  kWindow,
  kDO,
  kDQ,
  kDK,
  kDV,
  kSoftmaxSum,
  kDQAccum,
  kOne,
  kVT
};

struct View {
  std::vector<int64_t> dims, strides;
};

struct Graph {
  std::map<int64_t, Tensor> tensors;
  std::vector<Op> ops;
  int64_t next_virtual = 100;

  int64_t tensor(int64_t uid, DType type, const View& v, Storage storage = Storage::kDevice);
  int64_t temp(DType type, const View& v) { return tensor(next_virtual++, type, v, Storage::kVirtual); }
  // 4-d like every other tensor: cuDNN requires a pointwise op's operands to have equal ranks
  // ("xDesc.getNbDims() != bDesc.getNbDims()" on an H200 with a 1-d scalar) and broadcasts size-1 dims.
  int64_t scalar(int64_t uid) { return tensor(uid, DType::kFloat, {{1, 1, 1, 1}, {1, 1, 1, 1}}, Storage::kByValue); }
  void pointwise(Mode mode, int64_t x, int64_t y, int64_t b = -1, int64_t t = -1, DType prec = DType::kFloat,
                 int64_t axis = -1) {
    ops.push_back({Kind::kPointwise, mode, x, b, t, y, axis, prec});
  }
  void matmul(int64_t a, int64_t b, int64_t c) {
    ops.push_back({Kind::kMatmul, Mode::kNone, a, b, -1, c, -1, DType::kFloat});
  }
  void reduction(Mode mode, int64_t x, int64_t y) {
    ops.push_back({Kind::kReduction, mode, x, -1, -1, y, -1, DType::kFloat});
  }
  void reshape(int64_t x, int64_t y) { ops.push_back({Kind::kReshape, Mode::kNone, x, -1, -1, y, -1, DType::kFloat}); }
};

Graph forward_graph(const AttentionCall& c);
Graph backward_graph(const AttentionCall& c);

// The first inconsistency in the graph ("" if none): an operand that is missing or used before it
// is produced, an intermediate produced twice or never used, strides that are not a dense layout
// of the dims, shapes an operation cannot combine, types an operation does not take.
std::string check(const Graph& g);

// The tensors a run must bind (device buffers and host scalars), in uid order.
std::vector<int64_t> bound_uids(const Graph& g);

}  // namespace headroom::kernels::cuda::attention_graph
