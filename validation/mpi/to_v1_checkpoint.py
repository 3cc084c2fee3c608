"""Rewrites a format-2 Headroom checkpoint in place into the format-1 layout (what builds before the
training callbacks' named parts wrote: the spike monitor's state as one flat vector at
/metrics/spike_monitor, no `parts` attribute), so that the test can check that version-1 checkpoints
still load and resume. The spike monitor's part is now named arrays (src/train/spike_monitor.h);
the flat vector is built from them exactly as the writer of that layout laid it out. With
--monitor-only the file stays format 2 and only the monitor's part becomes that flat vector, at
/spike_monitor/state (what format-2 builds wrote before the named arrays).
usage: to_v1_checkpoint.py [--monitor-only] CHECKPOINT.h5"""
import sys

import h5py
import numpy as np

MAGIC, VERSION = 1936289131, 1  # "spik" as a big-endian 32-bit integer; the flat layout's version


def rows(array, width):
    """A per-rule array of `width` values per rule, one row per rule."""
    return np.asarray(array).reshape(-1, width)


def flat_state(g):
    """The flat vector of the spike monitor's named arrays in group `g`: header (magic, version,
    rule count, steps, value counts, value capacity), each rule (window, lookback, sigmas,
    two_sided, name length, name bytes), the retained loss and grad_norm values, then each rule's
    loss and grad_norm moments, spike totals and retained flags."""
    a = {name: g[name][...] for name in g}
    steps, window, lookback = int(a["steps"][0]), a["rule_window"], a["rule_lookback"]
    n_rules = len(window)
    v = [MAGIC, VERSION, n_rules, steps, *a["value_counts"], max(lookback)]
    name_start = np.concatenate([[0], np.cumsum(a["rule_name_length"])]).astype(int)
    for k in range(n_rules):
        v += [window[k], lookback[k], a["rule_sigmas"][k], a["rule_two_sided"][k], a["rule_name_length"][k]]
        v += list(a["rule_name_bytes"][name_start[k]:name_start[k + 1]])
    v += list(a["loss_values"]) + list(a["grad_norm_values"])
    loss_moments, grad_norm_moments = rows(a["loss_moments"], 5), rows(a["grad_norm_moments"], 5)
    totals, flag = rows(a["totals"], 3), 0
    for k in range(n_rules):
        kept = min(steps, int(window[k]))
        v += list(loss_moments[k]) + list(grad_norm_moments[k]) + list(totals[k])
        v += list(a["flags"][flag:flag + kept])
        flag += kept
    assert flag == len(a["flags"]), (flag, len(a["flags"]))
    return np.array(v, dtype=np.float64)


monitor_only = sys.argv[1] == "--monitor-only"
with h5py.File(sys.argv[-1], "r+") as f:
    assert int(f.attrs["format_version"]) == 2, f.attrs["format_version"]
    assert sorted(str(f.attrs["parts"]).split(",")) == ["metrics", "spike_monitor"], f.attrs["parts"]
    state = flat_state(f["spike_monitor"])
    del f["spike_monitor"]
    if monitor_only:
        f["spike_monitor/state"] = state
    else:
        f["metrics/spike_monitor"] = state
        del f.attrs["parts"]
        f.attrs["format_version"] = np.int64(1)
