#!/usr/bin/python3
"""Tiny random Hugging Face model directories for the import/export tests, written by hand.

usage: /usr/bin/python3 validation/hf/make_tiny_hf.py OUT_DIR

Writes, under OUT_DIR, one directory per case: config.json (as transformers writes it for the
family), safetensors written byte by byte here (8-byte little-endian header length, JSON header,
raw little-endian data; no safetensors package), tokenizer.json (a byte-level BPE with a few merges)
and tokenizer_config.json:

  llama       LlamaForCausalLM, GQA, BF16, one file, rope_scaling llama3 (factor 4 over 64: every band)
  qwen3       Qwen3ForCausalLM, per-head QK norm, F32, sharded in 2 files + index json, tied embeddings,
              rope_scaling yarn (factor 4 over 16)
  olmo2       Olmo2ForCausalLM, post-norm, layer QK norm, F16, plus a rotary_emb.inv_freq buffer (skipped)
  olmo3       Olmo3ForCausalLM, layer_types S,S,S,F, sliding_window 6, YaRN factor 2, BF16
  bad_bias    llama plus a q_proj bias tensor          bad_act      llama with hidden_act gelu
  bad_rope    llama with rope_scaling dynamic           bad_missing  llama without layer 1's up_proj
  bad_trunc   llama with model.safetensors cut short
  qwen3_head_copy   qwen3 (tied) that also stores lm_head.weight, equal to the embedding
  bad_tied_head     the same with lm_head.weight differing in one value

Numpy and the standard library only.
"""

import json
import os
import struct
import sys

import numpy as np

DTYPES = {"F32": (np.float32, 4), "F16": (np.float16, 2), "BF16": (None, 2)}


def to_bf16_bytes(a):
    """float32 array -> BF16 bytes, round to nearest even."""
    bits = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return rounded.astype("<u2").tobytes()


def encode(a, dtype):
    if dtype == "BF16":
        return to_bf16_bytes(a)
    return np.ascontiguousarray(a, dtype=DTYPES[dtype][0]).astype("<" + np.dtype(DTYPES[dtype][0]).str[1:]).tobytes()


def write_safetensors(path, tensors, dtype, metadata=None):
    """tensors: list of (name, float32 array)."""
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name, a in tensors:
        data = encode(a, dtype)
        header[name] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * ((8 - (8 + len(text)) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def bytes_to_unicode():
    """GPT-2's byte -> printable character table (as tokenizers' ByteLevel uses)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


def tokenizer_files(d):
    """A byte-level BPE: ids 0..255 the bytes (in byte order), a few merges, then two specials."""
    b2u = bytes_to_unicode()
    vocab = {b2u[b]: b for b in range(256)}
    merges = []
    for pair in [("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("i", "n"), ("Ġ", "a"), ("e", "r"), ("o", "n"), ("Ġ", "s")]:
        merges.append(" ".join(pair))
        vocab["".join(pair)] = len(vocab)
    bos, eos = len(vocab), len(vocab) + 1
    tok = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {"id": bos, "content": "<|begin_of_text|>", "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": False, "special": True},
            {"id": eos, "content": "<|end_of_text|>", "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": False, "special": True},
        ],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": False, "vocab": vocab, "merges": merges},
    }
    with open(os.path.join(d, "tokenizer.json"), "w") as f:
        json.dump(tok, f, ensure_ascii=False)
    with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
        json.dump({"bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>", "add_bos_token": True,
                   "tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 1024}, f)
    return bos + 2  # tokenizer size


def weights(cfg, family, rng):
    """HF name -> float32 array for the family's layout (random, norm weights around 1)."""
    D, L, F = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["intermediate_size"]
    H, KV, V = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["vocab_size"]
    hd = cfg.get("head_dim") or D // H
    std = 0.2
    w = {}
    normal = lambda *s: (rng.standard_normal(s) * std).astype(np.float32)
    ones = lambda n: (1 + 0.2 * rng.standard_normal(n)).astype(np.float32)
    w["model.embed_tokens.weight"] = normal(V, D)
    for i in range(L):
        p = "model.layers.%d." % i
        w[p + "self_attn.q_proj.weight"] = normal(H * hd, D)
        w[p + "self_attn.k_proj.weight"] = normal(KV * hd, D)
        w[p + "self_attn.v_proj.weight"] = normal(KV * hd, D)
        w[p + "self_attn.o_proj.weight"] = normal(D, H * hd)
        w[p + "mlp.gate_proj.weight"] = normal(F, D)
        w[p + "mlp.up_proj.weight"] = normal(F, D)
        w[p + "mlp.down_proj.weight"] = normal(D, F)
        w[p + "post_attention_layernorm.weight"] = ones(D)
        if family in ("llama", "qwen3"):
            w[p + "input_layernorm.weight"] = ones(D)
        else:
            w[p + "post_feedforward_layernorm.weight"] = ones(D)
        if family == "qwen3":
            w[p + "self_attn.q_norm.weight"] = ones(hd)
            w[p + "self_attn.k_norm.weight"] = ones(hd)
        if family in ("olmo2", "olmo3"):
            w[p + "self_attn.q_norm.weight"] = ones(H * hd)
            w[p + "self_attn.k_norm.weight"] = ones(KV * hd)
    w["model.norm.weight"] = ones(D)
    if not cfg["tie_word_embeddings"]:
        w["lm_head.weight"] = normal(V, D)
    return w


def base_config(arch, model_type, vocab):
    return {"architectures": [arch], "model_type": model_type, "vocab_size": vocab, "hidden_size": 32,
            "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
            "hidden_act": "silu", "max_position_embeddings": 1024, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
            "initializer_range": 0.02, "tie_word_embeddings": False, "attention_bias": False,
            "bos_token_id": vocab - 2, "eos_token_id": vocab - 1, "torch_dtype": "bfloat16"}


def write_case(out, name, cfg, family, dtype, seed, shards=1, edit=None):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    tokenizer_files(d)
    rng = np.random.default_rng(seed)
    w = weights(cfg, family, rng)
    if edit:
        edit(cfg, w)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    items = list(w.items())
    if shards == 1:
        write_safetensors(os.path.join(d, "model.safetensors"), items, dtype, {"format": "pt"})
    else:
        per = (len(items) + shards - 1) // shards
        weight_map = {}
        for s in range(shards):
            fname = "model-%05d-of-%05d.safetensors" % (s + 1, shards)
            part = items[s * per:(s + 1) * per]
            write_safetensors(os.path.join(d, fname), part, dtype, {"format": "pt"})
            weight_map.update({n: fname for n, _ in part})
        with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map}, f, indent=2)
    return d


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = argv[1]
    os.makedirs(out, exist_ok=True)
    vocab = 266  # the tokenizer's ids (a padded vocabulary would let evaluate's decoder meet ids the tokenizer lacks)

    def llama():
        c = base_config("LlamaForCausalLM", "llama", vocab)
        c.update(head_dim=8, mlp_bias=False,
                 # head_dim 8, theta 1e4: wavelengths 6.3, 63, 628, 6283 against bands at 64/4 = 16
                 # and 64/1 = 64: one kept, one blended, two scaled
                 rope_scaling={"rope_type": "llama3", "factor": 4.0, "low_freq_factor": 1.0,
                               "high_freq_factor": 4.0, "original_max_position_embeddings": 64})
        return c

    write_case(out, "llama", llama(), "llama", "BF16", 1)
    q = base_config("Qwen3ForCausalLM", "qwen3", vocab)
    q.update(head_dim=16, tie_word_embeddings=True, use_sliding_window=False, sliding_window=None,
             rope_theta=1000000.0, torch_dtype="float32",
             rope_scaling={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16})
    write_case(out, "qwen3", q, "qwen3", "F32", 2, shards=2)
    # Tied, but the export stores the shared matrix as lm_head.weight too: imported (the copy is
    # ignored) when it equals the embedding, refused when it does not.
    write_case(out, "qwen3_head_copy", dict(q), "qwen3", "F32", 2, shards=2, edit=lambda c, w: w.update(
        {"lm_head.weight": w["model.embed_tokens.weight"].copy()}))
    o2 = base_config("Olmo2ForCausalLM", "olmo2", vocab)
    o2.update(rms_norm_eps=1e-5, rope_theta=500000.0, torch_dtype="float16", num_key_value_heads=4)
    # Older exports also store each layer's rotary inverse frequencies, a buffer import_hf skips.
    write_case(out, "olmo2", o2, "olmo2", "F16", 3, edit=lambda c, w: w.update(
        {"model.layers.0.self_attn.rotary_emb.inv_freq": np.ones(4, dtype=np.float32)}))
    o3 = base_config("Olmo3ForCausalLM", "olmo3", vocab)
    o3.update(num_hidden_layers=4, rms_norm_eps=1e-5, rope_theta=500000.0, sliding_window=6,
              layer_types=["sliding_attention"] * 3 + ["full_attention"],
              rope_scaling={"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 32,
                            "beta_fast": 32.0, "beta_slow": 1.0})
    write_case(out, "olmo3", o3, "olmo3", "BF16", 4)

    # Refusals: each one thing wrong with the llama directory.
    def add_bias(c, w):
        w["model.layers.0.self_attn.q_proj.bias"] = np.zeros(32, np.float32)
    write_case(out, "bad_bias", llama(), "llama", "BF16", 1, edit=add_bias)
    write_case(out, "bad_act", llama(), "llama", "BF16", 1, edit=lambda c, w: c.update(hidden_act="gelu"))
    write_case(out, "bad_rope", llama(), "llama", "BF16", 1,
               edit=lambda c, w: c.update(rope_scaling={"rope_type": "dynamic", "factor": 2.0}))
    write_case(out, "bad_missing", llama(), "llama", "BF16", 1,
               edit=lambda c, w: w.pop("model.layers.1.mlp.up_proj.weight"))
    def head_differs(c, w):
        h = w["model.embed_tokens.weight"].copy()
        h[3, 5] += 1.0
        w["lm_head.weight"] = h
    write_case(out, "bad_tied_head", dict(q), "qwen3", "F32", 2, edit=head_differs)
    d = write_case(out, "bad_trunc", llama(), "llama", "BF16", 1)
    path = os.path.join(d, "model.safetensors")
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) - 100)
    print("make_tiny_hf: wrote %s" % out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
