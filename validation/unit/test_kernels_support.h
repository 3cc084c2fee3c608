// Helpers shared by the kernel tests: deterministic random inputs and comparisons that report the
// worst element, so a failure says where and by how much.
//
// Tolerances. These tests compare a fast fp32 kernel with the exact answer in float64 (a closed
// form, a plain float64 loop, a finite difference), not two fp32 runs with each other, so there is
// no rounding-noise pair to measure a floor from; the bounds are derived from fp32's unit roundoff
// u = 2^-24 (6e-8) and the depth of the op instead: an element-wise op or a short row reduction is
// within a few u (bounds 1e-7 to 2e-6 = 2 to 30 u), a GEMM or attention output sums K products
// (normwise error ~ sqrt(K) u for the blocked sums BLAS uses, bound 1e-6 to 1e-5 for K <= 1024), and
// a backward pass composes two or three of those (1e-5 to 1e-4). Every comparison prints its ratio
// to its bound as a "fixed-bound:" line, which validation/run_across_kernels.sh collects per kernel
// set and thread count: a bound that one machine's kernels approach shows there.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "ops.h"

namespace headroom::kernels::test {

inline const Ops& cpu() { return cpu_ops(); }

// Uniform [lo, hi) floats from a fixed seed: every run sees the same inputs.
inline std::vector<float> random_floats(std::size_t n, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> x(n);
  for (auto& v : x) v = dist(gen);
  return x;
}

inline std::vector<double> to_double(const std::vector<float>& x) { return std::vector<double>(x.begin(), x.end()); }

// One "fixed-bound:" line (see the header) for the running test: its error against its bound.
inline void report_bound(double error, double bound) {
  const auto* t = ::testing::UnitTest::GetInstance()->current_test_info();
  std::printf("fixed-bound: %s.%s difference %.3e bound %.3e ratio %.3g\n", t ? t->test_suite_name() : "?",
              t ? t->name() : "?", error, bound, bound > 0 ? error / bound : 0.0);
}

// Normwise check: max_i |actual_i - expected_i| <= rtol * max(max_i |expected_i|, floor). With the
// default floor 0 an all-zero expectation fails, so a test cannot pass by comparing nothing with
// nothing; a caller whose exact answer is zero passes the magnitude of the inputs as floor.
inline ::testing::AssertionResult close_normwise(const std::vector<float>& actual, const std::vector<double>& expected,
                                                 double rtol, double floor = 0.0) {
  if (actual.size() != expected.size())
    return ::testing::AssertionFailure() << "size " << actual.size() << " vs expected " << expected.size();
  double scale = 0.0, worst = -1.0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) scale = std::max(scale, std::abs(expected[i]));
  if (scale == 0.0 && floor == 0.0)
    return ::testing::AssertionFailure() << "expected tensor is all zeros: the test checks nothing";
  scale = std::max(scale, floor);
  for (std::size_t i = 0; i < expected.size(); ++i) {
    double err = std::abs(static_cast<double>(actual[i]) - expected[i]);
    if (std::isnan(err)) err = INFINITY;  // a NaN must fail, not compare false and slip through
    if (err > worst) {
      worst = err;
      at = i;
    }
  }
  report_bound(worst, rtol * scale);
  if (worst <= rtol * scale) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "max error " << worst << " at [" << at << "] (actual " << actual[at]
                                       << ", expected " << expected[at] << ") exceeds " << rtol
                                       << " x max|expected| = " << rtol * scale;
}

// Elementwise check: |actual_i - expected_i| <= atol + rtol * |expected_i| for every i.
inline ::testing::AssertionResult close_elementwise(const std::vector<float>& actual,
                                                    const std::vector<double>& expected, double rtol, double atol) {
  if (actual.size() != expected.size())
    return ::testing::AssertionFailure() << "size " << actual.size() << " vs expected " << expected.size();
  double worst_ratio = 0.0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const double err = std::abs(static_cast<double>(actual[i]) - expected[i]);
    const double bound = atol + rtol * std::abs(expected[i]);
    if (bound > 0) worst_ratio = std::max(worst_ratio, err / bound);
    if (!(err <= bound))
      return ::testing::AssertionFailure()
             << "element [" << i << "]: actual " << actual[i] << ", expected " << expected[i] << ", error " << err
             << " > " << atol << " + " << rtol << " x |expected|";
  }
  report_bound(worst_ratio, 1.0);
  return ::testing::AssertionSuccess();
}

// Central finite difference of a scalar function of a double vector, one coordinate at a time.
template <class F>
std::vector<double> finite_difference_gradient(F&& f, std::vector<double> x, double h) {
  std::vector<double> g(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double x0 = x[i];
    x[i] = x0 + h;
    const double fp = f(x);
    x[i] = x0 - h;
    const double fm = f(x);
    x[i] = x0;
    g[i] = (fp - fm) / (2 * h);
  }
  return g;
}

}  // namespace headroom::kernels::test
