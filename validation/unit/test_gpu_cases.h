// Every op of a CUDA op table against the CPU backend (the fp32 reference), on fresh random inputs.
// Included by two programs: test_gpu_ops (the real GPU tables; skips with 77 without a GPU) and
// test_gpu_emulated (the same kernel sources compiled for the CPU emulator; runs in CI).
//
// Each check uploads the same inputs to both backends, NaN-fills ("poisons") every output the op must
// write before calling it, and compares with the relative norm error ||got − want||₂ / ||want||₂
// over the finite entries; non-finite entries (lse = -inf of a query that sees no key) must match
// exactly, so an element the kernel never wrote (still NaN) fails.
//
// Tolerances. GEMM and attention are judged against a noise floor measured on the same inputs
// (validation/noise_floor.py; factor kNoiseFactor): for the fp32 table, how far the CPU fp32 result
// lies from the fp64 backend's (fp32 rounding in one summation order); for the bf16 table, how far
// the CPU fp32 result on inputs rounded to bf16 lies from the result on the inputs themselves (what
// bf16 operands cost before any kernel error; the kernels round more, e.g. attention's P, hence the
// factor). The other ops ("exact": element-wise, row norms, cross-entropy, AdamW) keep kExactTol,
// which is not measured but derived: each output is a handful of fp32 operations (a row sum for the
// norms), so two correct implementations differ by a few units of fp32 roundoff u = 2^-24 (6e-8),
// FMA contraction included; 1e-5 is ~170 u, and any real defect (a wrong index, a missed element)
// moves the relative error to 1e-2 or more.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "document_starts.h"
#include "noise_floor.h"
#include "ops.h"
#include "headroom_error.h"

namespace headroom::kernels::gputest {

struct Table {
  std::string name;
  std::function<const Ops&()> get;
  bool bf16;   // bf16 GEMM operands (matmul, attention): the floor is bf16 input rounding
  bool large;  // real GPU: bigger shapes; emulator: small ones
};
inline std::string table_name(const ::testing::TestParamInfo<Table>& i) { return i.param.name; }

constexpr double kExactTol = 1e-5;
using validation::kNoiseFactor;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

inline std::vector<float> random_floats(std::size_t n, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> x(n);
  for (auto& v : x) v = dist(gen);
  return x;
}

// A buffer of the device backend, freed through the same table.
template <class T = float>
class Dev {
 public:
  Dev(const Ops& ops, std::size_t n) : ops_(ops), n_(n), p_(static_cast<T*>(ops.alloc(n * sizeof(T)))) {}
  Dev(const Ops& ops, const std::vector<T>& host) : Dev(ops, host.size()) { upload(host); }
  Dev(const Dev&) = delete;
  Dev& operator=(const Dev&) = delete;
  ~Dev() { ops_.free(p_); }
  T* get() const { return p_; }
  void upload(const std::vector<T>& host) { ops_.copy_from_host(p_, host.data(), n_ * sizeof(T)); }
  std::vector<T> download() const {
    std::vector<T> h(n_);
    ops_.copy_to_host(h.data(), p_, n_ * sizeof(T));
    return h;
  }
  void poison() {
    if constexpr (std::is_same_v<T, float>) ops_.fill(p_, kNaN, static_cast<int64_t>(n_));
  }

 private:
  const Ops& ops_;
  std::size_t n_;
  T* p_;
};

inline ::testing::AssertionResult close(const std::vector<float>& got, const std::vector<float>& want, double tol,
                                        const std::string& what) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << what << ": size " << got.size() << " vs " << want.size();
  double num = 0, den = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (!std::isfinite(want[i])) {
      const bool same = std::isnan(want[i]) ? std::isnan(got[i]) : got[i] == want[i];
      if (!same)
        return ::testing::AssertionFailure()
               << what << ": element " << i << " is " << got[i] << ", expected non-finite " << want[i];
      continue;
    }
    if (!std::isfinite(got[i]))
      return ::testing::AssertionFailure()
             << what << ": element " << i << " is " << got[i] << " (expected " << want[i] << "; NaN = never written?)";
    const double d = static_cast<double>(got[i]) - want[i];
    num += d * d;
    den += static_cast<double>(want[i]) * want[i];
  }
  if (den == 0.0) {
    if (num == 0.0) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << what << ": expected all zeros, error norm " << std::sqrt(num);
  }
  const double rel = std::sqrt(num / den);
  std::printf("    %-48s relative error %.3g (tolerance %.0e)\n", what.c_str(), rel, tol);
  if (rel <= tol) return ::testing::AssertionSuccess();
  std::size_t worst = 0;
  double wd = -1;
  for (std::size_t i = 0; i < want.size(); ++i)
    if (std::isfinite(want[i]) && std::abs(got[i] - want[i]) > wd) wd = std::abs(got[i] - want[i]), worst = i;
  return ::testing::AssertionFailure() << what << ": relative norm error " << rel << " > " << tol << " (worst element "
                                       << worst << ": " << got[worst] << " vs " << want[worst] << ")";
}

// ||got − want|| / ||want|| over the entries finite in both (close() checks the rest).
inline double rel_norm(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < want.size() && i < got.size(); ++i) {
    if (!std::isfinite(want[i]) || !std::isfinite(got[i])) continue;
    const double d = static_cast<double>(got[i]) - want[i];
    num += d * d;
    den += static_cast<double>(want[i]) * want[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

// close() with the tolerance kNoiseFactor × floor, printing the line noise_floor.py prints.
inline ::testing::AssertionResult close_to_floor(const std::vector<float>& got, const std::vector<float>& want,
                                                 double floor, const std::string& what) {
  validation::report_noise_floor(what, rel_norm(got, want), floor);
  return close(got, want, kNoiseFactor * floor, what);
}

inline float round_bf16(float x) {  // round to nearest even, as the bf16 tables' conversions do
  if (!std::isfinite(x)) return x;
  uint32_t u;
  std::memcpy(&u, &x, 4);
  u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  std::memcpy(&x, &u, 4);
  return x;
}

// Elements stored in a precision of `bytes` (2: bf16 bits, 4: fp32) as floats.
inline std::vector<float> stored_floats(const std::vector<unsigned char>& stored, int64_t bytes) {
  std::vector<float> out(stored.size() / static_cast<std::size_t>(bytes));
  for (std::size_t i = 0; i < out.size(); ++i) {
    uint32_t bits = 0;
    if (bytes == 2)
      std::memcpy(reinterpret_cast<unsigned char*>(&bits) + 2, &stored[2 * i], 2);
    else
      std::memcpy(&bits, &stored[4 * i], 4);
    std::memcpy(&out[i], &bits, 4);
  }
  return out;
}

// What a store in a precision of `bytes` keeps of x.
inline std::vector<float> rounded_to(std::vector<float> x, int64_t bytes) {
  if (bytes == 2)
    for (float& e : x) e = round_bf16(e);
  return x;
}

// A block of n elements stored in the table's operand precision: rope_operand with nothing to rotate.
inline void store_operand(const Ops& d, void* dst, const float* src, int64_t n) {
  d.rope_operand(src, n, dst, nullptr, nullptr, 1, 1, 0, 1, n, 0);
}

// The noise floor of each output of an op (see the header): run(ops, inputs) calls the op of
// BasicOps<T> on inputs (vectors of T) and returns its outputs.
template <class Run>
std::vector<double> noise_floors(bool bf16, const std::vector<std::vector<float>>& inputs, Run run) {
  const std::vector<std::vector<float>> want = run(cpu_ops(), inputs);
  std::vector<std::vector<float>> other;
  if (bf16) {
    auto rounded = inputs;
    for (auto& v : rounded)
      for (auto& x : v) x = round_bf16(x);
    other = run(cpu_ops(), rounded);
  } else {
    std::vector<std::vector<double>> in64;
    for (const auto& v : inputs) in64.emplace_back(v.begin(), v.end());
    for (const auto& v : run(cpu_ops_f64(), in64)) other.emplace_back(v.begin(), v.end());
  }
  std::vector<double> floors;
  for (std::size_t i = 0; i < want.size(); ++i) floors.push_back(rel_norm(other[i], want[i]));
  return floors;
}

class GpuOps : public ::testing::TestWithParam<Table> {
 protected:
  const Ops& dev() const { return GetParam().get(); }
  const Ops& cpu() const { return cpu_ops(); }
  bool bf16() const { return GetParam().bf16; }
  std::string label(const std::string& what) const { return GetParam().name + " " + what; }
  bool large() const { return GetParam().large; }
};

TEST_P(GpuOps, MemoryRoundTripAndFill) {
  const Ops& d = dev();
  void* empty = d.alloc(0);
  EXPECT_NE(empty, nullptr) << "alloc(0) returns a freeable pointer";
  d.free(empty);
  const auto x = random_floats(1000, 1);
  Dev<float> buf(d, x);
  EXPECT_EQ(buf.download(), x);
  d.fill(buf.get(), 2.5f, 999);
  const auto y = buf.download();
  for (int i = 0; i < 999; ++i) ASSERT_EQ(y[i], 2.5f) << i;
  EXPECT_EQ(y[999], x[999]) << "fill wrote past n";
  Dev<float> copied(d, 1000);
  d.copy(copied.get(), buf.get(), 1000 * sizeof(float));
  EXPECT_EQ(copied.download(), y) << "device-to-device copy";
  std::vector<int32_t> ids{3, -1, 7};
  Dev<int32_t> di(d, ids);
  EXPECT_EQ(di.download(), ids);
  d.synchronize();
}

// CUDA graphs (ops.h's capture_begin … graph_free): the captured work does not run at capture; the
// graph replays it on what its buffers hold at each launch, bit for bit the same ops enqueued one
// by one. A host wait or a free inside a capture is refused, and a free after it makes the graph
// stale.
TEST_P(GpuOps, GraphsReplayWhatTheyCaptured) {
  const Ops& d = dev();
  const int64_t M = 64, N = 48, K = 32;
  Dev<float> A(d, random_floats(M * K, 11)), B(d, random_floats(K * N, 12)), C(d, M * N), out(d, M * N), want(d, M * N);
  const auto work = [&](float* result) {
    d.matmul(A.get(), B.get(), C.get(), M, N, K, false, false, false);
    d.axpy(C.get(), B.get(), 0.5f, std::min(M * N, K * N));
    d.copy(result, C.get(), static_cast<std::size_t>(M * N) * sizeof(float));
  };
  C.poison();
  out.poison();
  d.capture_begin();
  work(out.get());
  void* graph = d.capture_end(true);
  ASSERT_NE(graph, nullptr);
  for (float x : out.download()) ASSERT_TRUE(std::isnan(x)) << "the capture ran the work";
  for (uint32_t round = 0; round < 2; ++round) {
    A.upload(random_floats(M * K, 20 + round));
    ASSERT_TRUE(d.graph_launch(graph));
    work(want.get());
    EXPECT_EQ(out.download(), want.download()) << "round " << round;
  }
  d.free(d.alloc(256));
  EXPECT_FALSE(d.graph_launch(graph)) << "a graph captured before a free is stale";
  d.graph_free(graph);

  d.capture_begin();
  EXPECT_THROW(d.synchronize(), headroom::Error);
  EXPECT_EQ(d.capture_end(false), nullptr);
  void* p = d.alloc(256);
  d.capture_begin();
  d.free(p);
  EXPECT_THROW(d.capture_end(true), headroom::Error);
  Dev<float> after(d, random_floats(16, 3));
  EXPECT_EQ(after.download(), random_floats(16, 3)) << "the backend works after the refused captures";
}

TEST_P(GpuOps, Matmul) {
  const Ops& d = dev();
  const int64_t M = large() ? 300 : 37, N = large() ? 257 : 53, K = large() ? 130 : 29;
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (int acc = 0; acc < 2; ++acc)
        for (int misalign = 0; misalign < 2; ++misalign) {
          // misalign: operands at odd float offsets inside larger buffers, as the model passes them.
          const int64_t off = misalign ? 1 : 0;
          const auto A = random_floats(M * K + off, 10 + ta), B = random_floats(K * N + off, 20 + tb);
          const auto C0 = random_floats(M * N + off, 30);
          std::vector<float> want = C0;
          cpu().matmul(A.data() + off, B.data() + off, want.data() + off, M, N, K, ta, tb, acc);
          Dev<float> a(d, A), b(d, B), c(d, C0);
          if (!acc) c.poison();
          if (!acc && off) {  // keep the element before C's start intact: it is not the op's
            d.copy_from_host(c.get(), C0.data(), sizeof(float));
          }
          d.matmul(a.get() + off, b.get() + off, c.get() + off, M, N, K, ta, tb, acc);
          const auto floor = noise_floors(bf16(), {A, B, C0}, [&](const auto& ops, const auto& in) {
            auto out = in[2];
            ops.matmul(in[0].data() + off, in[1].data() + off, out.data() + off, M, N, K, ta, tb, acc);
            return std::vector<std::decay_t<decltype(out)>>{out};
          });
          EXPECT_TRUE(close_to_floor(c.download(), want, floor[0],
                                     label("matmul ta=" + std::to_string(ta) + " tb=" + std::to_string(tb) +
                                           " acc=" + std::to_string(acc) + " off=" + std::to_string(off))));
        }
  // K = 0: an empty sum.
  Dev<float> a(d, 4), b(d, 4), c(d, 6);
  c.poison();
  d.matmul(a.get(), b.get(), c.get(), 2, 3, 0, false, false, false);
  for (float v : c.download()) EXPECT_EQ(v, 0.f);
}

// Weights in the table's weight precision (bf16 in the bf16 tables): weight_store rounds as matmul
// rounds its operands, so matmul_stored on the stored B is matmul on the fp32 B, bit for bit, and
// matmul_both_stored on a stored A as well (the model's stored activations) is too.
TEST_P(GpuOps, MatmulOnStoredWeights) {
  const Ops& d = dev();
  ASSERT_EQ(d.weight_bytes, bf16() ? 2 : 4);
  const int64_t M = large() ? 300 : 37, N = large() ? 257 : 53, K = large() ? 130 : 29;
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (int acc = 0; acc < 2; ++acc) {
        SCOPED_TRACE("ta=" + std::to_string(ta) + " tb=" + std::to_string(tb) + " acc=" + std::to_string(acc));
        const auto A = random_floats(M * K, 50 + ta), B = random_floats(K * N, 60 + tb), C0 = random_floats(M * N, 70);
        Dev<float> a(d, A), b(d, B), c(d, C0), c2(d, C0);
        Dev<float> c3(d, C0);
        const auto bytes = static_cast<std::size_t>(d.weight_bytes);
        Dev<unsigned char> stored(d, B.size() * bytes), stored_a(d, A.size() * bytes);
        d.weight_store(stored.get(), b.get(), static_cast<int64_t>(B.size()));
        d.weight_store(stored_a.get(), a.get(), static_cast<int64_t>(A.size()));
        d.matmul(a.get(), b.get(), c.get(), M, N, K, ta, tb, acc);
        d.matmul_stored(a.get(), stored.get(), c2.get(), M, N, K, ta, tb, acc);
        d.matmul_both_stored(stored_a.get(), stored.get(), c3.get(), M, N, K, ta, tb, acc);
        EXPECT_EQ(c2.download(), c.download());
        EXPECT_EQ(c3.download(), c.download());
      }
}

// A product written in the weight precision (the attention output's gradient): matmul_both_stored's
// fp32 result rounded to nearest even. Bit for bit on the emulator, whose products sum in one order;
// on a GPU cuBLASLt may run another kernel for a bf16 output, whose fp32 sum can differ in its last
// bits and so round to the neighbouring bf16 value: at most one unit in the last place there.
TEST_P(GpuOps, MatmulIntoTheWeightPrecision) {
  const Ops& d = dev();
  const int64_t M = large() ? 300 : 37, N = large() ? 257 : 53, K = large() ? 130 : 29;
  const auto bytes = static_cast<std::size_t>(d.weight_bytes);
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      SCOPED_TRACE("ta=" + std::to_string(ta) + " tb=" + std::to_string(tb));
      const auto A = random_floats(M * K, 80 + ta), B = random_floats(K * N, 90 + tb);
      Dev<float> a(d, A), b(d, B), c(d, M * N);
      Dev<unsigned char> stored_a(d, A.size() * bytes), stored_b(d, B.size() * bytes), out(d, M * N * bytes);
      d.weight_store(stored_a.get(), a.get(), static_cast<int64_t>(A.size()));
      d.weight_store(stored_b.get(), b.get(), static_cast<int64_t>(B.size()));
      out.upload(std::vector<unsigned char>(M * N * bytes, 0xFF));  // NaN in bf16 and fp32
      d.matmul_both_stored(stored_a.get(), stored_b.get(), c.get(), M, N, K, ta, tb, false);
      d.matmul_to_stored(stored_a.get(), stored_b.get(), out.get(), M, N, K, ta, tb);
      const std::vector<float> got = stored_floats(out.download(), d.weight_bytes);
      const std::vector<float> want = rounded_to(c.download(), d.weight_bytes);
      if (!large()) {
        EXPECT_EQ(got, want);
        continue;
      }
      int64_t apart = 0;
      for (std::size_t i = 0; i < want.size(); ++i) {
        const float ulp = std::nextafter(want[i], INFINITY) - want[i];
        const float unit = bytes == 2 ? ulp * 65536.f : ulp;  // bf16 keeps the top 16 bits
        EXPECT_LE(std::fabs(got[i] - want[i]), unit) << i;
        apart += got[i] != want[i];
      }
      std::printf("matmul_to_stored: %lld of %zu elements one unit apart from the rounded fp32 product\n",
                  static_cast<long long>(apart), want.size());
    }
}

// Sub-matrices of larger buffers with alpha and beta (analyze's attention rows): fp32 in both tables,
// so judged against the fp32 floor. The gaps between C's rows are not the op's and must stay as they were.
TEST_P(GpuOps, MatmulStrided) {
  const Ops& d = dev();
  const int64_t M = large() ? 96 : 12, N = large() ? 200 : 31, K = large() ? 64 : 8;
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (const float beta : {0.f, 0.5f}) {
        const int64_t lda = (ta ? M : K) + 5, ldb = (tb ? K : N) + 7, ldc = N + 3;
        const auto A = random_floats((ta ? K : M) * lda, 40 + ta), B = random_floats((tb ? N : K) * ldb, 50 + tb);
        const auto C0 = random_floats(M * ldc, 60);
        std::vector<float> want = C0;
        cpu().matmul_strided(A.data(), lda, B.data(), ldb, want.data(), ldc, M, N, K, ta, tb, 0.25f, beta);
        Dev<float> a(d, A), b(d, B), c(d, C0);
        d.matmul_strided(a.get(), lda, b.get(), ldb, c.get(), ldc, M, N, K, ta, tb, 0.25f, beta);
        const auto floor = noise_floors(false, {A, B, C0}, [&](const auto& ops, const auto& in) {
          auto out = in[2];
          ops.matmul_strided(in[0].data(), lda, in[1].data(), ldb, out.data(), ldc, M, N, K, ta, tb, 0.25f, beta);
          return std::vector<std::decay_t<decltype(out)>>{out};
        });
        const auto got = c.download();
        const std::string what =
            "matmul_strided ta=" + std::to_string(ta) + " tb=" + std::to_string(tb) + " beta=" + std::to_string(beta);
        EXPECT_TRUE(close_to_floor(got, want, floor[0], label(what)));
        for (int64_t i = 0; i < M; ++i)
          for (int64_t j = N; j < ldc; ++j) ASSERT_EQ(got[i * ldc + j], C0[i * ldc + j]) << label(what) << " gap";
      }
  Dev<float> a(d, 8), b(d, 8), c(d, 8);
  EXPECT_THROW(d.matmul_strided(a.get(), 1, b.get(), 2, c.get(), 2, 2, 2, 2, false, false, 1.f, 0.f),
               headroom::Error);  // lda 1 < K 2
}

TEST_P(GpuOps, VectorOps) {
  const Ops& d = dev();
  const int64_t n = large() ? 1'000'003 : 5003;
  const auto x = random_floats(n, 1), y = random_floats(n, 2);
  {
    std::vector<float> want = y;
    cpu().axpy(want.data(), x.data(), 0.37f, n);
    Dev<float> dy(d, y), dx(d, x);
    d.axpy(dy.get(), dx.get(), 0.37f, n);
    EXPECT_TRUE(close(dy.download(), want, kExactTol, "axpy"));
  }
  {
    std::vector<float> want(n);
    cpu().add(want.data(), x.data(), y.data(), n);
    Dev<float> dx(d, x), dy(d, y), out(d, n);
    out.poison();
    d.add(out.get(), dx.get(), dy.get(), n);
    EXPECT_TRUE(close(out.download(), want, kExactTol, "add"));
    d.add(dx.get(), dx.get(), dy.get(), n);  // out aliases a
    EXPECT_TRUE(close(dx.download(), want, kExactTol, "add (aliased)"));
  }
  {
    std::vector<float> want = x;
    cpu().scale(want.data(), -1.75f, n);
    Dev<float> dx(d, x);
    d.scale(dx.get(), -1.75f, n);
    EXPECT_TRUE(close(dx.download(), want, kExactTol, "scale"));
  }
}

TEST_P(GpuOps, Reductions) {
  const Ops& d = dev();
  const int64_t n = large() ? 3'000'017 : 70'001;
  auto x = random_floats(n, 3, -3.f, 3.f);
  Dev<float> dx(d, x);
  const double want = cpu().sum_squares(x.data(), n), got = d.sum_squares(dx.get(), n);
  EXPECT_LE(std::abs(got - want), kExactTol * want) << "sum_squares " << got << " vs " << want;
  EXPECT_EQ(d.sum_squares(dx.get(), 0), 0.0);
  EXPECT_EQ(d.count_nonfinite(dx.get(), n), 0);
  x[5] = kNaN;
  x[n - 1] = std::numeric_limits<float>::infinity();
  x[n / 2] = -std::numeric_limits<float>::infinity();
  dx.upload(x);
  EXPECT_EQ(d.count_nonfinite(dx.get(), n), cpu().count_nonfinite(x.data(), n));
  EXPECT_EQ(d.count_nonfinite(dx.get(), n), 3);
}

TEST_P(GpuOps, Embedding) {
  const Ops& d = dev();
  const int64_t V = 50, D = large() ? 1000 : 37, n = 300;
  const auto table = random_floats(V * D, 4), dout = random_floats(n * D, 5);
  std::vector<int32_t> ids(n);
  std::mt19937 gen(6);
  for (auto& i : ids) i = static_cast<int32_t>(gen() % 7);  // many repeats: the scatter must add
  std::vector<float> want(n * D);
  cpu().embedding_fwd(table.data(), ids.data(), want.data(), n, D);
  Dev<float> dt(d, table), out(d, n * D), dg(d, dout);
  Dev<int32_t> di(d, ids);
  out.poison();
  d.embedding_fwd(dt.get(), di.get(), out.get(), n, D);
  EXPECT_TRUE(close(out.download(), want, kExactTol, "embedding_fwd"));
  const auto g0 = random_floats(V * D, 7);
  std::vector<float> wantg = g0;
  cpu().embedding_bwd(dout.data(), ids.data(), wantg.data(), n, D);
  Dev<float> grad(d, g0);
  d.embedding_bwd(dg.get(), di.get(), grad.get(), n, D);
  EXPECT_TRUE(close(grad.download(), wantg, kExactTol, "embedding_bwd"));
}

TEST_P(GpuOps, RmsNorm) {
  const Ops& d = dev();
  const int64_t rows = large() ? 4099 : 300, n = large() ? 1000 : 70,
                n_total = n + 30;  // > 256 rows: several dw chunks
  const auto x = random_floats(rows * n, 8, -2.f, 2.f), w = random_floats(n, 9), dy = random_floats(rows * n, 10);
  const float eps = 1e-6f;
  std::vector<float> sumsq(rows), y(rows * n), rstd(rows), dot(rows), dx(rows * n);
  cpu().row_sumsq(x.data(), sumsq.data(), rows, n);
  for (auto& s : sumsq) s *= 1.3f;  // as if the other TP ranks' shares had been all-reduced in
  cpu().rms_apply(x.data(), w.data(), sumsq.data(), y.data(), rstd.data(), rows, n, n_total, eps);
  cpu().rms_bwd_dot(x.data(), w.data(), dy.data(), dot.data(), rows, n);
  const auto dw0 = random_floats(n, 11);
  std::vector<float> dw = dw0;
  cpu().rms_bwd_apply(x.data(), w.data(), dy.data(), rstd.data(), dot.data(), dx.data(), dw.data(), rows, n, n_total);

  Dev<float> X(d, x), W(d, w), DY(d, dy), S(d, rows), Y(d, rows * n), R(d, rows), DOT(d, rows), DX(d, rows * n),
      DW(d, dw0);
  S.poison();
  d.row_sumsq(X.get(), S.get(), rows, n);
  std::vector<float> sumsq_raw(rows);
  cpu().row_sumsq(x.data(), sumsq_raw.data(), rows, n);
  EXPECT_TRUE(close(S.download(), sumsq_raw, kExactTol, "row_sumsq"));
  S.upload(sumsq);
  Y.poison();
  R.poison();
  d.rms_apply(X.get(), W.get(), S.get(), Y.get(), R.get(), rows, n, n_total, eps);
  EXPECT_TRUE(close(Y.download(), y, kExactTol, "rms_apply y"));
  EXPECT_TRUE(close(R.download(), rstd, kExactTol, "rms_apply rstd"));
  Y.poison();
  d.rms_apply(X.get(), W.get(), S.get(), Y.get(), nullptr, rows, n, n_total, eps);
  EXPECT_TRUE(close(Y.download(), y, kExactTol, "rms_apply (rstd null)"));
  DOT.poison();
  d.rms_bwd_dot(X.get(), W.get(), DY.get(), DOT.get(), rows, n);
  EXPECT_TRUE(close(DOT.download(), dot, kExactTol, "rms_bwd_dot"));
  R.upload(rstd);
  DOT.upload(dot);
  DX.poison();
  d.rms_bwd_apply(X.get(), W.get(), DY.get(), R.get(), DOT.get(), DX.get(), DW.get(), rows, n, n_total);
  EXPECT_TRUE(close(DX.download(), dx, kExactTol, "rms_bwd_apply dx"));
  EXPECT_TRUE(close(DW.download(), dw, kExactTol, "rms_bwd_apply dw"));
  // dx aliasing dy, frozen weight (dw null).
  d.rms_bwd_apply(X.get(), W.get(), DY.get(), R.get(), DOT.get(), DY.get(), nullptr, rows, n, n_total);
  EXPECT_TRUE(close(DY.download(), dx, kExactTol, "rms_bwd_apply (dx aliases dy, dw null)"));
}

// rms_bwd (whole rows: the dot formed in the same pass) against the CPU's, written, added to a
// gradient already there, and in place over dy with a frozen weight.
TEST_P(GpuOps, RmsNormBackwardOverWholeRows) {
  const Ops& d = dev();
  const int64_t rows = large() ? 4099 : 300, n = large() ? 1000 : 70;  // > 256 rows: several dw chunks
  const auto x = random_floats(rows * n, 12, -2.f, 2.f), w = random_floats(n, 13), dy = random_floats(rows * n, 14);
  const auto rstd = random_floats(rows, 15, 0.5f, 2.f), dx0 = random_floats(rows * n, 16), dw0 = random_floats(n, 17);
  Dev<float> X(d, x), W(d, w), DY(d, dy), R(d, rstd), DX(d, rows * n), DW(d, dw0);
  for (const bool accumulate : {false, true}) {
    std::vector<float> dx = dx0, dw = dw0;
    cpu().rms_bwd(x.data(), w.data(), dy.data(), rstd.data(), dx.data(), dw.data(), rows, n, accumulate);
    DW.upload(dw0);
    if (accumulate)
      DX.upload(dx0);
    else
      DX.poison();
    d.rms_bwd(X.get(), W.get(), DY.get(), R.get(), DX.get(), DW.get(), rows, n, accumulate);
    const std::string what = accumulate ? "rms_bwd (accumulate)" : "rms_bwd";
    EXPECT_TRUE(close(DX.download(), dx, kExactTol, what + " dx"));
    EXPECT_TRUE(close(DW.download(), dw, kExactTol, what + " dw"));
  }
  std::vector<float> dx(rows * n);
  cpu().rms_bwd(x.data(), w.data(), dy.data(), rstd.data(), dx.data(), nullptr, rows, n, false);
  d.rms_bwd(X.get(), W.get(), DY.get(), R.get(), DY.get(), nullptr, rows, n, false);
  EXPECT_TRUE(close(DY.download(), dx, kExactTol, "rms_bwd (dx aliases dy, dw null)"));
}

// The fused residual add and norm against the CPU's, and against the device's own add, row_sumsq and
// rms_apply bit for bit (the same order of operations).
TEST_P(GpuOps, AddRmsNorm) {
  const Ops& d = dev();
  const int64_t rows = large() ? 4099 : 300, n = large() ? 1000 : 70;
  const auto a = random_floats(rows * n, 24, -2.f, 2.f), b = random_floats(rows * n, 25), w = random_floats(n, 26);
  const float eps = 1e-6f;
  std::vector<float> h(rows * n), y(rows * n), rstd(rows);
  cpu().add_rms_norm(a.data(), b.data(), h.data(), w.data(), y.data(), rstd.data(), rows, n, eps);
  Dev<float> A(d, a), B(d, b), W(d, w), H(d, rows * n), Y(d, rows * n), R(d, rows), S(d, rows);
  H.poison();
  Y.poison();
  R.poison();
  d.add_rms_norm(A.get(), B.get(), H.get(), W.get(), Y.get(), R.get(), rows, n, eps);
  const auto h_fused = H.download(), y_fused = Y.download(), r_fused = R.download();
  EXPECT_TRUE(close(h_fused, h, kExactTol, "add_rms_norm h"));
  EXPECT_TRUE(close(y_fused, y, kExactTol, "add_rms_norm y"));
  EXPECT_TRUE(close(r_fused, rstd, kExactTol, "add_rms_norm rstd"));
  d.add(H.get(), A.get(), B.get(), rows * n);
  d.row_sumsq(H.get(), S.get(), rows, n);
  d.rms_apply(H.get(), W.get(), S.get(), Y.get(), R.get(), rows, n, n, eps);
  EXPECT_EQ(H.download(), h_fused);
  EXPECT_EQ(Y.download(), y_fused);
  EXPECT_EQ(R.download(), r_fused);
  Y.poison();
  d.add_rms_norm(A.get(), B.get(), H.get(), W.get(), Y.get(), nullptr, rows, n, eps);
  EXPECT_EQ(Y.download(), y_fused);
  // y in the weight precision: what weight_store stores from the fp32 y, bit for bit, and h as before.
  const auto bytes = static_cast<std::size_t>(rows * n * d.weight_bytes);
  Dev<unsigned char> Want(d, bytes), Got(d, bytes);
  d.weight_store(Want.get(), Y.get(), rows * n);
  H.poison();
  d.add_rms_norm_stored(A.get(), B.get(), H.get(), W.get(), Got.get(), nullptr, rows, n, eps);
  EXPECT_EQ(Got.download(), Want.download());
  EXPECT_EQ(H.download(), h_fused);
  // b null: a's rows normed alone (the first block's input norm), as row_sumsq and rms_apply give them.
  d.row_sumsq(A.get(), S.get(), rows, n);
  d.rms_apply(A.get(), W.get(), S.get(), Y.get(), R.get(), rows, n, n, eps);
  const auto y_alone = Y.download(), r_alone = R.download();
  d.weight_store(Want.get(), Y.get(), rows * n);
  Y.poison();
  R.poison();
  d.add_rms_norm(A.get(), nullptr, nullptr, W.get(), Y.get(), R.get(), rows, n, eps);
  EXPECT_EQ(Y.download(), y_alone);
  EXPECT_EQ(R.download(), r_alone);
  d.add_rms_norm_stored(A.get(), nullptr, nullptr, W.get(), Got.get(), nullptr, rows, n, eps);
  EXPECT_EQ(Got.download(), Want.download());
}

TEST_P(GpuOps, Rope) {
  const Ops& d = dev();
  const int64_t B = 2, T = large() ? 300 : 9, H = 3, hd = large() ? 128 : 20, max_pos = 1000;
  for (int64_t rot : {hd, hd / 2, int64_t{0}})
    for (int inv = 0; inv < 2; ++inv) {
      const int64_t half = std::max<int64_t>(rot / 2, 1), pos0 = 17;
      // A YaRN-like factor 1.1 folded in: not a pure rotation, so the inverse is the transpose.
      std::vector<float> cs(max_pos * half), sn(max_pos * half);
      for (int64_t p = 0; p < max_pos; ++p)
        for (int64_t i = 0; i < half; ++i) {
          const double ang = p * std::pow(10000.0, -2.0 * i / std::max<int64_t>(rot, 2));
          cs[p * half + i] = static_cast<float>(1.1 * std::cos(ang));
          sn[p * half + i] = static_cast<float>(1.1 * std::sin(ang));
        }
      const auto x = random_floats(B * T * H * hd, 12);
      std::vector<float> want = x;
      cpu().rope(want.data(), H * hd, want.data(), cs.data(), sn.data(), B, T, pos0, H, hd, rot, inv);
      const std::string what = "rope rot=" + std::to_string(rot) + " inverse=" + std::to_string(inv);
      Dev<float> X(d, x), C(d, cs), S(d, sn);
      d.rope(X.get(), H * hd, X.get(), C.get(), S.get(), B, T, pos0, H, hd, rot, inv);
      EXPECT_TRUE(close(X.download(), want, kExactTol, what + " in place"));
      // Out of place from wider rows (the fused QKV product's output): the same values.
      const int64_t ld = 2 * H * hd + 5, col0 = H * hd + 1;
      std::vector<float> wide = random_floats(B * T * ld, 16);
      for (int64_t r = 0; r < B * T; ++r) std::copy_n(x.begin() + r * H * hd, H * hd, wide.begin() + r * ld + col0);
      Dev<float> Wide(d, wide), Y(d, B * T * H * hd);
      d.rope(Wide.get() + col0, ld, Y.get(), C.get(), S.get(), B, T, pos0, H, hd, rot, inv);
      EXPECT_TRUE(close(Y.download(), want, kExactTol, what + " from wider rows"));
      if (inv) {
        // The backward's rope into columns of the weight precision (rope_grad_stored): rope's
        // inverse then weight_store_columns, bit for bit, the columns around left as they were.
        const auto wb = static_cast<std::size_t>(d.weight_bytes);
        const std::vector<unsigned char> fill(static_cast<std::size_t>(B * T * ld) * wb, 0x5A);
        Dev<float> X0(d, x);
        Dev<unsigned char> Got(d, fill), Want(d, fill);
        d.weight_store_columns(Want.get() + col0 * wb, ld, Y.get(), B * T, H * hd);
        d.rope_grad_stored(X0.get(), Got.get() + col0 * wb, ld, C.get(), S.get(), B, T, pos0, H, hd, rot);
        EXPECT_EQ(Got.download(), Want.download()) << what << " into stored columns";
        continue;
      }
      // Into the operand precision (rope_operand: queries and keys as the attention reads them):
      // rope's values, rounded where that is bf16.
      Dev<unsigned char> Kc(d, static_cast<std::size_t>(B * T * H * hd * d.kv_bytes));
      d.rope_operand(Wide.get() + col0, ld, Kc.get(), C.get(), S.get(), B, T, pos0, H, hd, rot);
      EXPECT_EQ(stored_floats(Kc.download(), d.kv_bytes), rounded_to(Y.download(), d.kv_bytes)) << what;
      // With a QK norm on the way (rms_rope_operand): rms_apply then rope_operand bit for bit, and
      // rms_apply's rstd. Headwise rows (one head) and layerwise ones (every head; n_total twice
      // that, as when tensor parallelism splits the row), in T = B·T rows from position pos0.
      for (const int64_t n : {hd, H * hd}) {
        const int64_t rows = B * T * H * hd / n, n_total = n == hd ? n : 2 * n;
        const std::string norm = what + " norm row " + std::to_string(n);
        Dev<float> X0(d, x), Wn(d, random_floats(n, 17, 0.5f, 1.5f)), SS(d, rows), R1(d, rows), R2(d, rows),
            Normed(d, x.size());
        d.row_sumsq(X0.get(), SS.get(), rows, n);
        d.rms_apply(X0.get(), Wn.get(), SS.get(), Normed.get(), R1.get(), rows, n, n_total, 1e-6f);
        d.rope_operand(Normed.get(), H * hd, Kc.get(), C.get(), S.get(), B, T, pos0, H, hd, rot);
        const std::vector<unsigned char> want_y = Kc.download();
        R2.poison();
        d.rms_rope_operand(X0.get(), Wn.get(), SS.get(), R2.get(), n, n_total, 1e-6f, Kc.get(), C.get(), S.get(), B, T,
                           pos0, H, hd, rot);
        EXPECT_EQ(Kc.download(), want_y) << norm;
        EXPECT_EQ(R2.download(), R1.download()) << norm;
      }
    }
  Dev<float> X(d, 10), C(d, 10), S(d, 10);
  EXPECT_THROW(d.rope(X.get(), 4, X.get(), C.get(), S.get(), 1, 1, 0, 1, 4, 3, false), headroom::Error);
  EXPECT_THROW(d.rope(X.get(), 5, X.get(), C.get(), S.get(), 1, 1, 0, 1, 4, 4, false), headroom::Error);
  // A norm row must be whole heads that tile the row.
  EXPECT_THROW(
      d.rms_rope_operand(X.get(), X.get(), X.get(), X.get(), 3, 3, 1e-6f, C.get(), C.get(), S.get(), 1, 1, 0, 2, 4, 4),
      headroom::Error);
}

// weight_store_columns: each row what weight_store stores from it, bit for bit, at its place in the
// wider rows; the columns around it untouched.
TEST_P(GpuOps, WeightStoreColumnsPacksRowsAsWeightStoreStoresThem) {
  const Ops& d = dev();
  const int64_t rows = large() ? 1001 : 37, n = large() ? 515 : 21, ld = 3 * n + 2, col0 = n + 1;
  const auto src = random_floats(rows * n, 17);
  const auto wb = static_cast<std::size_t>(d.weight_bytes);
  Dev<float> Src(d, src);
  Dev<unsigned char> Row(d, static_cast<std::size_t>(rows * n) * wb),
      Packed(d, static_cast<std::size_t>(rows * ld) * wb);
  d.fill(reinterpret_cast<float*>(Packed.get()), 3.f, rows * ld * static_cast<int64_t>(wb) / 4);
  const auto before = Packed.download();
  d.weight_store(Row.get(), Src.get(), rows * n);
  d.weight_store_columns(Packed.get() + col0 * wb, ld, Src.get(), rows, n);
  const auto row = Row.download(), packed = Packed.download();
  for (int64_t r = 0; r < rows; ++r) {
    const auto at = [&](int64_t col) { return static_cast<std::ptrdiff_t>((r * ld + col) * static_cast<int64_t>(wb)); };
    ASSERT_TRUE(std::equal(packed.begin() + at(col0), packed.begin() + at(col0 + n),
                           row.begin() + static_cast<std::ptrdiff_t>(r * n * static_cast<int64_t>(wb))))
        << "row " << r;
    ASSERT_TRUE(std::equal(packed.begin() + at(0), packed.begin() + at(col0), before.begin() + at(0))) << "row " << r;
    ASSERT_TRUE(std::equal(packed.begin() + at(col0 + n), packed.begin() + at(ld), before.begin() + at(col0 + n)))
        << "row " << r;
  }
  EXPECT_THROW(d.weight_store_columns(Packed.get(), n - 1, Src.get(), rows, n), headroom::Error);
}

TEST_P(GpuOps, SwiGlu) {
  const Ops& d = dev();
  // Rows of [gate | up], F not a multiple of a warp or a block.
  const int64_t rows = large() ? 1001 : 37, F = large() ? 999 : 107, n = rows * F;
  const auto gu = random_floats(2 * n, 13, -6.f, 6.f), dout = random_floats(n, 15);
  std::vector<float> out(n), dgu(2 * n);
  cpu().swiglu_fwd(gu.data(), out.data(), rows, F);
  cpu().swiglu_bwd(gu.data(), dout.data(), dgu.data(), rows, F);
  Dev<float> GU(d, gu), DO(d, dout), O(d, n), DGU(d, 2 * n);
  O.poison();
  d.swiglu_fwd(GU.get(), O.get(), rows, F);
  EXPECT_TRUE(close(O.download(), out, kExactTol, "swiglu_fwd"));
  // out in the weight precision: what weight_store stores from the fp32 out, bit for bit.
  const auto bytes = static_cast<std::size_t>(n * d.weight_bytes);
  Dev<unsigned char> Want(d, bytes), Got(d, bytes);
  d.weight_store(Want.get(), O.get(), n);
  d.swiglu_fwd_stored(GU.get(), Got.get(), rows, F);
  EXPECT_EQ(Got.download(), Want.download());
  DGU.poison();
  d.swiglu_bwd(GU.get(), DO.get(), DGU.get(), rows, F);
  EXPECT_TRUE(close(DGU.download(), dgu, kExactTol, "swiglu_bwd"));
  // dgu in the weight precision: what weight_store stores from the fp32 dgu, bit for bit.
  Dev<unsigned char> WantD(d, 2 * bytes), GotD(d, 2 * bytes);
  d.weight_store(WantD.get(), DGU.get(), 2 * n);
  d.swiglu_bwd_stored(GU.get(), DO.get(), GotD.get(), rows, F);
  EXPECT_EQ(GotD.download(), WantD.download());
  d.swiglu_bwd(GU.get(), DO.get(), GU.get(), rows, F);  // in place
  EXPECT_TRUE(close(GU.download(), dgu, kExactTol, "swiglu_bwd in place"));
}

TEST_P(GpuOps, CrossEntropy) {
  const Ops& d = dev();
  const int64_t rows = large() ? 67 : 7, V = large() ? 50'257 : 1000;
  const auto logits = random_floats(rows * V, 16, -8.f, 8.f);
  std::vector<int32_t> targets(rows);
  std::mt19937 gen(17);
  for (auto& t : targets) t = static_cast<int32_t>(gen() % V);
  targets[2] = -1;  // masked row
  const float gs = 0.125f;
  std::vector<float> losses(rows), dl(rows * V), losses_only(rows);
  cpu().cross_entropy(logits.data(), targets.data(), losses.data(), dl.data(), rows, V, gs);
  Dev<float> L(d, logits), LS(d, rows), DL(d, rows * V);
  Dev<int32_t> TG(d, targets);
  LS.poison();
  DL.poison();
  d.cross_entropy(L.get(), TG.get(), LS.get(), DL.get(), rows, V, gs);
  EXPECT_TRUE(close(LS.download(), losses, kExactTol, "cross_entropy losses"));
  EXPECT_TRUE(close(DL.download(), dl, kExactTol, "cross_entropy dlogits"));
  LS.poison();
  d.cross_entropy(L.get(), TG.get(), LS.get(), nullptr, rows, V, gs);
  EXPECT_TRUE(close(LS.download(), losses, kExactTol, "cross_entropy (no gradient)"));
  d.cross_entropy(L.get(), TG.get(), LS.get(), L.get(), rows, V, gs);  // dlogits aliases logits
  EXPECT_TRUE(close(L.download(), dl, kExactTol, "cross_entropy (in place)"));
  targets[4] = static_cast<int32_t>(V);
  TG.upload(targets);
  L.upload(logits);
  // Reported by the call or, on the device, by the next wait for it (the losses' download).
  try {
    d.cross_entropy(L.get(), TG.get(), LS.get(), nullptr, rows, V, gs);
    (void)LS.download();
    ADD_FAILURE() << "a target >= V was accepted";
  } catch (const headroom::Error& e) {
    EXPECT_NE(std::string(e.what()).find("row 4"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW((void)LS.download()) << "the report is made once";
  targets[4] = 1;  // the error state is cleared: the next call succeeds
  TG.upload(targets);
  EXPECT_NO_THROW(d.cross_entropy(L.get(), TG.get(), LS.get(), nullptr, rows, V, gs));
}

TEST_P(GpuOps, AdamW) {
  const Ops& d = dev();
  const int64_t n = large() ? 1'000'003 : 3001;
  auto p = random_floats(n, 18), m = random_floats(n, 19, 0.f, 0.1f), v = random_floats(n, 20, 0.f, 0.01f);
  Dev<float> P(d, p), M(d, m), Vv(d, v);
  for (int64_t step = 1; step <= 3; ++step) {
    const auto g = random_floats(n, 21 + static_cast<uint32_t>(step));
    cpu().adamw(p.data(), g.data(), m.data(), v.data(), n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, step);
    Dev<float> G(d, g);
    d.adamw(P.get(), G.get(), M.get(), Vv.get(), n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, step);
  }
  EXPECT_TRUE(close(P.download(), p, kExactTol, "adamw p"));
  EXPECT_TRUE(close(M.download(), m, kExactTol, "adamw m"));
  EXPECT_TRUE(close(Vv.download(), v, kExactTol, "adamw v"));
  EXPECT_THROW(d.adamw(P.get(), P.get(), M.get(), Vv.get(), n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 0), headroom::Error);
}

struct AttnCase {
  int64_t B, T, Tk, q_pos0, Hq, Hkv, dqk, dv, window;
  std::vector<int64_t> documents = {};  // positions where documents begin; empty: no document mask

  std::vector<int32_t> doc_start() const { return document_starts(B, T, q_pos0, documents); }
  // The shape with the document mask at `docs` (memory of the table that runs it; unused unmasked).
  AttentionShape shape(const int32_t* docs = nullptr) const {
    return {B, T, Tk, q_pos0, Hq, Hkv, dqk, dv, window, documents.empty() ? nullptr : docs};
  }
};
inline std::string describe(const AttnCase& c) {
  std::string docs;
  for (int64_t d : c.documents) docs += (docs.empty() ? " documents at " : ",") + std::to_string(d);
  return "B" + std::to_string(c.B) + " T" + std::to_string(c.T) + " Tk" + std::to_string(c.Tk) + " pos0 " +
         std::to_string(c.q_pos0) + " H" + std::to_string(c.Hq) + "/" + std::to_string(c.Hkv) + " d" +
         std::to_string(c.dqk) + "/" + std::to_string(c.dv) + " window " + std::to_string(c.window) + docs;
}

inline std::vector<AttnCase> attention_cases(bool large) {
  std::vector<AttnCase> c{
      {1, 70, 70, 0, 2, 1, 64, 64, 0},      // causal, GQA 2:1, T not a multiple of 64
      {2, 33, 33, 0, 2, 2, 40, 24, 0},      // widths that need padding
      {1, 100, 100, 0, 2, 1, 128, 64, 17},  // sliding window
      {1, 20, 90, 70, 2, 2, 64, 64, 0},     // queries after a prefix (decode / prefill)
      {1, 8, 10, 20, 1, 1, 32, 32, 5},      // every query sees no key: out 0, lse -inf, no grads
      {1, 64, 64, 0, 1, 1, 512, 128, 0},    // k512-v128
      {1, 65, 65, 0, 1, 1, 320, 320, 0},    // dv split over two 256-wide slices, Q streamed
      {1, 40, 40, 0, 1, 1, 1024, 1024, 0},  // the widest heads
      {2, 96, 96, 0, 4, 2, 32, 32, 0},      // cuDNN's shapes (train.attention_kernel = auto):
      {1, 100, 100, 0, 2, 1, 64, 64, 17},   //   causal, GQA, sliding window
      // Document masks: several documents, boundaries inside query tiles, a one-token document,
      // with a window, GQA, and queries at an offset as context parallelism calls the op.
      {1, 150, 150, 0, 4, 2, 64, 64, 0, {20, 64, 65, 130}},
      {2, 100, 100, 0, 2, 1, 32, 32, 24, {40, 90}},
      {1, 64, 160, 96, 4, 1, 64, 64, 0, {50, 100, 101}},
  };
  if (large) {
    c.push_back({2, 1030, 1030, 0, 8, 2, 128, 128, 0});
    c.push_back({1, 2048, 2048, 0, 4, 4, 128, 128, 256});
    c.push_back({1, 700, 700, 0, 4, 2, 256, 256, 0});
    c.push_back({1, 513, 513, 0, 2, 1, 1024, 1024, 0});
    c.push_back({1, 300, 1324, 1024, 4, 1, 128, 128, 0});
    c.push_back({3, 200, 200, 0, 6, 3, 96, 160, 64});
    c.push_back({1, 1030, 1030, 0, 8, 2, 128, 128, 0, {100, 500, 501, 900}});
    c.push_back({1, 512, 2048, 1536, 4, 2, 128, 128, 256, {1000, 1700, 1800}});
  }
  return c;
}

// The attention forward and backward a check calls: a table's own, or a variant outside the table
// (the blocked attention at a small block size).
struct AttentionCalls {
  std::function<void(const float*, const float*, const float*, float*, float*, const AttentionShape&, float)> fwd;
  std::function<void(const float*, const float*, const float*, const float*, const float*, const float*, float*, float*,
                     float*, const AttentionShape&, float)>
      bwd;
};

inline AttentionCalls table_calls(const Ops& d) {
  return {[&d](auto... a) { d.attention_fwd(a...); }, [&d](auto... a) { d.attention_bwd(a...); }};
}

// `cases` run through `calls` on the table `d`'s memory (bf16: its floor is bf16 input rounding)
// against the CPU backend, within 10x the noise floor measured on the same inputs; `name` labels
// the lines.
inline void check_attention_cases(const Ops& d, const AttentionCalls& calls, bool bf16,
                                  const std::vector<AttnCase>& cases, const std::string& name) {
  const Ops& cpu = cpu_ops();
  const auto label = [&](const std::string& what) { return name + " " + what; };
  for (const AttnCase& c : cases) {
    SCOPED_TRACE(describe(c));
    const float scale = 1.f / std::sqrt(static_cast<float>(c.dqk));
    const auto q = random_floats(c.B * c.T * c.Hq * c.dqk, 31, -2.f, 2.f);
    const auto k = random_floats(c.B * c.Tk * c.Hkv * c.dqk, 32, -2.f, 2.f);
    const auto v = random_floats(c.B * c.Tk * c.Hkv * c.dv, 33);
    const auto dout = random_floats(c.B * c.T * c.Hq * c.dv, 34);
    std::vector<float> out(c.B * c.T * c.Hq * c.dv), lse(c.B * c.Hq * c.T);
    const std::vector<int32_t> docs = c.doc_start();
    const Dev<int32_t> Docs(d, docs);
    const AttentionShape host = c.shape(docs.data()), device = c.shape(Docs.get());
    cpu.attention_fwd(q.data(), k.data(), v.data(), out.data(), lse.data(), host, scale);
    std::vector<float> dq(q.size()), dk(k.size()), dv(v.size());
    cpu.attention_bwd(q.data(), k.data(), v.data(), out.data(), lse.data(), dout.data(), dq.data(), dk.data(),
                      dv.data(), host, scale);
    Dev<float> Q(d, q), K(d, k), Vv(d, v), O(d, out.size()), L(d, lse.size()), DO(d, dout), DQ(d, dq.size()),
        DK(d, dk.size()), DV(d, dv.size());
    O.poison();
    L.poison();
    calls.fwd(Q.get(), K.get(), Vv.get(), O.get(), L.get(), device, scale);
    const auto floor = noise_floors(bf16, {q, k, v, dout}, [&](const auto& ops, const auto& in) {
      using T = typename std::decay_t<decltype(in)>::value_type::value_type;
      std::vector<T> o(out.size()), l(lse.size()), gq(q.size()), gk(k.size()), gv(v.size());
      ops.attention_fwd(in[0].data(), in[1].data(), in[2].data(), o.data(), l.data(), host, static_cast<T>(scale));
      ops.attention_bwd(in[0].data(), in[1].data(), in[2].data(), o.data(), l.data(), in[3].data(), gq.data(),
                        gk.data(), gv.data(), host, static_cast<T>(scale));
      return std::vector{o, l, gq, gk, gv};
    });
    EXPECT_TRUE(close_to_floor(O.download(), out, floor[0], label("attention_fwd out " + describe(c))));
    EXPECT_TRUE(close_to_floor(L.download(), lse, floor[1], label("attention_fwd lse " + describe(c))));
    // The backward gets the reference forward's out and lse: its own error is measured alone.
    O.upload(out);
    L.upload(lse);
    DQ.poison();
    DK.poison();
    DV.poison();
    calls.bwd(Q.get(), K.get(), Vv.get(), O.get(), L.get(), DO.get(), DQ.get(), DK.get(), DV.get(), device, scale);
    EXPECT_TRUE(close_to_floor(DQ.download(), dq, floor[2], label("attention_bwd dq " + describe(c))));
    EXPECT_TRUE(close_to_floor(DK.download(), dk, floor[3], label("attention_bwd dk " + describe(c))));
    EXPECT_TRUE(close_to_floor(DV.download(), dv, floor[4], label("attention_bwd dv " + describe(c))));
  }
}

// The flash kernels' entries outside the tables (cuda/entries.h), of the real backend or the emulated one.
struct FlashEntries {
  void (*fwd_with)(const float*, const float*, const float*, float*, float*, const AttentionShape&, float, int, int);
  void (*bwd_with)(const float*, const float*, const float*, const float*, const float*, const float*, float*, float*,
                   float*, const AttentionShape&, float, int);
  int (*decode_splits)(const AttentionShape&);
};

// The table's entries on the attention's operands in their own precision (attention_*_cached),
// called on fp32 inputs stored first as training stores them (rope_operand): Q, K, V and, for the
// backward, the output and its gradient (null: o is left for the forward to write).
struct StoredOperands {
  int64_t nq, nk, nv, no;
  Dev<unsigned char> q, k, v, o, dout;
  StoredOperands(const Ops& d, const float* Q, const float* K, const float* V, const AttentionShape& s,
                 const float* O = nullptr, const float* dO = nullptr)
      : nq(s.B * s.Tq * s.Hq * s.dqk),
        nk(s.B * s.Tk * s.Hkv * s.dqk),
        nv(s.B * s.Tk * s.Hkv * s.dv),
        no(s.B * s.Tq * s.Hq * s.dv),
        q(d, static_cast<std::size_t>(nq * d.kv_bytes)),
        k(d, static_cast<std::size_t>(nk * d.kv_bytes)),
        v(d, static_cast<std::size_t>(nv * d.kv_bytes)),
        o(d, static_cast<std::size_t>(no * d.kv_bytes)),
        dout(d, static_cast<std::size_t>((dO ? no : 1) * d.kv_bytes)) {
    store_operand(d, q.get(), Q, nq);
    store_operand(d, k.get(), K, nk);
    store_operand(d, v.get(), V, nv);
    if (O) store_operand(d, o.get(), O, no);
    if (dO) store_operand(d, dout.get(), dO, no);
  }
};

// The cached entries behind the fp32 calls of check_attention_cases: the forward's output widened
// back to fp32 (exactly) for the comparison; the backward's output stored as the forward stores it,
// its gradient as the output projection's input gradient does (matmul_to_stored).
inline AttentionCalls operand_calls(const Ops& d) {
  return {[&d](const float* q, const float* k, const float* v, float* out, float* lse, const AttentionShape& s,
               float scale) {
            const StoredOperands x(d, q, k, v, s);
            d.attention_fwd_cached(x.q.get(), x.k.get(), x.v.get(), x.o.get(), lse, s, scale);
            const std::vector<float> o = stored_floats(x.o.download(), d.kv_bytes);
            d.copy_from_host(out, o.data(), sizeof(float) * o.size());
          },
          [&d](const float* q, const float* k, const float* v, const float* out, const float* lse, const float* dout,
               float* dq, float* dk, float* dv, const AttentionShape& s, float scale) {
            const StoredOperands x(d, q, k, v, s, out, dout);
            d.attention_bwd_cached(x.q.get(), x.k.get(), x.v.get(), x.o.get(), lse, x.dout.get(), dq, dk, dv, s, scale);
          }};
}

// Split-key decoding: each query block's keys in parts whose outputs are merged by their
// log-sum-exp. Every case at 2 and 3 parts (some parts then see no key and weigh nothing in the
// merge), and the decoding-cache entry of `d` (a bf16 flash table) on a bf16 cache, which splits one
// token after 700 cached keys in two, against the CPU within the bf16 floor. That entry reads the
// cache in place (its widths are multiples of 8); at widths that are not, it packs it first (the
// second decoding case). GpuOps.AttentionOnTheOperandsInTheTablesPrecision checks the in-place
// reads bit for bit against the packed operands on every attention case.
inline void check_split_forward(const Ops& d, const FlashEntries& e, std::vector<AttnCase> cases) {
  const AttnCase decode{1, 1, 700, 699, 4, 2, 64, 64, 0};
  cases.push_back(decode);
  const auto bwd = [&e](auto... a) { e.bwd_with(a..., 2); };
  for (const int splits : {2, 3}) {
    const AttentionCalls calls{[&e, splits](auto... a) { e.fwd_with(a..., 2, splits); }, bwd};
    check_attention_cases(d, calls, true, cases, "flash, " + std::to_string(splits) + " key splits");
  }
  EXPECT_EQ(e.decode_splits(decode.shape()), 2);
  EXPECT_EQ(e.decode_splits({1, 65, 700, 635, 4, 2, 64, 64, 0}), 1);  // two query blocks
  const AttentionCalls cached{operand_calls(d).fwd, bwd};
  check_attention_cases(d, cached, true, {decode, {1, 1, 300, 299, 2, 1, 36, 20, 0}}, "flash on a bf16 cache");
}

// Every attention case on the table `d`. Also run for tables outside GpuOps' list (the blocked attention).
inline void check_attention(const Ops& d, bool bf16, bool large, const std::string& name) {
  check_attention_cases(d, table_calls(d), bf16, attention_cases(large), name);
}

TEST_P(GpuOps, AttentionForwardBackward) { check_attention(dev(), bf16(), large(), GetParam().name); }

// Queries, keys and values in the table's operand precision (bf16 in the bf16 tables; what
// training keeps, and a decoding cache's K and V): rope_operand rounds as the attention's own
// operand packing does, so attention_fwd_cached on the stored Q, K and V gives attention_fwd's
// output on the fp32 ones bit for bit, rounded to the operand precision, on whatever path the
// table picks (cuDNN on a GPU under auto). None of these cases is a one-query-block call over
// enough keys for split-key decoding, the one thing the cached forward does differently
// (test_gpu_emulated checks it).
TEST_P(GpuOps, AttentionOnTheOperandsInTheTablesPrecision) {
  const Ops& d = dev();
  ASSERT_EQ(d.kv_bytes, bf16() ? 2 : 4);
  for (const AttnCase& c : attention_cases(large())) {
    SCOPED_TRACE(describe(c));
    const float scale = 1.f / std::sqrt(static_cast<float>(c.dqk));
    const auto q = random_floats(c.B * c.T * c.Hq * c.dqk, 41, -2.f, 2.f);
    const auto k = random_floats(c.B * c.Tk * c.Hkv * c.dqk, 42, -2.f, 2.f);
    const auto v = random_floats(c.B * c.Tk * c.Hkv * c.dv, 43);
    const std::vector<int32_t> docs = c.doc_start();
    const Dev<int32_t> Docs(d, docs);
    const AttentionShape shape = c.shape(Docs.get());
    Dev<float> Q(d, q), K(d, k), Vv(d, v), O(d, c.B * c.T * c.Hq * c.dv), L(d, c.B * c.Hq * c.T);
    Dev<float> L2(d, L.download().size());
    const StoredOperands x(d, Q.get(), K.get(), Vv.get(), shape);
    EXPECT_EQ(stored_floats(x.k.download(), d.kv_bytes), rounded_to(k, d.kv_bytes))
        << "rope_operand did not store K in the table's precision";
    d.attention_fwd(Q.get(), K.get(), Vv.get(), O.get(), L.get(), shape, scale);
    d.attention_fwd_cached(x.q.get(), x.k.get(), x.v.get(), x.o.get(), L2.get(), shape, scale);
    EXPECT_EQ(stored_floats(x.o.download(), d.kv_bytes), rounded_to(O.download(), d.kv_bytes));
    EXPECT_EQ(L2.download(), L.download());
  }
  // The backward on stored operands against the CPU within the table's floor, as every attention
  // path is checked: the flash backward's dQ accumulates by atomics on a GPU, so two runs need not
  // agree bit for bit.
  check_attention_cases(d, operand_calls(d), bf16(), attention_cases(large()), GetParam().name + " on stored operands");
}

}  // namespace headroom::kernels::gputest
