// Dense products through cuBLASLt. Row-major C[M,N] = op(A)·op(B) is computed as the column-major
// product Cᵀ[N,M] = op(B)ᵀ·op(A)ᵀ: cuBLASLt's first operand is our B, its second our A, and every
// row-major matrix is the column-major view of its transpose (no data moves).
//
// matmul_bf16: A and B are rounded to bf16 copies in the scratch workspace, multiplied with fp32
// accumulation into the fp32 C; matmul_bf16_stored rounds A only (B is a bf16 weight copy);
// matmul_bf16_to_stored reads both as bf16 and writes C in bf16 (cuBLASLt rounds the fp32 sum).
// matmul_fp32: fp32 operands, CUBLAS_COMPUTE_32F (TF32 off).
// Plans (descriptors + the heuristic's algorithm) are cached per shape, transposes, precision and
// pointer alignment: cuBLASLt's heuristic assumes 256-byte-aligned buffers unless told otherwise,
// and callers pass offsets into larger buffers.
//
// HEADROOM_GEMM_SEARCH=N (2..16): a shape's plan takes, of the heuristic's first N algorithms, the
// one that runs fastest on the first call's own operands (one warm-up and three timed runs each, into
// a scratch output so the caller's C is untouched); unset or 1: the heuristic's first choice, untimed.
// Off by default until a GPU measures what it gains (validation/gpu/run_gpu_checks.sh times both).
#include "cuda/entries.h"
#include "cuda/runtime.h"
#include "matmul_strides.h"

#include <cublasLt.h>

#include <cstdlib>
#include <map>
#include <tuple>
#include <vector>

namespace headroom::kernels::cuda {

namespace {

void lt_check(cublasStatus_t st, const char* call, const char* file, int line) {
  if (st != CUBLAS_STATUS_SUCCESS)
    fail("cuBLASLt ", call, " failed at ", file, ":", line, ": ", cublasLtGetStatusName(st), " (",
         cublasLtGetStatusString(st), ")");
}
#define HEADROOM_LT_CHECK(call) lt_check((call), #call, __FILE__, __LINE__)

constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;  // NVIDIA's advice for Hopper

struct Lt {
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
};

Lt& lt() {
  static Lt* s = [] {
    auto* l = new Lt;
    HEADROOM_LT_CHECK(cublasLtCreate(&l->handle));
    l->workspace = alloc(kWorkspaceBytes);
    return l;
  }();
  return *s;
}

uint32_t alignment_of(const void* p) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  uint32_t al = 256;
  while (al > 1 && a % al != 0) al /= 2;
  return al;
}

// Row strides of the stored A, B, C (elements).
struct Strides {
  int64_t a, b, c;
};

// A strided batch: `count` products, matrix n of each operand at n × its stride (elements).
struct Batch {
  int64_t count = 1, a = 0, b = 0, c = 0;
};

Strides packed(int64_t M, int64_t N, int64_t K, bool trans_a, bool trans_b) {
  return {trans_a ? M : K, trans_b ? K : N, N};
}

// Makes a layout describe `count` matrices `stride` elements apart.
void set_batch(cublasLtMatrixLayout_t layout, int64_t count, int64_t stride) {
  if (count > 0x7fffffff) fail("cuBLASLt: a batch of ", count, " matrices exceeds its 32-bit count");
  const auto n = static_cast<int32_t>(count);
  HEADROOM_LT_CHECK(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &n, sizeof n));
  HEADROOM_LT_CHECK(
      cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
}

int search_width() {
  static const int width = [] {
    const char* e = std::getenv("HEADROOM_GEMM_SEARCH");
    if (e == nullptr || *e == '\0') return 1;
    char* end = nullptr;
    const long v = std::strtol(e, &end, 10);
    if (*end != '\0' || v < 1 || v > 16)
      fail("HEADROOM_GEMM_SEARCH = '", e, "': expected the number of cuBLASLt algorithms to time per shape, 1 to 16");
    return static_cast<int>(v);
  }();
  return width;
}

// The operands' and the output's element types; the sum is fp32 in all.
struct Types {
  cudaDataType_t in, out;
};
constexpr Types kFp32{CUDA_R_32F, CUDA_R_32F};
constexpr Types kBf16{CUDA_R_16BF, CUDA_R_32F};
constexpr Types kBf16Out{CUDA_R_16BF, CUDA_R_16BF};

std::size_t element_bytes(cudaDataType_t t) { return t == CUDA_R_16BF ? 2 : 4; }
const char* type_name(cudaDataType_t t) { return t == CUDA_R_16BF ? "bf16" : "fp32"; }

// The operands of the call a plan is made for, to time its candidates on.
struct Operands {
  const void* A;
  const void* B;
  int64_t c_elems;  // C's extent in elements, batch included
};

using PlanKey = std::tuple<int64_t, int64_t, int64_t, bool, bool, int, int, uint32_t, uint32_t, uint32_t, int64_t,
                           int64_t, int64_t, int64_t, int64_t, int64_t, int64_t>;

struct Plan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
};

// The fastest of the candidates on the call's operands (Operands), each run once to warm up and
// three times timed; a candidate cuBLASLt refuses at run time is skipped.
cublasLtMatmulAlgo_t fastest(const Plan& p, const std::vector<cublasLtMatmulHeuristicResult_t>& candidates,
                             const Operands& ops, Types t) {
  void* c = alloc(static_cast<std::size_t>(ops.c_elems) * element_bytes(t.out));
  cudaEvent_t start = nullptr, stop = nullptr;
  HEADROOM_CUDA_CHECK(cudaEventCreate(&start));
  HEADROOM_CUDA_CHECK(cudaEventCreate(&stop));
  const float alpha = 1.f, beta = 0.f;
  auto run_once = [&](const cublasLtMatmulAlgo_t& algo) {
    return cublasLtMatmul(lt().handle, p.op, &alpha, ops.B, p.a, ops.A, p.b, &beta, c, p.c, c, p.c, &algo,
                          lt().workspace, kWorkspaceBytes, stream());
  };
  float best_ms = 0;
  const cublasLtMatmulAlgo_t* best = &candidates[0].algo;
  for (const auto& r : candidates) {
    if (r.state != CUBLAS_STATUS_SUCCESS || run_once(r.algo) != CUBLAS_STATUS_SUCCESS) continue;
    HEADROOM_CUDA_CHECK(cudaEventRecord(start, stream()));
    bool ok = true;
    for (int k = 0; k < 3 && ok; ++k) ok = run_once(r.algo) == CUBLAS_STATUS_SUCCESS;
    HEADROOM_CUDA_CHECK(cudaEventRecord(stop, stream()));
    HEADROOM_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    HEADROOM_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    if (ok && (best_ms == 0 || ms < best_ms)) best_ms = ms, best = &r.algo;
  }
  HEADROOM_CUDA_CHECK(cudaEventDestroy(start));
  HEADROOM_CUDA_CHECK(cudaEventDestroy(stop));
  free(c);
  return *best;
}

const Plan& plan_for(int64_t M, int64_t N, int64_t K, bool trans_a, bool trans_b, Types t, uint32_t align_a,
                     uint32_t align_b, uint32_t align_c, Strides ld, Batch batch, const Operands& ops) {
  static std::map<PlanKey, Plan> cache;
  const PlanKey key{M,       N,    K,    trans_a, trans_b,     t.in,    t.out,   align_a, align_b,
                    align_c, ld.a, ld.b, ld.c,    batch.count, batch.a, batch.b, batch.c};
  if (auto it = cache.find(key); it != cache.end()) return it->second;

  Plan p;
  const cudaDataType_t in = t.in;
  HEADROOM_LT_CHECK(cublasLtMatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  // cuBLASLt's A is our B (column-major view [N, K] when stored [K, N]) and its B is our A.
  const cublasOperation_t op_first = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_second = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  HEADROOM_LT_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &op_first, sizeof op_first));
  HEADROOM_LT_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &op_second, sizeof op_second));
  const auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
  // A row-major matrix stored with row stride ld is the column-major view of its transpose with
  // leading dimension ld.
  if (!trans_b)
    HEADROOM_LT_CHECK(cublasLtMatrixLayoutCreate(&p.a, in, u(N), u(K), ld.b));
  else
    HEADROOM_LT_CHECK(cublasLtMatrixLayoutCreate(&p.a, in, u(K), u(N), ld.b));
  if (!trans_a)
    HEADROOM_LT_CHECK(cublasLtMatrixLayoutCreate(&p.b, in, u(K), u(M), ld.a));
  else
    HEADROOM_LT_CHECK(cublasLtMatrixLayoutCreate(&p.b, in, u(M), u(K), ld.a));
  HEADROOM_LT_CHECK(cublasLtMatrixLayoutCreate(&p.c, t.out, u(N), u(M), ld.c));
  if (batch.count > 1) {
    set_batch(p.a, batch.count, batch.b);  // cuBLASLt's A is our B
    set_batch(p.b, batch.count, batch.a);
    set_batch(p.c, batch.count, batch.c);
  }

  cublasLtMatmulPreference_t pref = nullptr;
  HEADROOM_LT_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  const std::size_t ws = kWorkspaceBytes;
  HEADROOM_LT_CHECK(
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
  // Our B is cuBLASLt's A and our A its B.
  HEADROOM_LT_CHECK(
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_b, sizeof align_b));
  HEADROOM_LT_CHECK(
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_a, sizeof align_a));
  HEADROOM_LT_CHECK(
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_c, sizeof align_c));
  HEADROOM_LT_CHECK(
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_c, sizeof align_c));
  std::vector<cublasLtMatmulHeuristicResult_t> results(static_cast<std::size_t>(search_width()));
  int found = 0;
  HEADROOM_LT_CHECK(cublasLtMatmulAlgoGetHeuristic(lt().handle, p.op, p.a, p.b, p.c, p.c, pref,
                                                   static_cast<int>(results.size()), results.data(), &found));
  HEADROOM_LT_CHECK(cublasLtMatmulPreferenceDestroy(pref));
  if (found == 0)
    fail("cuBLASLt has no algorithm for C[", M, ",", N, "] = A", trans_a ? "ᵀ" : "", " B", trans_b ? "ᵀ" : "",
         " with K = ", K, " (", type_name(t.in), " operands, ", type_name(t.out), " output, alignments ", align_a, "/",
         align_b, "/", align_c, " bytes)");
  results.resize(static_cast<std::size_t>(found));
  p.algo = found == 1 ? results[0].algo : fastest(p, results, ops, t);
  // Bounded: a long decode with ever-new shapes must not grow without limit. 4096: the blocked
  // attention's key count differs per causal block (a 32K sequence in blocks of 256 is 128 shapes
  // for each of its 7 GEMMs, 896 per layer shape), and a bound below a step's shapes would clear
  // the cache, and query the heuristic again, on every step.
  if (cache.size() >= 4096) {
    for (auto& [k, q] : cache) {
      cublasLtMatrixLayoutDestroy(q.a);
      cublasLtMatrixLayoutDestroy(q.b);
      cublasLtMatrixLayoutDestroy(q.c);
      cublasLtMatmulDescDestroy(q.op);
    }
    cache.clear();
  }
  return cache.emplace(key, p).first->second;
}

void run(const void* A, const void* B, void* C, int64_t M, int64_t N, int64_t K, bool trans_a, bool trans_b,
         float alpha, float beta, Types t, Strides ld, Batch batch = {}) {
  // C's extent: M rows of stride ld.c, then the batch's further matrices.
  const Operands ops{A, B, (M - 1) * ld.c + N + (batch.count - 1) * batch.c};
  const Plan& p =
      plan_for(M, N, K, trans_a, trans_b, t, alignment_of(A), alignment_of(B), alignment_of(C), ld, batch, ops);
  HEADROOM_LT_CHECK(cublasLtMatmul(lt().handle, p.op, &alpha, B, p.a, A, p.b, &beta, C, p.c, C, p.c, &p.algo,
                                   lt().workspace, kWorkspaceBytes, stream()));
}

bool trivial(void* C, int64_t M, int64_t N, int64_t K, bool accumulate, Types t = kFp32) {
  if (M < 0 || N < 0 || K < 0) fail("cuda matmul: negative size (M = ", M, ", N = ", N, ", K = ", K, ")");
  if (M == 0 || N == 0) return true;
  if (K == 0) {  // an empty sum
    if (!accumulate) zero_async(C, element_bytes(t.out) * M * N);
    return true;
  }
  return false;
}

}  // namespace

void matmul_fp32(const float* A, const float* B, float* C, int64_t M, int64_t N, int64_t K, bool trans_a, bool trans_b,
                 bool accumulate) {
  if (trivial(C, M, N, K, accumulate)) return;
  run(A, B, C, M, N, K, trans_a, trans_b, 1.f, accumulate ? 1.f : 0.f, kFp32, packed(M, N, K, trans_a, trans_b));
}

void matmul_strided(const float* A, int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc, int64_t M,
                    int64_t N, int64_t K, bool trans_a, bool trans_b, float alpha, float beta) {
  check_matmul_strides("cuda", M, N, K, trans_a, trans_b, lda, ldb, ldc);
  if (M == 0 || N == 0) return;
  run(A, B, C, M, N, K, trans_a, trans_b, alpha, beta, kFp32, Strides{lda, ldb, ldc});
}

void matmul_bf16(const float* A, const float* B, float* C, int64_t M, int64_t N, int64_t K, bool trans_a, bool trans_b,
                 bool accumulate) {
  if (trivial(C, M, N, K, accumulate)) return;
  Carver sizes;
  sizes.take<uint16_t>(M * K);
  sizes.take<uint16_t>(K * N);
  Carver parts(scratch(sizes.used()));
  uint16_t* a16 = parts.take<uint16_t>(M * K);
  uint16_t* b16 = parts.take<uint16_t>(K * N);
  round_to_bf16(A, a16, M * K, "matmul(bf16 A)");
  round_to_bf16(B, b16, K * N, "matmul(bf16 B)");
  run(a16, b16, C, M, N, K, trans_a, trans_b, 1.f, accumulate ? 1.f : 0.f, kBf16, packed(M, N, K, trans_a, trans_b));
}

void matmul_bf16_stored(const float* A, const void* B, float* C, int64_t M, int64_t N, int64_t K, bool trans_a,
                        bool trans_b, bool accumulate) {
  if (trivial(C, M, N, K, accumulate)) return;
  auto* a16 = static_cast<uint16_t*>(scratch(sizeof(uint16_t) * M * K));
  round_to_bf16(A, a16, M * K, "matmul(bf16 A)");
  run(a16, static_cast<const uint16_t*>(B), C, M, N, K, trans_a, trans_b, 1.f, accumulate ? 1.f : 0.f, kBf16,
      packed(M, N, K, trans_a, trans_b));
}

void matmul_fp32_stored(const float* A, const void* B, float* C, int64_t M, int64_t N, int64_t K, bool trans_a,
                        bool trans_b, bool accumulate) {
  matmul_fp32(A, static_cast<const float*>(B), C, M, N, K, trans_a, trans_b, accumulate);
}

void matmul_bf16_both_stored(const void* A, const void* B, float* C, int64_t M, int64_t N, int64_t K, bool trans_a,
                             bool trans_b, bool accumulate) {
  if (trivial(C, M, N, K, accumulate)) return;
  run(static_cast<const uint16_t*>(A), static_cast<const uint16_t*>(B), C, M, N, K, trans_a, trans_b, 1.f,
      accumulate ? 1.f : 0.f, kBf16, packed(M, N, K, trans_a, trans_b));
}

void matmul_fp32_both_stored(const void* A, const void* B, float* C, int64_t M, int64_t N, int64_t K, bool trans_a,
                             bool trans_b, bool accumulate) {
  matmul_fp32(static_cast<const float*>(A), static_cast<const float*>(B), C, M, N, K, trans_a, trans_b, accumulate);
}

void matmul_bf16_to_stored(const void* A, const void* B, void* C, int64_t M, int64_t N, int64_t K, bool trans_a,
                           bool trans_b) {
  if (trivial(C, M, N, K, false, kBf16Out)) return;
  run(A, B, C, M, N, K, trans_a, trans_b, 1.f, 0.f, kBf16Out, packed(M, N, K, trans_a, trans_b));
}

void matmul_fp32_to_stored(const void* A, const void* B, void* C, int64_t M, int64_t N, int64_t K, bool trans_a,
                           bool trans_b) {
  matmul_fp32(static_cast<const float*>(A), static_cast<const float*>(B), static_cast<float*>(C), M, N, K, trans_a,
              trans_b, false);
}

void matmul_batched_bf16(Batched<const uint16_t> A, Batched<const uint16_t> B, Batched<float> C, int64_t batch,
                         int64_t M, int64_t N, int64_t K, bool trans_a, bool trans_b, float alpha, float beta) {
  check_matmul_strides("cuda batched", M, N, K, trans_a, trans_b, A.ld, B.ld, C.ld);
  if (batch < 0) fail("cuda matmul_batched_bf16: negative batch ", batch);
  if (batch == 0 || M == 0 || N == 0) return;
  run(A.p, B.p, C.p, M, N, K, trans_a, trans_b, alpha, beta, kBf16, Strides{A.ld, B.ld, C.ld},
      Batch{batch, A.stride, B.stride, C.stride});
}

}  // namespace headroom::kernels::cuda
