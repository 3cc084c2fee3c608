#!/usr/bin/python3
"""The figures of a regression run (validation/regression/run.sh OUT_DIR), as one JSON object.

    extract.py OUT_DIR              {"name": value, ...}: what compare.py checks
    extract.py --reference OUT_DIR  {"command": ..., "figures": {"name": {"value", "check", "group",
                                    "quantum"}}}: the reference file, each figure with the check RULES
                                    gives it (regenerate.sh writes validation/reference/regression.json)

Figures (names are stable; compare.py reports any that appear or disappear):
  shards.*                      the prepared byte-level shards: token counts and sha256 digests
  <stage>.loss@<step>           training loss at chosen steps (metrics.jsonl, 1-based steps)
  <stage>.grad_norm@<step>      gradient norm at the last step
  <stage>.tokens                tokens seen at the last logged step
  <stage>.spike.<kind>.<part>   the spike scores of the last metrics.jsonl line
  <stage>.probe.*@<step>        the first and last retrieval-probe lines (probe.jsonl), when the run
                                has them (pretrain with train.probe_every)
  <stage>.ckpt.*                the final checkpoint: step, tokens_seen, samples_consumed, per-tensor
                                L2 norms of a few weights, the whole model's L2 norm, a structure digest
  evaluate.*                    results.json: RULER/qa scores, prompt sizes, loss by position, multiple choice

Why these digests and not a digest of the weights: a checkpoint's float32 weights differ in their
last bits between BLAS builds (OpenBLAS picks kernels per CPU: AVX-512, AVX2 and SSE sum in
different orders), so a hash of the weights, or of the weights rounded to k digits (any rounding
boundary can be crossed by a 1-ulp difference), would fail on a correct build. The exact figures are
therefore only things computed without floating point: the sha256 of the prepared token arrays
(tokenizer + corpus reading + split: integer data) and of the checkpoint's structure (tensor names,
shapes and dtypes, the [model] configuration attributes, the tokenizer id, the lineage's stage names,
step counters). The weights themselves are checked through per-tensor L2 norms with a relative
tolerance, which moves by ~1e-6 between BLAS builds but by far more when the arithmetic changes.
"""
import hashlib
import json
import math
import os
import re
import sys

import h5py
import numpy as np

STAGES = ("pretrain", "extend", "sft")
# Steps whose loss is recorded (run.sh: pretrain 40 steps, extend and sft 20; log_every 1).
LOSS_STEPS = {"pretrain": (1, 5, 10, 20, 30, 40), "extend": (1, 10, 20), "sft": (1, 10, 20)}
NORM_TENSORS = ("embed.weight", "layers.0.attn.wq", "layers.0.mlp.w_up", "layers.3.attn.wk",
                "layers.3.mlp.w_down", "final_norm.weight", "lm_head.weight")

# How each figure is checked: the first pattern that matches its name gives (kind, group).
#  - "exact": integers and digests: token counts and hashes, step counters, prompt sizes in tokens
#    (the generators and the tokenizer are integer code), sample counts, strings; spike scores
#    (shares of steps beyond 6-7 sigma of the recent mean: none in these runs, and rounding does not
#    make a 6-sigma event).
#  - "rel" / "abs": a floating-point result, checked against the noise floor measured in the same
#    test run (check.sh runs everything again under two other OpenBLAS kernel sets, see
#    validation/noise_floor.py): a figure passes when its difference to the reference (relative for
#    "rel", absolute for "abs") is at most noise_floor.DEFAULT_FACTOR times its group's floor, the
#    largest difference of any figure of the group between the native run and a floor run. Figures
#    are pooled by group (a stage's losses, its weight norms, ...) because one figure's floor is a
#    single draw that can land near zero by chance; the pooled maximum cannot. A perturbation grows
#    through training, so later steps and later stages set their groups' floors.
#  - shares (probe token_acc / exact, multiple-choice accuracy) move in whole tokens, examples or
#    items; their floor is at least one such quantum (quantum(): from the counts of the same run).
#  - the generated-task scores (RULER niah, qa) are whole answers of 4 samples: the toy model answers
#    nothing and a 7-digit number does not appear through a rounding flip, so their group floor is
#    what the floor runs measure with no quantum: zero unless a floor run changes a score.
RULES = [
    (r"\.sha256$|^shards\.|\.step$|^evaluate\.prompt_template$", "exact", None),
    (r"\.ckpt\.(step|tokens_seen|samples_consumed)$|\.tokens$", "exact", None),
    (r"\.(n|skipped|mean_tokens|mean_units|windows|n_tasks|examples|answer_tokens)$", "exact", None),
    (r"\.spike\.", "exact", None),
    (r"^(pretrain|extend|sft)\.loss@", "rel", "loss"),
    (r"\.grad_norm@", "rel", "grad_norm"),
    (r"\.ckpt\.norm", "rel", "weight norms"),
    (r"\.probe\.loss@", "rel", "probe loss"),
    (r"\.probe\.token_acc@", "abs", "probe token_acc"),
    (r"\.probe\.exact@", "abs", "probe exact"),
    (r"^evaluate\.loss_by_position", "rel", "loss by position"),
    (r"^evaluate\..*\.score$|^evaluate\.ruler\.", "abs", "scores"),
    (r"^evaluate\.mc\.acc", "abs", "multiple choice"),
]


def rule(name):
    """(kind, group) of a figure: group is '<stage> <label>', shared by the figures pooled into one floor."""
    for pattern, kind, label in RULES:
        if re.search(pattern, name):
            return kind, (f"{name.split('.')[0]} {label}" if label else None)
    raise SystemExit(f"extract.py: no rule matches figure {name!r}; add one to RULES")


def quantum(name, fig):
    """The smallest step a share can take (one token, example or item), or 0 for other figures."""
    stage = name.split(".")[0]
    if ".probe.token_acc@" in name:
        return 1.0 / max(fig[f"{stage}.probe.answer_tokens"], 1)
    if ".probe.exact@" in name:
        return 1.0 / max(fig[f"{stage}.probe.examples"], 1)
    if name.startswith("evaluate.mc.acc"):
        return 100.0 / max(fig["evaluate.mc.n"], 1)  # percentage points
    return 0.0


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def sha256_array(a):
    """sha256 of an integer array's values, independent of the stored width and byte order."""
    return hashlib.sha256(np.ascontiguousarray(a, dtype="<u8").tobytes()).hexdigest()


def attr_value(v):
    """A JSON-able, platform-independent form of an HDF5 attribute."""
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, np.ndarray):
        return [attr_value(x) for x in v.tolist()]
    if isinstance(v, np.generic):
        return v.item()
    return v


def shard_figures(out, fig):
    for split in ("train", "val"):
        with h5py.File(os.path.join(out, "shards", f"{split}.h5"), "r") as f:
            fig[f"shards.{split}.n_tokens"] = int(f["tokens"].shape[0])
            fig[f"shards.{split}.n_docs"] = int(f["doc_offsets"].shape[0]) - 1
            fig[f"shards.{split}.tokens.sha256"] = sha256_array(f["tokens"][...])
            fig[f"shards.{split}.doc_offsets.sha256"] = sha256_array(f["doc_offsets"][...])


def latest_checkpoint(run):
    with open(os.path.join(run, "checkpoints", "latest")) as f:
        name = f.read().strip()
    return os.path.join(run, "checkpoints", name)


def checkpoint_figures(stage, run, fig):
    with h5py.File(latest_checkpoint(run), "r") as f:
        p = f"{stage}.ckpt."
        fig[p + "step"] = int(f.attrs["step"])
        fig[p + "tokens_seen"] = int(f.attrs["tokens_seen"])
        fig[p + "samples_consumed"] = int(f["state"].attrs["samples_consumed"])
        total = 0.0
        for name, d in sorted(f["model"].items()):
            w = d[...].astype(np.float64)
            sq = float(np.dot(w.ravel(), w.ravel()))
            total += sq
            if name in NORM_TENSORS:
                fig[f"{p}norm.{name}"] = math.sqrt(sq)
        fig[p + "norm_all"] = math.sqrt(total)
        # The structure digest: everything in the checkpoint that is not a floating-point result
        # and not machine-specific (config_ini holds absolute data paths; created_utc, code_version
        # change by design).
        structure = {
            "root": {k: attr_value(f.attrs[k]) for k in ("format", "format_version", "stage", "step",
                                                          "tokens_seen", "seed")},
            "lineage": [s["stage"] for s in json.loads(attr_value(f.attrs["lineage"]))],
            "config": {k: attr_value(v) for k, v in sorted(f["config"].attrs.items()) if k != "config_ini"},
            "datasets": [],
        }
        f.visititems(lambda n, o: structure["datasets"].append([n, list(o.shape), o.dtype.str])
                     if isinstance(o, h5py.Dataset) and not n.startswith("metrics/") else None)
        blob = json.dumps(structure, sort_keys=True, separators=(",", ":")).encode()
        fig[p + "structure.sha256"] = hashlib.sha256(blob).hexdigest()


def training_figures(stage, run, fig):
    lines = read_jsonl(os.path.join(run, "metrics.jsonl"))
    by_step = {int(l["step"]): l for l in lines}
    for s in LOSS_STEPS[stage]:
        if s in by_step:
            fig[f"{stage}.loss@{s}"] = by_step[s]["loss"]
    last = lines[-1]
    fig[f"{stage}.grad_norm@{int(last['step'])}"] = last["grad_norm"]
    fig[f"{stage}.tokens"] = int(last["tokens"])

    def flatten(prefix, obj):
        for k, v in sorted(obj.items()):
            if isinstance(v, dict):
                flatten(f"{prefix}.{k}", v)
            else:
                fig[f"{prefix}.{k}"] = v
    flatten(f"{stage}.spike", last.get("spike", {}))

    probe = os.path.join(run, "probe.jsonl")
    if os.path.exists(probe):
        plines = read_jsonl(probe)
        # The first line scores the initial weights (a pure function of model.seed and the probe's
        # examples), the last the trained ones.
        for pl in (plines[:1] + plines[-1:]) if len(plines) > 1 else plines:
            for k in ("loss", "token_acc", "exact"):
                fig[f"{stage}.probe.{k}@{int(pl['step'])}"] = pl[k]
        if plines:
            fig[f"{stage}.probe.examples"] = int(plines[-1]["examples"])
            fig[f"{stage}.probe.answer_tokens"] = int(plines[-1]["answer_tokens"])
    checkpoint_figures(stage, run, fig)


def evaluate_figures(run, fig):
    with open(os.path.join(run, "results.json")) as f:
        r = json.load(f)
    fig["evaluate.step"] = int(r["step"])
    fig["evaluate.prompt_template"] = r["prompt_template"]
    for t in r["tasks"]:
        p = f"evaluate.{t['task']}@{t['length']}."
        fig[p + "score"] = t["score"]
        for k in ("n", "skipped", "mean_tokens", "mean_units"):
            fig[p + k] = t[k]
    for b in r.get("ruler", {}).get("by_length", []):
        fig[f"evaluate.ruler.score@{b['length']}"] = b["score"]
        fig[f"evaluate.ruler@{b['length']}.n_tasks"] = b["n_tasks"]
    for lp in r.get("loss_by_position", []):
        p = f"evaluate.loss_by_position@{lp['length']}."
        fig[p + "windows"] = lp["windows"]
        fig[p + "mean_loss"] = lp["mean_loss"]
        for b in lp["buckets"]:
            fig[f"{p}[{b['start']},{b['end']})"] = b["mean_loss"]
    mc = r.get("multiple_choice")
    if mc:
        fig["evaluate.mc.n"] = mc["n"]
        fig["evaluate.mc.acc"] = mc["acc"]
        fig["evaluate.mc.acc_norm"] = mc["acc_norm"]


def figures(out):
    fig = {}
    shard_figures(out, fig)
    for stage in STAGES:
        training_figures(stage, os.path.join(out, stage), fig)
    evaluate_figures(os.path.join(out, "evaluate"), fig)
    return fig


def check_of(name, value, fig):
    """A reference entry: the value and how compare.py checks it."""
    kind, group = rule(name)
    entry = {"value": value, "check": kind}
    if group:
        entry["group"] = group
    q = quantum(name, fig)
    if q:
        entry["quantum"] = q
    return entry


def main(argv):
    reference = "--reference" in argv
    args = [a for a in argv if a != "--reference"]
    if len(args) != 1:
        raise SystemExit("usage: extract.py [--reference] OUT_DIR")
    fig = figures(args[0])
    if not reference:
        json.dump(fig, sys.stdout, indent=1, sort_keys=True)
        sys.stdout.write("\n")
        return
    # One figure per line, so that a regenerated reference shows in `git diff` figure by figure.
    command = os.environ.get("REGRESSION_COMMAND", "validation/regression/regenerate.sh")
    rows = []
    for name in sorted(fig):
        rows.append(f"  {json.dumps(name)}: " + json.dumps(check_of(name, fig[name], fig)))
    sys.stdout.write("{\n \"command\": " + json.dumps(command) + ",\n \"figures\": {\n" +
                     ",\n".join(rows) + "\n }\n}\n")


if __name__ == "__main__":
    main(sys.argv[1:])
