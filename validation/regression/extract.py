#!/usr/bin/python3
"""The figures of a regression run (validation/regression/run.sh OUT_DIR), as one JSON object.

    extract.py OUT_DIR              {"name": value, ...}: what compare.py checks
    extract.py --reference OUT_DIR  {"command": ..., "figures": {"name": {"value", "rtol", "atol"}}}:
                                    the reference file, each figure with the tolerance TOLERANCES
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

# Tolerances: the first pattern that matches a figure's name gives (rtol, atol); a figure moved when
# |new - ref| > atol + rtol * |ref| (strings: when they differ).
#
# How they were chosen: the whole run was repeated with OpenBLAS's other kernels
# (OPENBLAS_CORETYPE=Haswell: AVX2, Sandybridge: AVX, against the default AVX-512 SkylakeX ones on
# the reference machine), which is what "another BLAS build" changes: the order of the fp32 sums in
# every GEMM. The largest relative differences seen (README.md has the table) were: pretrain losses
# 1.6e-6, pretrain weight norms 1.3e-6, extend/sft losses 3.7e-5 (a perturbation of the starting
# weights grows through each later stage), extend/sft weight norms 7e-5, probe losses 1.5e-5
# (pretrain) and 1e-4 (extend/sft; the probe averages only 160 answer tokens), gradient norms 1e-3,
# evaluate loss by position 1.2e-4, multiple choice one item in 280. Each tolerance is about 10-60x
# the largest difference seen (room for other compilers and libm versions too, whose last bits differ
# likewise), and still well below what a real change moves: another model.seed changes the pretrain
# loss by 1.2e-3 at step 1 and 2e-2 at step 40, a learning rate 10% higher by 5e-3 to 2e-2 from
# step 5 on.
#  - exact (0, 0): integers and digests: token counts and hashes, step counters, prompt sizes in
#    tokens (the generators and the tokenizer are integer code), sample counts; generated-task
#    scores (RULER niah, qa): the toy model answers nothing (score 0) and a 7-digit number or a name
#    does not appear through a rounding flip, so any change means the generator, decoding or scoring
#    changed; spike scores: shares of steps beyond 6-7 sigma of the recent mean, none in these runs,
#    and a last-bit difference does not make a 6-sigma event.
#  - probe token_acc and exact: shares of 160 answer tokens / 16 examples, where one argmax flip on
#    a near-tie moves them by one token / example: atol one token (one example), from the counts of
#    the same run (tolerance()).
#  - multiple choice acc / acc_norm (280 items): a choice flips on a near-tie of summed
#    log-likelihoods (one flip seen): atol 1.1 points = three items (0.357 each).
TOLERANCES = [
    (r"\.sha256$|^shards\.|\.step$|^evaluate\.prompt_template$", (0.0, 0.0)),
    (r"\.ckpt\.(step|tokens_seen|samples_consumed)$|\.tokens$", (0.0, 0.0)),
    (r"\.(n|skipped|mean_tokens|mean_units|windows|n_tasks|examples|answer_tokens)$", (0.0, 0.0)),
    (r"^pretrain\.loss@", (1e-4, 0.0)),
    (r"^(extend|sft)\.loss@", (1e-3, 0.0)),
    (r"\.grad_norm@", (2e-2, 0.0)),
    (r"\.spike\.", (0.0, 0.0)),
    (r"^pretrain\.ckpt\.norm", (1e-4, 0.0)),
    (r"^(extend|sft)\.ckpt\.norm", (1e-3, 0.0)),
    (r"^pretrain\.probe\.loss@", (2e-4, 0.0)),
    (r"^(extend|sft)\.probe\.loss@", (1e-3, 0.0)),
    (r"\.probe\.(token_acc|exact)@", None),  # per run, from the counts
    (r"^evaluate\.loss_by_position", (1e-3, 0.0)),
    (r"^evaluate\..*\.score$|^evaluate\.ruler\.", (0.0, 0.0)),
    (r"^evaluate\.mc\.", (0.0, 1.1)),
]


def tolerance(name, figures):
    for pattern, tol in TOLERANCES:
        if re.search(pattern, name):
            if tol is None:  # one flipped token (token_acc) or example (exact), plus rounding
                stage = name.split(".")[0]
                count = figures[f"{stage}.probe.answer_tokens" if ".token_acc@" in name
                                else f"{stage}.probe.examples"]
                return 0.0, 1.0 / max(count, 1) + 1e-9
            return tol
    raise SystemExit(f"extract.py: no tolerance rule matches figure {name!r}; add one to TOLERANCES")


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
        rtol, atol = tolerance(name, fig)
        rows.append(f"  {json.dumps(name)}: " +
                    json.dumps({"value": fig[name], "rtol": rtol, "atol": atol}))
    sys.stdout.write("{\n \"command\": " + json.dumps(command) + ",\n \"figures\": {\n" +
                     ",\n".join(rows) + "\n }\n}\n")


if __name__ == "__main__":
    main(sys.argv[1:])
