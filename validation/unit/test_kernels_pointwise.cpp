// SwiGLU, cross-entropy, AdamW and the vectorised exp against fp64 formulas and finite differences.
#include <cmath>
#include <limits>

#include "cpu/cpu_math.h"
#include "test_kernels_support.h"
#include "headroom_error.h"

namespace headroom::kernels::test {
namespace {

TEST(KernelMath, FastExpMatchesDoubleExpAndHandlesSpecialValues) {
  double worst = 0;
  for (int i = 0; i <= 200000; ++i) {
    const float v = -87.f + 175.f * static_cast<float>(i) / 200000.f;
    const double want = std::exp(static_cast<double>(v));
    worst = std::max(worst, std::abs(cpu::fast_exp(v) - want) / want);
  }
  EXPECT_LT(worst, 1.5e-7) << "max relative error of fast_exp on [-87, 88]";
  EXPECT_EQ(cpu::fast_exp(0.f), 1.f);
  EXPECT_EQ(cpu::fast_exp(-std::numeric_limits<float>::infinity()), 0.f);
  EXPECT_EQ(cpu::fast_exp(-1000.f), 0.f);
  EXPECT_EQ(cpu::fast_exp(1000.f), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(cpu::fast_exp(std::numeric_limits<float>::quiet_NaN())));
}

double silu(double g) { return g / (1 + std::exp(-g)); }

// The rows of gu are [gate (F) | up (F)], as the MLP's one GEMM over w_gate and w_up writes them.
std::vector<float> rows_of(const std::vector<float>& gate, const std::vector<float>& up, int64_t F) {
  std::vector<float> gu(2 * gate.size());
  for (size_t i = 0; i < gate.size(); ++i) {
    const size_t r = i / static_cast<size_t>(F), c = i % static_cast<size_t>(F);
    gu[r * 2 * F + c] = gate[i];
    gu[r * 2 * F + F + c] = up[i];
  }
  return gu;
}

TEST(KernelSwiGlu, ForwardMatchesFp64AndBackwardMatchesFiniteDifferences) {
  const int64_t rows = 250, F = 200, n = rows * F;  // the parallel path, F not a multiple of the SIMD width
  auto gate = random_floats(n, 91, -8.f, 8.f);
  const auto up = random_floats(n, 92, -2.f, 2.f), dout = random_floats(n, 93);
  // Saturated gates: silu → 0 (exp(-g) overflows) and silu → g.
  gate[0] = -100.f;
  gate[1] = 100.f;
  gate[2] = -30.f;
  gate[3] = 0.f;
  const std::vector<float> gu = rows_of(gate, up, F);
  std::vector<float> out(n), dgu(2 * n), dgate(n), dup(n);
  cpu().swiglu_fwd(gu.data(), out.data(), rows, F);
  cpu().swiglu_bwd(gu.data(), dout.data(), dgu.data(), rows, F);
  for (int64_t i = 0; i < n; ++i) dgate[i] = dgu[i / F * 2 * F + i % F], dup[i] = dgu[i / F * 2 * F + F + i % F];
  std::vector<float> in_place = gu;
  cpu().swiglu_bwd(in_place.data(), dout.data(), in_place.data(), rows, F);
  EXPECT_EQ(in_place, dgu);

  std::vector<double> out_want(n), dgate_want(n), dup_want(n);
  for (int64_t i = 0; i < n; ++i) {
    const double g = gate[i], u = up[i], d = dout[i], h = 1e-5;
    out_want[i] = silu(g) * u;
    // d/dg and d/du of silu(g) u, by central differences in fp64.
    dgate_want[i] = d * u * (silu(g + h) - silu(g - h)) / (2 * h);
    dup_want[i] = d * silu(g);
  }
  EXPECT_TRUE(close_elementwise(out, out_want, 2e-6, 1e-30)) << "out";
  // silu' crosses zero near g = -1.28, where 1 + g (1 - sigmoid(g)) cancels in fp32: hence an
  // absolute floor of 1e-7 against gradients of order 1.
  EXPECT_TRUE(close_elementwise(dgate, dgate_want, 1e-5, 1e-7)) << "dgate";
  EXPECT_TRUE(close_elementwise(dup, dup_want, 2e-6, 1e-30)) << "dup";
}

// lse(x) - x[t] in fp64.
double naive_ce(const double* x, int64_t V, int32_t t) {
  double m = x[0];
  for (int64_t i = 1; i < V; ++i) m = std::max(m, x[i]);
  double s = 0;
  for (int64_t i = 0; i < V; ++i) s += std::exp(x[i] - m);
  return m + std::log(s) - x[t];
}

TEST(KernelCrossEntropy, LossesAndGradientsWithMaskedRows) {
  const int64_t rows = 5, V = 1000;
  const float grad_scale = 0.25f;
  auto logits = random_floats(rows * V, 101, -6.f, 6.f);
  for (int64_t i = 0; i < V; ++i) logits[3 * V + i] += 1000.f;  // needs max-subtraction
  const std::vector<int32_t> targets = {17, -1, 999, 0, -100};  // rows 1 and 4 are masked
  std::vector<float> losses(rows, 123.f), dlogits(rows * V, 123.f);
  cpu().cross_entropy(logits.data(), targets.data(), losses.data(), dlogits.data(), rows, V, grad_scale);

  const auto x = to_double(logits);
  std::vector<double> loss_want(rows, 0.0), grad_want(rows * V, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    if (targets[r] < 0) continue;
    loss_want[r] = naive_ce(&x[r * V], V, targets[r]);
    // The gradient by finite differences of the fp64 loss, for a sample of columns (all of them
    // would be 10^4 loss evaluations); the full row against the closed form below.
    std::vector<double> row(x.begin() + r * V, x.begin() + (r + 1) * V);
    for (int64_t i : {int64_t{0}, int64_t{targets[r]}, int64_t{500}, V - 1}) {
      const double x0 = row[i], h = 1e-5;
      row[i] = x0 + h;
      const double fp = naive_ce(row.data(), V, targets[r]);
      row[i] = x0 - h;
      const double fm = naive_ce(row.data(), V, targets[r]);
      row[i] = x0;
      EXPECT_NEAR(dlogits[r * V + i], grad_scale * (fp - fm) / (2 * h), 1e-7) << "row " << r << " column " << i;
    }
    double m = row[0], s = 0;
    for (double v : row) m = std::max(m, v);
    for (double v : row) s += std::exp(v - m);
    for (int64_t i = 0; i < V; ++i)
      grad_want[r * V + i] = grad_scale * (std::exp(row[i] - m) / s - (i == targets[r] ? 1 : 0));
  }
  EXPECT_TRUE(close_elementwise(losses, loss_want, 1e-6, 1e-6)) << "losses";
  EXPECT_TRUE(close_normwise(dlogits, grad_want, 1e-6)) << "dlogits";
  for (int64_t i = 0; i < V; ++i) {  // masked rows: exactly zero, not left as they were
    ASSERT_EQ(dlogits[1 * V + i], 0.f);
    ASSERT_EQ(dlogits[4 * V + i], 0.f);
  }
  EXPECT_EQ(losses[1], 0.f);
  EXPECT_EQ(losses[4], 0.f);
}

TEST(KernelCrossEntropy, GradientMayOverwriteLogitsAndIsOptional) {
  const int64_t rows = 3, V = 77;
  const auto logits = random_floats(rows * V, 102, -4.f, 4.f);
  const std::vector<int32_t> targets = {5, 76, -1};
  std::vector<float> losses_sep(rows), grad_sep(rows * V), losses_alias(rows), losses_only(rows);
  cpu().cross_entropy(logits.data(), targets.data(), losses_sep.data(), grad_sep.data(), rows, V, 1.f);
  auto inplace = logits;
  cpu().cross_entropy(inplace.data(), targets.data(), losses_alias.data(), inplace.data(), rows, V, 1.f);
  cpu().cross_entropy(logits.data(), targets.data(), losses_only.data(), nullptr, rows, V, 1.f);
  EXPECT_EQ(inplace, grad_sep);
  EXPECT_EQ(losses_alias, losses_sep);
  EXPECT_EQ(losses_only, losses_sep);
}

TEST(KernelCrossEntropy, NanLogitGivesNanLossAndBadTargetIsRejected) {
  const int64_t V = 40;
  auto logits = random_floats(2 * V, 103);
  logits[V + 7] = std::numeric_limits<float>::quiet_NaN();
  const std::vector<int32_t> targets = {1, 2};
  std::vector<float> losses(2);
  cpu().cross_entropy(logits.data(), targets.data(), losses.data(), nullptr, 2, V, 1.f);
  EXPECT_TRUE(std::isfinite(losses[0]));
  EXPECT_TRUE(std::isnan(losses[1])) << "a diverging model must not report a finite loss";
  const std::vector<int32_t> bad = {1, static_cast<int32_t>(V)};
  EXPECT_THROW(cpu().cross_entropy(logits.data(), bad.data(), losses.data(), nullptr, 2, V, 1.f), headroom::Error);
}

TEST(KernelAdamW, TwoStepsMatchAHandComputation) {
  const float lr = 1e-2f, b1 = 0.9f, b2 = 0.95f, eps = 1e-8f, wd = 0.1f;
  std::vector<float> p = {0.5f, -1.f, 2.f, 0.f}, m(4, 0.f), v(4, 0.f);
  const std::vector<float> g1 = {0.1f, -0.2f, 3.f, 0.f}, g2 = {-0.3f, -0.1f, 1.f, 1e-3f};
  // Step by step in double, straight from the formula in ops.h.
  std::vector<double> P(p.begin(), p.end()), M(4, 0.0), Vv(4, 0.0);
  for (int step = 1; step <= 2; ++step) {
    const auto& g = step == 1 ? g1 : g2;
    for (int i = 0; i < 4; ++i) {
      M[i] = b1 * M[i] + (1 - static_cast<double>(b1)) * g[i];
      Vv[i] = b2 * Vv[i] + (1 - static_cast<double>(b2)) * g[i] * g[i];
      const double mhat = M[i] / (1 - std::pow(static_cast<double>(b1), step));
      const double vhat = Vv[i] / (1 - std::pow(static_cast<double>(b2), step));
      P[i] -= lr * (mhat / (std::sqrt(vhat) + eps) + wd * P[i]);
    }
    cpu().adamw(p.data(), g.data(), m.data(), v.data(), 4, lr, b1, b2, eps, wd, step);
  }
  EXPECT_TRUE(close_elementwise(p, P, 1e-6, 1e-8)) << "p";
  EXPECT_TRUE(close_elementwise(m, M, 1e-6, 1e-12)) << "m";
  EXPECT_TRUE(close_elementwise(v, Vv, 1e-6, 1e-12)) << "v";
  // The hand numbers for element 0 after step 1 (m̂ = g, v̂ = g²): p = 0.5 - 0.01 (0.1/0.1 + 0.05).
  EXPECT_THROW(cpu().adamw(p.data(), g1.data(), m.data(), v.data(), 4, lr, b1, b2, eps, wd, 0), headroom::Error);
}

TEST(KernelAdamW, FirstStepMovesEachWeightByLrTimesSignPlusDecay) {
  // At step 1 bias correction makes m̂ / sqrt(v̂) = g / |g| = ±1 (up to eps): a closed form.
  const int64_t n = 40000;  // parallel path
  auto p = random_floats(n, 111);
  const auto g = random_floats(n, 112, 0.5f, 1.f);
  std::vector<float> m(n, 0.f), v(n, 0.f);
  std::vector<double> want(n);
  for (int64_t i = 0; i < n; ++i) want[i] = p[i] - 1e-3 * (1.0 + 0.1 * p[i]);
  cpu().adamw(p.data(), g.data(), m.data(), v.data(), n, 1e-3f, 0.9f, 0.999f, 0.f, 0.1f, 1);
  EXPECT_TRUE(close_elementwise(p, want, 1e-6, 1e-7));
}

}  // namespace
}  // namespace headroom::kernels::test
