"""Rewrites a format-2 Headroom checkpoint in place into the format-1 layout (what builds before the
training callbacks' named parts wrote: the spike monitor's state at /metrics/spike_monitor, no
`parts` attribute), so that the test can check that version-1 checkpoints still load and resume.
usage: to_v1_checkpoint.py CHECKPOINT.h5"""
import sys

import h5py
import numpy as np

with h5py.File(sys.argv[1], "r+") as f:
    assert int(f.attrs["format_version"]) == 2, f.attrs["format_version"]
    assert sorted(str(f.attrs["parts"]).split(",")) == ["metrics", "spike_monitor"], f.attrs["parts"]
    f["metrics/spike_monitor"] = f["spike_monitor/state"][...]
    del f["spike_monitor"]
    del f.attrs["parts"]
    f.attrs["format_version"] = np.int64(1)
