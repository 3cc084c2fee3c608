"""Independent PyTorch reference implementation of the Headroom model.

Written from validation/reference/MODEL_SPEC.md alone (never from src/model), so that the C++ model
and this file are two independent readings of the same contract.  Clarity over speed: attention is
computed naively with a full [T, T] score matrix and explicit masks, layers are an explicit loop,
and everything runs in float64 unless a caller asks for float32.

Run with Debian's Python (/usr/bin/python3): torch, numpy and h5py only.

Public functions
    load_exchange(path)                     -> (config dict, params dict of tensors, batch dict)
    forward(config, params, inputs)         -> logits [B, T, vocab]
    loss_fn(logits, targets)                -> scalar mean cross-entropy over targets != -1
    adamw_losses(config, params, optim, inputs, targets, frozen=None) -> [loss before each step]
and the building blocks they use (rms_norm, rope_inv_freq, yarn_parameters, llama3_inv_freq, rope_tables,
apply_rope, attention, mlp, param_shapes, init_params, frozen_names, decay_groups).
"""

import fnmatch
import math
from collections import OrderedDict

import torch

torch.set_num_threads(1)

DEFAULT_DTYPE = torch.float64


class ExchangeError(Exception):
    """A malformed exchange file or config; the message names the file and the dataset/attribute."""


# ----------------------------------------------------------------------------------------------
# Configuration
# ----------------------------------------------------------------------------------------------

INT_KEYS = ("vocab_size", "d_model", "n_layers", "d_ff", "n_heads", "n_kv_heads", "head_dim_qk",
            "head_dim_v", "window", "rope_dims_full", "rope_dims_swa", "yarn_original_len",
            "llama3_original_len", "seed")
FLOAT_KEYS = ("rope_base_full", "rope_base_swa", "yarn_factor", "yarn_beta_fast", "yarn_beta_slow",
              "llama3_factor", "llama3_low_freq_factor", "llama3_high_freq_factor",
              "norm_eps", "init_std")
BOOL_KEYS = ("tie_embeddings",)
STR_KEYS = ("qk_norm", "norm_order", "layer_pattern", "rope_scaling", "yarn_layers", "freeze")
MODEL_KEYS = INT_KEYS + FLOAT_KEYS + BOOL_KEYS + STR_KEYS[:-1]   # every key but `freeze` is required

# Defaults used only by make_config() (tests, make_exchange.py); load_exchange() requires every
# model key to be present in the file.
DEFAULTS = dict(
    vocab_size=64, d_model=32, n_layers=2, d_ff=48, n_heads=4, n_kv_heads=2, head_dim_qk=8,
    head_dim_v=8, qk_norm="none", norm_order="pre", layer_pattern="F", window=4,
    rope_base_full=10000.0, rope_base_swa=10000.0, rope_dims_full=-1, rope_dims_swa=-1,
    rope_scaling="none", yarn_factor=1.0, yarn_original_len=16, yarn_beta_fast=32.0,
    yarn_beta_slow=1.0, yarn_layers="all", llama3_factor=8.0, llama3_low_freq_factor=1.0,
    llama3_high_freq_factor=4.0, llama3_original_len=8192, tie_embeddings=False, norm_eps=1e-6, init_std=0.02,
    seed=0, freeze="",
)


def _scalar(value):
    """numpy scalars / one-element arrays -> Python scalars; bytes -> str."""
    if hasattr(value, "shape") and hasattr(value, "reshape") and getattr(value, "size", 1) == 1 \
            and len(value.shape) > 0:
        value = value.reshape(())[()]
    if isinstance(value, bytes):               # includes numpy.bytes_ (fixed-length HDF5 strings)
        return value.decode("utf-8").rstrip("\0 ")
    if isinstance(value, str):                 # includes numpy.str_
        return str(value)
    if hasattr(value, "item"):
        value = value.item()
        if isinstance(value, bytes):
            return value.decode("utf-8").rstrip("\0 ")
    return value


def _as_str(value):
    return str(_scalar(value))


def _as_int(value):
    value = _scalar(value)
    if isinstance(value, str):
        return int(value.strip())
    if isinstance(value, float):
        if value != int(value):
            raise ValueError("expected an integer, got %r" % value)
    return int(value)


def _as_float(value):
    value = _scalar(value)
    if isinstance(value, str):
        return float(value.strip())
    return float(value)


def _as_bool(value):
    value = _scalar(value)
    if isinstance(value, str):
        s = value.strip().lower()
        if s in ("1", "true", "yes", "on"):
            return True
        if s in ("0", "false", "no", "off"):
            return False
        raise ValueError("expected a boolean, got %r" % s)
    if value not in (0, 1, True, False):
        raise ValueError("expected 0/1, got %r" % value)
    return bool(value)


def normalize_config(raw, where="config", require_all=True):
    """Convert raw attribute values (numpy scalars, bytes or str) into plain Python types and
    validate them.  Raises ExchangeError naming `where` and the offending key."""
    cfg = {}
    for key in MODEL_KEYS + ("freeze",):
        if key not in raw:
            if require_all and key != "freeze":
                raise ExchangeError("%s: missing attribute '%s'" % (where, key))
            raw_value = DEFAULTS[key]
        else:
            raw_value = raw[key]
        try:
            if key in INT_KEYS:
                cfg[key] = _as_int(raw_value)
            elif key in FLOAT_KEYS:
                cfg[key] = _as_float(raw_value)
            elif key in BOOL_KEYS:
                cfg[key] = _as_bool(raw_value)
            else:
                cfg[key] = _as_str(raw_value)
        except (ValueError, TypeError) as e:
            raise ExchangeError("%s: attribute '%s' has a bad value %r (%s)" % (where, key, raw_value, e))
    validate_config(cfg, where)
    return cfg


def validate_config(cfg, where="config"):
    def bad(key, why):
        raise ExchangeError("%s: attribute '%s' = %r: %s" % (where, key, cfg.get(key), why))

    for key in ("vocab_size", "d_model", "n_layers", "d_ff", "n_heads", "n_kv_heads", "head_dim_qk",
                "head_dim_v"):
        if cfg[key] < 1:
            bad(key, "must be >= 1")
    if cfg["n_heads"] % cfg["n_kv_heads"] != 0:
        bad("n_kv_heads", "n_heads must be a multiple of n_kv_heads")
    if cfg["qk_norm"] not in ("none", "layer", "head"):
        bad("qk_norm", "must be none, layer or head")
    if cfg["norm_order"] not in ("pre", "post"):
        bad("norm_order", "must be pre or post")
    if len(cfg["layer_pattern"]) == 0 or any(c not in "SF" for c in cfg["layer_pattern"]):
        bad("layer_pattern", "must be a non-empty string of 'S' and 'F'")
    if "S" in cfg["layer_pattern"] and cfg["window"] < 1:
        bad("window", "sliding layers need window >= 1")
    kinds = set(cfg["layer_pattern"][i % len(cfg["layer_pattern"])] for i in range(cfg["n_layers"]))
    for key in [k for kind, k in (("F", "rope_dims_full"), ("S", "rope_dims_swa")) if kind in kinds]:
        r = cfg[key]
        if r == -1:
            r = cfg["head_dim_qk"]
        if r < 0 or r > cfg["head_dim_qk"] or r % 2 != 0:
            bad(key, "rotated dims must be -1 or an even number in 0..head_dim_qk")
    if cfg["rope_scaling"] not in ("none", "yarn", "llama3"):
        bad("rope_scaling", "must be none, yarn or llama3")
    if cfg["rope_scaling"] == "llama3":
        if cfg["llama3_high_freq_factor"] <= cfg["llama3_low_freq_factor"]:
            bad("llama3_high_freq_factor", "must exceed llama3_low_freq_factor")
        if cfg["llama3_original_len"] < 1:
            bad("llama3_original_len", "must be >= 1")
    if cfg["rope_scaling"] == "yarn":
        if cfg["yarn_layers"] not in ("all", "full"):
            bad("yarn_layers", "must be all or full")
        if cfg["yarn_factor"] <= 0:
            bad("yarn_factor", "must be > 0")
        if cfg["yarn_original_len"] < 1:
            bad("yarn_original_len", "must be >= 1")
    for key in [k for kind, k in (("F", "rope_base_full"), ("S", "rope_base_swa")) if kind in kinds]:
        if cfg[key] <= 1.0:
            bad(key, "must be > 1")
    if cfg["norm_eps"] < 0:
        bad("norm_eps", "must be >= 0")


def make_config(**overrides):
    """A validated config from DEFAULTS plus overrides (for tests and make_exchange.py)."""
    raw = dict(DEFAULTS)
    for k, v in overrides.items():
        if k not in raw:
            raise KeyError("unknown config key %r" % k)
        raw[k] = v
    return normalize_config(raw, where="make_config", require_all=True)


def layer_kind(config, i):
    pattern = config["layer_pattern"]
    return pattern[i % len(pattern)]


# ----------------------------------------------------------------------------------------------
# Parameters
# ----------------------------------------------------------------------------------------------

def param_shapes(config):
    """OrderedDict name -> logical shape, exactly the MODEL_SPEC table."""
    c = config
    D, H, KV, dqk, dv = c["d_model"], c["n_heads"], c["n_kv_heads"], c["head_dim_qk"], c["head_dim_v"]
    shapes = OrderedDict()
    shapes["embed.weight"] = (c["vocab_size"], D)
    for i in range(c["n_layers"]):
        p = "layers.%d." % i
        shapes[p + "attn_norm.weight"] = (D,)
        shapes[p + "attn.wq"] = (H * dqk, D)
        shapes[p + "attn.wk"] = (KV * dqk, D)
        shapes[p + "attn.wv"] = (KV * dv, D)
        shapes[p + "attn.wo"] = (D, H * dv)
        if c["qk_norm"] == "layer":
            shapes[p + "attn.q_norm.weight"] = (H * dqk,)
            shapes[p + "attn.k_norm.weight"] = (KV * dqk,)
        elif c["qk_norm"] == "head":
            shapes[p + "attn.q_norm.weight"] = (dqk,)
            shapes[p + "attn.k_norm.weight"] = (dqk,)
        shapes[p + "mlp_norm.weight"] = (D,)
        shapes[p + "mlp.w_gate"] = (c["d_ff"], D)
        shapes[p + "mlp.w_up"] = (c["d_ff"], D)
        shapes[p + "mlp.w_down"] = (D, c["d_ff"])
    shapes["final_norm.weight"] = (D,)
    if not c["tie_embeddings"]:
        shapes["lm_head.weight"] = (c["vocab_size"], D)
    return shapes


def is_norm_weight(name):
    return name.endswith("norm.weight")   # attn_norm, mlp_norm, q_norm, k_norm, final_norm


def init_params(config, generator=None, dtype=DEFAULT_DTYPE, norm_jitter=0.0):
    """Random weights with the spec's init distributions (not the C++ counter-based generator, so
    values differ from the C++ init; only the distributions match).  norm_jitter > 0 replaces the
    all-ones norm weights by 1 + norm_jitter * N(0, 1) so tests exercise them non-trivially."""
    if generator is None:
        generator = torch.Generator().manual_seed(config["seed"])
    std = config["init_std"]
    out_std = std / math.sqrt(2 * config["n_layers"])
    params = OrderedDict()
    for name, shape in param_shapes(config).items():
        if is_norm_weight(name):
            t = torch.ones(shape, dtype=torch.float64)
            if norm_jitter:
                t = t + norm_jitter * torch.randn(shape, generator=generator, dtype=torch.float64)
        else:
            s = out_std if name.endswith("attn.wo") or name.endswith("mlp.w_down") else std
            t = s * torch.randn(shape, generator=generator, dtype=torch.float64)
        params[name] = t.to(dtype)
    return params


def check_params(config, params, where="params"):
    shapes = param_shapes(config)
    missing = [n for n in shapes if n not in params]
    extra = [n for n in params if n not in shapes]
    if missing:
        raise ExchangeError("%s: missing parameter(s) %s" % (where, ", ".join(missing)))
    if extra:
        raise ExchangeError("%s: unexpected parameter(s) %s" % (where, ", ".join(extra)))
    for n, s in shapes.items():
        if tuple(params[n].shape) != tuple(s):
            raise ExchangeError("%s/%s: shape %s, expected %s" % (where, n, tuple(params[n].shape), s))


# ----------------------------------------------------------------------------------------------
# Building blocks
# ----------------------------------------------------------------------------------------------

def rms_norm(x, weight, eps):
    """x / sqrt(mean(x^2) + eps) * weight, mean over the last dimension."""
    return x / torch.sqrt(torch.mean(x * x, dim=-1, keepdim=True) + eps) * weight


def silu(a):
    return a * torch.sigmoid(a)


def mlp(x, w_gate, w_up, w_down):
    """(silu(x W_gate^T) * (x W_up^T)) W_down^T"""
    return (silu(x @ w_gate.t()) * (x @ w_up.t())) @ w_down.t()


def yarn_parameters(dim, base, factor, original_len, beta_fast, beta_slow):
    """Hugging Face transformers' _compute_yarn_parameters (truncate=True), in float64.
    Returns (inv_freq float64 tensor [dim/2], attention_factor float)."""
    pos_freqs = base ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    inv_freq_extrapolation = 1.0 / pos_freqs
    inv_freq_interpolation = 1.0 / (factor * pos_freqs)

    def find_correction_dim(num_rotations):
        return (dim * math.log(original_len / (num_rotations * 2 * math.pi))) / (2 * math.log(base))

    low = max(math.floor(find_correction_dim(beta_fast)), 0)
    high = min(math.ceil(find_correction_dim(beta_slow)), dim - 1)
    if low == high:
        high += 0.001  # prevent singularity
    ramp = torch.clamp((torch.arange(dim // 2, dtype=torch.float64) - low) / (high - low), 0, 1)
    extrapolation_factor = 1 - ramp
    inv_freq = (inv_freq_interpolation * (1 - extrapolation_factor)
                + inv_freq_extrapolation * extrapolation_factor)
    attention_factor = 0.1 * math.log(factor) + 1.0 if factor > 1 else 1.0
    return inv_freq, attention_factor


def llama3_inv_freq(inv_freq, factor, low_freq_factor, high_freq_factor, original_len):
    """Hugging Face transformers' _compute_llama3_parameters applied to plain RoPE frequencies,
    in float64: long wavelengths divided by the factor, short ones kept, a linear blend between."""
    low_freq_wavelen = original_len / low_freq_factor
    high_freq_wavelen = original_len / high_freq_factor
    wavelen = 2 * math.pi / inv_freq
    scaled = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    smooth = (original_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = ~(wavelen < high_freq_wavelen) & ~(wavelen > low_freq_wavelen)
    return torch.where(medium, smoothed, scaled)


def rope_settings(config, kind):
    """(base, r, use_yarn) for a layer kind 'S' or 'F'."""
    if kind == "F":
        base, r = config["rope_base_full"], config["rope_dims_full"]
    else:
        base, r = config["rope_base_swa"], config["rope_dims_swa"]
    if r == -1:
        r = config["head_dim_qk"]
    use_yarn = config["rope_scaling"] == "yarn" and (config["yarn_layers"] == "all" or kind == "F")
    return base, r, use_yarn


def rope_inv_freq(config, kind):
    """(inv_freq float64 [r/2], attention_factor, r) for a layer kind."""
    base, r, use_yarn = rope_settings(config, kind)
    if r == 0:
        return torch.zeros(0, dtype=torch.float64), 1.0, 0
    if use_yarn:
        inv_freq, af = yarn_parameters(r, base, config["yarn_factor"], config["yarn_original_len"],
                                       config["yarn_beta_fast"], config["yarn_beta_slow"])
    else:
        inv_freq = base ** (-2.0 * torch.arange(r // 2, dtype=torch.float64) / r)
        af = 1.0
        if config["rope_scaling"] == "llama3":
            inv_freq = llama3_inv_freq(inv_freq, config["llama3_factor"], config["llama3_low_freq_factor"],
                                       config["llama3_high_freq_factor"], config["llama3_original_len"])
    return inv_freq, af, r


def rope_tables(config, kind, T, dtype=DEFAULT_DTYPE, round_to_fp32=True):
    """cos, sin [T, r/2] for positions 0..T-1: angles and cos/sin in float64, multiplied by the
    attention factor, then (as the spec says) cast to float32; finally cast to the compute dtype."""
    inv_freq, af, r = rope_inv_freq(config, kind)
    pos = torch.arange(T, dtype=torch.float64)
    theta = pos[:, None] * inv_freq[None, :]
    cos, sin = torch.cos(theta) * af, torch.sin(theta) * af
    if round_to_fp32:
        cos, sin = cos.to(torch.float32), sin.to(torch.float32)
    return cos.to(dtype), sin.to(dtype), r


def apply_rope(x, cos, sin, r):
    """Rotate-half RoPE on the first r dims of the last axis.  x [..., T, d]; cos/sin [T, r/2]."""
    if r == 0:
        return x
    half = r // 2
    a, b, rest = x[..., :half], x[..., half:r], x[..., r:]
    a2 = a * cos - b * sin
    b2 = b * cos + a * sin
    return torch.cat([a2, b2, rest], dim=-1)


def attention_mask(T, kind, window):
    """Boolean [T, T], True where query i may see key j: causal, and for 'S' i - j < window."""
    i = torch.arange(T)[:, None]
    j = torch.arange(T)[None, :]
    visible = j <= i
    if kind == "S":
        visible = visible & (i - j < window)
    return visible


def attention(config, params, layer, kind, x, rope=None):
    """Attention sub-block of layer `layer` on x [B, T, d_model] (already normed in pre-norm)."""
    c = config
    B, T, _ = x.shape
    H, KV, dqk, dv = c["n_heads"], c["n_kv_heads"], c["head_dim_qk"], c["head_dim_v"]
    p = "layers.%d.attn." % layer
    q = x @ params[p + "wq"].t()          # [B, T, H*dqk]
    k = x @ params[p + "wk"].t()          # [B, T, KV*dqk]
    v = x @ params[p + "wv"].t()          # [B, T, KV*dv]
    if c["qk_norm"] == "layer":
        q = rms_norm(q, params[p + "q_norm.weight"], c["norm_eps"])
        k = rms_norm(k, params[p + "k_norm.weight"], c["norm_eps"])
    q = q.view(B, T, H, dqk).transpose(1, 2)     # [B, H, T, dqk], head-major rows
    k = k.view(B, T, KV, dqk).transpose(1, 2)    # [B, KV, T, dqk]
    v = v.view(B, T, KV, dv).transpose(1, 2)     # [B, KV, T, dv]
    if c["qk_norm"] == "head":
        q = rms_norm(q, params[p + "q_norm.weight"], c["norm_eps"])
        k = rms_norm(k, params[p + "k_norm.weight"], c["norm_eps"])
    if rope is None:
        rope = rope_tables(c, kind, T, dtype=x.dtype)
    cos, sin, r = rope
    q = apply_rope(q, cos, sin, r)
    k = apply_rope(k, cos, sin, r)
    group = H // KV
    k = k.repeat_interleave(group, dim=1)        # head h uses kv head h // group
    v = v.repeat_interleave(group, dim=1)
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(dqk)          # [B, H, T, T]
    visible = attention_mask(T, kind, c["window"])
    scores = scores.masked_fill(~visible, float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    out = probs @ v                                              # [B, H, T, dv]
    out = out.transpose(1, 2).reshape(B, T, H * dv)              # concatenate heads
    return out @ params[p + "wo"].t()


def output_weight(config, params):
    return params["embed.weight"] if config["tie_embeddings"] else params["lm_head.weight"]


def forward(config, params, inputs):
    """logits [B, T, vocab] for token ids inputs [B, T]; computes in the dtype of params."""
    c = config
    eps = c["norm_eps"]
    inputs = torch.as_tensor(inputs).long()
    B, T = inputs.shape
    dtype = params["embed.weight"].dtype
    rope = {kind: rope_tables(c, kind, T, dtype=dtype) for kind in "SF"}
    h = params["embed.weight"][inputs]                           # [B, T, d_model]
    for i in range(c["n_layers"]):
        kind = layer_kind(c, i)
        p = "layers.%d." % i
        w_attn_norm, w_mlp_norm = params[p + "attn_norm.weight"], params[p + "mlp_norm.weight"]
        w_gate, w_up, w_down = params[p + "mlp.w_gate"], params[p + "mlp.w_up"], params[p + "mlp.w_down"]
        if c["norm_order"] == "pre":
            h = h + attention(c, params, i, kind, rms_norm(h, w_attn_norm, eps), rope[kind])
            h = h + mlp(rms_norm(h, w_mlp_norm, eps), w_gate, w_up, w_down)
        else:  # post ("reordered norm", OLMo 2): h = h + norm(f(h))
            h = h + rms_norm(attention(c, params, i, kind, h, rope[kind]), w_attn_norm, eps)
            h = h + rms_norm(mlp(h, w_gate, w_up, w_down), w_mlp_norm, eps)
    h = rms_norm(h, params["final_norm.weight"], eps)
    return h @ output_weight(c, params).t()


def loss_fn(logits, targets):
    """Mean over positions with target != -1 (whole batch) of cross-entropy(logits, target)."""
    targets = torch.as_tensor(targets).long()
    V = logits.shape[-1]
    logits = logits.reshape(-1, V)
    targets = targets.reshape(-1)
    keep = targets != -1
    n = int(keep.sum())
    if n == 0:
        raise ValueError("loss_fn: every target is masked (-1); the mean is undefined")
    if bool(((targets < -1) | (targets >= V)).any()):
        raise ValueError("loss_fn: targets must be -1 or in 0..%d" % (V - 1))
    lse = torch.logsumexp(logits[keep], dim=-1)
    picked = logits[keep].gather(1, targets[keep][:, None])[:, 0]
    return (lse - picked).sum() / n


# ----------------------------------------------------------------------------------------------
# Optimizer
# ----------------------------------------------------------------------------------------------

NO_DECAY_2D = ("embed.weight", "lm_head.weight")


def frozen_names(config, names):
    """Names matching any of the comma-separated fnmatch patterns in config['freeze']."""
    patterns = [s.strip() for s in config.get("freeze", "").split(",") if s.strip()]
    return [n for n in names if any(fnmatch.fnmatchcase(n, pat) for pat in patterns)]


def decay_groups(params, frozen=(), no_decay_2d=NO_DECAY_2D):
    """(decay names, no-decay names) over trainable params: decay = 2-D weights except
    embed.weight / lm_head.weight; everything else (norm weights are 1-D) does not decay."""
    decay, no_decay = [], []
    for name, t in params.items():
        if name in frozen:
            continue
        if t.dim() == 2 and name not in no_decay_2d:
            decay.append(name)
        else:
            no_decay.append(name)
    return decay, no_decay


def adamw_losses(config, params, optim, inputs, targets, frozen=None, dtype=None, return_params=False):
    """Repeat the same batch optim['steps'] times with torch.optim.AdamW; return the list of
    losses recorded BEFORE each step (and, with return_params, the final parameters too).
    params are copied (not modified).  frozen: names excluded from the optimizer (default: from
    config['freeze'])."""
    if dtype is None:
        dtype = params["embed.weight"].dtype
    if frozen is None:
        frozen = frozen_names(config, list(params))
    frozen = set(frozen)
    work = OrderedDict((n, t.detach().clone().to(dtype).requires_grad_(True)) for n, t in params.items())
    decay, no_decay = decay_groups(work, frozen)
    groups = []
    if decay:
        groups.append({"params": [work[n] for n in decay], "weight_decay": float(optim["weight_decay"])})
    if no_decay:
        groups.append({"params": [work[n] for n in no_decay], "weight_decay": 0.0})
    opt = None
    if groups:
        opt = torch.optim.AdamW(groups, lr=float(optim["lr"]),
                                betas=(float(optim["beta1"]), float(optim["beta2"])),
                                eps=float(optim["eps"]))
    losses = []
    for _ in range(int(optim["steps"])):
        if opt is not None:
            opt.zero_grad(set_to_none=True)
        loss = loss_fn(forward(config, work, inputs), targets)
        losses.append(float(loss.detach()))
        if opt is not None:
            loss.backward()
            opt.step()
    if return_params:
        return losses, OrderedDict((n, t.detach()) for n, t in work.items())
    return losses


# ----------------------------------------------------------------------------------------------
# Exchange file
# ----------------------------------------------------------------------------------------------

def _dataset(f, path, fname):
    import h5py
    if path not in f:
        raise ExchangeError("%s: missing dataset /%s" % (fname, path))
    obj = f[path]
    if not isinstance(obj, h5py.Dataset):
        raise ExchangeError("%s: /%s is not a dataset" % (fname, path))
    return obj


def load_exchange(path, dtype=DEFAULT_DTYPE):
    """Read an exchange file.  Returns (config, params, batch):
    config: normalized dict (model keys + freeze); params: OrderedDict name -> tensor (dtype);
    batch: dict with inputs/targets (int64 tensors) and, when present, optim (dict of attrs).
    Raises ExchangeError naming the file and dataset on anything malformed."""
    import h5py
    import numpy as np
    try:
        f = h5py.File(path, "r")
    except (OSError, IOError) as e:
        raise ExchangeError("%s: cannot open as HDF5 (%s)" % (path, e))
    with f:
        if "config" not in f:
            raise ExchangeError("%s: missing group /config" % path)
        config = normalize_config(dict(f["config"].attrs), where="%s: /config" % path)
        if "model" not in f:
            raise ExchangeError("%s: missing group /model" % path)
        params = OrderedDict()
        shapes = param_shapes(config)
        for name, shape in shapes.items():
            ds = _dataset(f, "model/" + name, path)
            if tuple(ds.shape) != tuple(shape):
                raise ExchangeError("%s: dataset /model/%s has shape %s, expected %s"
                                    % (path, name, tuple(ds.shape), tuple(shape)))
            if ds.dtype.kind != "f":
                raise ExchangeError("%s: dataset /model/%s has dtype %s, expected float32"
                                    % (path, name, ds.dtype))
            params[name] = torch.from_numpy(np.asarray(ds[()], dtype=np.float32)).to(dtype)
        extra = []
        f["model"].visit(lambda n: extra.append(n) if isinstance(f["model"][n], h5py.Dataset)
                         and n not in shapes else None)
        if extra:
            raise ExchangeError("%s: unexpected dataset(s) under /model: %s (not in MODEL_SPEC for this config)"
                                % (path, ", ".join("/model/" + n for n in extra)))
        batch = {}
        for key in ("inputs", "targets"):
            ds = _dataset(f, "batch/" + key, path)
            if ds.ndim != 2 or ds.dtype.kind not in "iu":
                raise ExchangeError("%s: dataset /batch/%s must be an integer [B, T] array, got %s %s"
                                    % (path, key, ds.dtype, tuple(ds.shape)))
            batch[key] = torch.from_numpy(np.asarray(ds[()], dtype=np.int64))
        if batch["inputs"].shape != batch["targets"].shape:
            raise ExchangeError("%s: /batch/inputs %s and /batch/targets %s differ in shape"
                                % (path, tuple(batch["inputs"].shape), tuple(batch["targets"].shape)))
        V = config["vocab_size"]
        x, y = batch["inputs"], batch["targets"]
        if x.numel() == 0:
            raise ExchangeError("%s: /batch/inputs is empty" % path)
        if bool(((x < 0) | (x >= V)).any()):
            raise ExchangeError("%s: /batch/inputs has token ids outside 0..%d" % (path, V - 1))
        if bool(((y < -1) | (y >= V)).any()):
            raise ExchangeError("%s: /batch/targets has values outside -1..%d" % (path, V - 1))
        if not bool((y != -1).any()):
            raise ExchangeError("%s: /batch/targets is entirely masked (-1)" % path)
        if "optim" in f:
            attrs = f["optim"].attrs
            optim = {}
            for key in ("lr", "beta1", "beta2", "eps", "weight_decay", "steps"):
                if key not in attrs:
                    raise ExchangeError("%s: /optim is missing attribute '%s'" % (path, key))
                try:
                    optim[key] = _as_int(attrs[key]) if key == "steps" else _as_float(attrs[key])
                except (ValueError, TypeError) as e:
                    raise ExchangeError("%s: /optim attribute '%s' has a bad value (%s)" % (path, key, e))
            batch["optim"] = optim
    return config, params, batch


def gradients(config, params, inputs, targets, dtype=None):
    """(logits, loss, OrderedDict name -> gradient) by autograd, in dtype (default params' dtype)."""
    if dtype is None:
        dtype = params["embed.weight"].dtype
    work = OrderedDict((n, t.detach().clone().to(dtype).requires_grad_(True)) for n, t in params.items())
    logits = forward(config, work, inputs)
    loss = loss_fn(logits, targets)
    grads = torch.autograd.grad(loss, list(work.values()))
    return logits.detach(), loss.detach(), OrderedDict(zip(work.keys(), grads))
