// Blocked attention (forward and backward) against a naive fp64 implementation that materialises the
// full score matrix, over lengths that straddle the 64-row blocks, sliding windows, GQA/MQA, unequal
// q/k and v head dims, KV-cache decode offsets, document masks and more than one thread. The naive backward is itself
// checked against finite differences, so the reference cannot share a mistake with the kernel.
#include <omp.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "cpu/cpu_attention.h"
#include "document_starts.h"
#include "test_kernels_support.h"

namespace headroom::kernels::test {
namespace {

struct AttnCase {
  int64_t B, T, Tk, q_pos0, Hq, Hkv, dqk, dv, window;
  std::vector<int64_t> documents = {};  // positions where documents begin (document_starts.h)
  std::vector<int32_t> doc_start = {};  // their mask, set by masked()

  std::string str() const {
    std::ostringstream s;
    s << "B=" << B << " T=" << T << " Tk=" << Tk << " q_pos0=" << q_pos0 << " Hq=" << Hq << " Hkv=" << Hkv
      << " dqk=" << dqk << " dv=" << dv << " window=" << window;
    for (int64_t d : documents) s << (d == documents.front() ? " documents at " : ",") << d;
    return s.str();
  }
  AttentionShape shape() const {
    return {B, T, Tk, q_pos0, Hq, Hkv, dqk, dv, window, doc_start.empty() ? nullptr : doc_start.data()};
  }
  float scale() const { return static_cast<float>(1.0 / std::sqrt(static_cast<double>(dqk))); }
  // The visibility rule of ops.h, stated directly.
  bool visible(int64_t b, int64_t t, int64_t j) const {
    const int64_t p = q_pos0 + t;
    return j <= p && (window == 0 || p - j < window) && (doc_start.empty() || doc_start[b * T + t] <= j);
  }
};

// The case with documents beginning at `starts`.
AttnCase masked(AttnCase c, std::vector<int64_t> starts) {
  c.doc_start = document_starts(c.B, c.T, c.q_pos0, starts);
  c.documents = std::move(starts);
  return c;
}

struct AttnInputs {
  std::vector<float> q, k, v, dout;
};

AttnInputs make_inputs(const AttnCase& c, uint32_t seed) {
  // Scores of several units (|q|,|k| <= 2) so the softmax is far from uniform and max-subtraction
  // matters.
  return {random_floats(c.B * c.T * c.Hq * c.dqk, seed, -2.f, 2.f),
          random_floats(c.B * c.Tk * c.Hkv * c.dqk, seed + 1, -2.f, 2.f),
          random_floats(c.B * c.Tk * c.Hkv * c.dv, seed + 2), random_floats(c.B * c.T * c.Hq * c.dv, seed + 3)};
}

struct AttnResult {
  std::vector<double> out, lse, dq, dk, dv;
};

// Softmax over each query's visible keys with the full score row in hand; gradients by the textbook
// chain rule through that softmax.
AttnResult naive_attention(const AttnCase& c, const std::vector<double>& q, const std::vector<double>& k,
                           const std::vector<double>& v, const std::vector<double>& dout) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.dqk));
  AttnResult r;
  r.out.assign(c.B * c.T * c.Hq * c.dv, 0.0);
  r.lse.assign(c.B * c.Hq * c.T, -std::numeric_limits<double>::infinity());
  r.dq.assign(q.size(), 0.0);
  r.dk.assign(k.size(), 0.0);
  r.dv.assign(v.size(), 0.0);
  const int64_t group = c.Hq / c.Hkv;
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t h = 0; h < c.Hq; ++h)
      for (int64_t t = 0; t < c.T; ++t) {
        const int64_t g = h / group;
        const double* qt = &q[((b * c.T + t) * c.Hq + h) * c.dqk];
        const double* dot = &dout[((b * c.T + t) * c.Hq + h) * c.dv];
        auto krow = [&](int64_t j) { return &k[((b * c.Tk + j) * c.Hkv + g) * c.dqk]; };
        auto vrow = [&](int64_t j) { return &v[((b * c.Tk + j) * c.Hkv + g) * c.dv]; };
        std::vector<double> s(c.Tk, -std::numeric_limits<double>::infinity());
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < c.Tk; ++j) {
          if (!c.visible(b, t, j)) continue;
          double acc = 0;
          for (int64_t i = 0; i < c.dqk; ++i) acc += qt[i] * krow(j)[i];
          s[j] = acc * scale;
          mx = std::max(mx, s[j]);
        }
        if (mx == -std::numeric_limits<double>::infinity()) continue;  // sees nothing: 0 output
        double sum = 0;
        for (int64_t j = 0; j < c.Tk; ++j) sum += c.visible(b, t, j) ? std::exp(s[j] - mx) : 0.0;
        std::vector<double> p(c.Tk, 0.0), dp(c.Tk, 0.0);
        double* o = &r.out[((b * c.T + t) * c.Hq + h) * c.dv];
        double D = 0;
        for (int64_t j = 0; j < c.Tk; ++j) {
          if (!c.visible(b, t, j)) continue;
          p[j] = std::exp(s[j] - mx) / sum;
          for (int64_t i = 0; i < c.dv; ++i) {
            o[i] += p[j] * vrow(j)[i];
            dp[j] += dot[i] * vrow(j)[i];
          }
          D += p[j] * dp[j];
        }
        r.lse[(b * c.Hq + h) * c.T + t] = mx + std::log(sum);
        for (int64_t j = 0; j < c.Tk; ++j) {
          if (!c.visible(b, t, j)) continue;
          const double ds = p[j] * (dp[j] - D);
          double* dkj = &r.dk[((b * c.Tk + j) * c.Hkv + g) * c.dqk];
          double* dvj = &r.dv[((b * c.Tk + j) * c.Hkv + g) * c.dv];
          for (int64_t i = 0; i < c.dqk; ++i) {
            r.dq[((b * c.T + t) * c.Hq + h) * c.dqk + i] += scale * ds * krow(j)[i];
            dkj[i] += scale * ds * qt[i];
          }
          for (int64_t i = 0; i < c.dv; ++i) dvj[i] += p[j] * dot[i];
        }
      }
  return r;
}

struct KernelResult {
  std::vector<float> out, lse, dq, dk, dv;
};

// The kernels as the model uses them: backward gets the forward's own out and lse. Outputs start as
// NaN so any element the kernels fail to overwrite shows up.
KernelResult run_kernels(const AttnCase& c, const AttnInputs& in) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  KernelResult r{std::vector<float>(c.B * c.T * c.Hq * c.dv, nan), std::vector<float>(c.B * c.Hq * c.T, nan),
                 std::vector<float>(in.q.size(), nan), std::vector<float>(in.k.size(), nan),
                 std::vector<float>(in.v.size(), nan)};
  cpu().attention_fwd(in.q.data(), in.k.data(), in.v.data(), r.out.data(), r.lse.data(), c.shape(), c.scale());
  cpu().attention_bwd(in.q.data(), in.k.data(), in.v.data(), r.out.data(), r.lse.data(), in.dout.data(), r.dq.data(),
                      r.dk.data(), r.dv.data(), c.shape(), c.scale());
  return r;
}

// lse: exact -inf for queries that see nothing, else within 1e-5 relative (|lse| >= 1 as floor).
::testing::AssertionResult lse_close(const std::vector<float>& actual, const std::vector<double>& expected) {
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const bool ok = std::isinf(expected[i])
                        ? actual[i] == -std::numeric_limits<float>::infinity()
                        : std::abs(actual[i] - expected[i]) <= 1e-5 * std::max(1.0, std::abs(expected[i]));
    if (!ok) return ::testing::AssertionFailure() << "lse[" << i << "] = " << actual[i] << ", expected " << expected[i];
  }
  return ::testing::AssertionSuccess();
}

// Forward to 1e-5 and gradients to 1e-4 of the largest reference element (fp32 against fp64).
void check_attention(const AttnCase& c, uint32_t seed = 7) {
  SCOPED_TRACE(c.str());
  const AttnInputs in = make_inputs(c, seed);
  const KernelResult got = run_kernels(c, in);
  const AttnResult want = naive_attention(c, to_double(in.q), to_double(in.k), to_double(in.v), to_double(in.dout));
  EXPECT_TRUE(close_normwise(got.out, want.out, 1e-5)) << "out";
  EXPECT_TRUE(lse_close(got.lse, want.lse));
  // A query seeing a single key has P = 1 whatever the scores, so dq = dk = 0 exactly; rounding may
  // leave ~1e-7 there, judged against the O(1) inputs instead.
  const double floor = c.window == 1 || c.q_pos0 + c.T == 1 ? 1.0 : 0.0;
  EXPECT_TRUE(close_normwise(got.dq, want.dq, 1e-4, floor)) << "dq";
  EXPECT_TRUE(close_normwise(got.dk, want.dk, 1e-4, floor)) << "dk";
  EXPECT_TRUE(close_normwise(got.dv, want.dv, 1e-4)) << "dv";
}

TEST(KernelAttention, NaiveReferenceMatchesFiniteDifferences) {
  // Loss = sum(out ∘ dout): its gradient is exactly what attention_bwd returns.
  const AttnCase c{1, 5, 6, 1, 2, 1, 3, 2, 3};
  const AttnInputs in = make_inputs(c, 3);
  const auto q = to_double(in.q), k = to_double(in.k), v = to_double(in.v), dout = to_double(in.dout);
  const AttnResult ref = naive_attention(c, q, k, v, dout);
  auto loss = [&](const std::vector<double>& qq, const std::vector<double>& kk, const std::vector<double>& vv) {
    const AttnResult r = naive_attention(c, qq, kk, vv, dout);
    double s = 0;
    for (std::size_t i = 0; i < r.out.size(); ++i) s += r.out[i] * dout[i];
    return s;
  };
  const auto fq = finite_difference_gradient([&](const auto& x) { return loss(x, k, v); }, q, 1e-6);
  const auto fk = finite_difference_gradient([&](const auto& x) { return loss(q, x, v); }, k, 1e-6);
  const auto fv = finite_difference_gradient([&](const auto& x) { return loss(q, k, x); }, v, 1e-6);
  for (std::size_t i = 0; i < fq.size(); ++i) EXPECT_NEAR(ref.dq[i], fq[i], 1e-7) << "dq " << i;
  for (std::size_t i = 0; i < fk.size(); ++i) EXPECT_NEAR(ref.dk[i], fk[i], 1e-7) << "dk " << i;
  for (std::size_t i = 0; i < fv.size(); ++i) EXPECT_NEAR(ref.dv[i], fv[i], 1e-7) << "dv " << i;
}

TEST(KernelAttention, CausalAndSlidingWindowAcrossBlockBoundaries) {
  for (int64_t T : {1, 7, 63, 129, 200})
    for (int64_t window : {0, 1, 5, 64}) check_attention({1, T, T, 0, 4, 2, 16, 16, window});
}

TEST(KernelAttention, GroupedMultiQueryAndMultiHead) {
  for (int64_t Hkv : {1, 2, 4})
    for (int64_t window : {0, 70}) check_attention({2, 100, 100, 0, 4, Hkv, 8, 8, window});
}

TEST(KernelAttention, DifferentQueryKeyAndValueHeadDims) {
  check_attention({2, 129, 129, 0, 4, 2, 96, 32, 0});
  check_attention({1, 65, 65, 0, 2, 1, 32, 96, 17});
}

TEST(KernelAttention, LargeHeadDims) {
  check_attention({1, 70, 70, 0, 2, 1, 512, 128, 0});  // the k512-v128 design point
  check_attention({1, 9, 9, 0, 1, 1, 1024, 1024, 4});
}

TEST(KernelAttention, WideHeadsTakeLargeBlocksAcrossTheirBoundaries) {
  // Heads of width >= 64 run on 256 x 256 score blocks (cpu_attention.h): causal and windowed masks
  // crossing them, GQA, a KV-cache chunk, and with 3 threads the backward's split key blocks.
  check_attention({2, 300, 300, 0, 4, 2, 64, 64, 0});
  check_attention({1, 300, 300, 0, 2, 1, 64, 96, 150});
  check_attention({1, 600, 600, 0, 1, 1, 64, 64, 300});
  check_attention({1, 5, 400, 395, 2, 1, 128, 64, 0});
  check_attention({1, 5, 400, 395, 2, 1, 128, 64, 130});
  const int saved = omp_get_max_threads();
  omp_set_num_threads(3);
  check_attention({1, 600, 600, 0, 1, 1, 128, 64, 0});
  check_attention({1, 520, 520, 0, 2, 2, 64, 64, 257});
  omp_set_num_threads(saved);
}

TEST(KernelAttention, DecodeWithKvCacheOffset) {
  check_attention({2, 1, 150, 149, 4, 2, 16, 16, 0});   // one new token after 149 cached
  check_attention({2, 1, 150, 149, 4, 2, 16, 16, 20});  // ... under a window
  check_attention({1, 7, 200, 193, 4, 1, 16, 8, 0});    // a chunk of 7 new tokens
  check_attention({1, 7, 200, 193, 4, 1, 16, 8, 70});   // window reaching back across blocks
}

TEST(KernelAttention, LongContextDecodeSplitsTheKeys) {
  // One query against >= 2048 visible keys takes the key-split path (cpu_attention_decode.cpp):
  // chunks of 512 with a partial last one, GQA, a window starting mid-chunk, a batch, unequal
  // widths, and 3 threads sharing the chunks; the backward reads the lse it leaves.
  const auto splits = [](int64_t Tk, int64_t window) {
    return cpu::attention::decode_splits_keys({{1, 1, Tk, Tk - 1, 2, 1, 8, 8, window}, 1.f});
  };
  EXPECT_TRUE(splits(2048, 0));
  EXPECT_FALSE(splits(2047, 0));
  EXPECT_FALSE(splits(5000, 2047));
  check_attention({2, 1, 2600, 2599, 4, 2, 16, 16, 0});
  check_attention({1, 1, 5000, 4999, 8, 2, 64, 32, 2100});
  check_attention({1, 1, 2048, 2047, 2, 1, 8, 8, 0});
  check_attention({1, 1, 3000, 2999, 2, 1, 8, 8, 2047});  // the per-head path, for comparison
  const int saved = omp_get_max_threads();
  omp_set_num_threads(3);
  check_attention({1, 1, 4100, 4099, 4, 4, 32, 32, 0});
  omp_set_num_threads(saved);
}

TEST(KernelAttention, QueriesThatSeeNoKeyGetZeroOutputAndGradient) {
  // Positions 12..15 against keys 0..9 under a 5-wide window: the last two queries see nothing.
  const AttnCase c{1, 4, 10, 12, 2, 1, 8, 8, 5};
  check_attention(c);
  const KernelResult got = run_kernels(c, make_inputs(c, 7));
  for (int64_t h = 0; h < c.Hq; ++h) {
    EXPECT_EQ(got.lse[h * c.T + 3], -std::numeric_limits<float>::infinity());
    for (int64_t i = 0; i < c.dv; ++i) EXPECT_EQ(got.out[(3 * c.Hq + h) * c.dv + i], 0.f);
    for (int64_t i = 0; i < c.dqk; ++i) EXPECT_EQ(got.dq[(3 * c.Hq + h) * c.dqk + i], 0.f);
  }
}

TEST(KernelAttention, DocumentMasksAcrossBlocksWindowsAndGroups) {
  // Several documents per window, boundaries inside query blocks and a one-token document.
  check_attention(masked({1, 200, 200, 0, 4, 2, 16, 16, 0}, {37, 64, 65, 150}));
  check_attention(masked({2, 129, 129, 0, 4, 4, 16, 8, 0}, {10, 100}));
  // Windows combined with documents: either may be the tighter bound.
  check_attention(masked({1, 200, 200, 0, 2, 1, 16, 16, 16}, {37, 64, 65, 150}));
  check_attention(masked({2, 200, 200, 0, 4, 2, 16, 16, 70}, {120}));
  // Wide heads (256 × 256 blocks), GQA and MQA.
  check_attention(masked({1, 600, 600, 0, 4, 2, 64, 64, 0}, {100, 300, 301, 550}));
  check_attention(masked({1, 520, 520, 0, 4, 1, 64, 96, 257}, {200, 260}));
}

TEST(KernelAttention, DocumentMasksWithAQueryOffset) {
  // Queries after a prefix, as context parallelism calls the op (a zig-zag segment at q_pos0 against
  // every key before it): documents that began before the segment, inside it, and at its first query.
  check_attention(masked({1, 64, 128, 64, 4, 2, 16, 16, 0}, {30, 90, 100}));
  check_attention(masked({2, 64, 128, 64, 2, 1, 16, 16, 40}, {64, 70}));
  check_attention(masked({1, 7, 200, 193, 4, 1, 16, 8, 0}, {120, 195}));
  check_attention(masked({1, 300, 600, 300, 2, 2, 64, 64, 0}, {250, 420, 421}));
}

TEST(KernelAttention, DocumentMasksSplitOverThreads) {
  // The backward's key-block chunks with private dq buffers, under a mask.
  const int saved = omp_get_max_threads();
  omp_set_num_threads(3);
  check_attention(masked({1, 600, 600, 0, 1, 1, 128, 64, 0}, {90, 333, 500}));
  check_attention(masked({1, 200, 200, 0, 4, 1, 16, 16, 0}, {50, 51, 190}));
  omp_set_num_threads(saved);
}

TEST(KernelAttention, RejectsUnorderedDocumentStarts) {
  AttnCase c{1, 4, 4, 0, 1, 1, 4, 4, 0};
  c.doc_start = {0, 2, 1, 3};
  const AttnInputs in = make_inputs(c, 1);
  std::vector<float> out(16), lse(4);
  EXPECT_THROW(cpu().attention_fwd(in.q.data(), in.k.data(), in.v.data(), out.data(), lse.data(), c.shape(), c.scale()),
               std::runtime_error);
}

TEST(KernelAttention, SeveralThreadsSplitWorkWithoutRaces) {
  // With more threads than (batch, KV head) pairs the backward splits key blocks into chunks with
  // private dq buffers; the forward hands out query blocks dynamically.
  const int saved = omp_get_max_threads();
  omp_set_num_threads(3);
  check_attention({1, 200, 200, 0, 4, 1, 16, 16, 0});
  check_attention({1, 200, 200, 0, 2, 2, 16, 8, 64});
  check_attention({2, 129, 129, 0, 4, 2, 16, 16, 5});
  check_attention({1, 7, 200, 193, 2, 1, 16, 16, 0});
  omp_set_num_threads(saved);
}

TEST(KernelAttention, RejectsInvalidShapes) {
  std::vector<float> buf(64, 0.f);
  // Hq not a multiple of Hkv
  EXPECT_THROW(
      cpu().attention_fwd(buf.data(), buf.data(), buf.data(), buf.data(), buf.data(), {1, 1, 1, 0, 3, 2, 4, 4, 0}, 1.f),
      std::runtime_error);
  EXPECT_THROW(cpu().attention_fwd(buf.data(), buf.data(), buf.data(), buf.data(), buf.data(),
                                   {1, 1, 1, 0, 2, 2, 4, 4, -1}, 1.f),
               std::runtime_error);
}

}  // namespace
}  // namespace headroom::kernels::test
