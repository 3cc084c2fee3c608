"""Compares two training runs: per-step losses (metrics.jsonl) and the final weights (latest checkpoint).

usage: compare_runs.py RUN REF --exact
           bit-identical losses and weights
       compare_runs.py RUN REF --max-rel X [--name NAME]
           losses and weights within relative distance X (a tolerance a contract fixes, e.g. the
           emulated GPU's fp32 table against the CPU backend)
       compare_runs.py RUN REF --floor FLOOR_RUN [--floor ...] [--name NAME] [--factor X] [--power]
           RUN's distance to REF within X (default noise_floor.DEFAULT_FACTOR) times the noise
           floor: the largest distance of a FLOOR_RUN to REF, where each FLOOR_RUN is REF's
           configuration at REF's layout run with another summation order (another OpenBLAS kernel
           set). With --power the verdict is reversed: RUN is a real change and must lie beyond it.

Distances: losses, the largest relative difference over the logged steps; weights, the largest
over tensors of ||x - y|| / ||y||. With --grad-norm also the logged gradient norms (the clipping
and the spike scores depend on them), judged like the losses. Exit status 0 pass, 1 fail.
"""
import argparse
import json
import os
import pathlib
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import noise_floor  # noqa: E402


def logged(run, key="loss"):
    return {r["step"]: r[key] for r in map(json.loads, open(pathlib.Path(run) / "metrics.jsonl"))}


def relative(a, b):
    """The largest relative difference of two logged series over the steps both have."""
    return max((abs(a[s] - b[s]) / max(abs(b[s]), 1e-30) for s in set(a) & set(b)), default=0.0)


def latest(run):
    d = pathlib.Path(run) / "checkpoints"
    return d / (d / "latest").read_text().strip()


def distances(a, b):
    """(loss distance, weight distance, worst tensor, problems that no tolerance excuses)."""
    la, lb = logged(a), logged(b)
    problems = []
    if sorted(la) != sorted(lb):
        problems.append(f"logged steps differ: {sorted(la)} vs {sorted(lb)}")
    loss_d = relative(la, lb)
    weight_d, worst = 0.0, ""
    with h5py.File(latest(a), "r") as fa, h5py.File(latest(b), "r") as fb:
        names = sorted(fa["model"].keys())
        if names != sorted(fb["model"].keys()):
            problems.append("parameter names differ")
        for n in names:
            if n not in fb["model"]:
                continue
            x, y = fa["model"][n][...], fb["model"][n][...]
            if x.shape != y.shape:
                problems.append(f"weights {n}: shape {x.shape} vs {y.shape}")
                continue
            rel = float(np.linalg.norm(x - y) / max(np.linalg.norm(y), 1e-30))
            if rel > weight_d:
                weight_d, worst = rel, n
    return loss_d, weight_d, worst, problems


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run")
    p.add_argument("ref")
    p.add_argument("--exact", action="store_true")
    p.add_argument("--max-rel", type=float)
    p.add_argument("--floor", action="append", default=[])
    p.add_argument("--name", default="")
    p.add_argument("--factor", type=float, default=noise_floor.DEFAULT_FACTOR)
    p.add_argument("--power", action="store_true")
    p.add_argument("--grad-norm", action="store_true")
    o = p.parse_args()
    name = o.name or f"{o.run} vs {o.ref}"
    loss_d, weight_d, worst, problems = distances(o.run, o.ref)
    norm_d = relative(logged(o.run, "grad_norm"), logged(o.ref, "grad_norm")) if o.grad_norm else 0.0
    print(f"{name}: losses max rel {loss_d:.2e}; weights max rel {weight_d:.2e} ({worst or '-'})" +
          (f"; gradient norms max rel {norm_d:.2e}" if o.grad_norm else ""))
    for line in problems:
        print("  " + line)
    if problems:
        return 1
    if o.exact:
        same = loss_d == 0 and weight_d == 0 and norm_d == 0 and identical(o.run, o.ref)
        print(f"  {'bit-identical' if same else 'NOT bit-identical'}")
        return 0 if same else 1
    if o.max_rel is not None:
        ok = loss_d <= o.max_rel and weight_d <= o.max_rel and norm_d <= o.max_rel
        print(f"  {'within' if ok else 'BEYOND'} {o.max_rel:.0e}")
        return 0 if ok else 1
    if not o.floor:
        p.error("give --exact, --max-rel or at least one --floor run")
    floors = [distances(f, o.ref) for f in o.floor]
    loss_f = max(f[0] for f in floors)
    weight_f = max(f[1] for f in floors)
    judge = noise_floor.power if o.power else noise_floor.verdict
    ok_loss = judge(f"{name} losses", loss_d, loss_f, o.factor)
    ok_weights = judge(f"{name} weights", weight_d, weight_f, o.factor)
    ok_norms = ok_weights if o.power else True
    if o.grad_norm:
        norm_f = max(relative(logged(f, "grad_norm"), logged(o.ref, "grad_norm")) for f in o.floor)
        ok_norms = judge(f"{name} gradient norms", norm_d, norm_f, o.factor)
    if o.power:  # a real change need only show in one of them
        return 0 if (ok_loss or ok_weights or ok_norms) else 1
    return 0 if (ok_loss and ok_weights and ok_norms) else 1


def identical(a, b):
    """Bit-identical weights, not only a zero norm of the difference (NaN would hide there)."""
    with h5py.File(latest(a), "r") as fa, h5py.File(latest(b), "r") as fb:
        return all(np.array_equal(fa["model"][n][...], fb["model"][n][...]) for n in fa["model"].keys())


if __name__ == "__main__":
    sys.exit(main())
