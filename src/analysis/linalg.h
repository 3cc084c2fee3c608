// Small dense linear algebra for the analysis, in double: a symmetric eigen-solver (cyclic Jacobi),
// effective rank from singular values, and ordinary least squares with in-sample and leave-one-out
// R². Sizes here are small (Gram matrices up to ~1024², regressions with a handful of predictors),
// so no LAPACK dependency is needed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace headroom::analysis {

// Eigenvalues of the symmetric n×n matrix a (row-major), ascending. Cyclic Jacobi with threshold
// sweeps until the off-diagonal norm is below 1e-14 of the matrix norm (at most 60 sweeps).
std::vector<double> symmetric_eigenvalues(std::vector<double> a, int64_t n);

// Singular values of the rows × cols matrix x (row-major), descending: square roots of the
// eigenvalues of the smaller Gram matrix (x xᵀ or xᵀ x), negative rounding clamped to 0.
std::vector<double> singular_values(const std::vector<double>& x, int64_t rows, int64_t cols);

// Effective rank (Roy & Vetterli 2007), as the seed paper uses it: exp(H(p)) with p_i = σ_i / Σσ,
// the singular values normalised to sum 1 (σ, not σ²). 0 when every σ is 0.
double effective_rank(const std::vector<double>& sigma);

// Ordinary least squares y ≈ b0 + Σ b_k x_k. x is n × p (row-major, no intercept column).
struct OlsFit {
  bool ok = false;
  std::string why;           // when !ok
  std::vector<double> coef;  // b0, b1..bp
  double r2 = 0;             // 1 − SS_res / SS_tot
  bool loo_ok = false;
  std::string loo_why;
  double loo_r2 = 0;  // 1 − Σ(y_i − ŷ_(−i))² / SS_tot, ŷ_(−i) from the fit without i
  int64_t n = 0, p = 0;
};

// Needs n ≥ p + 2 (so that a leave-one-out fit has n − 1 ≥ p + 1 points), non-constant y and a
// full-rank design; otherwise ok = false with the reason. The leave-one-out part can fail alone
// (loo_ok = false) when leaving a point out makes the design singular.
OlsFit ols(const std::vector<double>& x, int64_t n, int64_t p, const std::vector<double>& y);

// Solves the symmetric positive (semi)definite system a·b = c by Gaussian elimination with partial
// pivoting; false when a pivot is below tol · max|a|.
bool solve(std::vector<double> a, std::vector<double> c, int64_t n, std::vector<double>& b, double tol = 1e-12);

}  // namespace headroom::analysis
