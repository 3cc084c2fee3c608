// RMSNorm (forward, backward, and the tensor-parallel split of a row) and RoPE against naive fp64
// code; backward results against finite differences of the fp64 forward.
#include <cmath>

#include "test_kernels_support.h"
#include "headroom_error.h"

namespace headroom::kernels::test {
namespace {

constexpr float kEps = 1e-6f;

// y = x / sqrt(mean(x²) + eps) * w, one row.
std::vector<double> naive_rmsnorm_row(const double* x, const std::vector<double>& w, int64_t n, double eps) {
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
  const double r = 1.0 / std::sqrt(ss / n + eps);
  std::vector<double> y(n);
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * r * w[i];
  return y;
}

struct RmsResult {
  std::vector<float> y, rstd, dx, dw;
};

// The four kernels in the order a (non-split) layer calls them. dw starts from dw0 (it accumulates).
RmsResult run_rmsnorm(const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>& dy,
                      const std::vector<float>& dw0, int64_t rows, int64_t n) {
  RmsResult r{std::vector<float>(rows * n), std::vector<float>(rows), std::vector<float>(rows * n), dw0};
  std::vector<float> sumsq(rows), dot(rows);
  cpu().row_sumsq(x.data(), sumsq.data(), rows, n);
  cpu().rms_apply(x.data(), w.data(), sumsq.data(), r.y.data(), r.rstd.data(), rows, n, n, kEps);
  cpu().rms_bwd_dot(x.data(), w.data(), dy.data(), dot.data(), rows, n);
  cpu().rms_bwd_apply(x.data(), w.data(), dy.data(), r.rstd.data(), dot.data(), r.dx.data(), r.dw.data(), rows, n, n);
  return r;
}

TEST(KernelRmsNorm, ForwardAndBackwardMatchFp64AndFiniteDifferences) {
  const int64_t rows = 4, n = 24;
  auto x = random_floats(rows * n, 61, -2.f, 2.f);
  std::fill(x.begin() + 3 * n, x.end(), 0.f);  // an all-zero row: y = 0, no division by zero
  const auto w = random_floats(n, 62, 0.5f, 1.5f), dy = random_floats(rows * n, 63);
  const auto dw0 = random_floats(n, 64);
  const RmsResult got = run_rmsnorm(x, w, dy, dw0, rows, n);

  const auto xd = to_double(x), wd = to_double(w), dyd = to_double(dy);
  std::vector<double> y_want, rstd_want;
  for (int64_t r = 0; r < rows; ++r) {
    const auto yr = naive_rmsnorm_row(&xd[r * n], wd, n, kEps);
    y_want.insert(y_want.end(), yr.begin(), yr.end());
    double ss = 0;
    for (int64_t i = 0; i < n; ++i) ss += xd[r * n + i] * xd[r * n + i];
    rstd_want.push_back(1.0 / std::sqrt(ss / n + kEps));
  }
  EXPECT_TRUE(close_elementwise(got.y, y_want, 2e-6, 1e-7)) << "y";
  EXPECT_TRUE(close_elementwise(got.rstd, rstd_want, 1e-6, 0)) << "rstd";

  // L = sum(y ∘ dy), differentiated numerically in fp64.
  auto loss = [&](const std::vector<double>& xx, const std::vector<double>& ww) {
    double s = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const auto yr = naive_rmsnorm_row(&xx[r * n], ww, n, kEps);
      for (int64_t i = 0; i < n; ++i) s += yr[i] * dyd[r * n + i];
    }
    return s;
  };
  const auto dx_want = finite_difference_gradient([&](const auto& v) { return loss(v, wd); }, xd, 1e-6);
  auto dw_want = finite_difference_gradient([&](const auto& v) { return loss(xd, v); }, wd, 1e-6);
  for (int64_t i = 0; i < n; ++i) dw_want[i] += dw0[i];
  // Row 3 is zero: its rstd is 1/sqrt(eps) = 1000, so its dx is large and dominates the norm; check
  // the other rows on their own scale as well.
  EXPECT_TRUE(close_normwise(got.dx, dx_want, 1e-5)) << "dx";
  const std::vector<float> dx3(got.dx.begin(), got.dx.begin() + 3 * n);
  EXPECT_TRUE(close_normwise(dx3, std::vector<double>(dx_want.begin(), dx_want.begin() + 3 * n), 1e-5))
      << "dx rows 0-2";
  EXPECT_TRUE(close_normwise(got.dw, dw_want, 1e-5)) << "dw";
}

TEST(KernelRmsNorm, FrozenWeightSkipsDw) {
  const int64_t rows = 2, n = 8;
  const auto x = random_floats(rows * n, 65), w = random_floats(n, 66), dy = random_floats(rows * n, 67);
  std::vector<float> sumsq(rows), rstd(rows), y(rows * n), dot(rows), dx(rows * n), dx_ref(rows * n);
  const auto ref = run_rmsnorm(x, w, dy, std::vector<float>(n, 0.f), rows, n);
  cpu().row_sumsq(x.data(), sumsq.data(), rows, n);
  cpu().rms_apply(x.data(), w.data(), sumsq.data(), y.data(), rstd.data(), rows, n, n, kEps);
  cpu().rms_bwd_dot(x.data(), w.data(), dy.data(), dot.data(), rows, n);
  cpu().rms_bwd_apply(x.data(), w.data(), dy.data(), rstd.data(), dot.data(), dx.data(), nullptr, rows, n, n);
  EXPECT_EQ(dx, ref.dx);
}

TEST(KernelRmsNorm, SplitRowWithSummedStatisticsEqualsWholeRow) {
  // What a 2-way tensor-parallel layer does: each half computes partial sumsq / dot, the partials are
  // summed (the all-reduce), and each half applies with n_total = the whole row.
  const int64_t rows = 3, n = 48, h = n / 2;
  const auto x = random_floats(rows * n, 71, -2.f, 2.f), w = random_floats(n, 72, 0.5f, 1.5f);
  const auto dy = random_floats(rows * n, 73);
  const RmsResult whole = run_rmsnorm(x, w, dy, std::vector<float>(n, 0.f), rows, n);

  auto half = [&](const std::vector<float>& full, int64_t part) {
    std::vector<float> out(rows * h);
    for (int64_t r = 0; r < rows; ++r) std::copy_n(full.begin() + r * n + part * h, h, out.begin() + r * h);
    return out;
  };
  const std::vector<float> xs[2] = {half(x, 0), half(x, 1)}, dys[2] = {half(dy, 0), half(dy, 1)};
  const std::vector<float> ws[2] = {std::vector<float>(w.begin(), w.begin() + h),
                                    std::vector<float>(w.begin() + h, w.end())};
  std::vector<float> sumsq(rows, 0.f), dot(rows, 0.f), part(rows);
  for (int p = 0; p < 2; ++p) {
    cpu().row_sumsq(xs[p].data(), part.data(), rows, h);
    for (int64_t r = 0; r < rows; ++r) sumsq[r] += part[r];
    cpu().rms_bwd_dot(xs[p].data(), ws[p].data(), dys[p].data(), part.data(), rows, h);
    for (int64_t r = 0; r < rows; ++r) dot[r] += part[r];
  }
  for (int p = 0; p < 2; ++p) {
    std::vector<float> y(rows * h), rstd(rows), dx(rows * h), dw(h, 0.f);
    cpu().rms_apply(xs[p].data(), ws[p].data(), sumsq.data(), y.data(), rstd.data(), rows, h, n, kEps);
    cpu().rms_bwd_apply(xs[p].data(), ws[p].data(), dys[p].data(), rstd.data(), dot.data(), dx.data(), dw.data(), rows,
                        h, n);
    SCOPED_TRACE(::testing::Message() << "half " << p);
    EXPECT_TRUE(close_normwise(y, to_double(half(whole.y, p)), 1e-6)) << "y";
    EXPECT_TRUE(close_normwise(rstd, to_double(whole.rstd), 1e-6)) << "rstd";
    EXPECT_TRUE(close_normwise(dx, to_double(half(whole.dx, p)), 1e-6)) << "dx";
    EXPECT_TRUE(close_normwise(
        dw, to_double(std::vector<float>(whole.dw.begin() + p * h, whole.dw.begin() + (p + 1) * h)), 1e-6))
        << "dw";
  }
}

// Angle tables as the model builds them: inv_freq_i = base^(-2i/r), in double, cast to float, times
// an attention factor (YaRN; 1 = plain RoPE).
struct RopeTables {
  std::vector<float> cos, sin;
};
RopeTables rope_tables(int64_t max_pos, int64_t rot_dims, double base, double factor) {
  RopeTables t;
  const int64_t half = rot_dims / 2;
  for (int64_t p = 0; p < max_pos; ++p)
    for (int64_t i = 0; i < half; ++i) {
      const double a = p * std::pow(base, -2.0 * i / rot_dims);
      t.cos.push_back(static_cast<float>(std::cos(a) * factor));
      t.sin.push_back(static_cast<float>(std::sin(a) * factor));
    }
  return t;
}

// Hugging Face's x*cos + rotate_half(x)*sin with rotate_half(x) = [-x2, x1], or its transpose.
std::vector<double> naive_rope(const std::vector<float>& x, const RopeTables& tab, int64_t B, int64_t T, int64_t pos0,
                               int64_t H, int64_t hd, int64_t r, bool transpose) {
  std::vector<double> y = to_double(x);
  const int64_t half = r / 2;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < half; ++i) {
          const int64_t base = ((b * T + t) * H + h) * hd, pos = pos0 + t;
          const double c = tab.cos[pos * half + i], s = tab.sin[pos * half + i] * (transpose ? -1 : 1);
          const double x1 = x[base + i], x2 = x[base + i + half];
          y[base + i] = x1 * c - x2 * s;
          y[base + i + half] = x2 * c + x1 * s;
        }
  return y;
}

// The pre-norm layer's residual add and the MLP's input norm in one op: the same bits as the three
// ops it replaces, h and y and rstd, with and without rstd, and without the add (rms_apply's
// agreement with fp64 is the test above's).
TEST(KernelRmsNorm, AddRmsNormIsTheAddAndTheNormBitForBit) {
  const int64_t rows = 300, n = 1000;  // the parallel path
  const auto a = random_floats(rows * n, 21, -2.f, 2.f), b = random_floats(rows * n, 22), w = random_floats(n, 23);
  std::vector<float> h(rows * n), sumsq(rows), y(rows * n), rstd(rows);
  cpu().add(h.data(), a.data(), b.data(), rows * n);
  cpu().row_sumsq(h.data(), sumsq.data(), rows, n);
  cpu().rms_apply(h.data(), w.data(), sumsq.data(), y.data(), rstd.data(), rows, n, n, kEps);
  std::vector<float> h2(rows * n), y2(rows * n), rstd2(rows);
  cpu().add_rms_norm(a.data(), b.data(), h2.data(), w.data(), y2.data(), rstd2.data(), rows, n, kEps);
  EXPECT_EQ(h2, h);
  EXPECT_EQ(y2, y);
  EXPECT_EQ(rstd2, rstd);
  std::fill(y2.begin(), y2.end(), 0.f);
  cpu().add_rms_norm(a.data(), b.data(), h2.data(), w.data(), y2.data(), nullptr, rows, n, kEps);
  EXPECT_EQ(y2, y);
  // b null: the norm of a alone, as row_sumsq and rms_apply give it; h untouched.
  cpu().row_sumsq(a.data(), sumsq.data(), rows, n);
  cpu().rms_apply(a.data(), w.data(), sumsq.data(), y.data(), rstd.data(), rows, n, n, kEps);
  cpu().add_rms_norm(a.data(), nullptr, nullptr, w.data(), y2.data(), rstd2.data(), rows, n, kEps);
  EXPECT_EQ(y2, y);
  EXPECT_EQ(rstd2, rstd);
}

// rms_bwd over whole rows is rms_bwd_dot then rms_bwd_apply, bit for bit (the same sums in the same
// order), and with accumulate that gradient added to dx as axpy adds it; in place over dy too.
TEST(KernelRmsNorm, BackwardOverWholeRowsIsDotThenApplyBitForBit) {
  const int64_t rows = 300, n = 1000;  // the parallel path
  const auto x = random_floats(rows * n, 31, -2.f, 2.f), w = random_floats(n, 32), dy = random_floats(rows * n, 33);
  const auto rstd = random_floats(rows, 34, 0.5f, 2.f), dx0 = random_floats(rows * n, 35), dw0 = random_floats(n, 36);
  std::vector<float> dot(rows), g(rows * n), dw = dw0;
  cpu().rms_bwd_dot(x.data(), w.data(), dy.data(), dot.data(), rows, n);
  cpu().rms_bwd_apply(x.data(), w.data(), dy.data(), rstd.data(), dot.data(), g.data(), dw.data(), rows, n, n);
  std::vector<float> summed = dx0;
  cpu().axpy(summed.data(), g.data(), 1.f, rows * n);
  for (const bool accumulate : {false, true}) {
    std::vector<float> dx = dx0, dw2 = dw0;
    cpu().rms_bwd(x.data(), w.data(), dy.data(), rstd.data(), dx.data(), dw2.data(), rows, n, accumulate);
    EXPECT_EQ(dx, accumulate ? summed : g) << (accumulate ? "accumulated" : "written");
    EXPECT_EQ(dw2, dw);
  }
  std::vector<float> in_place = dy;
  cpu().rms_bwd(x.data(), w.data(), in_place.data(), rstd.data(), in_place.data(), nullptr, rows, n, false);
  EXPECT_EQ(in_place, g);
}

TEST(KernelRope, ForwardMatchesRotateHalfIncludingPartialRotation) {
  const int64_t B = 2, T = 5, pos0 = 3, H = 3, hd = 16;
  for (int64_t r : {16, 8}) {
    SCOPED_TRACE(::testing::Message() << "rot_dims=" << r);
    const auto tab = rope_tables(pos0 + T, r, 10000.0, 1.0);
    const auto x = random_floats(B * T * H * hd, 81);
    auto y = x;
    cpu().rope(y.data(), H * hd, y.data(), tab.cos.data(), tab.sin.data(), B, T, pos0, H, hd, r, false);
    EXPECT_TRUE(close_elementwise(y, naive_rope(x, tab, B, T, pos0, H, hd, r, false), 1e-6, 1e-7));
    for (int64_t row = 0; row < B * T * H; ++row)  // dims past rot_dims are untouched, bit for bit
      for (int64_t i = r; i < hd; ++i) ASSERT_EQ(y[row * hd + i], x[row * hd + i]);
  }
}

// Out of place from rows wider than the heads (the fused QKV product's output): the bits of the
// in-place op on those columns, the unrotated dims copied; rot_dims 0 is a plain copy.
TEST(KernelRope, OutOfPlaceFromWiderRowsIsTheInPlaceOpOnThoseColumns) {
  const int64_t B = 2, T = 5, pos0 = 3, H = 3, hd = 16, width = H * hd, ld = 2 * width + 7, col0 = width + 3;
  const auto wide = random_floats(B * T * ld, 85);
  for (int64_t r : {16, 8, 0}) {
    SCOPED_TRACE(::testing::Message() << "rot_dims=" << r);
    const auto tab = rope_tables(pos0 + T, std::max<int64_t>(r, 2), 10000.0, 1.1);
    std::vector<float> want(B * T * width), got(B * T * width, -7.f);
    for (int64_t row = 0; row < B * T; ++row)
      std::copy_n(wide.begin() + row * ld + col0, width, want.begin() + row * width);
    cpu().rope(want.data(), width, want.data(), tab.cos.data(), tab.sin.data(), B, T, pos0, H, hd, r, r == 8);
    cpu().rope(wide.data() + col0, ld, got.data(), tab.cos.data(), tab.sin.data(), B, T, pos0, H, hd, r, r == 8);
    EXPECT_EQ(got, want);
  }
  std::vector<float> y(B * T * ld);
  const auto tab = rope_tables(pos0 + T, hd, 10000.0, 1.0);
  EXPECT_THROW(cpu().rope(y.data(), ld, y.data(), tab.cos.data(), tab.sin.data(), B, T, pos0, H, hd, hd, false),
               headroom::Error);  // in place only over rows of exactly the heads' width
  EXPECT_THROW(
      cpu().rope(y.data(), width - 1, y.data() + 1, tab.cos.data(), tab.sin.data(), B, T, pos0, H, hd, hd, false),
      headroom::Error);  // x's rows narrower than the heads
}

TEST(KernelRope, InverseUndoesForward) {
  const int64_t B = 2, T = 9, pos0 = 100, H = 2, hd = 32, r = 32;
  const auto tab = rope_tables(pos0 + T, r, 500000.0, 1.0);
  const auto x = random_floats(B * T * H * hd, 82);
  auto y = x;
  cpu().rope(y.data(), H * hd, y.data(), tab.cos.data(), tab.sin.data(), B, T, pos0, H, hd, r, false);
  EXPECT_FALSE(close_elementwise(y, to_double(x), 1e-3, 0)) << "forward must change x";
  cpu().rope(y.data(), H * hd, y.data(), tab.cos.data(), tab.sin.data(), B, T, pos0, H, hd, r, true);
  EXPECT_TRUE(close_elementwise(y, to_double(x), 1e-6, 1e-6));
}

TEST(KernelRope, InverseIsTheTransposeEvenWithAnAttentionFactor) {
  // With YaRN's factor folded in the map is a scaled rotation; backward needs <Rx, g> = <x, Rᵀg>.
  const int64_t B = 1, T = 6, pos0 = 2, H = 2, hd = 12, r = 8;
  const auto tab = rope_tables(pos0 + T, r, 10000.0, 1.3);
  const auto x = random_floats(B * T * H * hd, 83), g = random_floats(B * T * H * hd, 84);
  auto rx = x, rtg = g;
  cpu().rope(rx.data(), H * hd, rx.data(), tab.cos.data(), tab.sin.data(), B, T, pos0, H, hd, r, false);
  cpu().rope(rtg.data(), H * hd, rtg.data(), tab.cos.data(), tab.sin.data(), B, T, pos0, H, hd, r, true);
  EXPECT_TRUE(close_elementwise(rtg, naive_rope(g, tab, B, T, pos0, H, hd, r, true), 1e-6, 1e-7));
  double lhs = 0, rhs = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    lhs += static_cast<double>(rx[i]) * g[i];
    rhs += static_cast<double>(x[i]) * rtg[i];
  }
  EXPECT_NEAR(lhs, rhs, 1e-5 * std::abs(lhs));
}

TEST(KernelRope, ZeroRotDimsInPlaceIsANoOpAndBadRotDimsAreRejected) {
  const auto tab = rope_tables(4, 8, 10000.0, 1.0);
  const auto x = random_floats(4 * 8, 85);
  auto y = x;
  cpu().rope(y.data(), 8, y.data(), tab.cos.data(), tab.sin.data(), 1, 4, 0, 1, 8, 0, false);
  EXPECT_EQ(y, x);
  EXPECT_THROW(cpu().rope(y.data(), 8, y.data(), tab.cos.data(), tab.sin.data(), 1, 4, 0, 1, 8, 5, false),
               headroom::Error);
  EXPECT_THROW(cpu().rope(y.data(), 8, y.data(), tab.cos.data(), tab.sin.data(), 1, 4, 0, 1, 8, 10, false),
               headroom::Error);
}

// rms_rope_operand (a QK norm applied on RoPE's way): rms_apply then rope_operand, bit for bit, rstd
// included, over headwise rows (one head) and layerwise ones (every head, n_total as a tensor-parallel
// split row's); a norm row that is not whole heads tiling the row is refused.
TEST(KernelRope, QkNormOnTheWayIsTheNormThenRope) {
  const int64_t B = 2, T = 5, pos0 = 3, H = 3, hd = 16, r = 8, width = H * hd;
  const auto tab = rope_tables(pos0 + T, r, 10000.0, 1.1);
  const auto x = random_floats(B * T * width, 86);
  for (const int64_t n : {hd, width}) {
    SCOPED_TRACE(::testing::Message() << "norm row " << n);
    const int64_t rows = B * T * width / n, n_total = 2 * n;
    const auto w = random_floats(n, 87);
    std::vector<float> sumsq(rows), rstd(rows), rstd2(rows, -1.f), normed(x.size()), want(x.size()), got(x.size());
    cpu().row_sumsq(x.data(), sumsq.data(), rows, n);
    cpu().rms_apply(x.data(), w.data(), sumsq.data(), normed.data(), rstd.data(), rows, n, n_total, kEps);
    cpu().rope_operand(normed.data(), width, want.data(), tab.cos.data(), tab.sin.data(), B, T, pos0, H, hd, r);
    cpu().rms_rope_operand(x.data(), w.data(), sumsq.data(), rstd2.data(), n, n_total, kEps, got.data(), tab.cos.data(),
                           tab.sin.data(), B, T, pos0, H, hd, r);
    EXPECT_EQ(got, want);
    EXPECT_EQ(rstd2, rstd);
  }
  std::vector<float> y(x.size()), s(B * T * width);
  for (const int64_t n : {int64_t{12}, 2 * hd})  // part of a head; two heads, which do not tile three
    EXPECT_THROW(cpu().rms_rope_operand(x.data(), x.data(), s.data(), s.data(), n, n, kEps, y.data(), tab.cos.data(),
                                        tab.sin.data(), B, T, pos0, H, hd, r),
                 headroom::Error)
        << n;
}

// The backward's rope into columns of wider rows (rope_grad_stored: the QKV products' output
// gradient): rope's inverse at those columns, the columns around left as they were.
TEST(KernelRope, GradStoredIsTheInverseRopeInTheColumns) {
  const int64_t B = 2, T = 5, pos0 = 3, H = 3, hd = 16, r = 8, width = H * hd, ld = 2 * width + 3, col0 = 5;
  const auto tab = rope_tables(pos0 + T, r, 10000.0, 1.1);
  const auto x = random_floats(B * T * width, 88);
  std::vector<float> rotated(x.size()), y(static_cast<std::size_t>(B * T * ld), 7.f);
  cpu().rope(x.data(), width, rotated.data(), tab.cos.data(), tab.sin.data(), B, T, pos0, H, hd, r, true);
  cpu().rope_grad_stored(x.data(), y.data() + col0, ld, tab.cos.data(), tab.sin.data(), B, T, pos0, H, hd, r);
  for (int64_t row = 0; row < B * T; ++row)
    for (int64_t c = 0; c < ld; ++c) {
      const bool ours = c >= col0 && c < col0 + width;
      EXPECT_EQ(y[row * ld + c], ours ? rotated[row * width + c - col0] : 7.f) << row << ", " << c;
    }
}

}  // namespace
}  // namespace headroom::kernels::test
