#include "cuda/attention_graph.h"

#include <algorithm>
#include <numeric>
#include <set>

namespace headroom::kernels::cuda::attention_graph {

int64_t Graph::tensor(int64_t uid, DType type, const View& v, Storage storage) {
  tensors[uid] = {type, v.dims, v.strides, storage};
  return uid;
}

namespace {

// [b, h, s, d] views of ops.h's [B, T, H, d] tensors; `transposed` swaps the last two (Kᵀ, Vᵀ).
View bshd(int64_t B, int64_t T, int64_t H, int64_t d, bool transposed = false) {
  if (transposed) return {{B, H, d, T}, {T * H * d, d, 1, H * d}};
  return {{B, H, T, d}, {T * H * d, d, H * d, 1}};
}
// Packed [b, h, rows, cols] (scores, statistics, dQ's fp32 accumulator).
View packed(int64_t B, int64_t H, int64_t rows, int64_t cols) {
  return {{B, H, rows, cols}, {H * rows * cols, rows * cols, cols, 1}};
}

// Causal (key j <= query i), then the sliding window (i - j < W): masked scores become -inf.
int64_t mask(Graph& g, int64_t s, const View& ss, int64_t window) {
  const int64_t row = g.temp(DType::kInt32, ss), col = g.temp(DType::kInt32, ss);
  g.pointwise(Mode::kGenIndex, s, row, -1, -1, DType::kFloat, 2);
  g.pointwise(Mode::kGenIndex, s, col, -1, -1, DType::kFloat, 3);
  const int64_t keep = g.temp(DType::kBool, ss);
  g.pointwise(Mode::kCmpGe, row, keep, col, -1, DType::kBool);
  const int64_t causal = g.temp(DType::kFloat, ss);
  g.pointwise(Mode::kSelect, s, causal, g.scalar(kNegInf1), keep);
  if (window == 0) return causal;
  const int64_t row2 = g.temp(DType::kInt32, ss), col2 = g.temp(DType::kInt32, ss);
  g.pointwise(Mode::kGenIndex, causal, row2, -1, -1, DType::kFloat, 2);
  g.pointwise(Mode::kGenIndex, causal, col2, -1, -1, DType::kFloat, 3);
  const int64_t shifted = g.temp(DType::kFloat, ss);
  g.pointwise(Mode::kAdd, col2, shifted, g.scalar(kWindow));
  const int64_t inside = g.temp(DType::kBool, ss);
  g.pointwise(Mode::kCmpGt, shifted, inside, row2, -1, DType::kBool);
  const int64_t windowed = g.temp(DType::kFloat, ss);
  g.pointwise(Mode::kSelect, causal, windowed, g.scalar(kNegInf2), inside);
  return windowed;
}

int64_t numel(const std::vector<int64_t>& dims) {
  return std::accumulate(dims.begin(), dims.end(), int64_t{1}, std::multiplies<>());
}

// Strides that lay the dims out densely in some axis order (every element once, no gaps).
bool dense(const Tensor& t) {
  if (t.dims.size() != t.strides.size() || t.dims.empty()) return false;
  std::vector<std::size_t> axes(t.dims.size());
  std::iota(axes.begin(), axes.end(), 0);
  std::stable_sort(axes.begin(), axes.end(), [&](std::size_t a, std::size_t b) { return t.strides[a] < t.strides[b]; });
  int64_t expected = 1;
  for (std::size_t a : axes) {
    if (t.dims[a] <= 0) return false;
    if (t.dims[a] == 1) continue;
    if (t.strides[a] != expected) return false;
    expected *= t.dims[a];
  }
  return true;
}

std::string name(int64_t uid) { return "tensor " + std::to_string(uid); }

// A batch or head dimension of an operand that the result repeats (GQA: KV heads per query group).
bool broadcasts(int64_t operand, int64_t result) { return operand > 0 && result % operand == 0; }

std::string check_shapes(const Graph& g, const Op& op, std::size_t i) {
  const auto& T = g.tensors;
  const Tensor& y = T.at(op.y);
  const Tensor& x = T.at(op.x);
  const std::string at = "op " + std::to_string(i) + ": ";
  switch (op.kind) {
    case Kind::kMatmul: {
      const Tensor& b = T.at(op.b);
      if (x.dims.size() != 4 || b.dims.size() != 4 || y.dims.size() != 4) return at + "matmul operands are not 4-d";
      if (x.dims[3] != b.dims[2]) return at + "matmul inner dimensions differ";
      if (y.dims[2] != x.dims[2] || y.dims[3] != b.dims[3]) return at + "matmul result has the wrong rows or columns";
      for (int d = 0; d < 2; ++d)
        if (y.dims[d] != std::max(x.dims[d], b.dims[d]) || !broadcasts(x.dims[d], y.dims[d]) ||
            !broadcasts(b.dims[d], y.dims[d]))
          return at + "matmul batch dimension " + std::to_string(d) + " does not broadcast";
      return "";
    }
    case Kind::kPointwise: {
      if (x.dims != y.dims) return at + "pointwise input and output dims differ";
      if (op.b >= 0) {
        const Tensor& b = T.at(op.b);
        if (b.dims.size() != y.dims.size()) return at + "pointwise operands differ in rank (cuDNN refuses that)";
        bool fits = true;
        for (std::size_t d = 0; fits && d < y.dims.size(); ++d) fits = b.dims[d] == y.dims[d] || b.dims[d] == 1;
        if (!fits) return at + "pointwise second operand does not broadcast to the output";
      }
      if (op.t >= 0 && T.at(op.t).dims != y.dims) return at + "select mask dims differ from the output";
      return "";
    }
    case Kind::kReduction: {
      if (x.dims.size() != y.dims.size()) return at + "reduction changes the rank";
      bool reduces = false;
      for (std::size_t d = 0; d < y.dims.size(); ++d) {
        if (y.dims[d] != x.dims[d] && !broadcasts(y.dims[d], x.dims[d]))
          return at + "reduction output dim does not divide the input";
        reduces |= y.dims[d] != x.dims[d];
      }
      return reduces ? "" : at + "reduction reduces nothing";
    }
    case Kind::kReshape: {
      if (numel(x.dims) != numel(y.dims) || x.dims.size() != 4 || y.dims.size() != 4)
        return at + "reshape changes the element count";
      std::vector<int64_t> swapped = x.dims;
      std::swap(swapped[2], swapped[3]);
      return y.dims == swapped ? "" : at + "reshape is not a transposed view";
    }
  }
  return "";
}

std::string check_types(const Graph& g, const Op& op, std::size_t i) {
  const std::string at = "op " + std::to_string(i) + ": ";
  const DType y = g.tensors.at(op.y).type;
  if (op.mode == Mode::kGenIndex && y != DType::kInt32) return at + "generated indices are not int32";
  if ((op.mode == Mode::kCmpGe || op.mode == Mode::kCmpGt) && (y != DType::kBool || op.prec != DType::kBool))
    return at + "a comparison must compute and produce booleans";
  if (op.mode == Mode::kSelect && g.tensors.at(op.t).type != DType::kBool) return at + "select mask is not boolean";
  if (op.kind == Kind::kPointwise && op.mode != Mode::kCmpGe && op.mode != Mode::kCmpGt && op.prec != DType::kFloat)
    return at + "pointwise math is not fp32";
  if (op.kind == Kind::kMatmul)
    for (int64_t u : {op.x, op.b})
      if (const DType d = g.tensors.at(u).type; d != DType::kBf16 && d != DType::kFloat)
        return at + "matmul operand is neither bf16 nor fp32";
  return "";
}

}  // namespace

std::string check(const Graph& g) {
  for (const auto& [uid, t] : g.tensors)
    if (!dense(t)) return name(uid) + ": strides are not a dense layout of its dims";
  std::map<int64_t, std::size_t> written;  // tensor -> the op that writes it
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    const Op& op = g.ops[i];
    for (int64_t u : {op.x, op.b, op.t, op.y})
      if (u >= 0 && !g.tensors.count(u)) return "op " + std::to_string(i) + ": " + name(u) + " does not exist";
    if (!written.emplace(op.y, i).second) return name(op.y) + " is written twice";
    if (g.tensors.at(op.y).storage == Storage::kByValue) return "op " + std::to_string(i) + " writes a by-value scalar";
  }
  std::set<int64_t> read;
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    const Op& op = g.ops[i];
    for (int64_t u : {op.x, op.b, op.t}) {
      if (u < 0) continue;
      read.insert(u);
      const auto w = written.find(u);
      if (g.tensors.at(u).storage == Storage::kVirtual && w == written.end())
        return "op " + std::to_string(i) + ": " + name(u) + " is an intermediate nothing writes";
      if (w != written.end() && w->second >= i)
        return "op " + std::to_string(i) + ": " + name(u) + " is read before it is written";
    }
    if (std::string e = check_shapes(g, op, i); !e.empty()) return e;
    if (std::string e = check_types(g, op, i); !e.empty()) return e;
  }
  for (const auto& [uid, op] : written)
    if (g.tensors.at(uid).storage == Storage::kVirtual && !read.count(uid))
      return name(uid) + " is computed and never used";
  return "";
}

std::vector<int64_t> bound_uids(const Graph& g) {
  std::set<int64_t> used;
  for (const Op& op : g.ops)
    for (int64_t u : {op.x, op.b, op.t, op.y})
      if (u >= 0 && g.tensors.at(u).storage != Storage::kVirtual) used.insert(u);
  return {used.begin(), used.end()};
}

Graph forward_graph(const AttentionCall& c) {
  Graph g;
  const int64_t B = c.B, T = c.Tq, Tk = c.Tk;
  const View ss = packed(B, c.Hq, T, Tk), rs = packed(B, c.Hq, T, 1);
  g.tensor(kQ, DType::kBf16, bshd(B, T, c.Hq, c.dqk));
  g.tensor(kKT, DType::kBf16, bshd(B, Tk, c.Hkv, c.dqk, true));
  g.tensor(kV, DType::kBf16, bshd(B, Tk, c.Hkv, c.dv));
  g.tensor(kO, DType::kBf16, bshd(B, T, c.Hq, c.dv));
  g.tensor(kStats, DType::kFloat, rs);
  const int64_t s0 = g.temp(DType::kFloat, ss);
  g.matmul(kQ, kKT, s0);
  const int64_t s1 = g.temp(DType::kFloat, ss);
  g.pointwise(Mode::kMul, s0, s1, g.scalar(kScale));
  const int64_t s = mask(g, s1, ss, c.window);
  const int64_t m = g.temp(DType::kFloat, rs);
  g.reduction(Mode::kMax, s, m);
  const int64_t centred = g.temp(DType::kFloat, ss);
  g.pointwise(Mode::kSub, s, centred, m);
  const int64_t e = g.temp(DType::kFloat, ss);
  g.pointwise(Mode::kExp, centred, e);
  const int64_t z = g.temp(DType::kFloat, rs);
  g.reduction(Mode::kSum, e, z);
  const int64_t log_z = g.temp(DType::kFloat, rs);
  g.pointwise(Mode::kLog, z, log_z);
  g.pointwise(Mode::kAdd, m, kStats, log_z);
  const int64_t p = g.temp(DType::kBf16, ss);
  g.pointwise(Mode::kDiv, e, p, z);
  g.matmul(p, kV, kO);
  return g;
}

Graph backward_graph(const AttentionCall& c) {
  Graph g;
  const int64_t B = c.B, T = c.Tq, Tk = c.Tk, Hq = c.Hq;
  const View o = bshd(B, T, Hq, c.dv), k = bshd(B, Tk, c.Hkv, c.dqk), ss = packed(B, Hq, T, Tk),
             rs = packed(B, Hq, T, 1);
  const View sst{{B, Hq, Tk, T}, {Hq * T * Tk, T * Tk, 1, Tk}};  // scores transposed (a view)
  g.tensor(kQ, DType::kBf16, bshd(B, T, Hq, c.dqk));
  g.tensor(kKT, DType::kBf16, bshd(B, Tk, c.Hkv, c.dqk, true));
  g.tensor(kVT, DType::kBf16, bshd(B, Tk, c.Hkv, c.dv, true));
  g.tensor(kO, DType::kBf16, o);
  g.tensor(kDO, DType::kBf16, o);
  g.tensor(kStats, DType::kFloat, rs);
  g.tensor(kDQ, DType::kBf16, bshd(B, T, Hq, c.dqk));
  g.tensor(kDK, DType::kBf16, k);
  g.tensor(kDV, DType::kBf16, bshd(B, Tk, c.Hkv, c.dv));
  g.tensor(kSoftmaxSum, DType::kFloat, rs);
  g.tensor(kDQAccum, DType::kFloat, packed(B, Hq, T, c.dqk));
  g.scalar(kScale);

  // D = rowsum(dO ∘ O)
  const int64_t prod = g.temp(DType::kFloat, o);
  g.pointwise(Mode::kMul, kDO, prod, kO);
  const int64_t rowsum = g.temp(DType::kFloat, rs);
  g.reduction(Mode::kSum, prod, rowsum);
  g.pointwise(Mode::kMul, rowsum, kSoftmaxSum, g.scalar(kOne));
  // P = exp(mask(Q·Kᵀ·scale − Stats))
  const int64_t s0 = g.temp(DType::kFloat, ss);
  g.matmul(kQ, kKT, s0);
  const int64_t s1 = g.temp(DType::kFloat, ss);
  g.pointwise(Mode::kMul, s0, s1, kScale);
  const int64_t s2 = g.temp(DType::kFloat, ss);
  g.pointwise(Mode::kSub, s1, s2, kStats);
  const int64_t masked = mask(g, s2, ss, c.window);
  const int64_t p = g.temp(DType::kFloat, ss);
  g.pointwise(Mode::kExp, masked, p);
  // dV = Pᵀ·dO (per query head, then summed over each KV head's group)
  const int64_t pt = g.temp(DType::kBf16, sst);
  g.reshape(p, pt);
  const auto per_kv_head = [&](int64_t a, int64_t b, int64_t out, int64_t d) {
    if (c.Hq == c.Hkv) return g.matmul(a, b, out);
    const int64_t all = g.temp(DType::kBf16, packed(B, Hq, Tk, d));
    g.matmul(a, b, all);
    g.reduction(Mode::kSum, all, out);
  };
  per_kv_head(pt, kDO, kDV, c.dv);
  // dS = P ∘ (dO·Vᵀ − D) · scale
  const int64_t dp = g.temp(DType::kFloat, ss);
  g.matmul(kDO, kVT, dp);
  const int64_t centred = g.temp(DType::kFloat, ss);
  g.pointwise(Mode::kSub, dp, centred, kSoftmaxSum);
  const int64_t weighted = g.temp(DType::kFloat, ss);
  g.pointwise(Mode::kMul, centred, weighted, p);
  const int64_t ds = g.temp(DType::kFloat, ss);
  g.pointwise(Mode::kMul, weighted, ds, kScale);
  // dK = dSᵀ·Q
  const int64_t dst = g.temp(DType::kBf16, sst);
  g.reshape(ds, dst);
  per_kv_head(dst, kQ, kDK, c.dqk);
  // dQ = dS·K, accumulated in fp32, then rounded to bf16
  const int64_t kv = g.temp(DType::kFloat, k);
  g.reshape(kKT, kv);
  g.matmul(ds, kv, kDQAccum);
  g.pointwise(Mode::kIdentity, kDQAccum, kDQ);
  return g;
}

}  // namespace headroom::kernels::cuda::attention_graph
