#!/usr/bin/python3
"""Two Headroom checkpoints hold the same model, bit for bit.

usage: /usr/bin/python3 validation/hf/same_checkpoint.py A.h5 B.h5

Compares every /model/<name> dataset (shape, dtype and the float32 bit patterns, so -0.0 and NaN
payloads count) and every /config attribute (each [model] key, config_ini, tokenizer_id).
Prints each difference; exit status 0 when there is none, 1 otherwise.
"""
import sys

import h5py
import numpy as np


def datasets(f):
    out = {}
    f["model"].visititems(lambda n, o: out.__setitem__(n, o) if isinstance(o, h5py.Dataset) else None)
    return out


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    problems = []
    with h5py.File(argv[1], "r") as a, h5py.File(argv[2], "r") as b:
        da, db = datasets(a), datasets(b)
        for n in sorted(set(da) | set(db)):
            if n not in da or n not in db:
                problems.append("/model/%s only in %s" % (n, argv[1] if n in da else argv[2]))
                continue
            x, y = da[n][()], db[n][()]
            if x.shape != y.shape or x.dtype != y.dtype:
                problems.append("/model/%s: %s %s vs %s %s" % (n, x.shape, x.dtype, y.shape, y.dtype))
            elif not np.array_equal(x.view(np.uint32), y.view(np.uint32)):
                problems.append("/model/%s: %d elements differ" % (n, int((x.view(np.uint32) != y.view(np.uint32)).sum())))
        ca, cb = dict(a["config"].attrs), dict(b["config"].attrs)
        for k in sorted(set(ca) | set(cb)):
            va, vb = ca.get(k), cb.get(k)
            if isinstance(va, bytes):
                va = va.decode()
            if isinstance(vb, bytes):
                vb = vb.decode()
            if k not in ca or k not in cb or not np.array_equal(np.asarray(va), np.asarray(vb)):
                problems.append("/config %s: %r vs %r" % (k, va, vb))
        n_tensors = len(da)
    for p in problems:
        print("differs: " + p)
    print("same_checkpoint: %s vs %s: %d tensors, %d differences" % (argv[1], argv[2], n_tensors, len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
