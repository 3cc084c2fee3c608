"""Reads a checkpoint with h5py alone and checks the documented layout: root and /config
attributes, every /model tensor with its optimizer moments, the checksums, state, and the
training callbacks' parts (metrics history, spike monitor).
usage: read_checkpoint.py CHECKPOINT.h5"""
import sys

import h5py
import numpy as np

path = sys.argv[1]
with h5py.File(path, "r") as f:
    a = f.attrs
    assert a["format"] == "headroom-checkpoint", a["format"]
    assert int(a["format_version"]) == 2
    for k in ("stage", "step", "tokens_seen", "created_utc", "code_version", "seed", "lineage", "parts"):
        assert k in a, f"root attribute {k} missing"
    cfg = f["config"].attrs
    for k in ("d_model", "n_layers", "n_heads", "n_kv_heads", "head_dim_qk", "head_dim_v",
              "qk_norm", "layer_pattern", "config_ini", "tokenizer_id"):
        assert k in cfg, f"/config attribute {k} missing"
    d, heads, dqk = int(cfg["d_model"]), int(cfg["n_heads"]), int(cfg["head_dim_qk"])
    assert f["model/layers.0.attn.wq"].shape == (heads * dqk, d)
    n = 0
    for name, ds in f["model"].items():
        assert ds.dtype == np.float32
        data = ds[...]
        bits = int(np.sum(data.view(np.uint32).astype(np.uint64), dtype=np.uint64))
        want = int(ds.attrs["checksum"]) % (1 << 64)
        assert bits == want, f"{name}: checksum {bits} != {want}"
        assert f["optimizer/m"][name].shape == ds.shape and f["optimizer/v"][name].shape == ds.shape
        n += data.size
    st = f["state"].attrs
    assert int(st["samples_consumed"]) > 0 and int(st["optimizer_step"]) == int(a["step"])
    # The training callbacks' parts, each a group of float64 arrays named in the root attribute.
    parts = [p for p in str(a["parts"]).split(",") if p]
    assert "metrics" in parts and "spike_monitor" in parts, parts
    for p in parts:
        assert all(ds.dtype == np.float64 for ds in f[p].values()), p
    assert len(f["metrics/loss"]) == len(f["metrics/step"])  # logged steps only: may be empty early
    monitor = f["spike_monitor"]  # named arrays, one per quantity (src/train/spike_monitor.h)
    assert monitor["steps"].shape == (1,) and len(monitor["rule_window"]) > 0, list(monitor)
    assert f["tokenizer/merges"].shape[1] == 2
    step, tensors = int(a["step"]), len(f["model"])
print(f"h5py: {path}: step {step}, {tensors} tensors, {n} parameters, checksums match")
