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

void fwd16(const float* q, const float* k, const float* v, float* o, float* l, const AttentionShape& s, float scale) {
  cuda_emu::attention_fwd_blocked_with(q, k, v, o, l, s, scale, kBlock);
}
void bwd16(const float* q, const float* k, const float* v, const float* o, const float* l, const float* dout, float* dq,
           float* dk, float* dv, const AttentionShape& s, float scale) {
  cuda_emu::attention_bwd_blocked_with(q, k, v, o, l, dout, dq, dk, dv, s, scale, kBlock);
}

TEST(BlockedAttention, MatchesTheCpuWithinTheBf16Floor) {
  const Ops& d = emulated_bf16();
  const Ops& cpu = cpu_ops();
  for (const AttnCase& c : blocked_cases()) {
    SCOPED_TRACE(describe(c));
    const float scale = 1.f / std::sqrt(static_cast<float>(c.dqk));
    const auto q = random_floats(c.B * c.T * c.Hq * c.dqk, 31, -2.f, 2.f);
    const auto k = random_floats(c.B * c.Tk * c.Hkv * c.dqk, 32, -2.f, 2.f);
    const auto v = random_floats(c.B * c.Tk * c.Hkv * c.dv, 33);
    const auto dout = random_floats(c.B * c.T * c.Hq * c.dv, 34);
    const std::vector<int32_t> docs = c.doc_start();
    const Dev<int32_t> Docs(d, docs);
    const AttentionShape host = c.shape(docs.data()), device = c.shape(Docs.get());
    std::vector<float> out(c.B * c.T * c.Hq * c.dv), lse(c.B * c.Hq * c.T), dq(q.size()), dk(k.size()), dv(v.size());
    cpu.attention_fwd(q.data(), k.data(), v.data(), out.data(), lse.data(), host, scale);
    cpu.attention_bwd(q.data(), k.data(), v.data(), out.data(), lse.data(), dout.data(), dq.data(), dk.data(),
                      dv.data(), host, scale);
    const auto floor = noise_floors(true, {q, k, v, dout}, [&](const auto& ops, const auto& in) {
      using T = typename std::decay_t<decltype(in)>::value_type::value_type;
      std::vector<T> o(out.size()), l(lse.size()), gq(q.size()), gk(k.size()), gv(v.size());
      ops.attention_fwd(in[0].data(), in[1].data(), in[2].data(), o.data(), l.data(), host, static_cast<T>(scale));
      ops.attention_bwd(in[0].data(), in[1].data(), in[2].data(), o.data(), l.data(), in[3].data(), gq.data(),
                        gk.data(), gv.data(), host, static_cast<T>(scale));
      return std::vector{o, l, gq, gk, gv};
    });
    Dev<float> Q(d, q), K(d, k), V(d, v), O(d, out.size()), L(d, lse.size()), DO(d, dout), DQ(d, dq.size()),
        DK(d, dk.size()), DV(d, dv.size());
    O.poison();
    L.poison();
    fwd16(Q.get(), K.get(), V.get(), O.get(), L.get(), device, scale);
    const std::string what = "blocked(16) " + describe(c);
    EXPECT_TRUE(close_to_floor(O.download(), out, floor[0], "attention_fwd out " + what));
    EXPECT_TRUE(close_to_floor(L.download(), lse, floor[1], "attention_fwd lse " + what));
    // The backward gets the reference forward's out and lse: its own error is measured alone.
    O.upload(out);
    L.upload(lse);
    DQ.poison();
    DK.poison();
    DV.poison();
    bwd16(Q.get(), K.get(), V.get(), O.get(), L.get(), DO.get(), DQ.get(), DK.get(), DV.get(), device, scale);
    EXPECT_TRUE(close_to_floor(DQ.download(), dq, floor[2], "attention_bwd dq " + what));
    EXPECT_TRUE(close_to_floor(DK.download(), dk, floor[3], "attention_bwd dk " + what));
    EXPECT_TRUE(close_to_floor(DV.download(), dv, floor[4], "attention_bwd dv " + what));
  }
}

// test_gpu_ops' attention cases (test_gpu_cases.h) on the blocked table at its default block size
// (one block at these lengths): the same cases the flash kernels and cuDNN are held to.
TEST(BlockedAttention, TheOpTestsAttentionCases) { check_attention(emulated_bf16(), true, false, "bf16_blocked"); }

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

}  // namespace
}  // namespace headroom::kernels::gputest
