"""Checks a pretrain -> extend (frozen attention) -> sft chain made by test_stages.sh, with h5py only.
usage: check_stages.py WORK   (WORK/{pre,ext,sft} run directories)"""
import json
import os
import sys

import h5py
import numpy as np

work = sys.argv[1]


def latest(stage):
    d = os.path.join(work, stage, "checkpoints")
    return os.path.join(d, open(os.path.join(d, "latest")).read().strip())


with h5py.File(latest("sft")) as f:
    assert f.attrs["stage"] == "sft", f.attrs["stage"]
    lineage = json.loads(f.attrs["lineage"])
    stages = [entry["stage"] for entry in lineage]
    assert stages == ["pretrain", "extend", "sft"], stages
    assert [entry["steps"] for entry in lineage] == [8, 6, 6], lineage
    for entry, d in zip(lineage, ("pre", "ext", "sft")):
        assert entry["run_dir"] == os.path.join(work, d), entry["run_dir"]
    pre, ext, sft = (entry["config"] for entry in lineage)
    # Each stage's recipe is in its lineage entry.
    assert "seq_len = 128" in pre and "synthetic_ratio = 0.25" in pre
    assert "seq_len = 256" in ext and "rope_base_full = 80000" in ext and "freeze = layers.*.attn.w?" in ext
    assert "sampler = documents" in ext and "schedule = linear" in ext
    assert "\nfreeze = \n" in sft or "\nfreeze =\n" in sft, "sft must not inherit the freeze"
    assert f["config"].attrs["rope_base_full"] == 80000

with h5py.File(latest("pre")) as a, h5py.File(latest("ext")) as b, h5py.File(latest("sft")) as c:
    frozen = [n for n in a["model"] if n.split(".")[-1] in ("wq", "wk", "wv", "wo") and ".attn." in n]
    assert len(frozen) == 4 * 4, frozen  # 4 layers x W_Q, W_K, W_V, W_O
    for n in frozen:
        assert np.array_equal(a["model"][n][...].view(np.uint32), b["model"][n][...].view(np.uint32)), \
            f"{n} changed during the frozen extension"
        assert not np.array_equal(b["model"][n][...], c["model"][n][...]), f"{n} did not train in sft"
    for n in ("layers.0.mlp.w_up", "embed.weight", "layers.3.mlp_norm.weight"):
        assert not np.array_equal(a["model"][n][...], b["model"][n][...]), f"{n} did not train in extend"
print(f"lineage pretrain -> extend -> sft; {len(frozen)} frozen tensors bit-identical through extend")
