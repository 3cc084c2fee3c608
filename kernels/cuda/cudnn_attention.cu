// cuDNN's fused attention through the backend graph API (cudnn_graph.h; cuDNN's C++ frontend is not
// on these machines): the graphs described in attention_graph.h, lowered to cuDNN descriptors once
// per shape and kept with their execution plan.
//
// Operands: fp32 in ops.h's layouts ([B, T, H, d]), rounded to bf16 copies in the scratch
// workspace (cuDNN's attention takes fp16/bf16 only), or Q, K and V already in bf16 (kept in the
// operand precision) and taken as they are; described to cuDNN as [B, H, T, d] views with
// strides, so no transpose is materialised; outputs come back as bf16 and are widened to fp32. The
// softmax statistics are fp32 natural-log log-sum-exp, ops.h's lse layout [B, H, T] exactly.
#include "cuda/cudnn_attention.h"

#include "cuda/attention_graph.h"
#include "cuda/cuda_check.h"
#include "cuda/device.h"
#include "cuda/runtime.h"
#include "cuda/stream.h"
#include "headroom_error.h"

#include <cudnn.h>

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

namespace headroom::kernels::cuda {

namespace {

namespace ag = attention_graph;
using ag::kDK, ag::kDO, ag::kDQ, ag::kDQAccum, ag::kDV, ag::kKT, ag::kNegInf1, ag::kNegInf2, ag::kO, ag::kOne, ag::kQ,
    ag::kScale, ag::kSoftmaxSum, ag::kStats, ag::kV, ag::kVT, ag::kWindow;

std::string last_error() {
  char msg[1024] = {0};
  cudnnGetLastErrorString(msg, sizeof msg);
  return msg;
}

void cudnn_check(cudnnStatus_t st, const char* call, const char* file, int line) {
  if (st != CUDNN_STATUS_SUCCESS)
    fail("cuDNN ", call, " failed at ", file, ":", line, ": ", cudnnGetErrorString(st), " (", last_error(), ")");
}
#define HEADROOM_CUDNN_CHECK(call) cudnn_check((call), #call, __FILE__, __LINE__)

// One backend descriptor, destroyed with its owner.
class Desc {
 public:
  explicit Desc(cudnnBackendDescriptorType_t type) { HEADROOM_CUDNN_CHECK(cudnnBackendCreateDescriptor(type, &d_)); }
  Desc(Desc&& o) noexcept : d_(o.d_) { o.d_ = nullptr; }
  Desc& operator=(Desc&&) = delete;
  Desc(const Desc&) = delete;
  ~Desc() {
    if (d_ != nullptr) cudnnBackendDestroyDescriptor(d_);
  }
  cudnnBackendDescriptor_t get() const { return d_; }

  template <class T>
  Desc& set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, const T* values, int64_t n = 1) {
    HEADROOM_CUDNN_CHECK(cudnnBackendSetAttribute(d_, name, type, n, values));
    return *this;
  }
  Desc& set(cudnnBackendAttributeName_t name, const Desc& other) {
    const cudnnBackendDescriptor_t p = other.get();
    return set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, &p);
  }
  Desc& set(cudnnBackendAttributeName_t name, int64_t v) { return set(name, CUDNN_TYPE_INT64, &v); }
  Desc& set(cudnnBackendAttributeName_t name, cudnnDataType_t v) { return set(name, CUDNN_TYPE_DATA_TYPE, &v); }
  Desc& finalize() {
    HEADROOM_CUDNN_CHECK(cudnnBackendFinalize(d_));
    return *this;
  }
  // For the calls where a refusal means "not this graph" rather than a bug: the status, no throw.
  cudnnStatus_t try_finalize() { return cudnnBackendFinalize(d_); }

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};

struct Handle {
  cudnnHandle_t h = nullptr;
};

cudnnHandle_t handle() {
  static Handle* s = [] {
    auto* x = new Handle;
    HEADROOM_CUDNN_CHECK(cudnnCreate(&x->h));
    HEADROOM_CUDNN_CHECK(cudnnSetStream(x->h, stream()));
    return x;
  }();
  return s->h;
}

// ---- one operation graph --------------------------------------------------------------------------

using Dims = std::vector<int64_t>;

// One graph's cuDNN descriptors: tensors by unique id, then its operations in order; `plan` runs
// the engine heuristics and finalizes the first execution plan cuDNN accepts. Every descriptor
// stays alive with the object.
class Graph {
 public:
  int64_t tensor(int64_t uid, cudnnDataType_t type, const Dims& dims, const Dims& strides, ag::Storage storage) {
    Desc t(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    const int64_t align = 16;
    const bool yes = true;
    t.set(CUDNN_ATTR_TENSOR_DATA_TYPE, type)
        .set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, dims.data(), static_cast<int64_t>(dims.size()))
        .set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, strides.data(), static_cast<int64_t>(strides.size()))
        .set(CUDNN_ATTR_TENSOR_UNIQUE_ID, uid)
        .set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, align);
    if (storage == ag::Storage::kVirtual) t.set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, &yes);
    if (storage == ag::Storage::kByValue) t.set(CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, &yes);
    t.finalize();
    tensors_.emplace(uid, std::move(t));
    return uid;
  }
  // y = mode(x[, b][, t]); GEN_INDEX takes an axis, BINARY_SELECT a mask t (y = t ? x : b).
  void pointwise(cudnnPointwiseMode_t mode, int64_t x, int64_t y, int64_t b = -1, int64_t t = -1,
                 cudnnDataType_t prec = CUDNN_DATA_FLOAT, int64_t axis = -1) {
    Desc pw(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    pw.set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, &mode).set(CUDNN_ATTR_POINTWISE_MATH_PREC, prec);
    if (axis >= 0) pw.set(CUDNN_ATTR_POINTWISE_AXIS, axis);
    pw.finalize();
    Desc op(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    const float one = 1.f;
    op.set(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw)
        .set(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, at(x))
        .set(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, at(y));
    if (b >= 0) op.set(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, at(b));
    if (t >= 0) op.set(CUDNN_ATTR_OPERATION_POINTWISE_TDESC, at(t));
    op.set(CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_TYPE_FLOAT, &one)
        .set(CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_TYPE_FLOAT, &one)
        .finalize();
    keep(std::move(pw), std::move(op));
  }
  void matmul(int64_t a, int64_t b, int64_t c) {
    Desc mm(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
    mm.set(CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_DATA_FLOAT).finalize();
    Desc op(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
    op.set(CUDNN_ATTR_OPERATION_MATMUL_ADESC, at(a))
        .set(CUDNN_ATTR_OPERATION_MATMUL_BDESC, at(b))
        .set(CUDNN_ATTR_OPERATION_MATMUL_CDESC, at(c))
        .set(CUDNN_ATTR_OPERATION_MATMUL_DESC, mm)
        .finalize();
    keep(std::move(mm), std::move(op));
  }
  // Reduces x over the axes where y has size 1.
  void reduction(cudnnReduceTensorOp_t how, int64_t x, int64_t y) {
    Desc red(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
    red.set(CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, &how)
        .set(CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_DATA_FLOAT)
        .finalize();
    Desc op(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
    op.set(CUDNN_ATTR_OPERATION_REDUCTION_DESC, red)
        .set(CUDNN_ATTR_OPERATION_REDUCTION_XDESC, at(x))
        .set(CUDNN_ATTR_OPERATION_REDUCTION_YDESC, at(y))
        .finalize();
    keep(std::move(red), std::move(op));
  }
  // y: the same elements as x under other dims and strides (a transposed view).
  void reshape(int64_t x, int64_t y) {
    Desc op(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR);
    op.set(CUDNN_ATTR_OPERATION_RESHAPE_XDESC, at(x)).set(CUDNN_ATTR_OPERATION_RESHAPE_YDESC, at(y)).finalize();
    ops_.push_back(std::move(op));
  }

  struct Plan {
    std::unique_ptr<Desc> graph;  // the operation graph the plan was made for
    std::unique_ptr<Desc> plan;
    int64_t workspace = 0;
    std::vector<Desc> configs;  // the engine configurations the plan may point to
  };
  // The operation graph's first execution plan that cuDNN finalizes; none (and *why) if cuDNN's
  // heuristics offer no engine or every plan is refused.
  Plan plan(cudnnHandle_t h, std::string* why) {
    std::vector<cudnnBackendDescriptor_t> raw;
    for (const Desc& op : ops_) raw.push_back(op.get());
    Plan out;
    out.graph = std::make_unique<Desc>(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    Desc& graph = *out.graph;
    graph
        .set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, raw.data(), static_cast<int64_t>(raw.size()))
        .set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, &h);
    if (const cudnnStatus_t st = graph.try_finalize(); st != CUDNN_STATUS_SUCCESS) {
      *why = std::string("operation graph: ") + cudnnGetErrorString(st) + " " + last_error();
      return out;
    }
    Desc heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    const cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
    heur.set(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph).set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, &mode);
    if (const cudnnStatus_t st = heur.try_finalize(); st != CUDNN_STATUS_SUCCESS) {
      *why = std::string("engine heuristics: ") + cudnnGetErrorString(st) + " " + last_error();
      return out;
    }
    int64_t count = 0;
    HEADROOM_CUDNN_CHECK(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                  CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr));
    if (count == 0) {
      *why = "the engine heuristics offer no engine for this graph " + last_error();
      return out;
    }
    for (int64_t i = 0; i < count; ++i) out.configs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    std::vector<cudnnBackendDescriptor_t> cfgs;
    for (const Desc& c : out.configs) cfgs.push_back(c.get());
    int64_t returned = 0;
    HEADROOM_CUDNN_CHECK(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                  CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &returned, cfgs.data()));
    std::string refusals;
    for (int64_t i = 0; i < returned; ++i) {
      auto p = std::make_unique<Desc>(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
      p->set(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, out.configs[static_cast<std::size_t>(i)])
          .set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, &h);
      if (const cudnnStatus_t st = p->try_finalize(); st != CUDNN_STATUS_SUCCESS) {
        refusals += std::string(refusals.empty() ? "" : "; ") + cudnnGetErrorString(st);
        continue;
      }
      HEADROOM_CUDNN_CHECK(cudnnBackendGetAttribute(p->get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                                    CUDNN_TYPE_INT64, 1, nullptr, &out.workspace));
      out.plan = std::move(p);
      return out;
    }
    *why = "every engine configuration was refused (" + refusals + ") " + last_error();
    return out;
  }

 private:
  const Desc& at(int64_t uid) const {
    const auto it = tensors_.find(uid);
    if (it == tensors_.end()) fail("cuDNN attention graph: no tensor ", uid, " (a bug in cudnn_attention.cu)");
    return it->second;
  }
  void keep(Desc&& attribute, Desc&& op) {
    attributes_.push_back(std::move(attribute));
    ops_.push_back(std::move(op));
  }

  std::map<int64_t, Desc> tensors_;
  std::vector<Desc> attributes_, ops_;
  int64_t next_virtual_ = 100;
};

// ---- lowering the description (attention_graph.h) to descriptors ----------------------------------

cudnnDataType_t dtype(ag::DType t) {
  switch (t) {
    case ag::DType::kBf16:
      return CUDNN_DATA_BFLOAT16;
    case ag::DType::kFloat:
      return CUDNN_DATA_FLOAT;
    case ag::DType::kInt32:
      return CUDNN_DATA_INT32;
    case ag::DType::kBool:
      return CUDNN_DATA_BOOLEAN;
  }
  fail("cuDNN attention: unknown data type");
}

cudnnPointwiseMode_t pointwise_mode(ag::Mode m) {
  switch (m) {
    case ag::Mode::kMul:
      return CUDNN_POINTWISE_MUL;
    case ag::Mode::kSub:
      return CUDNN_POINTWISE_SUB;
    case ag::Mode::kAdd:
      return CUDNN_POINTWISE_ADD;
    case ag::Mode::kDiv:
      return CUDNN_POINTWISE_DIV;
    case ag::Mode::kExp:
      return CUDNN_POINTWISE_EXP;
    case ag::Mode::kLog:
      return CUDNN_POINTWISE_LOG;
    case ag::Mode::kIdentity:
      return CUDNN_POINTWISE_IDENTITY;
    case ag::Mode::kGenIndex:
      return CUDNN_POINTWISE_GEN_INDEX;
    case ag::Mode::kCmpGe:
      return CUDNN_POINTWISE_CMP_GE;
    case ag::Mode::kCmpGt:
      return CUDNN_POINTWISE_CMP_GT;
    case ag::Mode::kSelect:
      return CUDNN_POINTWISE_BINARY_SELECT;
    default:
      fail("cuDNN attention: not a pointwise mode");
  }
}

// Every tensor, then every operation in order (each finalized on creation).
Graph lower(const ag::Graph& d) {
  if (const std::string problem = ag::check(d); !problem.empty())
    fail("cuDNN attention graph: ", problem, " (a bug in attention_graph.cpp)");
  Graph g;
  for (const auto& [uid, t] : d.tensors) g.tensor(uid, dtype(t.type), t.dims, t.strides, t.storage);
  for (const ag::Op& op : d.ops) {
    switch (op.kind) {
      case ag::Kind::kMatmul:
        g.matmul(op.x, op.b, op.y);
        break;
      case ag::Kind::kReshape:
        g.reshape(op.x, op.y);
        break;
      case ag::Kind::kReduction:
        g.reduction(op.mode == ag::Mode::kMax ? CUDNN_REDUCE_TENSOR_MAX : CUDNN_REDUCE_TENSOR_ADD, op.x, op.y);
        break;
      case ag::Kind::kPointwise:
        g.pointwise(pointwise_mode(op.mode), op.x, op.y, op.b, op.t, dtype(op.prec), op.axis);
        break;
    }
  }
  return g;
}

// ---- plans per shape ---------------------------------------------------------------------------------

constexpr std::size_t kMaxShapes = 64;

using PlanKey = std::tuple<bool, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t>;

struct Cached {
  std::vector<int64_t> bound;  // the tensors a run binds (attention_graph::bound_uids)
  Graph graph;                 // keeps every descriptor the plan refers to
  Graph::Plan plan;            // plan.plan == nullptr: cuDNN refused this shape
  std::string refusal;
};

// The plan for a call, built on first use (runtime fusion compiles kernels then: seconds, once).
// Errors while building count as a refusal too, so that a graph this cuDNN does not take never
// stops a run: the caller falls back to the own kernels and logs the reason.
const Cached& plan_for(const AttentionCall& c) {
  static std::mutex m;
  static std::map<PlanKey, std::unique_ptr<Cached>> cache;
  const PlanKey key{c.backward, c.B, c.Tq, c.Tk, c.Hq, c.Hkv, c.dqk, c.dv, c.window};
  const std::lock_guard<std::mutex> lock(m);
  if (auto it = cache.find(key); it != cache.end()) return *it->second;
  auto entry = std::make_unique<Cached>();
  if (cache.size() >= kMaxShapes) {
    // evaluate's prompts start at varying lengths: without a bound every new length would pay a
    // runtime compile. Training needs a handful (forward and backward per layer kind).
    entry->refusal = "cuDNN graphs for " + std::to_string(kMaxShapes) +
                     " shapes exist already (each compiles kernels at run time): the own kernels for new ones";
    return *cache.emplace(key, std::move(entry)).first->second;
  }
  try {
    const ag::Graph description = c.backward ? ag::backward_graph(c) : ag::forward_graph(c);
    entry->bound = ag::bound_uids(description);
    entry->graph = lower(description);
    entry->plan = entry->graph.plan(handle(), &entry->refusal);
  } catch (const std::exception& e) {
    entry->plan = {};
    entry->refusal = e.what();
  }
  return *cache.emplace(key, std::move(entry)).first->second;
}

// Runs a plan with the given (uid, pointer) pairs and the plan's workspace.
void execute(const Cached& x, const std::vector<std::pair<int64_t, void*>>& bindings, void* workspace) {
  std::vector<int64_t> uids;
  std::vector<void*> ptrs;
  for (const auto& [uid, p] : bindings) uids.push_back(uid), ptrs.push_back(p);
  std::vector<int64_t> sorted = uids;
  std::sort(sorted.begin(), sorted.end());
  if (sorted != x.bound)
    fail("cuDNN attention: the run binds ", sorted.size(), " tensors, the graph needs ", x.bound.size(),
         " (a bug in cudnn_attention.cu)");
  Desc pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, uids.data(), static_cast<int64_t>(uids.size()))
      .set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, ptrs.data(), static_cast<int64_t>(ptrs.size()))
      .set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, &workspace)
      .finalize();
  HEADROOM_CUDNN_CHECK(cudnnBackendExecute(handle(), x.plan.plan->get(), pack.get()));
}

// The call's cached plan, or null with the reason cuDNN (or the shape budget) refused it.
const Cached* usable_plan(const AttentionCall& c, std::string* why) {
  const Cached& x = plan_for(c);
  if (x.plan.plan) return &x;
  *why = x.refusal;
  return nullptr;
}

// Element counts of a call's tensors.
struct Counts {
  int64_t q, k, v, o, stats;
  explicit Counts(const AttentionCall& c)
      : q(c.B * c.Tq * c.Hq * c.dqk),
        k(c.B * c.Tk * c.Hkv * c.dqk),
        v(c.B * c.Tk * c.Hkv * c.dv),
        o(c.B * c.Tq * c.Hq * c.dv),
        stats(c.B * c.Hq * c.Tq) {}
};

// The by-value scalars of a run: the variant pack holds host pointers to them until execute returns.
struct Scalars {
  float scale, window, one = 1.f, neg_inf = -std::numeric_limits<float>::infinity();

  void bind(std::vector<std::pair<int64_t, void*>>& b, bool backward) {
    b.insert(b.end(), {{kScale, &scale}, {kNegInf1, &neg_inf}});
    if (backward) b.emplace_back(kOne, &one);
    if (window > 0) b.insert(b.end(), {{kNegInf2, &neg_inf}, {kWindow, &window}});
  }
};

}  // namespace

CudnnSupport cudnn_support() {
  cudaDeviceProp p{};
  HEADROOM_CUDA_CHECK(cudaGetDeviceProperties(&p, current_device()));
  return {p.major * 10 + p.minor, static_cast<int64_t>(cudnnGetVersion())};
}

namespace {

// Q, K or V as cuDNN's bf16 operand: rounded from fp32 into the scratch, or bf16 (the operand
// precision) as it is.
const uint16_t* bf16_operand(const float* x, Carver& parts, int64_t n, const char* what) {
  uint16_t* b = parts.take<uint16_t>(n);
  round_to_bf16(x, b, n, what);
  return b;
}
const uint16_t* bf16_operand(const uint16_t* x, Carver&, int64_t, const char*) { return x; }
// The output as cuDNN writes it (bf16): into the scratch, widened into fp32 `out` by
// widen_output, or bf16 `out` itself.
uint16_t* bf16_output(float*, Carver& parts, int64_t n) { return parts.take<uint16_t>(n); }
uint16_t* bf16_output(uint16_t* out, Carver&, int64_t) { return out; }
void widen_output(const uint16_t* ob, float* out, int64_t n) {
  widen_from_bf16(ob, out, n, "cudnn attention_fwd (fp32 out)");
}
void widen_output(const uint16_t*, uint16_t*, int64_t) {}

template <class Kv>
bool forward(const AttentionCall& c, float scale, const Kv* q, const Kv* k, const Kv* v, Kv* out, float* lse,
             std::string* why) {
  const Cached* x = usable_plan(c, why);
  if (x == nullptr) return false;
  const Counts n(c);
  const auto ws = static_cast<std::size_t>(x->plan.workspace);
  // bf16 operands and output where they are fp32, and the statistics (aligned for cuDNN: lse may
  // be an offset into a larger buffer) in one scratch allocation.
  constexpr bool fp32 = std::is_same_v<Kv, float>;
  Carver sizes;
  if (fp32) sizes.take<uint16_t>(n.q), sizes.take<uint16_t>(n.k), sizes.take<uint16_t>(n.v), sizes.take<uint16_t>(n.o);
  sizes.take<float>(n.stats), sizes.take<unsigned char>(ws);
  Carver parts(scratch(sizes.used()));
  const uint16_t* qb = bf16_operand(q, parts, n.q, "cudnn attention_fwd (bf16 q)");
  const uint16_t* kb = bf16_operand(k, parts, n.k, "cudnn attention_fwd (bf16 k)");
  const uint16_t* vb = bf16_operand(v, parts, n.v, "cudnn attention_fwd (bf16 v)");
  uint16_t* ob = bf16_output(out, parts, n.o);
  float* stats = parts.take<float>(n.stats);
  void* workspace = parts.take<unsigned char>(ws);
  Scalars scalars{scale, static_cast<float>(c.window)};
  std::vector<std::pair<int64_t, void*>> b{{kQ, const_cast<uint16_t*>(qb)},
                                           {kKT, const_cast<uint16_t*>(kb)},
                                           {kV, const_cast<uint16_t*>(vb)},
                                           {kO, ob},
                                           {kStats, stats}};
  scalars.bind(b, false);
  execute(*x, b, workspace);
  widen_output(ob, out, n.o);
  HEADROOM_CUDA_CHECK(cudaMemcpyAsync(lse, stats, sizeof(float) * n.stats, cudaMemcpyDeviceToDevice, stream()));
  return true;
}

}  // namespace

bool cudnn_attention_fwd(const AttentionCall& c, float scale, const float* q, const float* k, const float* v,
                         float* out, float* lse, std::string* why) {
  return forward(c, scale, q, k, v, out, lse, why);
}

bool cudnn_attention_fwd(const AttentionCall& c, float scale, const uint16_t* q, const uint16_t* k, const uint16_t* v,
                         uint16_t* out, float* lse, std::string* why) {
  return forward(c, scale, q, k, v, out, lse, why);
}

namespace {

template <class Kv>
bool backward(const AttentionCall& c, float scale, const Kv* q, const Kv* k, const Kv* v, const Kv* out,
              const float* lse, const Kv* dout, float* dq, float* dk, float* dv, std::string* why) {
  const Cached* x = usable_plan(c, why);
  if (x == nullptr) return false;
  const Counts n(c);
  const auto ws = static_cast<std::size_t>(x->plan.workspace);
  constexpr bool fp32 = std::is_same_v<Kv, float>;
  Carver sizes;
  if (fp32)
    for (int64_t e : {n.q, n.k, n.v, n.o, n.o}) sizes.take<uint16_t>(e);  // q, k, v, out, dout
  for (int64_t e : {n.q, n.k, n.v}) sizes.take<uint16_t>(e);
  sizes.take<float>(n.stats), sizes.take<float>(n.stats), sizes.take<float>(n.q), sizes.take<unsigned char>(ws);
  Carver parts(scratch(sizes.used()));
  const uint16_t* qb = bf16_operand(q, parts, n.q, "cudnn attention_bwd (bf16 q)");
  const uint16_t* kb = bf16_operand(k, parts, n.k, "cudnn attention_bwd (bf16 k)");
  const uint16_t* vb = bf16_operand(v, parts, n.v, "cudnn attention_bwd (bf16 v)");
  const uint16_t* ob = bf16_operand(out, parts, n.o, "cudnn attention_bwd (bf16 out)");
  const uint16_t* dob = bf16_operand(dout, parts, n.o, "cudnn attention_bwd (bf16 dout)");
  uint16_t* dqb = parts.take<uint16_t>(n.q);
  uint16_t* dkb = parts.take<uint16_t>(n.k);
  uint16_t* dvb = parts.take<uint16_t>(n.v);
  float* stats = parts.take<float>(n.stats);
  float* softmax_sum = parts.take<float>(n.stats);
  float* dq_accum = parts.take<float>(n.q);
  void* workspace = parts.take<unsigned char>(ws);
  HEADROOM_CUDA_CHECK(cudaMemcpyAsync(stats, lse, sizeof(float) * n.stats, cudaMemcpyDeviceToDevice, stream()));
  // cuDNN ≥ 9.6 does not clear its dQ accumulator itself (cuDNN's frontend stopped doing it there).
  zero_async(dq_accum, sizeof(float) * n.q);
  Scalars scalars{scale, static_cast<float>(c.window)};
  std::vector<std::pair<int64_t, void*>> b{{kQ, const_cast<uint16_t*>(qb)},
                                           {kKT, const_cast<uint16_t*>(kb)},
                                           {kVT, const_cast<uint16_t*>(vb)},
                                           {kO, const_cast<uint16_t*>(ob)},
                                           {kDO, const_cast<uint16_t*>(dob)},
                                           {kStats, stats},
                                           {kDQ, dqb},
                                           {kDK, dkb},
                                           {kDV, dvb},
                                           {kSoftmaxSum, softmax_sum},
                                           {kDQAccum, dq_accum}};
  scalars.bind(b, true);
  execute(*x, b, workspace);
  widen_from_bf16(dqb, dq, n.q, "cudnn attention_bwd (fp32 dq)");
  widen_from_bf16(dkb, dk, n.k, "cudnn attention_bwd (fp32 dk)");
  widen_from_bf16(dvb, dv, n.v, "cudnn attention_bwd (fp32 dv)");
  return true;
}

}  // namespace

bool cudnn_attention_bwd(const AttentionCall& c, float scale, const float* q, const float* k, const float* v,
                         const float* out, const float* lse, const float* dout, float* dq, float* dk, float* dv,
                         std::string* why) {
  return backward(c, scale, q, k, v, out, lse, dout, dq, dk, dv, why);
}

bool cudnn_attention_bwd(const AttentionCall& c, float scale, const uint16_t* q, const uint16_t* k, const uint16_t* v,
                         const uint16_t* out, const float* lse, const uint16_t* dout, float* dq, float* dk, float* dv,
                         std::string* why) {
  return backward(c, scale, q, k, v, out, lse, dout, dq, dk, dv, why);
}

}  // namespace headroom::kernels::cuda
