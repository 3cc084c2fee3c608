#include "analysis/linalg.h"

#include "util/error.h"

#include <algorithm>
#include <cmath>

namespace headroom::analysis {

std::vector<double> symmetric_eigenvalues(std::vector<double> a, int64_t n) {
  if (static_cast<int64_t>(a.size()) != n * n) fail("symmetric_eigenvalues: matrix is not ", n, "x", n);
  auto at = [&](int64_t i, int64_t j) -> double& { return a[static_cast<size_t>(i * n + j)]; };
  double total = 0;
  for (double v : a) total += v * v;
  const double stop = 1e-28 * total;  // (1e-14 · ‖a‖)²
  for (int sweep = 0; sweep < 60; ++sweep) {
    double off = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = i + 1; j < n; ++j) off += 2 * at(i, j) * at(i, j);
    if (off <= stop) break;
    for (int64_t p = 0; p < n; ++p)
      for (int64_t q = p + 1; q < n; ++q) {
        const double apq = at(p, q);
        if (apq == 0 || apq * apq < 1e-36 * total) continue;
        // Rotation that zeroes a[p][q] (Golub & Van Loan, sym.schur2).
        const double tau = (at(q, q) - at(p, p)) / (2 * apq);
        const double t = (tau >= 0 ? 1 : -1) / (std::abs(tau) + std::sqrt(1 + tau * tau));
        const double c = 1 / std::sqrt(1 + t * t), s = t * c;
        for (int64_t k = 0; k < n; ++k) {  // columns p, q
          const double akp = at(k, p), akq = at(k, q);
          at(k, p) = c * akp - s * akq;
          at(k, q) = s * akp + c * akq;
        }
        for (int64_t k = 0; k < n; ++k) {  // rows p, q
          const double apk = at(p, k), aqk = at(q, k);
          at(p, k) = c * apk - s * aqk;
          at(q, k) = s * apk + c * aqk;
        }
        at(p, q) = at(q, p) = 0;
      }
  }
  std::vector<double> ev(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) ev[static_cast<size_t>(i)] = at(i, i);
  std::sort(ev.begin(), ev.end());
  return ev;
}

std::vector<double> singular_values(const std::vector<double>& x, int64_t rows, int64_t cols) {
  const bool by_rows = rows <= cols;  // Gram over the smaller side
  const int64_t m = by_rows ? rows : cols;
  std::vector<double> g(static_cast<size_t>(m * m), 0.0);
  if (by_rows) {
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = i; j < rows; ++j) {
        double s = 0;
        for (int64_t k = 0; k < cols; ++k)
          s += x[static_cast<size_t>(i * cols + k)] * x[static_cast<size_t>(j * cols + k)];
        g[static_cast<size_t>(i * m + j)] = g[static_cast<size_t>(j * m + i)] = s;
      }
  } else {
    for (int64_t r = 0; r < rows; ++r) {
      const double* xr = &x[static_cast<size_t>(r * cols)];
      for (int64_t i = 0; i < cols; ++i) {
        const double xi = xr[i];
        if (xi == 0) continue;
        double* gi = &g[static_cast<size_t>(i * m)];
        for (int64_t j = i; j < cols; ++j) gi[j] += xi * xr[j];
      }
    }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < i; ++j) g[static_cast<size_t>(i * m + j)] = g[static_cast<size_t>(j * m + i)];
  }
  std::vector<double> ev = symmetric_eigenvalues(std::move(g), m);
  std::vector<double> sv;
  for (auto it = ev.rbegin(); it != ev.rend(); ++it) sv.push_back(std::sqrt(std::max(0.0, *it)));
  return sv;
}

double effective_rank(const std::vector<double>& sigma) {
  double total = 0;
  for (double s : sigma) total += std::max(0.0, s);
  if (total <= 0) return 0;
  double h = 0;
  for (double s : sigma) {
    const double p = std::max(0.0, s) / total;
    if (p > 0) h -= p * std::log(p);
  }
  return std::exp(h);
}

bool solve(std::vector<double> a, std::vector<double> c, int64_t n, std::vector<double>& b, double tol) {
  double scale = 0;
  for (double v : a) scale = std::max(scale, std::abs(v));
  if (scale == 0) return false;
  for (int64_t col = 0; col < n; ++col) {
    int64_t piv = col;
    for (int64_t r = col + 1; r < n; ++r)
      if (std::abs(a[static_cast<size_t>(r * n + col)]) > std::abs(a[static_cast<size_t>(piv * n + col)])) piv = r;
    if (std::abs(a[static_cast<size_t>(piv * n + col)]) <= tol * scale) return false;
    if (piv != col) {
      for (int64_t k = 0; k < n; ++k)
        std::swap(a[static_cast<size_t>(col * n + k)], a[static_cast<size_t>(piv * n + k)]);
      std::swap(c[static_cast<size_t>(col)], c[static_cast<size_t>(piv)]);
    }
    for (int64_t r = col + 1; r < n; ++r) {
      const double f = a[static_cast<size_t>(r * n + col)] / a[static_cast<size_t>(col * n + col)];
      if (f == 0) continue;
      for (int64_t k = col; k < n; ++k) a[static_cast<size_t>(r * n + k)] -= f * a[static_cast<size_t>(col * n + k)];
      c[static_cast<size_t>(r)] -= f * c[static_cast<size_t>(col)];
    }
  }
  b.assign(static_cast<size_t>(n), 0.0);
  for (int64_t r = n - 1; r >= 0; --r) {
    double s = c[static_cast<size_t>(r)];
    for (int64_t k = r + 1; k < n; ++k) s -= a[static_cast<size_t>(r * n + k)] * b[static_cast<size_t>(k)];
    b[static_cast<size_t>(r)] = s / a[static_cast<size_t>(r * n + r)];
  }
  return true;
}

namespace {

// Least squares on the rows in `use` (design with intercept); false when singular.
bool fit_rows(const std::vector<double>& x, int64_t p, const std::vector<double>& y, const std::vector<int64_t>& use,
              std::vector<double>& coef) {
  const int64_t q = p + 1;
  // Centre the columns first: the normal equations of centred data are far better conditioned.
  std::vector<double> mx(static_cast<size_t>(p), 0.0);
  double my = 0;
  for (int64_t i : use) {
    my += y[static_cast<size_t>(i)];
    for (int64_t k = 0; k < p; ++k) mx[static_cast<size_t>(k)] += x[static_cast<size_t>(i * p + k)];
  }
  const auto m = static_cast<double>(use.size());
  my /= m;
  for (auto& v : mx) v /= m;
  std::vector<double> a(static_cast<size_t>(p * p), 0.0), c(static_cast<size_t>(p), 0.0);
  for (int64_t i : use)
    for (int64_t j = 0; j < p; ++j) {
      const double xj = x[static_cast<size_t>(i * p + j)] - mx[static_cast<size_t>(j)];
      c[static_cast<size_t>(j)] += xj * (y[static_cast<size_t>(i)] - my);
      for (int64_t k = 0; k < p; ++k)
        a[static_cast<size_t>(j * p + k)] += xj * (x[static_cast<size_t>(i * p + k)] - mx[static_cast<size_t>(k)]);
    }
  std::vector<double> b;
  if (p > 0 && !solve(a, c, p, b, 1e-10)) return false;
  coef.assign(static_cast<size_t>(q), 0.0);
  double b0 = my;
  for (int64_t k = 0; k < p; ++k)
    coef[static_cast<size_t>(k + 1)] = b[static_cast<size_t>(k)],
                                 b0 -= b[static_cast<size_t>(k)] * mx[static_cast<size_t>(k)];
  coef[0] = b0;
  return true;
}

double predict(const std::vector<double>& coef, const std::vector<double>& x, int64_t p, int64_t i) {
  double v = coef[0];
  for (int64_t k = 0; k < p; ++k) v += coef[static_cast<size_t>(k + 1)] * x[static_cast<size_t>(i * p + k)];
  return v;
}

}  // namespace

OlsFit ols(const std::vector<double>& x, int64_t n, int64_t p, const std::vector<double>& y) {
  OlsFit f;
  f.n = n, f.p = p;
  if (n < p + 2) {
    f.why = cat(n, " points for ", p, " predictor(s) and an intercept: need at least ", p + 2,
                " (leave-one-out refits on n − 1 points)");
    return f;
  }
  double my = 0;
  for (double v : y) my += v;
  my /= static_cast<double>(n);
  double ss_tot = 0;
  for (double v : y) ss_tot += (v - my) * (v - my);
  if (ss_tot <= 1e-24 * std::max(1.0, my * my)) {
    f.why = "the score is the same for every point (nothing to explain)";
    return f;
  }
  std::vector<int64_t> all(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) all[static_cast<size_t>(i)] = i;
  if (!fit_rows(x, p, y, all, f.coef)) {
    f.why = "the predictors are collinear or constant over the pool (singular design)";
    return f;
  }
  double ss_res = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double e = y[static_cast<size_t>(i)] - predict(f.coef, x, p, i);
    ss_res += e * e;
  }
  f.r2 = 1 - ss_res / ss_tot;
  double press = 0;
  for (int64_t i = 0; i < n; ++i) {
    std::vector<int64_t> rest;
    for (int64_t j = 0; j < n; ++j)
      if (j != i) rest.push_back(j);
    std::vector<double> c;
    if (!fit_rows(x, p, y, rest, c)) {
      f.ok = true;
      f.loo_why = cat("leaving point ", i + 1, " out makes the design singular (a predictor value occurs only there)");
      return f;
    }
    const double e = y[static_cast<size_t>(i)] - predict(c, x, p, i);
    press += e * e;
  }
  f.loo_r2 = 1 - press / ss_tot;
  f.ok = f.loo_ok = true;
  return f;
}

}  // namespace headroom::analysis
