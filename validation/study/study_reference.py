#!/usr/bin/python3
"""A study's results as reference numbers, and a (reduced) study checked against them.

  study_reference.py record STUDY_DIR COMMAND > validation/reference/toy_cpu_study.json
  study_reference.py check REFERENCE_JSON STUDY_DIR

record: per run (STUDY_DIR/<config>-s<seed>/), the retrieval probe's learning-curve area
(probe_auc: trapezoids over steps / steps covered, as analyze computes it), its last token
accuracy (probe_acc) and exact share, the final pretraining loss (mean of the last 10 logged
steps, as analyze) and the evaluated held-out loss; per configuration the mean, min and max over
seeds; and the Findings table of STUDY_DIR/analysis.

check: every run of STUDY_DIR whose configuration the reference has must lie within that
configuration's seed band: [min - w, max + w] with w = max - min over the reference's seeds (the
seed spread itself). A run with the same seed as a reference run is normally identical (same
build, same machine type); a different BLAS kernel changes fp32 rounding, which 600 steps may
amplify into a different seed-like outcome, which the band still accepts. Anything outside names
the run, the figure, its value and the band. For the probe's shares w is at least one step of
the share (one example, one answer token): three seeds that all scored 0 exact answers do not make
one exact answer in a fourth run an outlier.
"""
import csv
import glob
import json
import os
import re
import sys

FIGURES = ["probe_auc", "probe_acc", "probe_exact", "pretrain_final_loss", "eval_loss"]


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
    return out


def runs_of(study_dir):
    runs = {}
    for d in sorted(glob.glob(os.path.join(study_dir, "*-s*"))):
        m = re.fullmatch(r"(.+)-s(\d+)", os.path.basename(d))
        if m and os.path.isdir(os.path.join(d, "pretrain")):
            runs[os.path.basename(d)] = {"config": m.group(1), "seed": int(m.group(2)), **run_figures(d)}
    return runs


def record(study_dir, command):
    runs = runs_of(study_dir)
    configs = {}
    for r in runs.values():
        c = configs.setdefault(r["config"], {"seeds": []})
        c["seeds"].append(r["seed"])
    for name, c in configs.items():
        for fig in FIGURES:
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


def check(reference, study_dir):
    ref = json.load(open(reference))
    runs = runs_of(study_dir)
    if not runs:
        print(f"study_reference: no run directories (<config>-s<seed>/pretrain) in {study_dir}")
        return 1
    bad, checked = [], 0
    for name, r in sorted(runs.items()):
        c = ref["configs"].get(r["config"])
        if c is None:
            bad.append(f"{name}: configuration {r['config']} is not in {reference}")
            continue
        same = ref["runs"].get(name)
        for fig in FIGURES:
            if fig not in c:
                continue
            if fig not in r:
                bad.append(f"{name}: {fig} missing (the reference has it)")
                continue
            lo, hi = c[fig]["min"], c[fig]["max"]
            w = max(hi - lo, r.get("resolution", {}).get(fig, 0.0))
            v = r[fig]
            checked += 1
            where = f"reference run {same[fig]:.6g}" if same and fig in same else "no reference run of this seed"
            status = "identical" if same and fig in same and abs(v - same[fig]) <= 1e-9 * max(1.0, abs(v)) else "differs"
            ok = lo - w <= v <= hi + w
            print(f"  {name:<18} {fig:<20} {v:10.6g}  seed band [{lo - w:.6g}, {hi + w:.6g}]  {where} ({status})  {'ok' if ok else 'OUTSIDE'}")
            if not ok:
                bad.append(f"{name}: {fig} = {v:.6g} outside the reference seed band [{lo - w:.6g}, {hi + w:.6g}] "
                           f"(seeds {c['seeds']}: min {lo:.6g}, max {hi:.6g})")
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
