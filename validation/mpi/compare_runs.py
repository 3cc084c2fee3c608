"""Compares two runs: per-step losses from metrics.jsonl and the final weights of their latest
checkpoints. usage: compare_runs.py RUN_A RUN_B TOLERANCE   (TOLERANCE 0 = bit-identical)"""
import json
import pathlib
import sys

import h5py
import numpy as np


def losses(run):
    return {r["step"]: r["loss"] for r in map(json.loads, open(pathlib.Path(run) / "metrics.jsonl"))}


def latest(run):
    d = pathlib.Path(run) / "checkpoints"
    return d / (d / "latest").read_text().strip()


def main():
    a, b, tol = sys.argv[1], sys.argv[2], float(sys.argv[3])
    la, lb = losses(a), losses(b)
    bad = []
    if sorted(la) != sorted(lb):
        bad.append(f"logged steps differ: {sorted(la)} vs {sorted(lb)}")
    worst = 0.0
    for s in sorted(set(la) & set(lb)):
        rel = abs(la[s] - lb[s]) / max(abs(lb[s]), 1e-30)
        worst = max(worst, rel)
        if (tol == 0 and la[s] != lb[s]) or rel > tol:
            bad.append(f"step {s}: loss {la[s]!r} vs {lb[s]!r} (rel {rel:.2e})")
    wworst = 0.0
    with h5py.File(latest(a), "r") as fa, h5py.File(latest(b), "r") as fb:
        names = sorted(fa["model"].keys())
        if names != sorted(fb["model"].keys()):
            bad.append("parameter names differ")
        for n in names:
            x, y = fa["model"][n][...], fb["model"][n][...]
            rel = float(np.linalg.norm(x - y) / max(np.linalg.norm(y), 1e-30))
            wworst = max(wworst, rel)
            if (tol == 0 and not np.array_equal(x, y)) or rel > tol:
                bad.append(f"weights {n}: rel {rel:.2e}")
    print(f"{a} vs {b}: {len(la)} losses, max rel {worst:.2e}; weights max rel {wworst:.2e}")
    for line in bad[:10]:
        print("  " + line)
    sys.exit(1 if bad else 0)


main()
