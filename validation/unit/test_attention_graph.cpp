// The graphs cuDNN is given for attention (kernels/cuda/attention_graph.h), checked without a GPU:
// consistent (check()), the operations and bound tensors cuDNN's pattern has, and — run through a
// small fp64 interpreter of the graph's operations — the same outputs as the CPU backend's
// attention forward and backward (causal, sliding window, GQA, unequal widths). What cuDNN accepts
// only a GPU can tell (test_gpu_ops); what the graph computes is settled here.
#include "cuda/attention_graph.h"
#include "noise_floor.h"
#include "ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

namespace headroom::kernels::cuda::attention_graph {
namespace {

// ---- an fp64 interpreter of the graph ----------------------------------------------------------------

using Index = std::array<int64_t, 4>;

struct Store {
  const Graph& g;
  std::map<int64_t, std::vector<double>> data;  // by uid, addressed through the tensor's strides

  std::vector<double>& of(int64_t uid) {
    auto& v = data[uid];
    if (v.empty()) {
      int64_t n = 1;
      for (int64_t d : g.tensors.at(uid).dims) n *= d;
      v.assign(static_cast<std::size_t>(n), 0.0);
    }
    return v;
  }
  // The element of `uid` at a result index: size-1 dims broadcast (scalars are 1x1x1x1), and a
  // dimension the result repeats (GQA heads) maps result index i to i / (result / operand).
  double& at(int64_t uid, const Index& i, const std::vector<int64_t>& result_dims) {
    const Tensor& t = g.tensors.at(uid);
    auto& v = of(uid);
    int64_t off = 0;
    for (std::size_t d = 0; d < 4; ++d) {
      const int64_t k = t.dims[d] == 1 ? 0 : i[d] / (result_dims[d] / t.dims[d]);
      off += k * t.strides[d];
    }
    return v[static_cast<std::size_t>(off)];
  }
};

template <class F>
void each(const std::vector<int64_t>& dims, F f) {
  Index i{};
  for (i[0] = 0; i[0] < dims[0]; ++i[0])
    for (i[1] = 0; i[1] < dims[1]; ++i[1])
      for (i[2] = 0; i[2] < dims[2]; ++i[2])
        for (i[3] = 0; i[3] < dims[3]; ++i[3]) f(i);
}

double apply(Mode m, double x, double b, double t, int64_t axis, const Index& i) {
  switch (m) {
    case Mode::kMul:
      return x * b;
    case Mode::kSub:
      return x - b;
    case Mode::kAdd:
      return x + b;
    case Mode::kDiv:
      return x / b;
    case Mode::kExp:
      return std::exp(x);
    case Mode::kLog:
      return std::log(x);
    case Mode::kIdentity:
      return x;
    case Mode::kGenIndex:
      return static_cast<double>(i[static_cast<std::size_t>(axis)]);
    case Mode::kCmpGe:
      return x >= b ? 1 : 0;
    case Mode::kCmpGt:
      return x > b ? 1 : 0;
    case Mode::kSelect:
      return t != 0 ? x : b;
    default:
      ADD_FAILURE() << "not a pointwise mode";
      return 0;
  }
}

void run(Store& s) {
  for (const Op& op : s.g.ops) {
    const std::vector<int64_t>& yd = s.g.tensors.at(op.y).dims;
    switch (op.kind) {
      case Kind::kPointwise:
        each(yd, [&](const Index& i) {
          const double x = s.at(op.x, i, yd);
          const double b = op.b >= 0 ? s.at(op.b, i, yd) : 0, t = op.t >= 0 ? s.at(op.t, i, yd) : 0;
          s.at(op.y, i, yd) = apply(op.mode, x, b, t, op.axis, i);
        });
        break;
      case Kind::kMatmul: {
        const int64_t K = s.g.tensors.at(op.x).dims[3];
        each(yd, [&](const Index& i) {
          double sum = 0;
          for (int64_t k = 0; k < K; ++k)
            sum += s.at(op.x, {i[0], i[1], i[2], k}, {yd[0], yd[1], yd[2], K}) *
                   s.at(op.b, {i[0], i[1], k, i[3]}, {yd[0], yd[1], K, yd[3]});
          s.at(op.y, i, yd) = sum;
        });
        break;
      }
      case Kind::kReduction: {
        const std::vector<int64_t>& xd = s.g.tensors.at(op.x).dims;
        const bool max = op.mode == Mode::kMax;
        each(yd, [&](const Index& i) { s.at(op.y, i, yd) = max ? -std::numeric_limits<double>::infinity() : 0.0; });
        each(xd, [&](const Index& j) {
          Index i{};
          for (std::size_t d = 0; d < 4; ++d) i[d] = yd[d] == 1 ? 0 : j[d] / (xd[d] / yd[d]);
          double& y = s.at(op.y, i, yd);
          const double x = s.at(op.x, j, xd);
          y = max ? std::max(y, x) : y + x;
        });
        break;
      }
      case Kind::kReshape:
        each(yd, [&](const Index& i) {
          s.at(op.y, i, yd) = s.at(op.x, {i[0], i[1], i[3], i[2]}, s.g.tensors.at(op.x).dims);
        });
        break;
    }
  }
}

std::vector<float> random_floats(std::size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> x(n);
  for (float& v : x) v = u(gen);
  return x;
}

void put(Store& s, int64_t uid, const std::vector<float>& x) {
  auto& v = s.of(uid);
  ASSERT_EQ(v.size(), x.size()) << "tensor " << uid;
  std::copy(x.begin(), x.end(), v.begin());
}

template <class A, class B>
double rel_error(const std::vector<A>& got, const std::vector<B>& want) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double d = static_cast<double>(got[i]) - static_cast<double>(want[i]);
    num += d * d;
    den += static_cast<double>(want[i]) * static_cast<double>(want[i]);
  }
  return std::sqrt(num / den);
}

std::vector<double> widen(const std::vector<float>& x) { return {x.begin(), x.end()}; }

AttentionCall call(int64_t B, int64_t T, int64_t Hq, int64_t Hkv, int64_t dqk, int64_t dv, int64_t window,
                   bool backward) {
  return {{B, T, T, 0, Hq, Hkv, dqk, dv, window}, backward};
}

class AttentionGraph : public ::testing::TestWithParam<AttentionCall> {};

// fp64 interpretation vs the fp32 CPU backend, judged against the noise floor measured on the
// same inputs: how far the fp32 CPU result lies from the fp64 reference backend's (a wrong mask,
// scale, head mapping or formula is off by orders of magnitude more).
TEST_P(AttentionGraph, ComputesTheCpuBackendsAttention) {
  const AttentionCall c = GetParam();
  const Ops& cpu = cpu_ops();
  const int64_t nq = c.B * c.Tq * c.Hq * c.dqk, nk = c.B * c.Tk * c.Hkv * c.dqk, nv = c.B * c.Tk * c.Hkv * c.dv,
                no = c.B * c.Tq * c.Hq * c.dv, ns = c.B * c.Hq * c.Tq;
  const auto q = random_floats(nq, 1), k = random_floats(nk, 2), v = random_floats(nv, 3), dout = random_floats(no, 4);
  const float scale = 0.7f / std::sqrt(static_cast<float>(c.dqk));
  std::vector<float> out(no), lse(ns), dq(nq), dk(nk), dv(nv);
  cpu.attention_fwd(q.data(), k.data(), v.data(), out.data(), lse.data(), c, scale);
  cpu.attention_bwd(q.data(), k.data(), v.data(), out.data(), lse.data(), dout.data(), dq.data(), dk.data(), dv.data(),
                    c, scale);
  // The fp64 reference on the same inputs (its backward from the fp32 forward's out and lse, as
  // the graph's backward gets them).
  const BasicOps<double>& f64 = cpu_ops_f64();
  const auto q8 = widen(q), k8 = widen(k), v8 = widen(v), dout8 = widen(dout), out_in = widen(out), lse_in = widen(lse);
  std::vector<double> out8(no), lse8(ns), dq8(nq), dk8(nk), dv8(nv);
  f64.attention_fwd(q8.data(), k8.data(), v8.data(), out8.data(), lse8.data(), c, scale);
  f64.attention_bwd(q8.data(), k8.data(), v8.data(), out_in.data(), lse_in.data(), dout8.data(), dq8.data(), dk8.data(),
                    dv8.data(), c, scale);
  using validation::within_noise_floor;
  const float inf = -std::numeric_limits<float>::infinity();

  const Graph fwd = forward_graph(c);
  ASSERT_EQ(check(fwd), "");
  Store f{fwd, {}};
  put(f, kQ, q), put(f, kKT, k), put(f, kV, v);
  put(f, kScale, {scale}), put(f, kNegInf1, {inf});
  if (c.window > 0) put(f, kNegInf2, {inf}), put(f, kWindow, {static_cast<float>(c.window)});
  run(f);
  EXPECT_TRUE(within_noise_floor("graph forward out", rel_error(f.of(kO), out), rel_error(out, out8)));
  EXPECT_TRUE(within_noise_floor("graph forward lse", rel_error(f.of(kStats), lse), rel_error(lse, lse8)));

  const Graph bwd = backward_graph(c);
  ASSERT_EQ(check(bwd), "");
  Store b{bwd, {}};
  put(b, kQ, q), put(b, kKT, k), put(b, kVT, v), put(b, kO, out), put(b, kDO, dout), put(b, kStats, lse);
  put(b, kScale, {scale}), put(b, kOne, {1.f}), put(b, kNegInf1, {inf});
  if (c.window > 0) put(b, kNegInf2, {inf}), put(b, kWindow, {static_cast<float>(c.window)});
  run(b);
  EXPECT_TRUE(within_noise_floor("graph backward dq", rel_error(b.of(kDQ), dq), rel_error(dq, dq8)));
  EXPECT_TRUE(within_noise_floor("graph backward dk", rel_error(b.of(kDK), dk), rel_error(dk, dk8)));
  EXPECT_TRUE(within_noise_floor("graph backward dv", rel_error(b.of(kDV), dv), rel_error(dv, dv8)));
}

INSTANTIATE_TEST_SUITE_P(Shapes, AttentionGraph,
                         ::testing::Values(call(2, 9, 2, 2, 8, 8, 0, false),    // causal
                                           call(1, 11, 4, 2, 8, 8, 0, false),   // GQA 2:1
                                           call(2, 10, 2, 2, 8, 8, 4, false),   // sliding window
                                           call(1, 12, 6, 2, 16, 8, 3, false),  // GQA 3:1 + window, dqk != dv
                                           call(1, 6, 1, 1, 8, 8, 2, false)));  // a window of two keys

// The pattern's operations and the tensors a run binds (the counts of cuDNN's frontend for backends
// before 9.21: forward 14, +5 with a window; backward 22, +5 with a window, +2 for GQA).
TEST(AttentionGraphShape, OperationsAndBoundTensors) {
  EXPECT_EQ(forward_graph(call(1, 8, 2, 2, 8, 8, 0, false)).ops.size(), 14u);
  EXPECT_EQ(forward_graph(call(1, 8, 2, 2, 8, 8, 4, false)).ops.size(), 19u);
  EXPECT_EQ(backward_graph(call(1, 8, 2, 2, 8, 8, 0, true)).ops.size(), 22u);
  EXPECT_EQ(backward_graph(call(1, 8, 2, 2, 8, 8, 4, true)).ops.size(), 27u);
  EXPECT_EQ(backward_graph(call(1, 8, 4, 2, 8, 8, 4, true)).ops.size(), 29u);
  EXPECT_EQ(bound_uids(forward_graph(call(1, 8, 2, 2, 8, 8, 0, false))),
            (std::vector<int64_t>{kQ, kKT, kV, kO, kStats, kScale, kNegInf1}));
  EXPECT_EQ(bound_uids(backward_graph(call(1, 8, 4, 2, 8, 8, 4, true))),
            (std::vector<int64_t>{kQ, kKT, kO, kStats, kScale, kNegInf1, kNegInf2, kWindow, kDO, kDQ, kDK, kDV,
                                  kSoftmaxSum, kDQAccum, kOne, kVT}));
  // Kᵀ is K's own memory ([B, T, H, d]) under swapped dims and strides: no copy.
  const Graph g = forward_graph(call(2, 8, 4, 2, 16, 16, 0, false));
  const Tensor& kt = g.tensors.at(kKT);
  EXPECT_EQ(kt.dims, (std::vector<int64_t>{2, 2, 16, 8}));
  EXPECT_EQ(kt.strides, (std::vector<int64_t>{8 * 2 * 16, 16, 1, 2 * 16}));
}

// check() finds what a wrong edit of the graph would introduce.
TEST(AttentionGraphShape, CheckNamesTheFault) {
  const AttentionCall c = call(1, 8, 4, 2, 16, 16, 4, true);
  Graph g = backward_graph(c);
  std::swap(g.ops[3].x, g.ops[3].b);  // Kᵀ·Q instead of Q·Kᵀ
  EXPECT_NE(check(g).find("op 3: matmul"), std::string::npos) << check(g);
  g = backward_graph(c);
  g.tensors.at(kQ).strides[3] = 2;
  EXPECT_NE(check(g).find("tensor 1: strides are not a dense layout"), std::string::npos) << check(g);
  g = backward_graph(c);
  std::swap(g.ops[0], g.ops[1]);  // the row sum before the product it sums
  EXPECT_NE(check(g).find("op 0: tensor 100 is read before it is written"), std::string::npos) << check(g);
  g = backward_graph(c);
  g.ops[1].x = g.next_virtual;  // an operand that does not exist
  EXPECT_NE(check(g).find("does not exist"), std::string::npos) << check(g);
  g = forward_graph(call(1, 8, 2, 2, 8, 8, 0, false));
  g.ops.pop_back();  // P is computed and never used (and O never written)
  EXPECT_NE(check(g).find("is computed and never used"), std::string::npos) << check(g);
  g = forward_graph(call(1, 8, 2, 2, 8, 8, 0, false));
  g.ops[4].prec = DType::kFloat;  // the causal comparison computing in fp32
  EXPECT_NE(check(g).find("a comparison must compute and produce booleans"), std::string::npos) << check(g);
  g = forward_graph(call(1, 8, 2, 2, 8, 8, 0, false));
  g.tensors.at(kScale).dims = {1};  // a 1-d scalar: cuDNN 9.14 refuses the graph (seen on an H200)
  g.tensors.at(kScale).strides = {1};
  EXPECT_NE(check(g).find("pointwise operands differ in rank"), std::string::npos) << check(g);
}

}  // namespace
}  // namespace headroom::kernels::cuda::attention_graph
