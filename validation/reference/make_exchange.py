#!/usr/bin/python3
"""Self-test helper: build an exchange file FROM THE REFERENCE ITSELF.

usage: /usr/bin/python3 validation/reference/make_exchange.py OUT.h5 [key=value ...]

Writes the MODEL_SPEC.md exchange layout (/config, /model, /batch, /optim, /ours) with random weights
(spec init distributions; norm weights jittered around 1), a random batch whose targets are the inputs
shifted by one with the last position and a random fraction set to -1, and /ours/* computed by the
reference in float32 (standing in for the C++ model), so compare.py can be tested end to end.

keys:
  any model key of MODEL_SPEC (vocab_size, d_model, ..., seed) and freeze   (defaults: torch_model.DEFAULTS)
  random=SEED        draw a random config first (explicit keys still override it)
  B=2 T=12           batch shape;  mask_frac=0.2  extra fraction of targets set to -1
  lr=3e-3 beta1=0.9 beta2=0.95 eps=1e-8 weight_decay=0.1 steps=4   (/optim; steps=0: no train_losses)
  norm_jitter=0.1    std of the jitter around 1 for norm weights (0: all ones, as the spec's init)
  ours_dtype=float32 dtype the reference uses to produce /ours (float32 or float64)
  strings=str        write string attributes as str (variable length) or bytes (fixed length)
  perturb=NAME:REL[,NAME:REL]  add noise of relative Frobenius norm REL to /ours/grad/NAME
                     (NAME may also be logits, loss or train_losses)
  omit=NAME[,NAME]   leave /ours/grad/NAME (or /ours/logits, ...) out of the file
"""

import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import h5py  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

import torch_model as tm  # noqa: E402

EXTRA_DEFAULTS = dict(B=2, T=12, mask_frac=0.2, lr=3e-3, beta1=0.9, beta2=0.95, eps=1e-8,
                      weight_decay=0.1, steps=4, norm_jitter=0.1, ours_dtype="float32", strings="str",
                      perturb="", omit="", random="")


def random_config(seed):
    """A random small config that exercises the knobs (values drawn with Python's random)."""
    r = random.Random(seed)
    n_heads = r.choice([1, 2, 4])
    n_kv = r.choice([d for d in (1, 2, 4) if n_heads % d == 0])
    dqk = r.choice([4, 6, 8, 12])
    kinds_pattern = r.choice(["F", "S", "SF", "SSF", "FS"])
    def dims():
        return r.choice([-1, 0] + list(range(2, dqk + 1, 2)))
    cfg = dict(
        vocab_size=r.choice([17, 32, 61]), d_model=r.choice([8, 12, 16, 24]), n_layers=r.choice([1, 2, 3]),
        d_ff=r.choice([8, 20, 32]), n_heads=n_heads, n_kv_heads=n_kv, head_dim_qk=dqk,
        head_dim_v=r.choice([2, 4, 8, dqk]), qk_norm=r.choice(["none", "layer", "head"]),
        norm_order=r.choice(["pre", "post"]), layer_pattern=kinds_pattern, window=r.choice([1, 2, 3, 5, 8]),
        rope_base_full=r.choice([100.0, 500.0, 10000.0]), rope_base_swa=r.choice([100.0, 10000.0]),
        rope_dims_full=dims(), rope_dims_swa=dims(), rope_scaling=r.choice(["none", "yarn"]),
        yarn_factor=r.choice([1.0, 2.0, 4.0, 8.0]), yarn_original_len=r.choice([8, 16, 64]),
        yarn_beta_fast=32.0, yarn_beta_slow=1.0, yarn_layers=r.choice(["all", "full"]),
        tie_embeddings=r.choice([False, True]), norm_eps=1e-6, init_std=r.choice([0.02, 0.1, 0.3]),
        seed=r.randrange(1000),
        freeze=r.choice(["", "", "layers.*.attn.w[qk]", "embed.weight", "layers.0.*", "*norm.weight"]),
    )
    return cfg


def parse_args(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if argv else 2)
    out = argv[0]
    kv = {}
    for a in argv[1:]:
        if "=" not in a:
            sys.exit("make_exchange.py: argument %r is not key=value" % a)
        k, v = a.split("=", 1)
        if k not in tm.DEFAULTS and k not in EXTRA_DEFAULTS:
            sys.exit("make_exchange.py: unknown key %r" % k)
        kv[k] = v
    return out, kv


def coerce(key, text, default):
    if isinstance(default, bool):
        return text.strip().lower() in ("1", "true", "yes", "on")
    if isinstance(default, int):
        return int(text)
    if isinstance(default, float):
        return float(text)
    return text


def build(out, kv):
    extra = dict(EXTRA_DEFAULTS)
    for k, v in kv.items():
        if k in EXTRA_DEFAULTS:
            extra[k] = coerce(k, v, EXTRA_DEFAULTS[k])
    raw = dict(tm.DEFAULTS)
    if extra["random"] != "":
        raw.update(random_config(int(extra["random"])))
    for k, v in kv.items():
        if k in tm.DEFAULTS:
            raw[k] = coerce(k, v, tm.DEFAULTS[k])
    config = tm.make_config(**raw)

    ours_dtype = {"float32": torch.float32, "float64": torch.float64}[extra["ours_dtype"]]
    gen = torch.Generator().manual_seed(config["seed"])
    params = tm.init_params(config, gen, dtype=torch.float64, norm_jitter=extra["norm_jitter"])
    params = {n: t.to(torch.float32) for n, t in params.items()}   # the file stores float32

    B, T = extra["B"], extra["T"]
    bgen = torch.Generator().manual_seed(config["seed"] + 1)
    inputs = torch.randint(0, config["vocab_size"], (B, T), generator=bgen)
    targets = torch.full((B, T), -1, dtype=torch.long)
    targets[:, :-1] = inputs[:, 1:]
    drop = torch.rand((B, T), generator=bgen) < extra["mask_frac"]
    targets[drop] = -1
    if not bool((targets != -1).any()):
        targets[0, 0] = inputs[0, 1] if T > 1 else 0

    logits, loss, grads = tm.gradients(config, params, inputs, targets, dtype=ours_dtype)
    optim = dict(lr=extra["lr"], beta1=extra["beta1"], beta2=extra["beta2"], eps=extra["eps"],
                 weight_decay=extra["weight_decay"], steps=extra["steps"])
    train = None
    if optim["steps"] > 0:
        train = tm.adamw_losses(config, params, optim, inputs, targets, dtype=ours_dtype)

    ours = {"logits": logits.to(torch.float32).numpy(),
            "loss": np.array([float(loss)], dtype=np.float64)}
    for n, g in grads.items():
        ours["grad/" + n] = g.to(torch.float32).numpy()
    if train is not None:
        ours["train_losses"] = np.array(train, dtype=np.float64)

    rng = np.random.default_rng(12345)
    for item in [s for s in extra["perturb"].split(",") if s]:
        name, rel = item.rsplit(":", 1)
        key = name if name in ("logits", "loss", "train_losses") else "grad/" + name
        if key not in ours:
            sys.exit("make_exchange.py: perturb: no such quantity %r" % name)
        a = ours[key].astype(np.float64)
        noise = rng.standard_normal(a.shape)
        noise *= float(rel) * np.linalg.norm(a) / max(np.linalg.norm(noise), 1e-300)
        ours[key] = (a + noise).astype(ours[key].dtype)
    for name in [s for s in extra["omit"].split(",") if s]:
        key = name if name in ("logits", "loss", "train_losses") else "grad/" + name
        if ours.pop(key, None) is None:
            sys.exit("make_exchange.py: omit: no such quantity %r" % name)

    def attr(v):
        if isinstance(v, bool):
            return np.int64(int(v))
        if isinstance(v, int):
            return np.int64(v)
        if isinstance(v, float):
            return np.float64(v)
        return np.bytes_(v.encode()) if extra["strings"] == "bytes" else v

    with h5py.File(out, "w") as f:
        g = f.create_group("config")
        for k in tm.MODEL_KEYS + ("freeze",):
            g.attrs[k] = attr(config[k])
        for n, t in params.items():
            f.create_dataset("model/" + n, data=t.numpy())
        f.create_dataset("batch/inputs", data=inputs.numpy().astype(np.int32))
        f.create_dataset("batch/targets", data=targets.numpy().astype(np.int32))
        go = f.create_group("optim")
        for k, v in optim.items():
            go.attrs[k] = attr(v)
        for k, a in ours.items():
            f.create_dataset("ours/" + k, data=a)
    return config


def main(argv=None):
    torch.set_num_threads(1)
    out, kv = parse_args(sys.argv[1:] if argv is None else argv)
    config = build(out, kv)
    print("wrote %s (%s)" % (out, " ".join("%s=%s" % (k, config[k]) for k in tm.MODEL_KEYS + ("freeze",))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
