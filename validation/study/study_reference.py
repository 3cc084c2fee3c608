#!/usr/bin/python3
"""A study's results as reference numbers, and a (reduced) study checked against them.

  study_reference.py record STUDY_DIR COMMAND > validation/reference/toy_cpu_study.json
  study_reference.py check REFERENCE_JSON STUDY_DIR

record: per run (STUDY_DIR/<config>-s<seed>/), the retrieval probe's learning-curve area
(probe_auc: trapezoids over steps / steps covered, as analyze computes it), its last token
accuracy (probe_acc) and exact share, the final pretraining loss (mean of the last 10 logged
steps, as analyze) and the evaluated held-out loss; per configuration the mean, min and max over
seeds; and the Findings table of STUDY_DIR/analysis.

check: every run of STUDY_DIR whose configuration the reference has must lie within SEED_SIGMAS
(4) pooled seed standard deviations of that configuration's reference mean (times sqrt(1 + 1/n):
the run and the mean of n seeds are both draws). The standard deviation is pooled over all the
reference's configurations (16 degrees of freedom), because three seeds of one configuration give a
range that is itself a noisy draw: a band of [min - range, max + range] of three seeds let a correct
run on another machine's kernels fall outside (wide-s1 probe_acc on an AMD EPYC: 0.345 against the
band [0.353, 0.456], 1.5 pooled deviations from the mean). A run with the same seed as a reference
run is normally identical (same build, same kernels); a different BLAS kernel set changes fp32
rounding, which 600 steps amplify into a different seed-like outcome, which the band accepts.
For the probe's shares the deviation is at least one step of the share (one example, one answer
token). Anything outside names the run, the figure, its value and the band.

Why the seed band, recorded once, and not a floor measured in this run like the other numerical
tests (validation/noise_floor.py): after 600 steps a last-bit difference has grown into a different
outcome of the same distribution a seed change draws from, so the noise that bounds a correct run
here is seed noise, and measuring it needs several seeds of each configuration: the full study's
three, recorded with it and pooled over configurations. Re-measuring it in CI would triple the
test's 2 minutes.
"""
import csv
import glob
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import noise_floor  # noqa: E402

FIGURES = ["probe_auc", "probe_acc", "probe_exact", "pretrain_final_loss", "eval_loss"]
# RULER's niah tasks: their average per length is the long-context figure next to RULER's.
NIAH = [f"niah_{t}" for t in ("single_1", "single_2", "single_3", "multikey_1", "multikey_2",
                               "multikey_3", "multivalue", "multiquery")]


def figure_names(runs):
    """FIGURES, then the per-length RULER and niah averages (ruler@L, niah@L) the runs have."""
    extra = {k for r in runs for k in r if k.startswith(("ruler@", "niah@"))}
    return FIGURES + sorted(extra, key=lambda k: (k.split("@")[0], int(k.split("@")[1])))


def read_jsonl(path):
    rows = {}
    with open(path) as f:
        for line in f:
            if line.strip():
                j = json.loads(line)
                rows[j["step"]] = j  # a repeated step (resume) keeps its last line
    return [rows[k] for k in sorted(rows)]


def probe_auc(points):
    if len(points) == 1:
        return points[0]["token_acc"]
    area = sum(0.5 * (b["token_acc"] + a["token_acc"]) * (b["step"] - a["step"]) for a, b in zip(points, points[1:]))
    return area / (points[-1]["step"] - points[0]["step"])


def run_figures(chain_dir):
    out = {}
    pre = os.path.join(chain_dir, "pretrain")
    probe = os.path.join(pre, "probe.jsonl")
    if os.path.exists(probe):
        p = read_jsonl(probe)
        out.update(probe_auc=probe_auc(p), probe_acc=p[-1]["token_acc"], probe_exact=p[-1]["exact"])
        # The probe's shares move in steps of one example / one answer token.
        out["resolution"] = {"probe_exact": 1.0 / p[-1]["examples"],
                             "probe_acc": 1.0 / p[-1]["answer_tokens"],
                             "probe_auc": 1.0 / p[-1]["answer_tokens"]}
    # The BLAS kernels the pretraining ran on (its log's "BLAS: ... kernels NAME" line): with the
    # same kernels a run reproduces its reference bit for bit, with others it is another draw.
    log = os.path.join(pre, "log.txt")
    if os.path.exists(log):
        m = re.search(r"BLAS: .*kernels (\S+)", open(log).read())
        if m:
            out["kernels"] = m.group(1)
    metrics = os.path.join(pre, "metrics.jsonl")
    if os.path.exists(metrics):
        losses = [m["loss"] for m in read_jsonl(metrics)][-10:]
        out["pretrain_final_loss"] = sum(losses) / len(losses)
    results = os.path.join(chain_dir, "evaluate", "results.json")
    if os.path.exists(results):
        r = json.load(open(results))
        curves = r.get("loss_by_position") or r.get("loss") or []
        if isinstance(curves, list) and curves and "mean_loss" in curves[0]:
            out["eval_loss"] = curves[0]["mean_loss"]
        # The scored RULER lengths: the average over the tasks that fit a length (evaluate's own)
        # and over the niah tasks among them.
        cell = {(t["task"], t["length"]): t["score"] for t in r.get("tasks", []) if t.get("score") is not None}
        for b in r.get("ruler", {}).get("by_length", []):
            if b.get("score") is None:
                continue
            out[f"ruler@{b['length']}"] = b["score"]
            niah = [cell[(t, b["length"])] for t in NIAH if (t, b["length"]) in cell]
            if niah:
                out[f"niah@{b['length']}"] = sum(niah) / len(niah)
    return out


def runs_of(study_dir):
    runs = {}
    for d in sorted(glob.glob(os.path.join(study_dir, "*-s*"))):
        m = re.fullmatch(r"(.+)-s(\d+)", os.path.basename(d))
        if m and os.path.isdir(os.path.join(d, "pretrain")):
            runs[os.path.basename(d)] = {"config": m.group(1), "seed": int(m.group(2)), **run_figures(d)}
            runs[os.path.basename(d)]["evaluated"] = os.path.isdir(os.path.join(d, "evaluate"))
    return runs


def record(study_dir, command):
    runs = runs_of(study_dir)
    configs = {}
    for r in runs.values():
        c = configs.setdefault(r["config"], {"seeds": []})
        c["seeds"].append(r["seed"])
    for name, c in configs.items():
        for fig in figure_names(runs.values()):
            v = [r[fig] for r in runs.values() if r["config"] == name and fig in r]
            if v:
                c[fig] = {"mean": sum(v) / len(v), "min": min(v), "max": max(v)}
    findings = []
    fpath = os.path.join(study_dir, "analysis", "tables", "findings.csv")
    if os.path.exists(fpath):
        findings = list(csv.DictReader(open(fpath)))
    json.dump({"command": command, "study_dir": study_dir, "runs": runs, "configs": configs, "findings": findings},
              sys.stdout, indent=1, sort_keys=True)
    print()


# A run of the CI subset is one more draw of a configuration's seed distribution (above); it passes
# when it lies within SEED_SIGMAS pooled seed standard deviations of its configuration's reference
# mean. 4: the pooled deviation has 16 degrees of freedom (8 configurations x 3 seeds), and with 10
# figures checked per CI run, t(16) puts a correct run outside 4 sigma with probability ~1e-3 per
# figure, ~1% per CI run. What it catches: a stage that stops working or moves the numbers by more
# than seed noise (4 sigma of the final loss is 0.09 nats); a subtler change of the retrieval scores
# hides in the toy study's own seed noise (4 sigma of probe_acc is 0.18), which only more seeds shrink.
SEED_SIGMAS = 4.0


# Whether a run's pretraining learnt to retrieve at L: the toy RULER study's seeds split into runs
# that answer most of the probe exactly (0.56-1.0) and runs that never leave the copy plateau
# (<= 0.28), and every later score follows that split. A run is checked against the reference runs
# of its own kind when its configuration has some (a learnt run's scores against the learnt seeds'
# spread, not against a spread that the plateau seeds' zeros inflate); else against all seeds.
LEARNT_EXACT = 0.5


def learnt(run):
    return run.get("probe_exact", 0.0) >= LEARNT_EXACT


def pooled_seed_sd(ref, keep=lambda run: True):
    """{figure: the seed standard deviation pooled over the reference's configurations}, over the
    runs `keep` selects."""
    out = {}
    for fig in figure_names(ref["runs"].values()):
        ss, dof = 0.0, 0
        for name in ref["configs"]:
            v = [r[fig] for r in ref["runs"].values() if r["config"] == name and fig in r and keep(r)]
            if len(v) > 1:
                m = sum(v) / len(v)
                ss += sum((x - m) ** 2 for x in v)
                dof += len(v) - 1
        if dof:
            out[fig] = (ss / dof) ** 0.5
    return out


def check(reference, study_dir):
    ref = json.load(open(reference))
    runs = runs_of(study_dir)
    if not runs:
        print(f"study_reference: no run directories (<config>-s<seed>/pretrain) in {study_dir}")
        return 1
    sd_all, sd_learnt = pooled_seed_sd(ref), pooled_seed_sd(ref, learnt)
    bad, checked = [], 0
    for name, r in sorted(runs.items()):
        c = ref["configs"].get(r["config"])
        if c is None:
            bad.append(f"{name}: configuration {r['config']} is not in {reference}")
            continue
        same = ref["runs"].get(name)
        kin = [x for x in ref["runs"].values() if x["config"] == r["config"] and learnt(x)]
        own_kind = learnt(r) and kin
        print(f"  {name}: checked against {'the learnt seeds ' + str(sorted(x['seed'] for x in kin)) if own_kind else 'all seeds'}"
              f" of {r['config']} (probe_exact {r.get('probe_exact', float('nan')):.3g}; learnt at >= {LEARNT_EXACT});"
              f" BLAS kernels {r.get('kernels', '?')}, the reference run's {same.get('kernels', '?') if same else '-'}")
        sd = sd_learnt if own_kind else sd_all
        for fig in figure_names(ref["runs"].values()):
            if fig not in c or fig not in sd:
                continue
            if fig not in r:
                # A CI subset may stop after pretraining (its study's stages): a run with no
                # evaluate/ is checked on the pretraining figures only; one with it must have them all.
                if not r["evaluated"] and (fig == "eval_loss" or fig.startswith(("ruler@", "niah@"))):
                    continue
                bad.append(f"{name}: {fig} missing (the reference has it)")
                continue
            # The noise of (this draw - the mean of n reference draws), at least one quantum.
            pool = [x[fig] for x in kin if fig in x] if own_kind else None
            n = len(pool) if own_kind else len(c["seeds"])
            floor = max(sd[fig] * (1 + 1 / n) ** 0.5, r.get("resolution", {}).get(fig, 0.0))
            v, mean = r[fig], sum(pool) / n if own_kind else c[fig]["mean"]
            lo, hi = mean - SEED_SIGMAS * floor, mean + SEED_SIGMAS * floor
            checked += 1
            where = f"reference run {same[fig]:.6g}" if same and fig in same else "no reference run of this seed"
            status = "identical" if same and fig in same and abs(v - same[fig]) <= 1e-9 * max(1.0, abs(v)) else "differs"
            ok = noise_floor.verdict(f"study {name} {fig}", abs(v - mean), floor, SEED_SIGMAS)
            print(f"  {name:<18} {fig:<20} {v:10.6g}  seed band [{lo:.6g}, {hi:.6g}]  {where} ({status})  {'ok' if ok else 'OUTSIDE'}")
            if not ok:
                bad.append(f"{name}: {fig} = {v:.6g} outside the reference seed band [{lo:.6g}, {hi:.6g}] "
                           f"(mean {mean:.6g} of {n} seed(s) +- {SEED_SIGMAS:g} x pooled seed sd "
                           f"{sd[fig]:.3g} x sqrt(1 + 1/{n}))")
    if bad:
        print(f"study_reference: {len(bad)} problem(s) against {reference}:")
        for b in bad:
            print("  " + b)
        return 1
    print(f"study_reference: {checked} figures of {len(runs)} run(s) within the reference seed bands ({reference})")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "record":
        record(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 4 and sys.argv[1] == "check":
        sys.exit(check(sys.argv[2], sys.argv[3]))
    else:
        sys.exit(__doc__)
