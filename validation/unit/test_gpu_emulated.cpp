// The CUDA backend's kernels, compiled from their real sources (kernels/cuda/*.cuh) against the CPU
// emulator (kernels/cuda/emu/emulator.h), checked op by op against the CPU backend with the same
// checks test_gpu_ops runs on a GPU (test_gpu_cases.h). Runs everywhere, GPU or not (label unit).
//
// What it proves: the kernels' indexing, masking, tiling, shared-memory use, reductions, online
// softmax and MMA fragment bookkeeping compute the ops.h contracts. What it cannot: anything about
// the hardware (timing, races the fibers never interleave, register/shared-memory limits), the
// cuBLASLt calls (the emulated GEMM is the CPU's sgemm, on bf16-rounded operands for the bf16
// table), the real memory entries and whether the PTX mma matches the emulated fragment layout.
// Those are test_gpu_ops' job on a GPU. The kernels, GEMMs and copies run on the library
// headroom_kernels_emulated (kernels/cuda/emu/), whose device memory is a guarded arena.
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "cuda/emu/runtime_emu.h"
#include "cuda/mma_fragments.cuh"
#include "cuda/table.h"
#include "test_gpu_cases.h"

namespace headroom::kernels::gputest {

const Ops& emulated(bool bf16) {
  static const Ops t_bf16 = cuda_emu::make_table("emulated-cuda", true);
  static const Ops t_fp32 = cuda_emu::make_table("emulated-cuda-fp32", false);
  return bf16 ? t_bf16 : t_fp32;
}

INSTANTIATE_TEST_SUITE_P(Emulated, GpuOps,
                         ::testing::Values(Table{"bf16", []() -> const Ops& { return emulated(true); }, true, false},
                                           Table{"fp32", []() -> const Ops& { return emulated(false); }, false, false}),
                         table_name);

// train.attention_kernel = auto on a device without cuDNN: the own kernels, bit for bit, and one
// log line per shape saying why.
TEST(EmulatedAttentionChoice, AutoWithoutCudnnRunsTheOwnKernelsAndSaysSo) {
  const Ops automatic = cuda_emu::make_table("emulated-cuda", true, AttentionKernel::kAuto);
  const Ops& flash = emulated(true);
  const int64_t B = 1, T = 40, Hq = 2, Hkv = 1, w = 16, n = B * T * Hq * w, nk = B * T * Hkv * w;
  const auto q = random_floats(n, 1), k = random_floats(nk, 2), v = random_floats(nk, 3), dout = random_floats(n, 4);
  std::vector<std::vector<float>> results;
  std::string log;
  for (const Ops* t : {&automatic, &flash}) {
    Dev<float> Q(*t, q), K(*t, k), V(*t, v), O(*t, n), L(*t, B * Hq * T), DO(*t, dout), DQ(*t, n), DK(*t, nk),
        DV(*t, nk);
    ::testing::internal::CaptureStderr();
    for (int call = 0; call < 2; ++call) {
      t->attention_fwd(Q.get(), K.get(), V.get(), O.get(), L.get(), {B, T, T, 0, Hq, Hkv, w, w, 0}, 0.25f);
      t->attention_bwd(Q.get(), K.get(), V.get(), O.get(), L.get(), DO.get(), DQ.get(), DK.get(), DV.get(),
                       {B, T, T, 0, Hq, Hkv, w, w, 0}, 0.25f);
    }
    log += ::testing::internal::GetCapturedStderr();
    for (const Dev<float>* x : {&O, &L, &DQ, &DK, &DV}) results.push_back(x->download());
  }
  for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ(results[i], results[i + 5]) << "output " << i;
  EXPECT_EQ(log,
            "headroom: attention forward, heads 2/1 (query/KV), widths 16/16 (qk/v), causal: own flash attention: "
            "cuDNN is not part of this build\n"
            "headroom: attention backward, heads 2/1 (query/KV), widths 16/16 (qk/v), causal: own flash attention: "
            "cuDNN is not part of this build\n");
}

// The flash kernels every way they run: the backward with K and V resident in shared memory and the
// query-side tiles double-buffered or single (attention_mma_bwd.cuh), or streamed
// (attention_mma.cuh); the forward pipelined (two stages) or streamed. The table runs the first
// that fits, so each is checked here on every case, against the CPU within the bf16 floor. Widths
// whose resident tiles do not fit (512, 1024) run streamed under every setting.
TEST(EmulatedFlashAttention, PipelinedResidentAndStreamedMatchTheCpu) {
  // What the table picks within the emulated (H100) shared memory: both stages up to d256 (and at
  // 96/160, padded to 128/192), one at 320 and at 512/128 or 128/512, the streamed kernel past that.
  const auto stages = [](int64_t dqk, int64_t dv) { return cuda_emu::attention_bwd_resident_stages(dqk, dv, 2); };
  EXPECT_EQ(stages(64, 64), 2);
  EXPECT_EQ(stages(128, 128), 2);
  EXPECT_EQ(stages(96, 160), 2);
  EXPECT_EQ(stages(256, 256), 2);
  EXPECT_EQ(stages(320, 320), 1);
  EXPECT_EQ(stages(512, 128), 1);
  EXPECT_EQ(stages(128, 512), 1);
  EXPECT_EQ(stages(512, 512), 0);
  EXPECT_EQ(stages(1024, 1024), 0);
  const Ops& d = emulated(true);
  // Plus unequal widths of two slices, the second with dV columns and no dK ones, and GQA.
  std::vector<AttnCase> cases = attention_cases(false);
  cases.push_back({1, 70, 70, 0, 4, 2, 96, 160, 0});
  for (const int stages : {0, 1, 2}) {
    const AttentionCalls calls{[stages](auto... a) { cuda_emu::attention_fwd_bf16_with(a..., stages); },
                               [stages](auto... a) { cuda_emu::attention_bwd_bf16_with(a..., stages); }};
    check_attention_cases(d, calls, true, cases, "flash, stages " + std::to_string(stages));
  }
}

// Split-key decoding and the decoding cache read in place (test_gpu_cases.h).
TEST(EmulatedFlashAttention, SplitKeyForwardMatchesTheCpu) {
  check_split_forward(
      emulated(true),
      {cuda_emu::attention_fwd_bf16_with, cuda_emu::attention_bwd_bf16_with, cuda_emu::attention_decode_splits},
      attention_cases(false));
}

// The pipelined forward computes what the streamed one does, in the same order: the same bits.
TEST(EmulatedFlashAttention, PipelinedForwardIsTheStreamedOneBitForBit) {
  const Ops& d = emulated(true);
  for (const AttnCase& c : attention_cases(false)) {
    SCOPED_TRACE(describe(c));
    const std::vector<int32_t> docs = c.doc_start();
    const Dev<int32_t> Docs(d, docs);
    const Dev<float> Q(d, random_floats(c.B * c.T * c.Hq * c.dqk, 51, -2.f, 2.f)),
        K(d, random_floats(c.B * c.Tk * c.Hkv * c.dqk, 52, -2.f, 2.f)),
        V(d, random_floats(c.B * c.Tk * c.Hkv * c.dv, 53));
    std::vector<std::vector<float>> got;
    for (const int stages : {0, 2}) {
      Dev<float> O(d, c.B * c.T * c.Hq * c.dv), L(d, c.B * c.Hq * c.T);
      cuda_emu::attention_fwd_bf16_with(Q.get(), K.get(), V.get(), O.get(), L.get(), c.shape(Docs.get()),
                                        1.f / std::sqrt(static_cast<float>(c.dqk)), stages);
      got.push_back(O.download());
      got.push_back(L.download());
    }
    EXPECT_EQ(got[0], got[2]);
    EXPECT_EQ(got[1], got[3]);
  }
}

// The emulator lands a cp.async copy only at the wait that retires its group, so a kernel that reads
// before waiting sees shared memory as it was (0xFF filling): a missing wait fails a test here as it
// would fail on a GPU.
namespace {
__global__ void read_copy(const float* src, float* before, float* after) {
  HR_DYNAMIC_SMEM(float, tile);
  cuda_emu::copy_async16(tile + 4 * threadIdx.x, src + 4 * threadIdx.x);
  cuda_emu::commit_async();
  before[threadIdx.x] = tile[4 * threadIdx.x];
  cuda_emu::wait_async<0>();
  __syncthreads();
  after[threadIdx.x] = tile[4 * ((threadIdx.x + 1) % 32)];  // another thread's copy
}
}  // namespace

TEST(EmulatedDevice, AsyncCopiesLandAtTheirWait) {
  const Ops& ops = emulated(false);
  std::vector<float> src(128);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i);
  Dev<float> S(ops, src), before(ops, 32), after(ops, 32);
  cuda_emu::launch("read_copy", read_copy, dim3(1), dim3(32), 128 * sizeof(float), static_cast<const float*>(S.get()),
                   before.get(), after.get());
  for (const float x : before.download()) EXPECT_TRUE(std::isnan(x)) << "a copy landed before its wait";
  const std::vector<float> got = after.download();
  for (int t = 0; t < 32; ++t) EXPECT_EQ(got[t], static_cast<float>(4 * ((t + 1) % 32)));
}

// The flash kernels' fragment loads (ldmatrix, attention_mma.cuh) deliver the operands in the
// mma.m16n8k16 layout (emu/emulator.h): A rows g and g + 8, columns 2t.. and 2t + 8..; B column g,
// rows 2t.. and 2t + 8.. — read here element by element from a tile holding each element's own
// coordinates, for A, for B stored [n][k] and for B stored [k][n] (transposed by the load).
namespace {
constexpr int kLd = cuda_emu::mma::kLdS;
__global__ void fragments(uint32_t* got) {
  HR_DYNAMIC_SMEM(uint16_t, tile);  // [32][kLd]: element (r, c) holds r · 64 + c
  for (int i = threadIdx.x; i < 32 * kLd; i += 32) tile[i] = static_cast<uint16_t>((i / kLd) * 64 + i % kLd);
  __syncthreads();
  uint32_t a[4], nk[2], kn[2];
  cuda_emu::mma::load_a(a, tile, 16, 32);                               // rows 16.., columns 32..
  cuda_emu::mma::load_b<cuda_emu::mma::BLayout::kNK>(nk, tile, 8, 16);  // n 8.., k 16..
  cuda_emu::mma::load_b<cuda_emu::mma::BLayout::kKN>(kn, tile, 24, 8);  // n 24.., k 8..
  uint32_t* mine = got + threadIdx.x * 8;
  for (int i = 0; i < 4; ++i) mine[i] = a[i];
  for (int i = 0; i < 2; ++i) {
    mine[4 + i] = nk[i];
    mine[6 + i] = kn[i];
  }
}
uint32_t pair(int r0, int c0, int r1, int c1) {
  return static_cast<uint32_t>(r0 * 64 + c0) | (static_cast<uint32_t>(r1 * 64 + c1) << 16);
}
}  // namespace

TEST(EmulatedDevice, FragmentLoadsGiveTheMmaLayout) {
  const Ops& ops = emulated(false);
  Dev<uint32_t> got(ops, 32 * 8);
  cuda_emu::launch("fragments", fragments, dim3(1), dim3(32), 32 * kLd * sizeof(uint16_t), got.get());
  const std::vector<uint32_t> g = got.download();
  for (int lane = 0; lane < 32; ++lane) {
    SCOPED_TRACE("lane " + std::to_string(lane));
    const int q = lane / 4, t = lane % 4;
    const uint32_t* x = g.data() + lane * 8;
    // A (16×16) at rows 16.., columns 32..: (row, k) is tile (16 + row, 32 + k).
    EXPECT_EQ(x[0], pair(16 + q, 32 + 2 * t, 16 + q, 33 + 2 * t));
    EXPECT_EQ(x[1], pair(24 + q, 32 + 2 * t, 24 + q, 33 + 2 * t));
    EXPECT_EQ(x[2], pair(16 + q, 40 + 2 * t, 16 + q, 41 + 2 * t));
    EXPECT_EQ(x[3], pair(24 + q, 40 + 2 * t, 24 + q, 41 + 2 * t));
    // B (16×8) stored [n][k], n 8.., k 16..: (k, n) is tile (8 + n, 16 + k).
    EXPECT_EQ(x[4], pair(8 + q, 16 + 2 * t, 8 + q, 17 + 2 * t));
    EXPECT_EQ(x[5], pair(8 + q, 24 + 2 * t, 8 + q, 25 + 2 * t));
    // B stored [k][n], n 24.., k 8..: (k, n) is tile (8 + k, 24 + n).
    EXPECT_EQ(x[6], pair(8 + 2 * t, 24 + q, 9 + 2 * t, 24 + q));
    EXPECT_EQ(x[7], pair(16 + 2 * t, 24 + q, 17 + 2 * t, 24 + q));
  }
}

// The emulated GPU's memory guard (kernels/cuda/emu/device_arena.h): a host buffer handed to a
// GEMM, a kernel or a copy's device side stops the call with a message naming it; a host read of
// device memory kills the process with one naming the address.
std::string error_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(EmulatedDevice, HostPointerIntoTheGemmNamesTheCall) {
  const Ops& ops = emulated(true);
  std::vector<float> host(16, 1.f);
  Dev<float> b(ops, 16), c(ops, 16);
  const std::string msg = error_of([&] { ops.matmul(host.data(), b.get(), c.get(), 4, 4, 4, false, false, false); });
  EXPECT_NE(msg.find("cublasLtMatmul (matmul_bf16)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("operand A"), std::string::npos) << msg;
  EXPECT_NE(msg.find("host pointer"), std::string::npos) << msg;
  const std::string strided = error_of(
      [&] { emulated(false).matmul_strided(b.get(), 4, b.get(), 4, host.data(), 4, 4, 4, 4, false, false, 1.f, 0.f); });
  EXPECT_NE(strided.find("matmul_strided"), std::string::npos) << strided;
  EXPECT_NE(strided.find("output C"), std::string::npos) << strided;
}

TEST(EmulatedDevice, HostPointerIntoAKernelNamesTheLaunch) {
  const Ops& ops = emulated(false);
  std::vector<float> host(16, 1.f);
  Dev<float> x(ops, 16);
  const std::string msg = error_of([&] { ops.axpy(x.get(), host.data(), 2.f, 16); });
  EXPECT_NE(msg.find("emulated launch of axpy"), std::string::npos) << msg;
  EXPECT_NE(msg.find("host pointer"), std::string::npos) << msg;
  EXPECT_EQ(error_of([&] { ops.axpy(x.get(), x.get(), 2.f, 16); }), "(no error)");
}

TEST(EmulatedDevice, CopiesCheckWhichSideIsWhich) {
  const Ops& ops = emulated(false);
  std::vector<float> host(16, 1.f);
  Dev<float> x(ops, 16), y(ops, 16);
  EXPECT_NE(error_of([&] { ops.copy_to_host(y.get(), x.get(), 64); }).find("copy_to_host: the destination"),
            std::string::npos);
  EXPECT_NE(error_of([&] { ops.copy_from_host(x.get(), y.get(), 64); }).find("copy_from_host: the source"),
            std::string::npos);
  EXPECT_NE(error_of([&] { ops.copy_from_host(host.data(), host.data(), 64); }).find("host pointer"),
            std::string::npos);
  EXPECT_NE(error_of([&] { ops.free(host.data()); }).find("a host pointer"), std::string::npos);
  EXPECT_NE(error_of([&] { ops.copy(x.get(), host.data(), 64); }).find("copy: the source"), std::string::npos);
  ops.copy_from_host(x.get(), host.data(), 64);  // the right way round works
  std::vector<float> back(16, 0.f);
  ops.copy_to_host(back.data(), x.get(), 64);
  EXPECT_EQ(back, host);
}

TEST(EmulatedDeviceDeathTest, HostReadOfDeviceMemoryStopsTheRun) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const Ops& ops = emulated(false);
  auto* p = static_cast<float*>(ops.alloc(64 * sizeof(float)));
  EXPECT_DEATH({ [[maybe_unused]] volatile float v = p[3]; },
               "the host read or wrote device memory at .*12 bytes into a device allocation of 256 bytes");
  ops.free(p);
}

}  // namespace headroom::kernels::gputest
