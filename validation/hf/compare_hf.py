#!/usr/bin/python3
"""The logits of an imported checkpoint against the PyTorch reference run on the Hugging Face files.

usage: /usr/bin/python3 validation/hf/compare_hf.py HF_DIR LOGITS.h5

Independent of the C++ importer: reads HF_DIR's config.json and safetensors with its own reader
(header + raw bytes; F32, F16, BF16; model.safetensors.index.json for shards), maps the Hugging Face
names and configuration to MODEL_SPEC.md's itself, and runs validation/reference/torch_model.py's
forward on LOGITS.h5's /inputs. LOGITS.h5 is validation/hf/dump_logits's output (/inputs, /logits).

Tolerance as validation/reference/compare.py derives it: the relative error ||ours − ref|| / ||ref||
against the float64 reference must lie within noise_floor.DEFAULT_FACTOR of the float32 reference's
own relative error (the noise floor of fp32 for this computation, measured here).
Exit status: 0 pass, 1 mismatch, 2 malformed input.
"""

import json
import os
import struct
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
sys.path.insert(0, os.path.join(HERE, ".."))
import noise_floor  # noqa: E402
import torch_model as tm  # noqa: E402


def read_safetensors(path):
    """name -> float64 numpy array."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        buf = data[b:end]
        if e["dtype"] == "F32":
            a = np.frombuffer(buf, "<f4").astype(np.float64)
        elif e["dtype"] == "F16":
            a = np.frombuffer(buf, "<f2").astype(np.float64)
        elif e["dtype"] == "BF16":
            a = (np.frombuffer(buf, "<u2").astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        else:
            raise ValueError("%s: tensor %s has dtype %s" % (path, name, e["dtype"]))
        out[name] = a.reshape(e["shape"])
    return out


def read_dir(d):
    index = os.path.join(d, "model.safetensors.index.json")
    if os.path.exists(index):
        files = sorted(set(json.load(open(index))["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    out = {}
    for f in files:
        out.update(read_safetensors(os.path.join(d, f)))
    return out


def spec_config(c):
    """config.json -> MODEL_SPEC config dict (the mapping, written here independently)."""
    arch = c["architectures"][0]
    olmo = arch in ("Olmo2ForCausalLM", "Olmo3ForCausalLM")
    hd = c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]
    scaling = c.get("rope_scaling") or {}
    rope_type = scaling.get("rope_type", scaling.get("type", "default"))
    pattern = "F"
    if arch == "Olmo3ForCausalLM":
        pattern = "".join("S" if t == "sliding_attention" else "F" for t in c["layer_types"])
    cfg = dict(
        vocab_size=c["vocab_size"], d_model=c["hidden_size"], n_layers=c["num_hidden_layers"],
        d_ff=c["intermediate_size"], n_heads=c["num_attention_heads"],
        n_kv_heads=c.get("num_key_value_heads") or c["num_attention_heads"], head_dim_qk=hd, head_dim_v=hd,
        qk_norm={"LlamaForCausalLM": "none", "Qwen3ForCausalLM": "head"}.get(arch, "layer"),
        norm_order="post" if olmo else "pre", layer_pattern=pattern, window=c.get("sliding_window") or 1,
        rope_base_full=float(c.get("rope_theta", 10000.0)), rope_base_swa=float(c.get("rope_theta", 10000.0)),
        rope_dims_full=-1, rope_dims_swa=-1,
        rope_scaling=rope_type if rope_type in ("yarn", "llama3") else "none",
        yarn_factor=float(scaling.get("factor", 1.0)),
        yarn_original_len=int(scaling.get("original_max_position_embeddings", c["max_position_embeddings"])),
        yarn_beta_fast=float(scaling.get("beta_fast", 32.0)), yarn_beta_slow=float(scaling.get("beta_slow", 1.0)),
        # OLMo 3 scales its full-attention layers only
        yarn_layers="full" if arch == "Olmo3ForCausalLM" else "all",
        llama3_factor=float(scaling.get("factor", 8.0)),
        llama3_low_freq_factor=float(scaling.get("low_freq_factor", 1.0)),
        llama3_high_freq_factor=float(scaling.get("high_freq_factor", 4.0)),
        llama3_original_len=int(scaling.get("original_max_position_embeddings", 8192)),
        tie_embeddings=bool(c.get("tie_word_embeddings", False)),
        norm_eps=float(c.get("rms_norm_eps", 1e-5 if olmo else 1e-6)))
    return tm.make_config(**cfg)


def spec_params(c, hf):
    olmo = c["architectures"][0] in ("Olmo2ForCausalLM", "Olmo3ForCausalLM")
    p = {"embed.weight": hf["model.embed_tokens.weight"], "final_norm.weight": hf["model.norm.weight"]}
    if "lm_head.weight" in hf:
        p["lm_head.weight"] = hf["lm_head.weight"]
    for i in range(c["num_hidden_layers"]):
        s, t = "model.layers.%d." % i, "layers.%d." % i
        if olmo:
            p[t + "attn_norm.weight"] = hf[s + "post_attention_layernorm.weight"]
            p[t + "mlp_norm.weight"] = hf[s + "post_feedforward_layernorm.weight"]
        else:
            p[t + "attn_norm.weight"] = hf[s + "input_layernorm.weight"]
            p[t + "mlp_norm.weight"] = hf[s + "post_attention_layernorm.weight"]
        for ours, theirs in (("attn.wq", "q_proj"), ("attn.wk", "k_proj"), ("attn.wv", "v_proj"), ("attn.wo", "o_proj")):
            p[t + ours] = hf[s + "self_attn." + theirs + ".weight"]
        for ours, theirs in (("mlp.w_gate", "gate_proj"), ("mlp.w_up", "up_proj"), ("mlp.w_down", "down_proj")):
            p[t + ours] = hf[s + "mlp." + theirs + ".weight"]
        for n in ("q_norm", "k_norm"):
            if s + "self_attn." + n + ".weight" in hf:
                p[t + "attn." + n + ".weight"] = hf[s + "self_attn." + n + ".weight"]
    return p


def rel_error(ours, ref):
    ours = torch.as_tensor(np.asarray(ours, dtype=np.float64))
    ref = torch.as_tensor(ref, dtype=torch.float64)
    return float(torch.linalg.norm((ours - ref).reshape(-1))) / max(float(torch.linalg.norm(ref.reshape(-1))), 1e-30)


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    import h5py
    hf_dir, logits_path = argv[1], argv[2]
    c = json.load(open(os.path.join(hf_dir, "config.json")))
    config = spec_config(c)
    hf = read_dir(hf_dir)
    params64 = {n: torch.tensor(a, dtype=torch.float64) for n, a in spec_params(c, hf).items()}
    tm.check_params(config, params64)
    params32 = {n: a.to(torch.float32) for n, a in params64.items()}
    with h5py.File(logits_path, "r") as f:
        inputs = torch.as_tensor(np.asarray(f["inputs"][()], dtype=np.int64))
        ours = np.asarray(f["logits"][()], dtype=np.float64)
    ref = tm.forward(config, params64, inputs)
    ref32 = tm.forward(config, params32, inputs)
    if ours.shape != tuple(ref.shape):
        print("logits shape %s, reference %s" % (ours.shape, tuple(ref.shape)))
        return 1
    floor = rel_error(ref32.double().numpy(), ref)
    err = rel_error(ours, ref)
    ok = noise_floor.verdict("%s logits" % c["architectures"][0], err, floor)
    print("%s: logits rel_err %.3e floor %.3e %s" % (hf_dir, err, floor, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
