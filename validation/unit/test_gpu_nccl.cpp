// NcclComm on 2 ranks (one GPU each): every collective of the Comm interface on device buffers (NCCL)
// and on host scalars/vectors (MPI), against values computed by hand. Exits 77 (CTest: skipped) when
// the node has fewer GPUs than ranks, as CI's has none.
#include "cuda/cuda_tables.h"
#include "cuda/device.h"
#include "parallel/grid.h"
#include "parallel/nccl_comm.h"
#include "util/bf16.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <iostream>
#include <numeric>
#include <vector>

using namespace headroom;

namespace {

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int world_size() {
  int s = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

TEST(NcclComm, DeviceAndHostCollectives) {
  const kernels::Ops& ops = kernels::cuda_ops_bf16();
  auto comm = parallel::make_nccl_comm(MPI_COMM_WORLD);
  const int r = comm->rank(), n = comm->size();
  ASSERT_EQ(r, world_rank());
  ASSERT_EQ(n, world_size());

  // Device float sum over 10^6 + 3 elements.
  const int64_t len = 1'000'003;
  std::vector<float> x(len);
  for (int64_t i = 0; i < len; ++i) x[i] = static_cast<float>((i % 7) + r);
  auto* dx = static_cast<float*>(ops.alloc(len * sizeof(float)));
  ops.copy_from_host(dx, x.data(), len * sizeof(float));
  comm->allreduce_sum(dx, len);
  ops.copy_to_host(x.data(), dx, len * sizeof(float));
  const int rank_sum = n * (n - 1) / 2;
  for (int64_t i = 0; i < len; i += 9973) ASSERT_EQ(x[i], static_cast<float>(n * (i % 7) + rank_sum)) << i;

  // The overlapped reductions, fp32 and bf16 on the wire: two ranks sum once, so bit for bit.
  {
    const int64_t m = 4099;
    std::vector<float> a(m), b(m);
    auto value = [](int q, int64_t i) {
      return 1.0f + 0.3f * static_cast<float>(q) + 1e-3f * static_cast<float>(i % 97);
    };
    auto bf16 = [](float v) { return util::bf16_to_float(util::float_to_bf16(v)); };
    for (int64_t i = 0; i < m; ++i) a[i] = value(r, i);
    auto* da = static_cast<float*>(ops.alloc(2 * m * sizeof(float)));
    ops.copy_from_host(da, a.data(), m * sizeof(float));
    ops.copy_from_host(da + m, a.data(), m * sizeof(float));
    comm->start_allreduce_sum(da, m, parallel::WirePrecision::kFp32);
    comm->start_allreduce_sum(da + m, m, parallel::WirePrecision::kBf16);
    comm->wait_all();
    ops.copy_to_host(a.data(), da, m * sizeof(float));
    ops.copy_to_host(b.data(), da + m, m * sizeof(float));
    if (n == 2)
      for (int64_t i = 0; i < m; ++i) {
        ASSERT_EQ(a[i], value(0, i) + value(1, i)) << i;
        ASSERT_EQ(b[i], bf16(bf16(value(0, i)) + bf16(value(1, i)))) << i;
      }
    ops.free(da);
  }

  // Device double sum, int64 sum and max.
  std::vector<double> d{0.5 * r, 1.0};
  std::vector<int64_t> c{int64_t{1} << 40, r}, m{r, -r};
  auto* dd = static_cast<double*>(ops.alloc(d.size() * sizeof(double)));
  auto* dc = static_cast<int64_t*>(ops.alloc(c.size() * sizeof(int64_t)));
  auto* dm = static_cast<int64_t*>(ops.alloc(m.size() * sizeof(int64_t)));
  ops.copy_from_host(dd, d.data(), d.size() * sizeof(double));
  ops.copy_from_host(dc, c.data(), c.size() * sizeof(int64_t));
  ops.copy_from_host(dm, m.data(), m.size() * sizeof(int64_t));
  comm->allreduce_sum(dd, 2);
  comm->allreduce_sum(dc, 2);
  comm->allreduce_max(dm, 2);
  ops.copy_to_host(d.data(), dd, d.size() * sizeof(double));
  ops.copy_to_host(c.data(), dc, c.size() * sizeof(int64_t));
  ops.copy_to_host(m.data(), dm, m.size() * sizeof(int64_t));
  EXPECT_EQ(d[0], 0.5 * rank_sum);
  EXPECT_EQ(d[1], 1.0 * n);
  EXPECT_EQ(c[0], n * (int64_t{1} << 40));
  EXPECT_EQ(c[1], rank_sum);
  EXPECT_EQ(m[0], n - 1);
  EXPECT_EQ(m[1], 0);

  // Host scalars (the trainer's loss sums and token counts) go through MPI.
  double loss = 1.5 + r;
  int64_t count = 10 + r, flag = r == n - 1 ? 7 : 0;
  comm->allreduce_sum(&loss, 1);
  comm->allreduce_sum(&count, 1);
  comm->allreduce_max(&flag, 1);
  EXPECT_EQ(loss, 1.5 * n + rank_sum);
  EXPECT_EQ(count, 10 * n + rank_sum);
  EXPECT_EQ(flag, 7);

  // Broadcast: device bytes and a host vector.
  std::vector<float> b(5, static_cast<float>(r));
  ops.copy_from_host(dx, b.data(), b.size() * sizeof(float));
  comm->broadcast(dx, 5 * sizeof(float), n - 1);
  ops.copy_to_host(b.data(), dx, b.size() * sizeof(float));
  for (float v : b) EXPECT_EQ(v, static_cast<float>(n - 1));
  std::vector<int32_t> hb(3, r);
  comm->broadcast(hb.data(), hb.size() * sizeof(int32_t), 0);
  for (int32_t v : hb) EXPECT_EQ(v, 0);

  // Allgather, uneven and even blocks, in place on device.
  for (int even = 0; even < 2; ++even) {
    std::vector<int64_t> counts(n), displs(n);
    for (int q = 0; q < n; ++q) counts[q] = even ? 4 : 3 + q;
    std::exclusive_scan(counts.begin(), counts.end(), displs.begin(), int64_t{0});
    const int64_t total = displs[n - 1] + counts[n - 1];
    std::vector<float> g(total, -1.f);
    for (int64_t i = 0; i < counts[r]; ++i) g[displs[r] + i] = static_cast<float>(100 * r + i);
    ops.copy_from_host(dx, g.data(), total * sizeof(float));
    comm->allgather(dx, counts.data(), displs.data());
    ops.copy_to_host(g.data(), dx, total * sizeof(float));
    for (int q = 0; q < n; ++q)
      for (int64_t i = 0; i < counts[q]; ++i) EXPECT_EQ(g[displs[q] + i], static_cast<float>(100 * q + i));
    // The 16-bit form (sequence parallelism's stored bf16 rows): every word as sent, NaN bits too.
    const auto word = [](int q, int64_t i) { return static_cast<uint16_t>(0x7fc1 + 1000 * q + i); };
    std::vector<uint16_t> h(total, 0);
    for (int64_t i = 0; i < counts[r]; ++i) h[displs[r] + i] = word(r, i);
    ops.copy_from_host(dx, h.data(), total * sizeof(uint16_t));
    comm->allgather(reinterpret_cast<uint16_t*>(dx), counts.data(), displs.data());
    ops.copy_to_host(h.data(), dx, total * sizeof(uint16_t));
    for (int q = 0; q < n; ++q)
      for (int64_t i = 0; i < counts[q]; ++i) EXPECT_EQ(h[displs[q] + i], word(q, i));
  }
  comm->barrier();
  for (void* p : {static_cast<void*>(dx), static_cast<void*>(dd), static_cast<void*>(dc), static_cast<void*>(dm)})
    ops.free(p);
}

}  // namespace

int main(int argc, char** argv) {
  parallel::init_mpi(&argc, &argv);
  const int gpus = kernels::cuda::device_count();
  if (gpus < world_size()) {
    if (world_rank() == 0)
      std::cout << "NCCL test needs one GPU per rank: " << world_size() << " ranks, " << gpus
                << " GPUs visible: skipping\n";
    parallel::finalize_mpi();
    return 77;
  }
  parallel::select_local_gpu();
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  parallel::finalize_mpi();
  return rc;
}
