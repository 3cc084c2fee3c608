#include "parallel/mpi_comm.h"

#include "util/bf16.h"
#include "util/error.h"

#include <algorithm>
#include <climits>
#include <vector>

namespace headroom::parallel {
namespace {

// MPI counts are int: reduce in pieces so tensors past 2^31 elements still work.
constexpr int64_t kMaxCount = INT_MAX / 2;

template <class T>
void allreduce_chunked(MPI_Comm comm, T* x, int64_t n, MPI_Datatype type, MPI_Op op, const char* what) {
  for (int64_t off = 0; off < n; off += kMaxCount) {
    const int count = static_cast<int>(std::min(kMaxCount, n - off));
    mpi_check(MPI_Allreduce(MPI_IN_PLACE, x + off, count, type, op, comm), what);
  }
}

// MPI's reduction for bf16 (MPI has no bf16 type; the data travels as MPI_UINT16_T): each
// addition in fp32, rounded back to bf16, as NCCL's bf16 sum.
void bf16_sum_op(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = util::float_to_bf16(util::bf16_to_float(a[i]) + util::bf16_to_float(b[i]));
}

}  // namespace

void mpi_check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  fail(what, ": MPI error: ", std::string(msg, static_cast<size_t>(len)));
}

MpiComm::MpiComm(MPI_Comm comm) : comm_(comm) {
  mpi_check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
  mpi_check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
}

MpiComm::~MpiComm() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (bf16_sum_ != MPI_OP_NULL) MPI_Op_free(&bf16_sum_);
  if (comm_ != MPI_COMM_WORLD && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

MPI_Op MpiComm::bf16_sum() {
  if (bf16_sum_ == MPI_OP_NULL) mpi_check(MPI_Op_create(&bf16_sum_op, 1, &bf16_sum_), "MPI_Op_create(bf16 sum)");
  return bf16_sum_;
}

uint16_t* MpiComm::stage_bf16(const float* x, int64_t n, float* into) {
  std::vector<uint16_t> wire(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) wire[static_cast<size_t>(i)] = util::float_to_bf16(x[i]);
  return staged_.emplace_back(Bf16Staging{into, std::move(wire)}).wire.data();
}

void MpiComm::allreduce_sum(float* x, int64_t n) {
  if (size_ > 1) allreduce_chunked(comm_, x, n, MPI_FLOAT, MPI_SUM, "MPI_Allreduce(float)");
}
void MpiComm::allreduce_sum(double* x, int64_t n) {
  if (size_ > 1) allreduce_chunked(comm_, x, n, MPI_DOUBLE, MPI_SUM, "MPI_Allreduce(double)");
}
void MpiComm::allreduce_sum(int64_t* x, int64_t n) {
  if (size_ > 1) allreduce_chunked(comm_, x, n, MPI_INT64_T, MPI_SUM, "MPI_Allreduce(int64)");
}
void MpiComm::allreduce_max(int64_t* x, int64_t n) {
  if (size_ > 1) allreduce_chunked(comm_, x, n, MPI_INT64_T, MPI_MAX, "MPI_Allreduce(max)");
}

void MpiComm::broadcast(void* x, std::size_t bytes, int root) {
  if (size_ == 1) return;
  auto* p = static_cast<char*>(x);
  for (std::size_t off = 0; off < bytes; off += static_cast<std::size_t>(kMaxCount)) {
    const int count = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(kMaxCount), bytes - off));
    mpi_check(MPI_Bcast(p + off, count, MPI_BYTE, root, comm_), "MPI_Bcast");
  }
}

namespace {

void allgather_in_place(MPI_Comm comm, int size, void* x, const int64_t* counts, const int64_t* displs,
                        MPI_Datatype type) {
  if (size == 1) return;
  std::vector<int> c(static_cast<size_t>(size)), d(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) {
    if (displs[r] + counts[r] > INT_MAX)
      fail("allgather: ", displs[r] + counts[r],
           " elements exceed MPI's int counts; use more "
           "tensor-parallel ranks");
    c[static_cast<size_t>(r)] = static_cast<int>(counts[r]);
    d[static_cast<size_t>(r)] = static_cast<int>(displs[r]);
  }
  mpi_check(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, x, c.data(), d.data(), type, comm), "MPI_Allgatherv");
}

}  // namespace

void MpiComm::allgather(float* x, const int64_t* counts, const int64_t* displs) {
  allgather_in_place(comm_, size_, x, counts, displs, MPI_FLOAT);
}

void MpiComm::allgather(std::uint16_t* x, const int64_t* counts, const int64_t* displs) {
  allgather_in_place(comm_, size_, x, counts, displs, MPI_UINT16_T);
}

void MpiComm::reduce_scatter_sum(const float* in, float* out, int64_t count) {
  if (size_ == 1) {
    std::copy(in, in + count, out);
    return;
  }
  // Blocks past MPI's int count go in pieces: piece k of every block is one strided exchange, so
  // each rank sends and receives only what a single call would.
  std::vector<float> send;
  for (int64_t off = 0; off < count; off += kMaxCount) {
    const int64_t n = std::min(kMaxCount, count - off);
    const float* src = in;
    if (n != count) {
      send.resize(static_cast<size_t>(n * size_));
      for (int r = 0; r < size_; ++r)
        std::copy_n(in + r * count + off, n, send.data() + static_cast<size_t>(r) * static_cast<size_t>(n));
      src = send.data();
    }
    mpi_check(MPI_Reduce_scatter_block(src, out + off, static_cast<int>(n), MPI_FLOAT, MPI_SUM, comm_),
              "MPI_Reduce_scatter_block");
  }
}

void MpiComm::start_allreduce_sum(float* x, int64_t n, WirePrecision wire) {
  if (size_ == 1) return;
  const bool bf16 = wire == WirePrecision::kBf16;
  void* buf = bf16 ? static_cast<void*>(stage_bf16(x, n, x)) : x;
  const size_t elem = bf16 ? sizeof(uint16_t) : sizeof(float);
  for (int64_t off = 0; off < n; off += kMaxCount) {
    const int count = static_cast<int>(std::min(kMaxCount, n - off));
    mpi_check(
        MPI_Iallreduce(MPI_IN_PLACE, static_cast<char*>(buf) + static_cast<size_t>(off) * elem, count,
                       bf16 ? MPI_UINT16_T : MPI_FLOAT, bf16 ? bf16_sum() : MPI_SUM, comm_, &pending_.emplace_back()),
        bf16 ? "MPI_Iallreduce(bf16)" : "MPI_Iallreduce(float)");
  }
}

void MpiComm::start_reduce_scatter_sum(float* x, const int64_t* counts, const int64_t* displs, WirePrecision wire) {
  if (size_ == 1) return;
  const bool bf16 = wire == WirePrecision::kBf16;
  const size_t elem = bf16 ? sizeof(uint16_t) : sizeof(float);
  // One reduction to each block's owner: blocks of any size (MPI_Reduce_scatter wants its result at
  // the start of the buffer, not in place at the block's own offset).
  for (int r = 0; r < size_; ++r) {
    if (counts[r] == 0) continue;
    float* block = x + displs[r];
    void* buf = bf16 ? static_cast<void*>(stage_bf16(block, counts[r], r == rank_ ? block : nullptr)) : block;
    for (int64_t off = 0; off < counts[r]; off += kMaxCount) {
      const int count = static_cast<int>(std::min(kMaxCount, counts[r] - off));
      void* piece = static_cast<char*>(buf) + static_cast<size_t>(off) * elem;
      mpi_check(MPI_Ireduce(r == rank_ ? MPI_IN_PLACE : piece, piece, count, bf16 ? MPI_UINT16_T : MPI_FLOAT,
                            bf16 ? bf16_sum() : MPI_SUM, r, comm_, &pending_.emplace_back()),
                bf16 ? "MPI_Ireduce(bf16)" : "MPI_Ireduce(float)");
    }
  }
}

void MpiComm::wait_all() {
  if (pending_.empty()) return;
  const int rc = MPI_Waitall(static_cast<int>(pending_.size()), pending_.data(), MPI_STATUSES_IGNORE);
  pending_.clear();
  mpi_check(rc, "MPI_Waitall");
  for (const Bf16Staging& s : staged_)
    if (s.into != nullptr)
      for (size_t i = 0; i < s.wire.size(); ++i) s.into[i] = util::bf16_to_float(s.wire[i]);
  staged_.clear();
}

void MpiComm::barrier() { mpi_check(MPI_Barrier(comm_), "MPI_Barrier"); }

std::unique_ptr<MpiComm> node_comm(const MpiComm& comm) {
  MPI_Comm node = MPI_COMM_NULL;
  mpi_check(MPI_Comm_split_type(comm.handle(), MPI_COMM_TYPE_SHARED, comm.rank(), MPI_INFO_NULL, &node),
            "MPI_Comm_split_type(shared)");
  return std::make_unique<MpiComm>(node);
}

MPI_Comm duplicate(MPI_Comm group, const char* what) {
  MPI_Comm c = MPI_COMM_NULL;
  mpi_check(MPI_Comm_dup(group, &c), cat("MPI_Comm_dup (", what, ")").c_str());
  return c;
}

}  // namespace headroom::parallel
