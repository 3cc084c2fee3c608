// Model FLOPs and the peak they are measured against.
//
// FLOPs per trained token = 6·N + 6·L·n_heads·(dqk + dv)·k̄, where N counts every parameter but
// the input embedding, and the LM head's vocab·d_model whether or not it is tied, L the layers and
// k̄ the mean number of keys a query sees: (T+1)/2 on a causal full layer, about min(window,
// (T+1)/2) on a sliding one, averaged over layers. 6·N is the forward (2) and backward (4) of every weight; the attention term is the
// score and value products (2·(dqk + dv) per head and key forward, ×3 with the backward; the
// backward's recomputation of P is not counted). For dqk = dv = d_attn / n_heads on full layers
// this is PaLM's causal 6·N + 6·L·T·d_attn. The one formula for the trainer's MFU and the
// benchmark's (bench/bench_train_step.cpp).
#pragma once

#include "config/config.h"
#include "ops.h"

#include <string>

namespace headroom::train {

double flops_per_token(const config::ModelConfig& m, long seq_len);

// The LM head's share of flops_per_token, 6·vocab·d_model. The head runs only on rows with a
// target (model/forward.cpp), so a step's model FLOPs are tokens·(flops_per_token − this) +
// targets·this: a window with an answer-only loss does less work, and MFU says so.
double head_flops_per_row(const config::ModelConfig& m);

// Key positions one query sees, summed over the layers and averaged over the seq_len queries of a
// causal sequence (a sliding layer sees at most `window`).
double keys_per_query(const config::ModelConfig& m, long seq_len);
// The attention's forward FLOPs over one causal sequence: 2·n_heads·(dqk + dv) per visible
// (query, key) pair; the training formula above counts it three times (forward and backward).
double attention_forward_flops(const config::ModelConfig& m, long seq_len);

// The backend's single-precision GEMM rate in FLOP/s on one representative product, best of a few
// repetitions: the peak MFU is reported against (on CPU, OpenBLAS sgemm with the current threads).
double measure_matmul_rate(const kernels::Ops& ops);

// The nominal dense bf16 tensor-core peak in FLOP/s of common GPUs, by the CUDA device name
// (datasheet figures without sparsity: H100/H200/H800/GH200 SXM 989, H100 PCIe 756, A100/A800 312,
// L40S 362, L40 181, L4 121, A10 125, B200 2250 TFLOP/s); 0 for a name not in the table.
double nominal_bf16_peak(const std::string& device_name);

// The MFU denominator per rank in FLOP/s, and in `source` where it comes from: train.peak_tflops
// when set; with train.device = cuda the device's nominal bf16 peak when the table knows it (what
// MFU means on GPUs); else the GEMM rate measured now.
double mfu_peak(const config::TrainConfig& t, const kernels::Ops& ops, std::string& source);

}  // namespace headroom::train
