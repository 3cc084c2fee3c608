// MpiComm's overlapped reductions (start_allreduce_sum, start_reduce_scatter_sum, wait_all) on 4
// ranks, fp32 and bf16 on the wire, against sums computed here. On 2 ranks a bf16 sum is one
// rounded addition, so it is checked bit for bit; on 4 its order is MPI's, so it is checked against
// the bound of three rounded additions of positive numbers. And the all-gather of 16-bit words
// that sequence parallelism moves its stored bf16 rows with: every word as sent.
#include "parallel/grid.h"
#include "parallel/mpi_comm.h"
#include "util/bf16.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

using namespace headroom;
using parallel::WirePrecision;

namespace {

float round_bf16(float x) { return util::bf16_to_float(util::float_to_bf16(x)); }

bool is_bf16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  return (bits & 0xffffu) == 0;
}

// Rank r's value at i: positive, not a bf16 value, different on every rank.
float value(int r, int64_t i) { return 1.0f + 0.3f * static_cast<float>(r) + 1e-3f * static_cast<float>(i % 97); }

std::vector<float> values(int r, int64_t n) {
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(i)] = value(r, i);
  return x;
}

// Three rounded additions of positive partial sums, each within half a unit of a partial sum no
// larger than the total: 2^-9 relative in bf16, 2^-24 in fp32.
void expect_bf16_sum_of_4(float got, int64_t i) {
  double exact = 0;
  for (int q = 0; q < 4; ++q) exact += round_bf16(value(q, i));
  EXPECT_TRUE(is_bf16(got)) << i;
  EXPECT_LE(std::abs(got - exact), 3 * std::ldexp(exact, -9)) << i;
}

void expect_fp32_sum_of_4(float got, int64_t i) {
  double exact = 0;
  for (int q = 0; q < 4; ++q) exact += value(q, i);
  EXPECT_LE(std::abs(got - exact), 3 * std::ldexp(exact, -24)) << i;
}

TEST(MpiComm, TwoRanksSumOnceInEitherPrecision) {
  MPI_Comm half = MPI_COMM_NULL;
  int world = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world);
  parallel::mpi_check(MPI_Comm_split(MPI_COMM_WORLD, world / 2, world, &half), "MPI_Comm_split");
  parallel::MpiComm comm(half);
  ASSERT_EQ(comm.size(), 2);
  const int64_t n = 1001;
  // Two buckets in flight at once, one in each precision.
  std::vector<float> a = values(comm.rank(), n), b = values(comm.rank(), n);
  comm.start_allreduce_sum(a.data(), n, WirePrecision::kFp32);
  comm.start_allreduce_sum(b.data(), n, WirePrecision::kBf16);
  comm.wait_all();
  int rounded = 0;
  for (int64_t i = 0; i < n; ++i) {
    const size_t k = static_cast<size_t>(i);
    EXPECT_EQ(a[k], value(0, i) + value(1, i)) << i;
    EXPECT_EQ(b[k], round_bf16(round_bf16(value(0, i)) + round_bf16(value(1, i)))) << i;
    rounded += b[k] != a[k];
  }
  EXPECT_GT(rounded, n / 2);  // the bf16 path did round
}

TEST(MpiComm, FourRanksAllReduceInBf16) {
  parallel::MpiComm comm(MPI_COMM_WORLD);
  ASSERT_EQ(comm.size(), 4);
  const int64_t n = 5003;
  std::vector<float> x = values(comm.rank(), n);
  comm.start_allreduce_sum(x.data(), n, WirePrecision::kBf16);
  comm.wait_all();
  for (int64_t i = 0; i < n; ++i) expect_bf16_sum_of_4(x[static_cast<size_t>(i)], i);
  // Every rank holds the same bits.
  std::vector<float> first = x;
  parallel::mpi_check(MPI_Bcast(first.data(), static_cast<int>(n), MPI_FLOAT, 0, MPI_COMM_WORLD), "MPI_Bcast");
  EXPECT_EQ(std::memcmp(first.data(), x.data(), x.size() * sizeof(float)), 0);
}

// ZeRO-2's uneven blocks: the owner's block is the sum, the blocks a rank only sends keep its own
// fp32 values (not their bf16 copies), an empty block is allowed.
TEST(MpiComm, FourRanksReduceScatterUnevenBlocks) {
  parallel::MpiComm comm(MPI_COMM_WORLD);
  const int r = comm.rank();
  const std::vector<int64_t> counts{7, 0, 1000, 33};
  std::vector<int64_t> displs(4);
  std::exclusive_scan(counts.begin(), counts.end(), displs.begin(), int64_t{0});
  const int64_t n = displs[3] + counts[3];
  for (WirePrecision wire : {WirePrecision::kFp32, WirePrecision::kBf16}) {
    std::vector<float> x = values(r, n);
    comm.start_reduce_scatter_sum(x.data(), counts.data(), displs.data(), wire);
    comm.wait_all();
    for (int q = 0; q < 4; ++q)
      for (int64_t i = displs[q]; i < displs[q] + counts[q]; ++i) {
        const float got = x[static_cast<size_t>(i)];
        if (q != r)
          EXPECT_EQ(got, value(r, i)) << i;
        else if (wire == WirePrecision::kBf16)
          expect_bf16_sum_of_4(got, i);
        else
          expect_fp32_sum_of_4(got, i);
      }
  }
}

// Uneven blocks (one empty) and even ones; the even ones hold every 16-bit pattern once (NaN and
// infinity bits included), which a conversion on the way would change.
TEST(MpiComm, FourRanksAllGatherWordsAsSent) {
  parallel::MpiComm comm(MPI_COMM_WORLD);
  const int r = comm.rank();
  const auto word = [](int q, int64_t i) { return static_cast<uint16_t>(q * 16384 + i); };
  for (const std::vector<int64_t>& counts : {std::vector<int64_t>{5, 0, 16384, 33}, std::vector<int64_t>(4, 16384)}) {
    std::vector<int64_t> displs(4);
    std::exclusive_scan(counts.begin(), counts.end(), displs.begin(), int64_t{0});
    std::vector<uint16_t> x(static_cast<size_t>(displs[3] + counts[3]), 0);
    for (int64_t i = 0; i < counts[r]; ++i) x[static_cast<size_t>(displs[r] + i)] = word(r, i);
    comm.allgather(x.data(), counts.data(), displs.data());
    for (int q = 0; q < 4; ++q)
      for (int64_t i = 0; i < counts[q]; ++i) ASSERT_EQ(x[static_cast<size_t>(displs[q] + i)], word(q, i)) << q;
  }
}

}  // namespace

int main(int argc, char** argv) {
  parallel::init_mpi(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  parallel::finalize_mpi();
  return rc;
}
