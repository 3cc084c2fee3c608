// Memory, dense products, vector updates, reductions and embeddings of the CPU backend against naive
// fp64 loops, plus the shape of the op table itself.
#include <omp.h>

#include <cstring>
#include <limits>

#include "test_kernels_support.h"
#include "headroom_error.h"

namespace headroom::kernels::test {
namespace {

TEST(KernelTable, CpuTableIsCompleteAndNamed) {
  const Ops& o = cpu();
  EXPECT_STREQ(o.name, "cpu");
  const void* const entries[] = {reinterpret_cast<const void*>(o.alloc),
                                 reinterpret_cast<const void*>(o.free),
                                 reinterpret_cast<const void*>(o.copy_to_host),
                                 reinterpret_cast<const void*>(o.copy_from_host),
                                 reinterpret_cast<const void*>(o.copy),
                                 reinterpret_cast<const void*>(o.fill),
                                 reinterpret_cast<const void*>(o.synchronize),
                                 reinterpret_cast<const void*>(o.matmul),
                                 reinterpret_cast<const void*>(o.weight_store),
                                 reinterpret_cast<const void*>(o.weight_store_columns),
                                 reinterpret_cast<const void*>(o.matmul_stored),
                                 reinterpret_cast<const void*>(o.matmul_both_stored),
                                 reinterpret_cast<const void*>(o.matmul_to_stored),
                                 reinterpret_cast<const void*>(o.matmul_strided),
                                 reinterpret_cast<const void*>(o.axpy),
                                 reinterpret_cast<const void*>(o.add),
                                 reinterpret_cast<const void*>(o.scale),
                                 reinterpret_cast<const void*>(o.sum_squares),
                                 reinterpret_cast<const void*>(o.count_nonfinite),
                                 reinterpret_cast<const void*>(o.embedding_fwd),
                                 reinterpret_cast<const void*>(o.embedding_bwd),
                                 reinterpret_cast<const void*>(o.row_sumsq),
                                 reinterpret_cast<const void*>(o.rms_apply),
                                 reinterpret_cast<const void*>(o.add_rms_norm),
                                 reinterpret_cast<const void*>(o.add_rms_norm_stored),
                                 reinterpret_cast<const void*>(o.rms_bwd_dot),
                                 reinterpret_cast<const void*>(o.rms_bwd_apply),
                                 reinterpret_cast<const void*>(o.rms_bwd),
                                 reinterpret_cast<const void*>(o.rope),
                                 reinterpret_cast<const void*>(o.rope_grad_stored),
                                 reinterpret_cast<const void*>(o.attention_fwd),
                                 reinterpret_cast<const void*>(o.attention_bwd),
                                 reinterpret_cast<const void*>(o.rope_operand),
                                 reinterpret_cast<const void*>(o.rms_rope_operand),
                                 reinterpret_cast<const void*>(o.attention_fwd_cached),
                                 reinterpret_cast<const void*>(o.attention_bwd_cached),
                                 reinterpret_cast<const void*>(o.swiglu_fwd),
                                 reinterpret_cast<const void*>(o.swiglu_fwd_stored),
                                 reinterpret_cast<const void*>(o.swiglu_bwd),
                                 reinterpret_cast<const void*>(o.swiglu_bwd_stored),
                                 reinterpret_cast<const void*>(o.cross_entropy),
                                 reinterpret_cast<const void*>(o.adamw)};
  for (std::size_t i = 0; i < std::size(entries); ++i) EXPECT_NE(entries[i], nullptr) << i;
  // The CPU stores what it computes in: the weights and the cache are read as they are.
  EXPECT_EQ(o.weight_bytes, sizeof(float));
  EXPECT_EQ(o.kv_bytes, sizeof(float));
  EXPECT_EQ(o.logits_chunk, kHostLogitsChunk);
  // No CUDA graphs: the CPU runs every op as it is called.
  const void* const graph_entries[] = {
      reinterpret_cast<const void*>(o.capture_begin), reinterpret_cast<const void*>(o.capture_end),
      reinterpret_cast<const void*>(o.graph_launch), reinterpret_cast<const void*>(o.graph_free)};
  for (const void* e : graph_entries) EXPECT_EQ(e, nullptr);
  // Guards the lists above against a new Ops member nobody added here.
  EXPECT_EQ(sizeof(Ops), sizeof(const char*) + 3 * sizeof(int64_t) +
                             (std::size(entries) + std::size(graph_entries)) * sizeof(void (*)()));
}

#ifdef HEADROOM_TEST_EXPECT_NO_CUDA
TEST(KernelTable, CudaOpsExplainsABuildWithoutCuda) {
  try {
    (void)cuda_ops();
    FAIL() << "cuda_ops() returned a table in a build without CUDA";
  } catch (const headroom::Error& e) {
    EXPECT_NE(std::string(e.what()).find("without CUDA"), std::string::npos) << e.what();
  }
}
#endif

// The CPU's weight precision is its compute type: the rows land unchanged at their columns, the
// others stay.
TEST(KernelMemory, WeightStoreColumnsPlacesEachRowAtItsColumns) {
  const int64_t rows = 5, n = 3, ld = 8, col0 = 2;
  const auto src = random_floats(rows * n, 2);
  std::vector<float> packed(rows * ld, -1.f);
  cpu().weight_store_columns(packed.data() + col0, ld, src.data(), rows, n);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < ld; ++c)
      ASSERT_EQ(packed[r * ld + c], c >= col0 && c < col0 + n ? src[r * n + c - col0] : -1.f) << r << ", " << c;
  EXPECT_THROW(cpu().weight_store_columns(packed.data(), n - 1, src.data(), rows, n), headroom::Error);
}

TEST(KernelMemory, AllocCopyFillRoundTrip) {
  const Ops& o = cpu();
  const auto src = random_floats(1000, 1);
  auto* dev = static_cast<float*>(o.alloc(src.size() * sizeof(float)));
  ASSERT_NE(dev, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(dev) % 64, 0u) << "allocations are cache-line aligned";
  o.copy_from_host(dev, src.data(), src.size() * sizeof(float));
  std::vector<float> back(src.size());
  o.copy_to_host(back.data(), dev, back.size() * sizeof(float));
  EXPECT_EQ(back, src);
  auto* second = static_cast<float*>(o.alloc(src.size() * sizeof(float)));
  o.copy(second, dev, src.size() * sizeof(float));
  std::fill(back.begin(), back.end(), 0.0f);
  o.copy_to_host(back.data(), second, back.size() * sizeof(float));
  EXPECT_EQ(back, src) << "copy between two allocations of the backend";
  o.free(second);
  o.fill(dev, 2.5f, 999);  // the last element must stay
  o.synchronize();
  o.copy_to_host(back.data(), dev, back.size() * sizeof(float));
  for (int i = 0; i < 999; ++i) ASSERT_EQ(back[i], 2.5f) << i;
  EXPECT_EQ(back[999], src[999]);
  o.free(dev);
  void* empty = o.alloc(0);  // still a distinct, freeable pointer
  EXPECT_NE(empty, nullptr);
  o.free(empty);
}

std::vector<double> naive_matmul(const std::vector<float>& A, const std::vector<float>& B, const std::vector<float>& C0,
                                 int64_t M, int64_t N, int64_t K, bool ta, bool tb, bool accumulate) {
  std::vector<double> C(M * N);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = accumulate ? C0[i * N + j] : 0.0;
      for (int64_t k = 0; k < K; ++k)
        s += static_cast<double>(ta ? A[k * M + i] : A[i * K + k]) * (tb ? B[j * K + k] : B[k * N + j]);
      C[i * N + j] = s;
    }
  return C;
}

TEST(KernelMatmul, AllTranspositionsWithAndWithoutAccumulate) {
  struct Dims {
    int64_t M, N, K;
  };
  for (const Dims d : {Dims{5, 7, 3}, Dims{33, 17, 65}, Dims{1, 40, 9}})
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (bool acc : {false, true}) {
          SCOPED_TRACE(::testing::Message() << "M=" << d.M << " N=" << d.N << " K=" << d.K << " trans_a=" << ta
                                            << " trans_b=" << tb << " accumulate=" << acc);
          const auto A = random_floats(d.M * d.K, 11), B = random_floats(d.K * d.N, 12);
          auto C = random_floats(d.M * d.N, 13);
          // Without accumulate C's old contents must not leak in, even NaNs.
          if (!acc) std::fill(C.begin(), C.end(), std::numeric_limits<float>::quiet_NaN());
          const auto want = naive_matmul(A, B, C, d.M, d.N, d.K, ta, tb, acc);
          cpu().matmul(A.data(), B.data(), C.data(), d.M, d.N, d.K, ta, tb, acc);
          EXPECT_TRUE(close_normwise(C, want, 1e-6));
        }
}

TEST(KernelMatmul, EmptyInnerDimensionGivesZeroOrLeavesC) {
  std::vector<float> C(6, std::numeric_limits<float>::quiet_NaN()), none;
  cpu().matmul(none.data(), none.data(), C.data(), 2, 3, 0, false, false, false);
  for (float c : C) EXPECT_EQ(c, 0.f);
  std::fill(C.begin(), C.end(), 4.f);
  cpu().matmul(none.data(), none.data(), C.data(), 2, 3, 0, false, false, true);
  for (float c : C) EXPECT_EQ(c, 4.f);
}

// Sub-matrices of larger buffers (row strides past the row width) with alpha and beta, on the fp32
// backend and the fp64 reference; the gaps between C's rows stay untouched, beta = 0 lets no NaN in.
TEST(KernelMatmul, StridedSubMatricesWithAlphaAndBeta) {
  const int64_t M = 9, N = 13, K = 6;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (float beta : {0.f, 0.75f}) {
        SCOPED_TRACE(::testing::Message() << "trans_a=" << ta << " trans_b=" << tb << " beta=" << beta);
        const int64_t lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 4, ldc = N + 2;
        const auto A = random_floats((ta ? K : M) * lda, 31), B = random_floats((tb ? N : K) * ldb, 32);
        auto C = random_floats(M * ldc, 33);
        if (beta == 0.f)
          for (int64_t i = 0; i < M; ++i) std::fill_n(C.begin() + i * ldc, N, std::numeric_limits<float>::quiet_NaN());
        const std::vector<double> C64(C.begin(), C.end()), A64(A.begin(), A.end()), B64(B.begin(), B.end());
        std::vector<double> want(static_cast<size_t>(M * ldc));
        for (int64_t i = 0; i < M; ++i)
          for (int64_t j = 0; j < ldc; ++j) {
            double s = 0;
            for (int64_t k = 0; k < K; ++k)
              s += A64[ta ? k * lda + i : i * lda + k] * B64[tb ? j * ldb + k : k * ldb + j];
            want[i * ldc + j] = j >= N ? C64[i * ldc + j] : (beta == 0.f ? 0.5 * s : 0.5 * s + beta * C64[i * ldc + j]);
          }
        auto got = C;
        cpu().matmul_strided(A.data(), lda, B.data(), ldb, got.data(), ldc, M, N, K, ta, tb, 0.5f, beta);
        EXPECT_TRUE(close_normwise(got, want, 1e-6));
        auto got64 = C64;
        cpu_ops_f64().matmul_strided(A64.data(), lda, B64.data(), ldb, got64.data(), ldc, M, N, K, ta, tb, 0.5, beta);
        for (std::size_t i = 0; i < want.size(); ++i)
          EXPECT_NEAR(got64[i], want[i], 1e-12 * (1 + std::abs(want[i]))) << i;
        for (int64_t i = 0; i < M; ++i)
          for (int64_t j = N; j < ldc; ++j) EXPECT_EQ(got[i * ldc + j], C[i * ldc + j]) << "gap " << i << "," << j;
      }
}

TEST(KernelMatmul, StridesNarrowerThanARowAreRefusedByName) {
  std::vector<float> x(64);
  const auto msg = [&](int64_t lda, int64_t ldb, int64_t ldc) {
    try {
      cpu().matmul_strided(x.data(), lda, x.data(), ldb, x.data(), ldc, 3, 4, 5, false, false, 1.f, 0.f);
    } catch (const headroom::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(msg(4, 4, 4).find("lda = 4 is less than A's row width 5"), std::string::npos) << msg(4, 4, 4);
  EXPECT_NE(msg(5, 3, 4).find("ldb = 3"), std::string::npos) << msg(5, 3, 4);
  EXPECT_NE(msg(5, 4, 2).find("ldc = 2"), std::string::npos) << msg(5, 4, 2);
}

TEST(KernelVector, AxpyAndScale) {
  const int64_t n = 70000;  // past the threshold where the loops go parallel
  const auto x = random_floats(n, 21);
  auto y = random_floats(n, 22);
  std::vector<double> want(n);
  for (int64_t i = 0; i < n; ++i) want[i] = (y[i] + 0.75 * static_cast<double>(x[i])) * -1.5;
  cpu().axpy(y.data(), x.data(), 0.75f, n);
  cpu().scale(y.data(), -1.5f, n);
  EXPECT_TRUE(close_elementwise(y, want, 1e-6, 1e-7));
}

TEST(KernelReduce, SumSquaresAccumulatesInDouble) {
  // 1e14 + 1000 × 1: a float accumulator (ulp 8e6 at 1e14) would drop every one of the ones.
  std::vector<float> x(1001, 1.0f);
  x[0] = 1e7f;
  EXPECT_EQ(cpu().sum_squares(x.data(), static_cast<int64_t>(x.size())), 1e14 + 1000);
  const auto r = random_floats(12345, 31);
  double want = 0;
  for (float v : r) want += static_cast<double>(v) * v;
  EXPECT_NEAR(cpu().sum_squares(r.data(), 12345), want, 1e-12 * want);
  EXPECT_EQ(cpu().sum_squares(r.data(), 0), 0.0);
}

TEST(KernelReduce, CountNonfiniteCountsNanAndBothInfinities) {
  std::vector<float> x = random_floats(100000, 41, -1e30f, 1e30f);
  x.push_back(std::numeric_limits<float>::max());         // finite
  x.push_back(std::numeric_limits<float>::denorm_min());  // finite
  x.push_back(-0.f);                                      // finite
  EXPECT_EQ(cpu().count_nonfinite(x.data(), static_cast<int64_t>(x.size())), 0);
  x[7] = std::numeric_limits<float>::quiet_NaN();
  x[99999] = std::numeric_limits<float>::infinity();
  x[50000] = -std::numeric_limits<float>::infinity();
  x.push_back(-std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(cpu().count_nonfinite(x.data(), static_cast<int64_t>(x.size())), 4);
  EXPECT_EQ(cpu().count_nonfinite(x.data(), 7), 0);
}

TEST(KernelEmbedding, ForwardGathersRowsBackwardScatterAddsRepeats) {
  // d spans several of the backward's 64-column slices; n * d is past the parallel threshold; ids
  // repeat (token 3 a lot) and skip some rows, which must stay as they were.
  const int64_t V = 11, d = 130, n = 300;
  std::vector<int32_t> ids(n);
  for (int64_t i = 0; i < n; ++i) ids[i] = i % 3 == 0 ? 3 : static_cast<int32_t>((i * 7) % 9);
  const auto table = random_floats(V * d, 51);
  std::vector<float> out(n * d);
  cpu().embedding_fwd(table.data(), ids.data(), out.data(), n, d);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < d; ++c) ASSERT_EQ(out[i * d + c], table[ids[i] * d + c]) << i;

  const auto dout = random_floats(n * d, 52);
  for (int threads : {1, 3}) {
    SCOPED_TRACE(::testing::Message() << threads << " threads");
    const int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    auto dtable = random_floats(V * d, 53);  // the op accumulates into what is there
    std::vector<double> want(dtable.begin(), dtable.end());
    for (int64_t i = 0; i < n; ++i)
      for (int64_t c = 0; c < d; ++c) want[ids[i] * d + c] += dout[i * d + c];
    cpu().embedding_bwd(dout.data(), ids.data(), dtable.data(), n, d);
    omp_set_num_threads(saved);
    // Token 3 gets 100 float additions: judged normwise (a lost or doubled row would be off by O(1)).
    EXPECT_TRUE(close_normwise(dtable, want, 1e-6));
  }
}

}  // namespace
}  // namespace headroom::kernels::test
