// The rules that send an attention call to cuDNN's fused attention, the blocked attention on
// cuBLASLt or the own flash kernels (kernels/cuda/attention_choice.h): plain logic, tested without a
// GPU.
#include "cuda/attention_choice.h"
#include "cuda/attention_blocks.h"

#include <gtest/gtest.h>

#include <utility>

namespace headroom::kernels::cuda {
namespace {

constexpr CudnnSupport kHopper{90, 91900};
constexpr CudnnSupport kAmpere{80, 91900};

// A training call: 2 sequences of 512 tokens, 8 query heads on 8 KV heads, widths 64/64.
AttentionCall training(int64_t dqk = 64, int64_t dv = 64, bool backward = false) {
  return {{2, 512, 512, 0, 8, 8, dqk, dv, 0}, backward};
}

bool cudnn(const AttentionCall& c, const CudnnSupport& s) {
  return choose_attention(c, s).path == AttentionPath::kCudnn;
}
AttentionPath path(const AttentionCall& c, const CudnnSupport& s) { return choose_attention(c, s).path; }

TEST(AttentionChoice, TrainingShapesGoToCudnnOnHopperAndAmpere) {
  for (const CudnnSupport& s : {kHopper, kAmpere})
    for (bool backward : {false, true}) {
      EXPECT_TRUE(cudnn(training(64, 64, backward), s)) << s.sm << " " << backward;
      EXPECT_TRUE(cudnn(training(128, 128, backward), s)) << s.sm << " " << backward;
    }
  EXPECT_EQ(choose_attention(training(), kHopper).reason, "cuDNN 9.19.0 fused attention (sm_90)");
}

TEST(AttentionChoice, GqaAndSlidingWindowsGoToCudnn) {
  AttentionCall c = training();
  c.Hkv = 2;
  EXPECT_TRUE(cudnn(c, kHopper));
  c.window = 128;
  EXPECT_TRUE(cudnn(c, kHopper));
  c.backward = true;
  EXPECT_TRUE(cudnn(c, kHopper));
}

TEST(AttentionChoice, WidthLimitsDependOnTheArchitectureAndPass) {
  EXPECT_TRUE(cudnn(training(256, 256, false), kHopper));
  EXPECT_TRUE(cudnn(training(256, 256, true), kHopper));
  EXPECT_TRUE(cudnn(training(256, 256, false), kAmpere));
  // Ampere's backward pass stops at 128.
  EXPECT_FALSE(cudnn(training(256, 256, true), kAmpere));
  EXPECT_NE(choose_attention(training(256, 256, true), kAmpere)
                .reason.find("exceed cuDNN's 128 for the backward pass on sm_80"),
            std::string::npos);
  EXPECT_EQ(path(training(256, 256, true), kAmpere), AttentionPath::kBlocked);
  // Wider than 256: the blocked attention on cuBLASLt, both passes, any width.
  const AttentionChoice wide = choose_attention(training(512, 512), kHopper);
  EXPECT_EQ(wide.path, AttentionPath::kBlocked);
  EXPECT_EQ(wide.reason,
            "blocked attention on cuBLASLt: head widths 512/512 exceed 256, the widest cuDNN's fused attention takes");
  for (const CudnnSupport& s : {kHopper, kAmpere})
    for (bool backward : {false, true})
      for (const auto& [dqk, dv] : {std::pair{320, 320}, {1024, 1024}, {264, 264}, {512, 128}, {128, 512}, {300, 64}})
        EXPECT_EQ(path(training(dqk, dv, backward), s), AttentionPath::kBlocked) << dqk << "/" << dv;
  EXPECT_EQ(path(training(60, 60), kHopper), AttentionPath::kFlash);  // not a multiple of 8
}

TEST(AttentionChoice, WideHeadsNeedNoCudnn) {
  // The blocked path runs on cuBLASLt alone: a build without cuDNN still takes it above 256.
  EXPECT_EQ(path(training(512, 512), {90, 0}), AttentionPath::kBlocked);
  EXPECT_EQ(path(training(512, 128, true), {90, 80907}), AttentionPath::kBlocked);
  // ... and with a document mask, which it applies element-wise.
  const int32_t starts[1] = {0};
  AttentionCall masked = training(512, 512, true);
  masked.doc_start = starts;
  EXPECT_EQ(path(masked, kHopper), AttentionPath::kBlocked);
  // Up to 256 without cuDNN: the own flash kernels, as before.
  EXPECT_EQ(path(training(128, 64), {90, 0}), AttentionPath::kFlash);
}

TEST(AttentionChoice, AsymmetricWidthsOnlyWhereCudnnDocumentsThem) {
  EXPECT_TRUE(cudnn(training(192, 128), kHopper));
  EXPECT_TRUE(cudnn(training(192, 128, true), kHopper));
  EXPECT_FALSE(cudnn(training(192, 128), kAmpere));
  EXPECT_EQ(path(training(192, 128), kAmpere), AttentionPath::kBlocked);
  EXPECT_EQ(path(training(128, 64), kHopper), AttentionPath::kBlocked);  // the first study's QK-over-V variants
  EXPECT_EQ(path(training(64, 128, true), kHopper), AttentionPath::kBlocked);
  EXPECT_EQ(choose_attention(training(128, 64), kHopper).reason,
            "blocked attention on cuBLASLt: query-key width 128 differs from value width 64 (cuDNN documents only "
            "192/128)");
}

TEST(AttentionChoice, QueriesAfterACachedPrefixGoToFlashUnlessWideAndMany) {
  AttentionCall decode = training();
  decode.Tq = 1;
  decode.q_pos0 = 511;
  EXPECT_FALSE(cudnn(decode, kHopper));
  AttentionCall chunk = training();
  chunk.Tq = 128;
  chunk.Tk = 640;
  chunk.q_pos0 = 512;
  EXPECT_FALSE(cudnn(chunk, kHopper));
  EXPECT_NE(choose_attention(chunk, kHopper).reason.find("q_pos0 = 512"), std::string::npos);
  AttentionCall segment = chunk;  // a context-parallel rank's second chunk, k512-v128 heads
  segment.dqk = 512;
  segment.dv = 128;
  EXPECT_EQ(choose_attention(segment, kHopper).reason,
            "blocked attention on cuBLASLt: head widths 512/128 exceed 256, 128 queries after 512 positions");
  // Decoding stays on flash attention at every width: one pass over a long cache. A chunk of 64
  // queries or more (a prefill chunk, a context-parallel segment) with heads wider than 256 goes to
  // the blocked GEMMs, with or without cuDNN; narrower heads stay on flash.
  for (const int64_t d : {64, 256, 512, 1024}) {
    AttentionCall wide = chunk;
    wide.dqk = wide.dv = d;
    EXPECT_EQ(path(wide, kHopper), d > 256 ? AttentionPath::kBlocked : AttentionPath::kFlash) << d;
    EXPECT_EQ(path(wide, {90, 0}), d > 256 ? AttentionPath::kBlocked : AttentionPath::kFlash) << d;
    wide.Tq = kMinBlockedQueries - 1;
    wide.Tk = wide.q_pos0 + wide.Tq;
    EXPECT_EQ(path(wide, kHopper), AttentionPath::kFlash) << d;
    decode.dqk = decode.dv = d;
    EXPECT_EQ(path(decode, {90, 0}), AttentionPath::kFlash) << d;
  }
}

TEST(AttentionChoice, DocumentMasksStayOnTheOwnKernels) {
  const int32_t starts[1] = {0};  // never read: the choice looks only at whether there is a mask
  AttentionCall masked = training();
  masked.doc_start = starts;
  EXPECT_FALSE(cudnn(masked, kHopper));
  EXPECT_NE(choose_attention(masked, kHopper).reason.find("document mask"), std::string::npos);
  EXPECT_EQ(decision_key(masked), "forward, heads 8/8 (query/KV), widths 64/64 (qk/v), causal, document mask");
}

TEST(AttentionChoice, NoCudnnOldCudnnOrOldGpuMeansTheOwnKernels) {
  EXPECT_EQ(choose_attention(training(), {90, 0}).reason, "own flash attention: cuDNN is not part of this build");
  EXPECT_EQ(choose_attention(training(), {90, 80907}).reason, "own flash attention: cuDNN 8.9.7 is older than 9.0.0");
  EXPECT_EQ(choose_attention(training(), {75, 91900}).reason,
            "own flash attention: cuDNN's fused attention needs sm_80 or newer, this GPU is sm_75");
  AttentionCall empty = training();
  empty.B = 0;
  EXPECT_FALSE(cudnn(empty, kHopper));
}

TEST(AttentionChoice, OneLogLinePerDecisionNotPerSequenceLength) {
  AttentionCall a = training(), b = training();
  b.B = 7;
  b.Tq = b.Tk = 1000;
  EXPECT_EQ(decision_key(a), decision_key(b));
  EXPECT_EQ(decision_key(a), "forward, heads 8/8 (query/KV), widths 64/64 (qk/v), causal");
  AttentionCall w = a;
  w.window = 128;
  EXPECT_NE(decision_key(a), decision_key(w));
  AttentionCall back = a;
  back.backward = true;
  EXPECT_NE(decision_key(a), decision_key(back));
  AttentionCall prefix = a;
  prefix.q_pos0 = 3;
  prefix.Tk = a.Tq + 3;
  EXPECT_EQ(decision_key(prefix), "forward, heads 8/8 (query/KV), widths 64/64 (qk/v), causal, after a cached prefix");
}

// The blocked attention's geometry (attention_blocks.h): the keys each block's GEMMs cover, the
// score rows' stride, and the workspace the kernels carve and the memory plan counts.
TEST(AttentionBlocks, KeyRangesFollowTheCausalMaskAndTheWindow) {
  const AttentionShape causal{1, 100, 100, 0, 4, 2, 512, 128, 0};
  EXPECT_EQ(block_keys(causal, 0, 16).begin, 0);
  EXPECT_EQ(block_keys(causal, 0, 16).end, 16);  // the upper triangle beyond the block: never computed
  EXPECT_EQ(block_keys(causal, 32, 48).end, 48);
  EXPECT_EQ(block_keys(causal, 96, 100).size(), 100);
  EXPECT_EQ(score_stride(causal, 16), 104);  // the last block's 100 keys, rounded up to 8
  AttentionShape window = causal;
  window.window = 20;  // query 32 sees keys 13..32: the block's first query bounds its range below
  EXPECT_EQ(block_keys(window, 32, 48).begin, 13);
  EXPECT_EQ(block_keys(window, 32, 48).size(), 16 + 20 - 1);
  EXPECT_EQ(score_stride(window, 16), 40);
  // Queries after a prefix see it whole; a block past every key sees nothing.
  const AttentionShape prefix{1, 20, 60, 40, 2, 2, 64, 64, 0};
  EXPECT_EQ(block_keys(prefix, 0, 16).size(), 56);
  EXPECT_EQ(block_keys(prefix, 16, 20).size(), 60);
  const AttentionShape none{1, 8, 10, 20, 1, 1, 32, 32, 5};
  EXPECT_EQ(block_keys(none, 0, 8).size(), 0);
}

TEST(AttentionBlocks, TheWorkspaceIsTheSumOfItsAlignedParts) {
  EXPECT_EQ(packed_width(36), 40);
  EXPECT_EQ(packed_width(512), 512);
  const AttentionShape s{2, 100, 100, 0, 4, 2, 36, 20, 0};
  const BlockedWorkspace f = blocked_workspace(s, 16, false), b = blocked_workspace(s, 16, true);
  EXPECT_EQ(f.q, 2 * 100 * 4 * 40);
  EXPECT_EQ(f.k, 2 * 100 * 2 * 40);
  EXPECT_EQ(f.v, 2 * 100 * 2 * 24);
  EXPECT_EQ(f.scores, 2 * 4 * 16 * 104);  // every query head's 16 rows of the widest block
  EXPECT_EQ(f.rows, 2 * 4 * 16 * 24);     // the forward's block of O
  EXPECT_EQ(f.dout + f.dk + f.dv + f.D, 0);
  EXPECT_EQ(b.rows, 2 * 4 * 16 * 40);  // the backward's block of dQ
  EXPECT_EQ(b.dk, b.k);
  EXPECT_EQ(b.D, 2 * 4 * 100);
  const auto aligned = [](int64_t bytes) { return (bytes + 255) / 256 * 256; };
  EXPECT_EQ(blocked_workspace_bytes(s, 16, false), aligned(2 * f.q) + aligned(2 * f.k) + aligned(2 * f.v) +
                                                       aligned(4 * f.scores) + aligned(2 * f.probs) +
                                                       aligned(4 * f.rows));
  // A block longer than the sequence costs what the sequence does.
  EXPECT_EQ(blocked_workspace_bytes(s, 256, true), blocked_workspace_bytes(s, 112, true));
}

}  // namespace
}  // namespace headroom::kernels::cuda
