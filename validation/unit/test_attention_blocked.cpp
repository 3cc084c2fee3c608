// The blocked attention on cuBLASLt (kernels/cuda/attention_blocked.cuh), its kernels compiled for
// the CPU emulator and its GEMMs on the emulated cuBLASLt (sgemm on bf16 operands), against the CPU
// backend's attention: forward and backward for every shape it is chosen for (widths 320, 512,
// 1024, query-key width ≠ value width both ways, GQA, causal, sliding windows, document masks,
// sequences that end inside a block), within 10× the bf16 noise floor measured on the same inputs
// (test_gpu_cases.h). Blocks of 16 queries, so these short sequences span 2–4 blocks and the key
// ranges of the causal mask and the window differ from block to block.
#include <string>
#include <vector>

#include "cuda/attention_blocks.h"
#include "cuda/emu/runtime_emu.h"
#include "cuda/table.h"
#include "test_gpu_cases.h"

namespace headroom::kernels::gputest {

// test_gpu_cases.h's per-table suite runs in test_gpu_emulated and test_gpu_ops, not here.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(GpuOps);

namespace {

constexpr int64_t kBlock = 16;

const Ops& emulated_bf16() {
  static const Ops t = cuda_emu::make_table("emulated-cuda-blocked", true, AttentionKernel::kBlocked);
  return t;
}

std::vector<AttnCase> blocked_cases() {
  return {
      {1, 45, 45, 0, 4, 2, 320, 320, 0},               // GQA 2:1, causal, 45 = 2 blocks + 13
      {2, 37, 37, 0, 2, 1, 512, 128, 9},               // k512-v128, window, two batch rows
      {1, 40, 40, 0, 2, 2, 128, 512, 0, {7, 20, 21}},  // k128-v512, documents (one of one token)
      {1, 33, 33, 0, 1, 1, 1024, 1024, 20},            // the widest heads, a window wider than a block
      {1, 50, 50, 0, 4, 1, 512, 512, 16, {10, 30}},    // GQA 4:1, window and documents
      {2, 20, 20, 0, 2, 1, 36, 20, 0},                 // widths that need padding to 8
      {1, 20, 60, 40, 2, 2, 64, 64, 0},                // queries after a prefix (train.attention_kernel = blocked)
      {1, 8, 10, 20, 1, 1, 32, 32, 5},                 // no query sees a key: out 0, lse -inf, no gradients
  };
}

TEST(BlockedAttention, MatchesTheCpuWithinTheBf16Floor) {
  const AttentionCalls blocks_of_16{
      [](auto... a) { cuda_emu::attention_fwd_blocked_with(a..., kBlock); },
      [](auto... a) { cuda_emu::attention_bwd_blocked_with(a..., kBlock); },
  };
  check_attention_cases(emulated_bf16(), blocks_of_16, true, blocked_cases(), "blocked(16)");
}

// test_gpu_ops' attention cases (test_gpu_cases.h) on the blocked table at its default block size
// (one block at these lengths): the same cases the flash kernels and cuDNN are held to.
TEST(BlockedAttention, TheOpTestsAttentionCases) { check_attention(emulated_bf16(), true, false, "bf16_blocked"); }

// The table's entries on Q, K, V and the output in bf16 (what training keeps: attention_*_cached),
// on every shape above, against the CPU within the same floor.
TEST(BlockedAttention, OnStoredOperandsMatchesTheCpuWithinTheBf16Floor) {
  const Ops& d = emulated_bf16();
  check_attention_cases(d, operand_calls(d), true, blocked_cases(), "bf16_blocked on stored operands");
}

// train.attention_kernel = auto sends heads wider than 256 to the blocked path even without cuDNN,
// runs exactly its kernels, and says so once per shape.
TEST(BlockedAttention, AutoChoosesItAbove256AndSaysSo) {
  const Ops automatic = cuda_emu::make_table("emulated-cuda", true, AttentionKernel::kAuto);
  const Ops& blocked = emulated_bf16();
  const int64_t B = 1, T = 20, Hq = 2, Hkv = 1, w = 320, n = B * T * Hq * w, nk = B * T * Hkv * w;
  const AttentionShape shape{B, T, T, 0, Hq, Hkv, w, w, 0};
  const auto q = random_floats(n, 1), k = random_floats(nk, 2), v = random_floats(nk, 3), dout = random_floats(n, 4);
  std::vector<std::vector<float>> results;
  std::string log;
  for (const Ops* t : {&automatic, &blocked}) {
    Dev<float> Q(*t, q), K(*t, k), V(*t, v), O(*t, n), L(*t, B * Hq * T), DO(*t, dout), DQ(*t, n), DK(*t, nk),
        DV(*t, nk);
    ::testing::internal::CaptureStderr();
    for (int call = 0; call < 2; ++call) {
      t->attention_fwd(Q.get(), K.get(), V.get(), O.get(), L.get(), shape, 0.25f);
      t->attention_bwd(Q.get(), K.get(), V.get(), O.get(), L.get(), DO.get(), DQ.get(), DK.get(), DV.get(), shape,
                       0.25f);
    }
    log += ::testing::internal::GetCapturedStderr();
    for (const Dev<float>* x : {&O, &L, &DQ, &DK, &DV}) results.push_back(x->download());
  }
  for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ(results[i], results[i + 5]) << "output " << i;
  EXPECT_EQ(log,
            "headroom: attention forward, heads 2/1 (query/KV), widths 320/320 (qk/v), causal: blocked attention on "
            "cuBLASLt: head widths 320/320 exceed 256, the widest cuDNN's fused attention takes\n"
            "headroom: attention backward, heads 2/1 (query/KV), widths 320/320 (qk/v), causal: blocked attention on "
            "cuBLASLt: head widths 320/320 exceed 256, the widest cuDNN's fused attention takes\n");
}

// A prefill chunk or a context-parallel segment of wide heads (queries after earlier positions) goes
// to the blocked path under auto, a decoding step to the flash kernels: auto's outputs equal those
// of the table that always takes that path, bit for bit.
TEST(BlockedAttention, AutoTakesWideChunksAfterAPrefixAndLeavesDecodingToFlash) {
  const Ops automatic = cuda_emu::make_table("emulated-cuda", true, AttentionKernel::kAuto);
  const Ops flash = cuda_emu::make_table("emulated-cuda-flash", true, AttentionKernel::kFlash);
  const int64_t Hq = 2, Hkv = 1, w = 320, Tk = 96;
  for (const int64_t Tq : {cuda::kMinBlockedQueries, int64_t{1}}) {
    const AttentionShape shape{1, Tq, Tk, Tk - Tq, Hq, Hkv, w, w, 0};
    const int64_t n = Tq * Hq * w, nk = Tk * Hkv * w;
    const auto q = random_floats(n, 5), k = random_floats(nk, 6), v = random_floats(nk, 7), dout = random_floats(n, 8);
    std::vector<std::vector<float>> results;
    for (const Ops* t : {&automatic, Tq > 1 ? &emulated_bf16() : &flash}) {
      Dev<float> Q(*t, q), K(*t, k), V(*t, v), O(*t, n), L(*t, Hq * Tq), DO(*t, dout), DQ(*t, n), DK(*t, nk),
          DV(*t, nk);
      t->attention_fwd(Q.get(), K.get(), V.get(), O.get(), L.get(), shape, 0.125f);
      t->attention_bwd(Q.get(), K.get(), V.get(), O.get(), L.get(), DO.get(), DQ.get(), DK.get(), DV.get(), shape,
                       0.125f);
      for (const Dev<float>* x : {&O, &L, &DQ, &DK, &DV}) results.push_back(x->download());
    }
    for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ(results[i], results[i + 5]) << "Tq " << Tq << ", output " << i;
  }
}

}  // namespace
}  // namespace headroom::kernels::gputest
