"""Copies a checkpoint with every weight under /model rounded to bf16 (round to nearest even, as the
GPU's conversions do). The emulated-device test starts a CPU run from it: how far that run lies from
the same run on the exact weights is what bf16 inputs alone cost, the floor of the bf16 tolerance
(as test_gpu_cases.h derives it op by op).

usage: round_bf16.py IN OUT
"""
import shutil
import sys

import h5py
import numpy as np


def round_bf16(x):
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32)


def main(src, dst):
    shutil.copyfile(src, dst)
    with h5py.File(dst, "r+") as f:
        for name, d in f["model"].items():
            x = round_bf16(d[...])
            d[...] = x
            # The checkpoint's integrity sum (io/checkpoint.h): the float32 bit patterns, as uint64.
            d.attrs["checksum"] = np.uint64(x.view(np.uint32).astype(np.uint64).sum())
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
