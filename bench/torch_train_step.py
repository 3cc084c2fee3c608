#!/usr/bin/python3
"""PyTorch reference for bench_train_step: the same training step, eager fp32, 2 threads.

One step = zero_grad, forward + cross-entropy loss, backward, global-norm clipping at 1.0, AdamW
(lr 1e-4, betas 0.9/0.95, eps 1e-8, weight decay 0.1 on 2-D weights except the embeddings) for
vocab 8192, d_model 512, 4 layers, d_ff 1408 (SwiGLU), MHA, pre-norm RMSNorm, full causal attention
with RoPE on the whole head, untied LM head, batch 8 x sequence 512.

    /usr/bin/python3 bench/torch_train_step.py [--shape 8x64] [--steps 3] [--warmup 1]
        [--sgemm-ours GFLOPS] [--impl module|reference] [--threads 2]

--impl module (default): an nn.Module written for eager speed the ordinary way (nn.Linear, one
    [T, T] causal mask built once, F.cross_entropy), the same maths as MODEL_SPEC.md.
--impl reference: validation/reference/torch_model.py's forward() and loss_fn() on a float32
    parameter dict (the independent reference, written for clarity: masks and RoPE tables rebuilt
    per call, loss through boolean indexing).

FLOPs per token = 6*N + 6*n_layers*seq*d_attn (N = parameters without the input embedding), as in
bench_train_step.cpp. MFU is measured as there: each timed step is bracketed by probes of torch's
sgemm rate ([4096x512].[1408x512]^T via F.linear, the same OpenBLAS; best of --probe-reps runs),
each step's FLOP/s is divided by the mean of its two probes, and the median over steps is reported;
the best rate seen in the process is reported too. With --sgemm-ours the achieved rate is also
given against the rate bench_train_step measured. The last line, RESULT ..., is what
bench_train_step parses.
"""

import argparse
import math
import os
import resource
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB, D_MODEL, N_LAYERS, D_FF, SEQ, BATCH = 8192, 512, 4, 1408, 512, 8
EPS = 1e-6
INIT_STD = 0.02


def rms_norm(x, w):
    return x * torch.rsqrt(torch.mean(x * x, dim=-1, keepdim=True) + EPS) * w


def rope_tables(T, width, base=10000.0):
    inv_freq = base ** (-2.0 * torch.arange(width // 2, dtype=torch.float64) / width)
    theta = torch.arange(T, dtype=torch.float64)[:, None] * inv_freq[None, :]
    return torch.cos(theta).float(), torch.sin(theta).float()


def apply_rope(x, cos, sin):
    half = x.shape[-1] // 2
    a, b = x[..., :half], x[..., half:]
    return torch.cat([a * cos - b * sin, b * cos + a * sin], dim=-1)


class Block(nn.Module):
    def __init__(self, heads, width):
        super().__init__()
        d_attn = heads * width
        self.heads, self.width = heads, width
        self.attn_norm = nn.Parameter(torch.ones(D_MODEL))
        self.wq = nn.Linear(D_MODEL, d_attn, bias=False)
        self.wk = nn.Linear(D_MODEL, d_attn, bias=False)
        self.wv = nn.Linear(D_MODEL, d_attn, bias=False)
        self.wo = nn.Linear(d_attn, D_MODEL, bias=False)
        self.mlp_norm = nn.Parameter(torch.ones(D_MODEL))
        self.w_gate = nn.Linear(D_MODEL, D_FF, bias=False)
        self.w_up = nn.Linear(D_MODEL, D_FF, bias=False)
        self.w_down = nn.Linear(D_FF, D_MODEL, bias=False)
        out_std = INIT_STD / math.sqrt(2 * N_LAYERS)
        for lin, std in ((self.wq, INIT_STD), (self.wk, INIT_STD), (self.wv, INIT_STD),
                         (self.wo, out_std), (self.w_gate, INIT_STD), (self.w_up, INIT_STD),
                         (self.w_down, out_std)):
            nn.init.normal_(lin.weight, 0.0, std)

    def forward(self, x, cos, sin, hidden):
        B, T, _ = x.shape
        H, W = self.heads, self.width
        h = rms_norm(x, self.attn_norm)
        q = self.wq(h).view(B, T, H, W).transpose(1, 2)
        k = self.wk(h).view(B, T, H, W).transpose(1, 2)
        v = self.wv(h).view(B, T, H, W).transpose(1, 2)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        scores = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(W))
        probs = torch.softmax(scores.masked_fill(hidden, float("-inf")), dim=-1)
        att = (probs @ v).transpose(1, 2).reshape(B, T, H * W)
        x = x + self.wo(att)
        h = rms_norm(x, self.mlp_norm)
        return x + self.w_down(F.silu(self.w_gate(h)) * self.w_up(h))


class Model(nn.Module):
    def __init__(self, heads, width):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D_MODEL)
        nn.init.normal_(self.embed.weight, 0.0, INIT_STD)
        self.layers = nn.ModuleList(Block(heads, width) for _ in range(N_LAYERS))
        self.final_norm = nn.Parameter(torch.ones(D_MODEL))
        self.lm_head = nn.Linear(D_MODEL, VOCAB, bias=False)
        nn.init.normal_(self.lm_head.weight, 0.0, INIT_STD)
        cos, sin = rope_tables(SEQ, width)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)
        self.register_buffer("hidden", torch.ones(SEQ, SEQ, dtype=torch.bool).triu(1),
                             persistent=False)

    def forward(self, ids, targets):
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x, self.cos, self.sin, self.hidden)
        logits = self.lm_head(rms_norm(x, self.final_norm))
        return F.cross_entropy(logits.view(-1, VOCAB), targets.view(-1), ignore_index=-1)


def adamw(named_params):
    decay = [p for n, p in named_params if p.dim() == 2 and not n.startswith(("embed", "lm_head"))]
    rest = [p for n, p in named_params if not (p.dim() == 2 and not n.startswith(("embed", "lm_head")))]
    kw = dict(lr=1e-4, betas=(0.9, 0.95), eps=1e-8)
    try:
        return torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                                  {"params": rest, "weight_decay": 0.0}], foreach=True, **kw)
    except TypeError:  # a torch without foreach
        return torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                                  {"params": rest, "weight_decay": 0.0}], **kw)


def module_step_fn(heads, width):
    model = Model(heads, width)
    opt = adamw(list(model.named_parameters()))
    params = list(model.parameters())

    def step(ids, targets):
        opt.zero_grad(set_to_none=True)
        loss = model(ids, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        return float(loss.detach())

    return step, sum(p.numel() for p in params)


def reference_step_fn(heads, width):
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "validation", "reference"))
    import torch_model as tm  # noqa: E402  (sets 1 thread on import; main() resets it)
    cfg = tm.make_config(vocab_size=VOCAB, d_model=D_MODEL, n_layers=N_LAYERS, d_ff=D_FF,
                         n_heads=heads, n_kv_heads=heads, head_dim_qk=width, head_dim_v=width,
                         qk_norm="none", norm_order="pre", layer_pattern="F", window=SEQ,
                         tie_embeddings=False, norm_eps=EPS, init_std=INIT_STD)
    params = tm.init_params(cfg, dtype=torch.float32)
    for t in params.values():
        t.requires_grad_(True)
    opt = adamw(list(params.items()))
    plist = list(params.values())

    def step(ids, targets):
        opt.zero_grad(set_to_none=True)
        loss = tm.loss_fn(tm.forward(cfg, params, ids), targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(plist, 1.0)
        opt.step()
        return float(loss.detach())

    return step, sum(p.numel() for p in plist)


def machine_busy_seconds():
    """Busy CPU-seconds of the whole machine (/proc/stat), to tell what other processes took."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / os.sysconf("SC_CLK_TCK")


def sgemm_rate(reps):
    g = torch.Generator().manual_seed(0)
    a = torch.rand(BATCH * SEQ, D_MODEL, generator=g) - 0.5
    w = torch.rand(D_FF, D_MODEL, generator=g) - 0.5
    best = 0.0
    with torch.no_grad():
        for _ in range(reps):
            t0 = time.perf_counter()
            F.linear(a, w)
            best = max(best, 2.0 * a.shape[0] * w.shape[0] * a.shape[1] / (time.perf_counter() - t0) / 1e9)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shape", default="8x64", help="HEADSxWIDTH with HEADS*WIDTH = 512")
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--reps", type=int, default=8, help="sgemm repetitions (best is kept)")
    ap.add_argument("--probe-reps", type=int, default=4,
                    help="sgemm repetitions of the probes around each timed step")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--sgemm-ours", type=float, default=0.0,
                    help="sgemm GFLOP/s measured by bench_train_step, for a second MFU figure")
    ap.add_argument("--impl", choices=("module", "reference"), default="module")
    args = ap.parse_args()
    heads, width = (int(s) for s in args.shape.split("x"))

    step, n_params = (module_step_fn if args.impl == "module" else reference_step_fn)(heads, width)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    stream = torch.randint(0, VOCAB, (BATCH, SEQ + 1))
    ids, targets = stream[:, :-1].contiguous(), stream[:, 1:].contiguous()

    n_non_embed = n_params - VOCAB * D_MODEL
    fpt = 6.0 * n_non_embed + 6.0 * N_LAYERS * SEQ * heads * width
    sgemm = sgemm_rate(args.reps)
    print("torch %s (%s, %d threads, %s): N %d, %.2f MFLOP/token, torch sgemm %.1f GFLOP/s"
          % (args.shape, args.impl, torch.get_num_threads(),
             "MKL" if torch.backends.mkl.is_available() else "system BLAS", n_non_embed,
             fpt / 1e6, sgemm), flush=True)
    for i in range(args.warmup):
        t0 = time.perf_counter()
        loss = step(ids, targets)
        print("  torch warm-up step %d: %.3f s, loss %.4f" % (i + 1, time.perf_counter() - t0, loss),
              flush=True)
    # Each timed step is bracketed by sgemm probes, as in bench_train_step.
    probes = [sgemm_rate(args.probe_reps)]
    times, mfus, others = [], [], []
    step_flop = BATCH * SEQ * fpt
    cores = os.cpu_count()
    for i in range(args.steps):
        t0, c0, b0 = time.perf_counter(), time.process_time(), machine_busy_seconds()
        loss = step(ids, targets)
        times.append(time.perf_counter() - t0)
        own = time.process_time() - c0
        others.append(max(0.0, machine_busy_seconds() - b0 - own) / (cores * times[-1]))
        probes.append(sgemm_rate(args.probe_reps))
        around = 0.5 * (probes[-2] + probes[-1])
        mfus.append(step_flop / times[-1] / 1e9 / around)
        print("  torch step %d: %.3f s (cpu %.3f s; other processes %.0f%% of the cores), loss %.4f, "
              "%.1f GFLOP/s, sgemm around it %.1f GFLOP/s, MFU %.1f%%"
              % (i + 1, times[-1], own, 100 * others[-1], loss, step_flop / times[-1] / 1e9, around,
                 100 * mfus[-1]), flush=True)
    med, mfu = median(times), median(mfus)
    best = max([sgemm] + probes)
    tok_s = BATCH * SEQ / med
    gflops = tok_s * fpt / 1e9
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    extra = ""
    if args.sgemm_ours > 0:
        extra = ", %.1f%% of bench_train_step's sgemm %.1f" % (100 * gflops / args.sgemm_ours,
                                                               args.sgemm_ours)
    print("  torch %s: median step %.3f s, %.0f tokens/s, %.1f GFLOP/s; MFU %.1f%% (median over steps "
          "against torch's sgemm around each); %.1f%% of the best torch sgemm %.1f%s; peak RSS %.0f MiB"
          % (args.shape, med, tok_s, gflops, 100 * mfu, 100 * gflops / best, best, extra, rss))
    print("  other processes used %.0f%% of the cores during the median step" % (100 * median(others)))
    print("RESULT impl=torch-%s shape=%s tok_s=%.3f gflops=%.4f mfu=%.5f sgemm=%.4f step_s=%.5f "
          "others=%.4f rss_mib=%.1f" % (args.impl, args.shape, tok_s, gflops, mfu, best, med,
                                        median(others), rss), flush=True)


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


if __name__ == "__main__":
    main()
