#!/usr/bin/python3
"""Builds a small study for analyze from real pretrain checkpoints (made by test_analyze_study.sh).

usage: analysis_fixture.py WORK

WORK/p_<run>/ are pretrain run directories. For each run this writes
  WORK/x_<run>/            a fake extension run: metrics.jsonl and a checkpoint whose lineage is the
                           pretrain stage plus an "extend" stage (train.seq_len 64, rope_base_full 1e5),
                           made by copying the pretrain checkpoint and editing its attributes (h5py);
                           config E has no extension (its lineage is pretrain only)
  WORK/e_<run>/            an evaluate run directory: results.json in the schema of src/eval/results.cpp
                           (format headroom-eval-results, version 1) and samples.jsonl (per-sample
                           scores; run D1 has none), scores drawn from known per-configuration rates
and broken evaluate directories: e_missing (no results.json), e_othertok (another tokenizer),
e_otherlen (other evaluation lengths), e_badscore (a score of -500), e_otherseed (another eval.seed).
"""
import json
import os
import shutil
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mpi"))
import checkpoint_identity  # noqa: E402

work = sys.argv[1]
RUNS = {  # run -> (config, seed, extended)
    "A1": ("A", 1, True), "A2": ("A", 2, True),
    "B1": ("B", 1, True), "B2": ("B", 2, True),
    "C1": ("C", 1, True), "D1": ("D", 1, True), "E1": ("E", 1, False),
}
RATE = {"A": 0.7, "B": 0.55, "C": 0.45, "D": 0.3, "E": 0.6}  # probability a sample is answered
MC = {"A": 40.0, "B": 42.0, "C": 38.0, "D": 41.0, "E": 39.0}
LOSS = {"A": 2.5, "B": 2.6, "C": 2.8, "D": 3.0, "E": 2.55}
TASKS = ["niah_single_1", "vt"]
LENGTHS = [256, 512]
SAMPLES = 10


def latest(run_dir):
    with open(os.path.join(run_dir, "checkpoints", "latest")) as f:
        return os.path.join(run_dir, "checkpoints", f.read().strip())


def extend(run, cfg, seed):
    src = latest(os.path.join(work, "p_" + run))
    xdir = os.path.join(work, "x_" + run)
    os.makedirs(os.path.join(xdir, "checkpoints"), exist_ok=True)
    dst = os.path.join(xdir, "checkpoints", "step_00000010.h5")
    shutil.copy(src, dst)
    with open(os.path.join(xdir, "checkpoints", "latest"), "w") as f:
        f.write("step_00000010.h5\n")
    with h5py.File(dst, "r+") as f:
        lineage = json.loads(f.attrs["lineage"])
        ini = lineage[-1]["config"]
        ini = ini.replace("\nseq_len = 32\n", "\nseq_len = 64\n").replace("rope_base_full = 10000", "rope_base_full = 100000")
        assert "seq_len = 64" in ini and "rope_base_full = 100000" in ini
        lineage.append({"stage": "extend", "steps": 10, "tokens": 2560, "run_dir": xdir, "config": ini})
        f.attrs["lineage"] = json.dumps(lineage)
        f.attrs["stage"] = "extend"
        f["config"].attrs["config_ini"] = ini
        f["config"].attrs["rope_base_full"] = 100000.0
        checkpoint_identity.refresh(f)
    rng = np.random.default_rng(100 + seed)
    with open(os.path.join(xdir, "metrics.jsonl"), "w") as f:
        for step in range(1, 11):
            loss = LOSS[cfg] + 0.5 + 1.0 / step + 0.01 * rng.standard_normal()
            spike = {"paper": {"loss": 0.0, "grad_norm": 0.1 * (cfg == "B"), "combined": 0.1 * (cfg == "B")},
                     "olmo": {"loss": 0.0, "grad_norm": 0.0, "combined": 0.05 * (cfg in "CD")}}
            f.write(json.dumps({"step": step, "loss": loss, "grad_norm": 1.0, "lr": 1e-3, "tokens": 256 * step,
                                "spike": spike}) + "\n")
    return dst


def results(run, cfg, seed, ckpt, tokenizer="byte", lengths=LENGTHS, with_samples=True, name=None, stage="extend",
            eval_seed=1, first_score=None):
    edir = os.path.join(work, "e_" + (name or run))
    os.makedirs(edir, exist_ok=True)
    rng = np.random.default_rng(1000 * seed + ord(cfg))
    tasks, lines, by_len = [], [], []
    for L in lengths:
        scores = []
        for t in TASKS:
            p = RATE[cfg] + 0.05 * (seed - 1) - (0.1 if L == lengths[-1] else 0.0)
            s = (rng.random(SAMPLES) < p).astype(float)
            for i, v in enumerate(s):
                lines.append({"task": t, "length": L, "index": i, "score": v, "tokens": L - 20, "units": 3,
                              "prediction": "x", "references": ["y"]})
            tasks.append({"task": t, "length": L, "score": 100 * s.mean(), "n": SAMPLES, "skipped": 0,
                          "metric": "string_match_all", "mean_tokens": L - 20.0, "mean_units": 3.0})
            scores.append(100 * s.mean())
        by_len.append({"length": L, "score": float(np.mean(scores)), "n_tasks": len(TASKS)})
    # evaluate orders tasks task-major, then length
    tasks.sort(key=lambda e: (TASKS.index(e["task"]), e["length"]))
    mc = MC[cfg] + seed - 1
    loss = LOSS[cfg] + 0.02 * (seed - 1)
    doc = {
        "format": "headroom-eval-results", "format_version": 1, "checkpoint": ckpt, "stage": stage,
        "step": 10, "config_id": "cfg-" + cfg, "tokenizer_id": tokenizer, "prompt_template": "base",
        "prompt_template_text": "{prompt}{answer_prefix}", "code_version": "test", "created_utc": "2026-01-01T00:00:00Z",
        "ranks": 1, "seconds": 1.0,
        "settings": {"seed": eval_seed, "samples": SAMPLES, "lengths": lengths, "tasks": TASKS + ["loss_by_position", "mc"],
                     "addressable_length": 512, "allow_beyond_training": True},
        "tasks": tasks,
        "ruler": {"by_length": by_len, "average": float(np.mean([b["score"] for b in by_len]))},
        "loss_by_position": [{"length": 256, "windows": 2, "mean_loss": loss,
                              "buckets": [{"start": 0, "end": 128, "mean_loss": loss + 0.2, "tokens": 256},
                                          {"start": 128, "end": 256, "mean_loss": loss - 0.2, "tokens": 256}]}],
        "multiple_choice": {"file": "mc.jsonl", "n": 20, "acc": mc, "acc_norm": mc + 1},
    }
    if first_score is not None:
        tasks[0]["score"] = first_score
    with open(os.path.join(edir, "results.json"), "w") as f:
        json.dump(doc, f, indent=2)
    if with_samples:
        with open(os.path.join(edir, "samples.jsonl"), "w") as f:
            for line in lines:
                f.write(json.dumps(line) + "\n")
    with open(os.path.join(edir, "DONE"), "w") as f:
        f.write("done\n")


for run, (cfg, seed, ext) in RUNS.items():
    ckpt = extend(run, cfg, seed) if ext else latest(os.path.join(work, "p_" + run))
    results(run, cfg, seed, ckpt, with_samples=(run != "D1"), stage="extend" if ext else "pretrain")
os.makedirs(os.path.join(work, "e_missing"), exist_ok=True)
a1 = latest(os.path.join(work, "x_A1"))
results("A1", "A", 1, a1, tokenizer="bpe300-0123456789abcdef", name="othertok")
results("A1", "A", 1, a1, lengths=[256, 1024], name="otherlen")
results("A1", "A", 1, a1, name="badscore", first_score=-500.0)
results("A1", "A", 1, a1, name="otherseed", eval_seed=7)
print("fixture: ok")
