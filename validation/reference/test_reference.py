#!/usr/bin/python3
"""First-principles checks of the PyTorch reference (torch_model.py) on tiny shapes, plus an end-to-end
check of make_exchange.py + compare.py.

usage: /usr/bin/python3 validation/reference/test_reference.py
Plain asserts; prints one line per test and "N passed, M failed"; exits 1 if any test fails.

Tolerances here are not measured noise floors, and need none: every comparison is float64 against
float64 (a closed form, a hand computation, the same function through another path), on tensors of a
few hundred elements, so the bounds (1e-16 to 1e-12) are 1 to ~5000 float64 epsilons (2.2e-16): a
property of float64 arithmetic on those sizes, not of a CPU's BLAS kernels, none of which turn float64
rounding into the fp32-level differences the other tests measure floors for. The finite-difference
check's 1e-7 is the truncation error of a central difference with h = 1e-5 (h^2 times the third
derivative's scale). The exchange check at the end runs compare.py, whose tolerances are measured
floors (compare.py's docstring).
"""

import cmath
import contextlib
import io
import math
import os
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import h5py  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

import torch_model as tm  # noqa: E402

torch.set_num_threads(1)
F64 = torch.float64


def cfg(**kw):
    return tm.make_config(**kw)


def params_for(c, seed=0, jitter=0.2):
    return tm.init_params(c, torch.Generator().manual_seed(seed), dtype=F64, norm_jitter=jitter)


def tokens(c, B=2, T=7, seed=1):
    return torch.randint(0, c["vocab_size"], (B, T), generator=torch.Generator().manual_seed(seed))


def max_abs(a, b):
    return float((torch.as_tensor(a, dtype=F64) - torch.as_tensor(b, dtype=F64)).abs().max())


# ------------------------------------------------------------------------------------------------
# An independent, loop-by-loop attention written straight from the spec text (numpy, complex RoPE),
# used to check torch_model.attention.
# ------------------------------------------------------------------------------------------------

def naive_attention(c, P, layer, kind, x, inv_freq, af, r):
    """x: numpy [B, T, D].  RoPE via complex multiplication (a + ib) * af * e^{i p w} on pairs
    (i, i + r/2); no fp32 rounding of the tables."""
    B, T, D = x.shape
    H, KV, dqk, dv, eps = c["n_heads"], c["n_kv_heads"], c["head_dim_qk"], c["head_dim_v"], c["norm_eps"]
    g = lambda n: P["layers.%d.attn.%s" % (layer, n)].numpy()
    def rms(v, w):
        return v / math.sqrt(float(np.mean(v * v)) + eps) * w
    out = np.zeros((B, T, D))
    for b in range(B):
        q_all, k_all, v_all = [], [], []
        for t in range(T):
            q, k, v = g("wq") @ x[b, t], g("wk") @ x[b, t], g("wv") @ x[b, t]
            if c["qk_norm"] == "layer":
                q, k = rms(q, g("q_norm.weight")), rms(k, g("k_norm.weight"))
            qh = [q[h * dqk:(h + 1) * dqk].copy() for h in range(H)]
            kh = [k[h * dqk:(h + 1) * dqk].copy() for h in range(KV)]
            if c["qk_norm"] == "head":
                qh = [rms(u, g("q_norm.weight")) for u in qh]
                kh = [rms(u, g("k_norm.weight")) for u in kh]
            for u in qh + kh:
                for i in range(r // 2):
                    z = complex(u[i], u[i + r // 2]) * af * cmath.exp(1j * t * float(inv_freq[i]))
                    u[i], u[i + r // 2] = z.real, z.imag
            q_all.append(qh)
            k_all.append(kh)
            v_all.append([v[h * dv:(h + 1) * dv] for h in range(KV)])
        for i in range(T):
            heads = []
            for h in range(H):
                kvh = h // (H // KV)
                vis = [j for j in range(T) if j <= i and (kind == "F" or i - j < c["window"])]
                s = np.array([q_all[i][h] @ k_all[j][kvh] / math.sqrt(dqk) for j in vis])
                p = np.exp(s - s.max())
                p /= p.sum()
                heads.append(sum(p[n] * v_all[j][kvh] for n, j in enumerate(vis)))
            out[b, i] = g("wo") @ np.concatenate(heads)
    return out


def ref_attention_no_round(c, P, layer, kind, x):
    rope = tm.rope_tables(c, kind, x.shape[1], dtype=F64, round_to_fp32=False)
    return tm.attention(c, P, layer, kind, x, rope)


# ------------------------------------------------------------------------------------------------
# Tests
# ------------------------------------------------------------------------------------------------

def test_attention_matches_loop_implementation():
    """torch_model.attention == spec-by-loops attention, over knobs (MHA, GQA, MQA, qk norms, S/F,
    partial RoPE, NoPE, YaRN)."""
    cases = [
        dict(n_heads=4, n_kv_heads=4, qk_norm="none"),
        dict(n_heads=4, n_kv_heads=2, qk_norm="layer", rope_dims_full=4),
        dict(n_heads=4, n_kv_heads=1, qk_norm="head", head_dim_v=3, layer_pattern="S", window=3),
        dict(n_heads=2, n_kv_heads=2, head_dim_qk=6, rope_dims_swa=0, layer_pattern="S", window=2),
        dict(n_heads=2, n_kv_heads=1, rope_scaling="yarn", yarn_factor=4.0, yarn_original_len=8,
             rope_base_full=100.0),
    ]
    x = torch.randn(2, 6, 32, generator=torch.Generator().manual_seed(5), dtype=F64)
    for kw in cases:
        c = cfg(**kw)
        P = params_for(c)
        kind = tm.layer_kind(c, 0)
        inv_freq, af, r = tm.rope_inv_freq(c, kind)
        got = ref_attention_no_round(c, P, 0, kind, x)
        want = naive_attention(c, P, 0, kind, x.numpy(), inv_freq, af, r)
        assert max_abs(got, want) < 1e-12, (kw, max_abs(got, want))


def test_a_sliding_window_ge_T_equals_full():
    T = 6
    for window in (T, T + 3):
        base = dict(rope_base_swa=10000.0, rope_base_full=10000.0, window=window, n_layers=2,
                    qk_norm="head")
        cs, cf = cfg(layer_pattern="S", **base), cfg(layer_pattern="F", **base)
        P = params_for(cf)
        x = tokens(cf, T=T)
        assert max_abs(tm.forward(cs, P, x), tm.forward(cf, P, x)) == 0.0
    # and a window smaller than T does change the result
    cs = cfg(layer_pattern="S", window=2)
    cf = cfg(layer_pattern="F", window=2)
    P = params_for(cf)
    x = tokens(cf, T=T)
    assert max_abs(tm.forward(cs, P, x), tm.forward(cf, P, x)) > 1e-6


def test_a_window_counts_the_query_itself():
    m = tm.attention_mask(6, "S", 3)
    for i in range(6):
        vis = [j for j in range(6) if m[i, j]]
        assert vis == list(range(max(0, i - 2), i + 1)), (i, vis)   # 3 keys, itself included
    # window = 1: each query sees only itself, so attention output is wo @ v_i (q, k irrelevant)
    c = cfg(layer_pattern="S", window=1, n_heads=2, n_kv_heads=1)
    P = params_for(c)
    x = torch.randn(1, 5, 32, dtype=F64, generator=torch.Generator().manual_seed(2))
    out = tm.attention(c, P, 0, "S", x)
    v = x @ P["layers.0.attn.wv"].t()                        # one kv head shared by both heads
    want = torch.cat([v, v], dim=-1) @ P["layers.0.attn.wo"].t()
    assert max_abs(out, want) < 1e-13


def test_b_gqa_with_n_kv_equal_n_heads_is_mha():
    """n_kv_heads = n_heads: each head uses its own K/V rows (checked against per-head MHA by loops)."""
    c = cfg(n_heads=4, n_kv_heads=4, qk_norm="none", rope_dims_full=0)
    P = params_for(c)
    x = torch.randn(1, 5, 32, dtype=F64, generator=torch.Generator().manual_seed(3))
    got = tm.attention(c, P, 0, "F", x)
    # plain MHA: softmax(q_h k_h^T / sqrt(d) + causal) v_h for each head h
    q = (x @ P["layers.0.attn.wq"].t()).view(1, 5, 4, 8)
    k = (x @ P["layers.0.attn.wk"].t()).view(1, 5, 4, 8)
    v = (x @ P["layers.0.attn.wv"].t()).view(1, 5, 4, 8)
    heads = []
    for h in range(4):
        s = q[0, :, h] @ k[0, :, h].t() / math.sqrt(8)
        s = s + torch.triu(torch.full((5, 5), float("-inf"), dtype=F64), diagonal=1)
        heads.append(torch.softmax(s, -1) @ v[0, :, h])
    want = torch.cat(heads, -1) @ P["layers.0.attn.wo"].t()
    assert max_abs(got, want[None]) < 1e-13


def test_b_gqa_equals_mha_with_repeated_kv():
    for qk_norm in ("none", "head", "layer"):
        for H, KV in ((4, 2), (4, 1)):
            cg = cfg(n_heads=H, n_kv_heads=KV, qk_norm=qk_norm, n_layers=2, layer_pattern="SF", window=3)
            cm = cfg(n_heads=H, n_kv_heads=H, qk_norm=qk_norm, n_layers=2, layer_pattern="SF", window=3)
            Pg = params_for(cg)
            Pm = dict(Pg)
            group, dqk, dv = H // KV, cg["head_dim_qk"], cg["head_dim_v"]
            for i in range(2):
                p = "layers.%d.attn." % i
                def rep(w, d):
                    return torch.cat([w[(h // group) * d:(h // group + 1) * d] for h in range(H)], 0)
                Pm[p + "wk"] = rep(Pg[p + "wk"], dqk)
                Pm[p + "wv"] = rep(Pg[p + "wv"], dv)
                if qk_norm == "layer":
                    Pm[p + "k_norm.weight"] = rep(Pg[p + "k_norm.weight"], dqk)
            tm.check_params(cm, Pm)
            x = tokens(cg)
            d = max_abs(tm.forward(cg, Pg, x), tm.forward(cm, Pm, x))
            assert d < 1e-12, (qk_norm, H, KV, d)


def test_c_rope_dims_zero_is_no_rotation():
    x = torch.randn(2, 3, 5, 8, dtype=F64)
    cos, sin, r = tm.rope_tables(cfg(rope_dims_full=0), "F", 5)
    assert r == 0 and tm.apply_rope(x, cos, sin, r) is x
    # model level: NoPE (rope_dims 0) == the loop implementation with no rotation at all
    c = cfg(rope_dims_full=0, rope_dims_swa=0, layer_pattern="SF", window=2, n_heads=2, n_kv_heads=1)
    P = params_for(c)
    xx = torch.randn(1, 5, 32, dtype=F64, generator=torch.Generator().manual_seed(4))
    for layer, kind in ((0, "S"), (1, "F")):
        got = tm.attention(c, P, layer, kind, xx)
        want = naive_attention(c, P, layer, kind, xx.numpy(), [], 1.0, 0)
        assert max_abs(got, want) < 1e-12
    # NoPE is permutation-equivariant in the keys' positions: attention at the last position of a
    # full layer does not depend on the order of earlier tokens
    perm = torch.tensor([2, 0, 3, 1, 4])
    a = tm.attention(c, P, 1, "F", xx)[:, -1]
    b = tm.attention(c, P, 1, "F", xx[:, perm])[:, -1]
    assert max_abs(a, b) < 1e-12


def test_c_rotation_preserves_pair_norms_and_passes_rest():
    for r, yarn in ((8, False), (4, False), (6, True)):
        c = cfg(head_dim_qk=8, rope_dims_full=r, rope_scaling="yarn" if yarn else "none",
                yarn_factor=4.0, yarn_original_len=8, rope_base_full=100.0)
        cos, sin, rr = tm.rope_tables(c, "F", 9, dtype=F64, round_to_fp32=False)
        _, af, _ = tm.rope_inv_freq(c, "F")
        assert rr == r and (af > 1.0) == yarn
        x = torch.randn(2, 3, 9, 8, dtype=F64)
        y = tm.apply_rope(x, cos, sin, r)
        h = r // 2
        n_in = x[..., :h] ** 2 + x[..., h:r] ** 2
        n_out = y[..., :h] ** 2 + y[..., h:r] ** 2
        assert max_abs(n_out, n_in * af * af) < 1e-12
        assert torch.equal(y[..., r:], x[..., r:])
        assert max_abs(y[..., 0, :r], x[..., 0, :r] * af) < 1e-15     # position 0: no rotation
    # relative position: <R_p q, R_s k> depends only on p - s
    c = cfg(head_dim_qk=8)
    cos, sin, r = tm.rope_tables(c, "F", 12, dtype=F64, round_to_fp32=False)
    q, k = torch.randn(8, dtype=F64), torch.randn(8, dtype=F64)
    Q = tm.apply_rope(q.expand(12, 8), cos, sin, r)
    K = tm.apply_rope(k.expand(12, 8), cos, sin, r)
    assert abs(float(Q[7] @ K[3]) - float(Q[4] @ K[0])) < 1e-12
    assert abs(float(Q[11] @ K[2]) - float(Q[9] @ K[0])) < 1e-12
    # rotate-half pairing (i, i + r/2), angle p * base^(-2i/r): one element by hand
    c = cfg(head_dim_qk=8, rope_base_full=100.0)
    cos, sin, r = tm.rope_tables(c, "F", 4, dtype=F64, round_to_fp32=False)
    x = torch.zeros(4, 8, dtype=F64)
    x[:, 1] = 1.0                                      # a = x[1] = 1, b = x[5] = 0
    y = tm.apply_rope(x, cos, sin, r)
    th = 3 * 100.0 ** (-2 * 1 / 8)
    assert abs(float(y[3, 1]) - math.cos(th)) < 1e-15 and abs(float(y[3, 5]) - math.sin(th)) < 1e-15
    # tables are rounded to float32 by default (spec), exact in float64 when asked
    cos32, _, _ = tm.rope_tables(c, "F", 4, dtype=F64)
    assert torch.equal(cos32, cos.to(torch.float32).to(F64))


def test_d_yarn_against_hand_computation():
    base, r, factor, L = 10000.0, 64, 8.0, 4096
    inv_freq, af = tm.yarn_parameters(r, base, factor, L, 32.0, 1.0)
    # by hand: correction dims  64 ln(4096 / (32*2pi)) / (2 ln 1e4) = 10.47 -> floor 10
    #                           64 ln(4096 / (1*2pi))  / (2 ln 1e4) = 22.51 -> ceil 23
    low = math.floor(r * math.log(L / (32 * 2 * math.pi)) / (2 * math.log(base)))
    high = math.ceil(r * math.log(L / (1 * 2 * math.pi)) / (2 * math.log(base)))
    assert (low, high) == (10, 23)
    want = []
    for i in range(r // 2):
        ramp = min(max((i - low) / (high - low), 0.0), 1.0)
        extrap = base ** (-2 * i / r)
        want.append(extrap * ramp / factor + extrap * (1 - ramp))
    assert max(abs(float(a) / b - 1) for a, b in zip(inv_freq, want)) < 1e-14
    assert abs(float(inv_freq[16]) / (0.01 * 62 / 104) - 1) < 1e-14    # 1e-2 * (7/13 + 6/13/8)
    assert float(inv_freq[0]) == 1.0 and abs(float(inv_freq[10]) / base ** (-20 / 64) - 1) < 1e-14
    assert abs(float(inv_freq[31]) / (base ** (-62 / 64) / 8) - 1) < 1e-14
    assert abs(af - 1.2079441541679836) < 1e-15                       # 0.1 ln 8 + 1
    # floor (not round) for low, ceil (not round) for high: 12.88 -> 12 and 20.11 -> 21
    for L2, lo_want, hi_want in ((8192, 12, 25), (2048, 8, 21)):
        lo = math.floor(r * math.log(L2 / (32 * 2 * math.pi)) / (2 * math.log(base)))
        hi = math.ceil(r * math.log(L2 / (1 * 2 * math.pi)) / (2 * math.log(base)))
        assert (lo, hi) == (lo_want, hi_want), (L2, lo, hi)
        got, _ = tm.yarn_parameters(r, base, factor, L2, 32.0, 1.0)
        for i in range(r // 2):
            ramp = min(max((i - lo) / (hi - lo), 0.0), 1.0)
            e = base ** (-2 * i / r)
            assert abs(float(got[i]) / (e * ramp / factor + e * (1 - ramp)) - 1) < 1e-14, (L2, i)
    # factor <= 1: attention factor 1; low == high gets +0.001
    _, af1 = tm.yarn_parameters(r, base, 1.0, L, 32.0, 1.0)
    assert af1 == 1.0
    inv2, _ = tm.yarn_parameters(4, 10000.0, 2.0, 100, 32.0, 16.0)    # both correction dims < 0 -> 0, 0
    lo2 = max(math.floor(4 * math.log(100 / (32 * 2 * math.pi)) / (2 * math.log(1e4))), 0)
    hi2 = min(math.ceil(4 * math.log(100 / (16 * 2 * math.pi)) / (2 * math.log(1e4))), 3)
    assert lo2 == hi2 == 0
    ramp = [min(max((i - 0) / 0.001, 0), 1) for i in range(2)]
    want2 = [10000.0 ** (-2 * i / 4) * (ramp[i] / 2 + (1 - ramp[i])) for i in range(2)]
    assert max_abs(inv2, want2) < 1e-15
    # high is clamped to r - 1 (not r/2 - 1): r = 8, base 100, L = 65536 gives low = 5 (floor 5.03),
    # high = min(ceil(8.04), 7) = 7, so every i in 0..3 is below low: pure extrapolation
    inv3, af3 = tm.yarn_parameters(8, 100.0, 4.0, 65536, 32.0, 1.0)
    assert max_abs(inv3, [100.0 ** (-2 * i / 8) for i in range(4)]) < 1e-15 and abs(af3 - (0.1 * math.log(4) + 1)) < 1e-15
    # config plumbing: yarn_layers = full applies only to F layers; cos at p = 0 equals af
    c = cfg(rope_scaling="yarn", yarn_layers="full", yarn_factor=8.0, yarn_original_len=L, head_dim_qk=64,
            rope_dims_full=-1, rope_dims_swa=32, layer_pattern="SF")
    invF, afF, rF = tm.rope_inv_freq(c, "F")
    invS, afS, rS = tm.rope_inv_freq(c, "S")
    assert rF == 64 and afF == af and max_abs(invF, inv_freq) == 0.0
    assert rS == 32 and afS == 1.0 and max_abs(invS, [10000.0 ** (-2 * i / 32) for i in range(16)]) < 1e-15
    cos, sin, _ = tm.rope_tables(c, "F", 3, round_to_fp32=False)
    assert max_abs(cos[0], [af] * 32) < 1e-15 and max_abs(sin[0], [0.0] * 32) == 0.0


def test_e_loss_ignores_masked_targets():
    torch.manual_seed(0)
    logits = torch.randn(2, 5, 7, dtype=F64)
    targets = torch.tensor([[1, -1, 3, 0, -1], [6, 2, -1, -1, 4]])
    loss = float(tm.loss_fn(logits, targets))
    by_hand, n = 0.0, 0
    for b in range(2):
        for t in range(5):
            if targets[b, t] != -1:
                row = [float(v) for v in logits[b, t]]
                by_hand += math.log(sum(math.exp(v) for v in row)) - row[int(targets[b, t])]
                n += 1
    assert abs(loss - by_hand / n) < 1e-14
    changed = logits.clone()
    changed[0, 1] += 100.0
    changed[1, 2:4] = torch.randn(2, 7, dtype=F64)
    assert float(tm.loss_fn(changed, targets)) == loss
    assert abs(loss - float(torch.nn.functional.cross_entropy(logits.view(-1, 7), targets.view(-1),
                                                             ignore_index=-1))) < 1e-14
    try:
        tm.loss_fn(logits, torch.full((2, 5), -1))
        raise AssertionError("all-masked loss should raise")
    except ValueError:
        pass


def test_f_post_norm_and_pre_norm_differ_and_are_finite():
    cp, cq = cfg(norm_order="pre", qk_norm="layer"), cfg(norm_order="post", qk_norm="layer")
    P = params_for(cp, jitter=0.3)
    x = tokens(cp)
    a, b = tm.forward(cp, P, x), tm.forward(cq, P, x)
    assert torch.isfinite(a).all() and torch.isfinite(b).all()
    assert max_abs(a, b) > 1e-3
    # post-norm by hand for a one-layer model: h1 = h0 + n(attn(h0)); h2 = h1 + n(mlp(h1))
    c1 = cfg(norm_order="post", n_layers=1)
    P1 = params_for(c1, jitter=0.3)
    h = P1["embed.weight"][x]
    eps = c1["norm_eps"]
    h = h + tm.rms_norm(tm.attention(c1, P1, 0, "F", h), P1["layers.0.attn_norm.weight"], eps)
    h = h + tm.rms_norm(tm.mlp(h, P1["layers.0.mlp.w_gate"], P1["layers.0.mlp.w_up"], P1["layers.0.mlp.w_down"]),
                        P1["layers.0.mlp_norm.weight"], eps)
    want = tm.rms_norm(h, P1["final_norm.weight"], eps) @ P1["lm_head.weight"].t()
    assert max_abs(tm.forward(c1, P1, x), want) < 1e-13


def test_g_tied_embeddings_use_embed_weight():
    ct, cu = cfg(tie_embeddings=True), cfg(tie_embeddings=False)
    Pt = params_for(ct)
    assert "lm_head.weight" not in Pt
    Pu = dict(Pt)
    Pu["lm_head.weight"] = Pt["embed.weight"].clone()
    x = tokens(ct)
    assert max_abs(tm.forward(ct, Pt, x), tm.forward(cu, Pu, x)) == 0.0
    # gradient of the tied weight = input-embedding part + output part
    y = tokens(ct, seed=9)
    _, _, gt = tm.gradients(ct, Pt, x, y)
    _, _, gu = tm.gradients(cu, Pu, x, y)
    assert max_abs(gt["embed.weight"], gu["embed.weight"] + gu["lm_head.weight"]) < 1e-14
    try:
        tm.check_params(ct, Pu)
        raise AssertionError("lm_head.weight must be rejected when tied")
    except tm.ExchangeError:
        pass


def test_rms_norm_silu_and_mlp_by_hand():
    x = torch.tensor([[3.0, -4.0]], dtype=F64)
    w = torch.tensor([2.0, 0.5], dtype=F64)
    y = tm.rms_norm(x, w, 0.0)
    s = math.sqrt((9 + 16) / 2)
    assert max_abs(y, [[3 / s * 2, -4 / s * 0.5]]) < 1e-15
    a = torch.tensor([0.7], dtype=F64)
    assert abs(float(tm.silu(a)) - 0.7 / (1 + math.exp(-0.7))) < 1e-16


def test_causality():
    c = cfg(n_layers=2, layer_pattern="SF", window=3, qk_norm="layer")
    P = params_for(c)
    x = tokens(c, T=8)
    x2 = x.clone()
    x2[:, 5] = (x2[:, 5] + 1) % c["vocab_size"]
    a, b = tm.forward(c, P, x), tm.forward(c, P, x2)
    assert max_abs(a[:, :5], b[:, :5]) == 0.0 and max_abs(a[:, 5:], b[:, 5:]) > 0


def test_autograd_against_finite_differences():
    c = cfg(n_layers=1, qk_norm="head", rope_dims_full=4, d_model=8, d_ff=8, vocab_size=11,
            n_heads=2, n_kv_heads=1, init_std=0.3)
    P = params_for(c)
    x, y = tokens(c, T=5), tokens(c, T=5, seed=3)
    _, _, grads = tm.gradients(c, P, x, y)
    gen = torch.Generator().manual_seed(7)
    for name in ("layers.0.attn.wq", "layers.0.attn.k_norm.weight", "layers.0.mlp.w_down", "embed.weight"):
        d = torch.randn(P[name].shape, dtype=F64, generator=gen)
        h = 1e-5
        Pp, Pm = dict(P), dict(P)
        Pp[name], Pm[name] = P[name] + h * d, P[name] - h * d
        fd = (float(tm.loss_fn(tm.forward(c, Pp, x), y)) - float(tm.loss_fn(tm.forward(c, Pm, x), y))) / (2 * h)
        an = float((grads[name] * d).sum())
        assert abs(fd - an) <= 1e-7 * max(1.0, abs(an)), (name, fd, an)


def test_adamw_matches_spec_formula_groups_and_freeze():
    c = cfg(n_layers=2, qk_norm="layer", freeze="layers.1.attn.w*,final_norm.weight")
    P = params_for(c)
    x, y = tokens(c), tokens(c, seed=4)
    optim = dict(lr=1e-2, beta1=0.9, beta2=0.95, eps=1e-8, weight_decay=0.3, steps=3)
    losses, final = tm.adamw_losses(c, P, optim, x, y, return_params=True)
    frozen = set(tm.frozen_names(c, list(P)))
    assert frozen == {"layers.1.attn.wq", "layers.1.attn.wk", "layers.1.attn.wv", "layers.1.attn.wo",
                      "final_norm.weight"}
    decay, no_decay = tm.decay_groups(P, frozen)
    assert "embed.weight" in no_decay and "layers.0.attn.wq" in decay and "layers.0.attn.q_norm.weight" in no_decay
    assert not any(n.endswith("norm.weight") for n in decay)
    # by hand, the spec's formula
    p = {n: t.clone() for n, t in P.items()}
    m = {n: torch.zeros_like(t) for n, t in P.items()}
    v = {n: torch.zeros_like(t) for n, t in P.items()}
    b1, b2 = optim["beta1"], optim["beta2"]
    hand = []
    for t in range(1, 4):
        _, loss, g = tm.gradients(c, p, x, y)
        hand.append(float(loss))
        for n in p:
            if n in frozen:
                continue
            wd = optim["weight_decay"] if (p[n].dim() == 2 and n not in ("embed.weight", "lm_head.weight")) else 0.0
            m[n] = b1 * m[n] + (1 - b1) * g[n]
            v[n] = b2 * v[n] + (1 - b2) * g[n] ** 2
            mh, vh = m[n] / (1 - b1 ** t), v[n] / (1 - b2 ** t)
            p[n] = p[n] - optim["lr"] * (mh / (vh.sqrt() + optim["eps"]) + wd * p[n])
    assert max_abs(losses, hand) < 1e-12, (losses, hand)
    for n in P:
        assert max_abs(final[n], p[n]) < 1e-12, n
        if n in frozen:
            assert torch.equal(final[n], P[n]), n
    assert losses[2] < losses[0]


def test_exchange_roundtrip_pass_and_deliberate_failures():
    import compare
    import make_exchange

    def run_compare(path):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
            rc = compare.main([path])
        return rc, buf.getvalue()

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "x.h5")
        args = ["qk_norm=layer", "layer_pattern=SF", "window=3", "rope_scaling=yarn", "yarn_factor=4",
                "yarn_layers=full", "rope_dims_full=4", "n_kv_heads=1", "tie_embeddings=1",
                "freeze=layers.0.attn.w[qk]", "strings=bytes", "steps=3"]
        with contextlib.redirect_stdout(io.StringIO()):
            make_exchange.main([path] + args)
        rc, out = run_compare(path)
        assert rc == 0 and out.strip().endswith("0 failed"), out
        assert "[frozen]" in out and "train_losses" in out
        with contextlib.redirect_stdout(io.StringIO()):
            make_exchange.main([path] + args + ["perturb=layers.1.attn.wk:1e-3"])
        rc, out = run_compare(path)
        assert rc == 1 and out.strip().endswith("1 failed"), out
        assert [l for l in out.splitlines() if "FAIL" in l and not l.startswith("noise-floor")][0].startswith("grad layers.1.attn.wk"), out
        with contextlib.redirect_stdout(io.StringIO()):
            make_exchange.main([path] + args + ["omit=layers.0.mlp.w_up"])
        rc, out = run_compare(path)
        assert rc == 1 and "missing /ours/grad/layers.0.mlp.w_up" in out, out
        with h5py.File(path, "a") as f:
            del f["model/layers.0.mlp.w_gate"]
        rc, out = run_compare(path)
        assert rc == 2 and path in out and "/model/layers.0.mlp.w_gate" in out, out


TESTS = [v for k, v in list(globals().items()) if k.startswith("test_") and callable(v)]


def main():
    t0 = time.time()
    n_pass = n_fail = 0
    for fn in TESTS:
        t = time.time()
        try:
            fn()
            n_pass += 1
            print("PASS %-60s %.2fs" % (fn.__name__, time.time() - t), flush=True)
        except Exception:
            n_fail += 1
            print("FAIL %-60s %.2fs" % (fn.__name__, time.time() - t), flush=True)
            traceback.print_exc(file=sys.stdout)
    print("total %.1fs" % (time.time() - t0))
    print("%d passed, %d failed" % (n_pass, n_fail))
    return 1 if n_fail else 0


if __name__ == "__main__":
    sys.exit(main())
