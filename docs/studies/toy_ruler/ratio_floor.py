#!/usr/bin/env python3
"""The toy RULER study's range / swing ratio, what it depends on, and what seed noise alone gives.

    docs/studies/toy_ruler/ratio_floor.py [SCORES_CSV] [--recipe main] [--draws 20000]

SCORES_CSV is summarize.py's scores.csv (default docs/studies/toy_ruler/scores.csv). For several
long-context scores (RULER at each length and averaged over lengths, niah at 4L) it prints the range
of the architectures' seed means, the mean seed swing (mean |a - b| over every seed pair of an
architecture) and their ratio. Then the noise floor: the same grid (as many architectures and seeds)
drawn with no architecture effect at all, every run normal with the pooled within-architecture
standard deviation of RULER at the longest length; the ratio such a grid shows (mean, 95th and 99th
percentile). A ratio above the 99th percentile says the architectures differ; the issue's 4x asks for
architecture effects large against the seed noise, which no amount of seeds changes (the swing is a
per-pair figure).
"""
import argparse
import csv
import itertools
import random
import statistics as st
from collections import defaultdict


def range_swing(by_arch):
    """by_arch: {arch: [score per seed]} -> (range of means, mean pairwise |a - b|)."""
    means = [st.mean(v) for v in by_arch.values()]
    pairs = [abs(a - b) for v in by_arch.values() for a, b in itertools.combinations(v, 2)]
    return max(means) - min(means), st.mean(pairs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scores", nargs="?", default="docs/studies/toy_ruler/scores.csv")
    ap.add_argument("--recipe", default="main")
    ap.add_argument("--draws", type=int, default=20000)
    a = ap.parse_args()
    rows = [r for r in csv.DictReader(open(a.scores)) if r["recipe"] == a.recipe]
    lengths = sorted({int(r["length"]) for r in rows})
    # {score name: {arch: {seed: [values to average]}}}
    table = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for name in [f"ruler@{L}" for L in lengths] + ["ruler, mean over lengths", f"niah@{lengths[-1]}"]:
        table[name]  # the rows' order
    for r in rows:
        L = int(r["length"])
        table[f"ruler@{L}"][r["model"]][r["seed"]].append(float(r["ruler"]))
        table["ruler, mean over lengths"][r["model"]][r["seed"]].append(float(r["ruler"]))
        if L == lengths[-1]:
            table[f"niah@{L}"][r["model"]][r["seed"]].append(float(r["niah"]))
    print("| score | range over architectures | mean seed swing | ratio |\n|---|---|---|---|")
    for name, arch in table.items():
        by = {m: [st.mean(v) for v in seeds.values()] for m, seeds in arch.items()}
        rng, sw = range_swing(by)
        print(f"| {name} | {rng:.2f} | {sw:.2f} | {rng / sw:.2f}x |")

    longest = {m: [st.mean(v) for v in seeds.values()] for m, seeds in table[f"ruler@{lengths[-1]}"].items()}
    n_arch, n_seed = len(longest), max(len(v) for v in longest.values())
    resid = [x - st.mean(v) for v in longest.values() for x in v]
    dof = len(resid) - n_arch
    sd = (sum(x * x for x in resid) / dof) ** 0.5
    rng_obs, sw_obs = range_swing(longest)
    rnd = random.Random(1)
    ratios = []
    for _ in range(a.draws):
        grid = {i: [rnd.gauss(0.0, sd) for _ in range(n_seed)] for i in range(n_arch)}
        r, s = range_swing(grid)
        ratios.append(r / s)
    ratios.sort()
    q = lambda p: ratios[min(len(ratios) - 1, int(p * len(ratios)))]
    print(f"\nnoise floor of ruler@{lengths[-1]}: {n_arch} architectures x {n_seed} seeds with no "
          f"architecture effect, runs normal with sd {sd:.2f} (pooled within architectures, {dof} "
          f"degrees of freedom), {a.draws} draws: ratio mean {st.mean(ratios):.2f}x, 95th percentile "
          f"{q(0.95):.2f}x, 99th {q(0.99):.2f}x; observed {rng_obs / sw_obs:.2f}x")


if __name__ == "__main__":
    main()
