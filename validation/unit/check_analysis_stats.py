#!/usr/bin/python3
"""Recomputes analyze's study statistics independently (numpy) from the raw fixture files and
compares them with analyze's tables.

usage: check_analysis_stats.py OUT WORK

OUT is analyze's output directory, WORK the fixture directory of analysis_fixture.py. Checked:
configuration means of the RULER average, seed-pair swings (mean, max, share of the cross-pool
range), the 'within seed noise' marks, the predictors (final losses from metrics.jsonl, multiple
choice, perplexity), R² and leave-one-out R² of every single predictor, of the feature count and of
the features separately (numpy.linalg.lstsq; features from the fixture's known configurations, not
from analyze's predicates), and the paired bootstrap intervals (reimplemented with numpy's RNG:
the point estimate must match exactly, the percentile endpoints within Monte-Carlo error).
Prints each check; exits 1 on any failure.
"""
import csv
import json
import math
import os
import sys

import numpy as np

out, work = sys.argv[1], sys.argv[2]
failures = 0


def check(name, ok, detail=""):
    global failures
    print(("ok   " if ok else "FAIL ") + name + ("" if ok else "  " + detail))
    if not ok:
        failures += 1


def table(name):
    with open(os.path.join(out, "tables", name + ".csv")) as f:
        return list(csv.DictReader(f))


def close(a, b, tol=1e-7):
    return abs(a - b) <= tol * max(1.0, abs(a), abs(b))


# Known configurations of the fixture (test_analyze_study.sh): features by hand.
FEATURES = {  # qk_norm, gqa, sliding (short_pretrain is true everywhere: constant)
    "A": (0, 0, 0), "B": (1, 0, 0), "C": (0, 1, 1), "D": (1, 1, 0), "E": (1, 0, 1)}

runs = {r["run"]: r for r in table("runs")}
pool = {name: r for name, r in runs.items() if r["in_pool"] == "yes"}
check("pool is the seven good runs", sorted(pool) == ["e_A1", "e_A2", "e_B1", "e_B2", "e_C1", "e_D1", "e_E1"],
      str(sorted(pool)))
letter = {name: name[2] for name in pool}  # e_A1 -> A
cfg_of_letter = {}
for name, r in pool.items():
    cfg_of_letter.setdefault(letter[name], set()).add(r["config"])
check("configurations group exactly the seed replicates", all(len(v) == 1 for v in cfg_of_letter.values())
      and len(cfg_of_letter) == 5, str(cfg_of_letter))
cid = {k: next(iter(v)) for k, v in cfg_of_letter.items()}
letters = sorted(cid, key=lambda k: int(cid[k][1:]))


def results(name):
    with open(os.path.join(work, name, "results.json")) as f:
        return json.load(f)


score = {name: results(name)["ruler"]["average"] for name in pool}
by_letter = {k: [score[n] for n in sorted(pool) if letter[n] == k] for k in letters}
mean = {k: float(np.mean(v)) for k, v in by_letter.items()}

rbl = {r["config"]: r for r in table("ruler_by_length")}
check("config means of the RULER average", all(close(float(rbl[cid[k]]["overall"]), mean[k]) for k in letters),
      str({k: (rbl[cid[k]]["overall"], mean[k]) for k in letters}))

# Seed pairs.
swings = [abs(v[0] - v[1]) for v in by_letter.values() if len(v) == 2]
allscores = list(score.values())
rng_ = max(allscores) - min(allscores)
noise = {r["score"]: r for r in table("seed_noise")}["ruler"]
check("number of seed pairs", int(noise["pairs"]) == len(swings) == 2, noise["pairs"])
check("mean swing", close(float(noise["mean_swing"]), float(np.mean(swings))), noise["mean_swing"])
check("max swing", close(float(noise["max_swing"]), max(swings)))
check("cross-pool range", close(float(noise["cross_pool_range"]), rng_))
check("mean swing as % of range", close(float(noise["mean_swing_pct"]), 100 * np.mean(swings) / rng_))
pairs = table("seed_pairs")
table_swings = sorted(float(p["swing"]) for p in pairs)
check("seed pair rows", len(table_swings) == len(swings) and all(close(a, b) for a, b in zip(table_swings, sorted(swings))),
      str(table_swings))

# Differences, seed-noise marks.
diffs = table("config_differences")
ok = True
for d in diffs:
    a = next(k for k in letters if cid[k] == d["config_a"])
    b = next(k for k in letters if cid[k] == d["config_b"])
    diff = mean[a] - mean[b]
    ok &= close(float(d["difference"]), diff)
    want = "within seed noise" if abs(diff) < np.mean(swings) else "beyond mean swing"
    ok &= d["seed_noise"] == want
check("differences and their seed-noise marks", ok and len(diffs) == 10)


# Paired bootstrap, reimplemented: seeds of each side with replacement; samples within each
# task x length cell with replacement, shared by both sides (paired); RULER aggregation.
def samples(name):
    path = os.path.join(work, name, "samples.jsonl")
    if not os.path.exists(path):
        return None
    s = {}
    with open(path) as f:
        for line in f:
            j = json.loads(line)
            if j.get("score") is not None:
                s[(j["task"], j["length"], j["index"])] = j["score"]
    return s


def cells_for(names_a, names_b):
    sa = [samples(n) for n in names_a]
    sb = [samples(n) for n in names_b]
    per_sample = all(s is not None for s in sa + sb)
    cells = []
    ref = results(names_a[0])
    for t in ref["tasks"]:
        if per_sample:
            keys = None
            for s in sa + sb:
                mine = {k[2] for k in s if k[0] == t["task"] and k[1] == t["length"]}
                keys = mine if keys is None else keys & mine
            keys = sorted(keys)
            A = np.array([[s[(t["task"], t["length"], k)] for k in keys] for s in sa])
            B = np.array([[s[(t["task"], t["length"], k)] for k in keys] for s in sb])
        else:
            def cell(n):
                return next(x["score"] for x in results(n)["tasks"] if x["task"] == t["task"] and x["length"] == t["length"]) / 100
            A = np.array([[cell(n)] for n in names_a])
            B = np.array([[cell(n)] for n in names_b])
        cells.append((t["length"], A, B))
    return cells, per_sample


def boot(cells, per_sample, reps, rng):
    lengths = sorted({c[0] for c in cells})
    groups = [[i for i, c in enumerate(cells) if c[0] == L] for L in lengths]
    nA, nB = cells[0][1].shape[0], cells[0][2].shape[0]

    def stat(sa, sb, pick, units):
        tot = 0.0
        for g in range(len(groups)):
            s = 0.0
            for ci in pick[g]:
                _, A, B = cells[ci]
                u = units[ci]
                s += A[np.ix_(sa, u)].mean() - B[np.ix_(sb, u)].mean()
            tot += s / len(pick[g])
        return 100 * tot / len(groups)

    full_units = [np.arange(c[1].shape[1]) for c in cells]
    est = stat(np.arange(nA), np.arange(nB), groups, full_units)
    vals = []
    for _ in range(reps):
        sa, sb = rng.integers(0, nA, nA), rng.integers(0, nB, nB)
        pick, units = groups, full_units
        if per_sample:
            units = [rng.integers(0, len(u), len(u)) for u in full_units]
        else:
            pick = [[g[j] for j in rng.integers(0, len(g), len(g))] for g in groups]
        vals.append(stat(sa, sb, pick, units))
    return est, np.percentile(vals, 2.5), np.percentile(vals, 97.5)


rng = np.random.default_rng(12345)
ok_est, ok_ci, methods = True, True, set()
for d in diffs:
    a = next(k for k in letters if cid[k] == d["config_a"])
    b = next(k for k in letters if cid[k] == d["config_b"])
    na = [n for n in sorted(pool) if letter[n] == a]
    nb = [n for n in sorted(pool) if letter[n] == b]
    cells, per_sample = cells_for(na, nb)
    est, lo, hi = boot(cells, per_sample, 4000, rng)
    methods.add(d["bootstrap"])
    ok_est &= close(est, float(d["difference"]), 1e-9)
    width = max(hi - lo, 1e-9)
    good = abs(float(d["ci_low"]) - lo) <= 0.1 * width + 1e-6 and abs(float(d["ci_high"]) - hi) <= 0.1 * width + 1e-6
    if not good:
        print(f"     {d['config_a']}-{d['config_b']}: analyze [{d['ci_low']}, {d['ci_high']}], numpy [{lo:.4f}, {hi:.4f}]")
    ok_ci &= good
check("bootstrap point estimates equal the differences", ok_est)
check("bootstrap intervals agree with numpy's within Monte-Carlo error", ok_ci)
check("both bootstrap methods used (D1 has no samples.jsonl)",
      methods == {"seeds x samples (within task x length)", "seeds x tasks (within length)"}, str(methods))


# Predictors, from the raw files.
def final_loss(run_dir, n=10):
    pts = {}
    with open(os.path.join(work, run_dir, "metrics.jsonl")) as f:
        for line in f:
            j = json.loads(line)
            pts[j["step"]] = j["loss"]
    steps = sorted(pts)
    return float(np.mean([pts[s] for s in steps[-n:]]))


pred = {r["config"]: r for r in table("predictors")}
P = {"pretrain_loss": {}, "extend_loss": {}, "short_score": {}, "perplexity": {}}
for k in letters:
    names = [n for n in sorted(pool) if letter[n] == k]
    P["pretrain_loss"][k] = float(np.mean([final_loss("p_" + n[2:]) for n in names]))
    if k != "E":
        P["extend_loss"][k] = float(np.mean([final_loss("x_" + n[2:]) for n in names]))
    P["short_score"][k] = float(np.mean([results(n)["multiple_choice"]["acc"] for n in names]))
    P["perplexity"][k] = float(np.mean([math.exp(results(n)["loss_by_position"][0]["mean_loss"]) for n in names]))
ok = True
for name, vals in P.items():
    for k in letters:
        cell = pred[cid[k]][name]
        ok &= (cell == "") if k not in vals else close(float(cell), vals[k])
check("predictor values per configuration (losses from metrics.jsonl, mc, perplexity)", ok)


def fit(X, y):
    """In-sample and leave-one-out R²; LOO is None when a leave-one-out design is rank-deficient
    (the left-out prediction is then not identified, and analyze must say so instead)."""
    X = np.column_stack([np.ones(len(y)), X])
    coef, *_ = np.linalg.lstsq(X, y, rcond=None)
    ss_tot = ((y - y.mean()) ** 2).sum()
    r2 = 1 - ((y - X @ coef) ** 2).sum() / ss_tot
    press = 0.0
    for i in range(len(y)):
        m = np.arange(len(y)) != i
        if np.linalg.matrix_rank(X[m]) < X.shape[1]:
            return r2, None
        c, *_ = np.linalg.lstsq(X[m], y[m], rcond=None)
        press += (y[i] - X[i] @ c) ** 2
    return r2, 1 - press / ss_tot


def same_loo(cell, loo):
    return cell == "" if loo is None else (cell != "" and close(float(cell), loo, 1e-8))


reg = {r["model"]: r for r in table("regressions")}
for name, vals in P.items():
    ks = [k for k in letters if k in vals]
    r2, loo = fit(np.array([vals[k] for k in ks]), np.array([mean[k] for k in ks]))
    row = reg["single: " + name]
    check(f"R² and LOO R² of {name} (n={len(ks)})", int(row["n"]) == len(ks) and close(float(row["r2"]), r2, 1e-8)
          and same_loo(row["loo_r2"], loo), f"analyze {row['r2']} {row['loo_r2']}, numpy {r2} {loo}")
y = np.array([mean[k] for k in letters])
count = np.array([sum(FEATURES[k]) for k in letters], dtype=float)
r2, loo = fit(count, y)
row = reg["feature count"]
check("feature-count model R², LOO R²", close(float(row["r2"]), r2, 1e-8) and same_loo(row["loo_r2"], loo),
      f"analyze {row['r2']} {row['loo_r2']}, numpy {r2} {loo}")
X = np.array([FEATURES[k] for k in letters], dtype=float)
r2, loo = fit(X, y)
row = reg["features separately"]
check("features-separately R², LOO R²", close(float(row["r2"]), r2, 1e-8) and same_loo(row["loo_r2"], loo) and loo is not None
      and "short_pretrain" in row["note"], f"analyze {row['r2']} {row['loo_r2']} ({row['note']}), numpy {r2} {loo}")

print(f"{failures} failure(s)")
sys.exit(1 if failures else 0)
