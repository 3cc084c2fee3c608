#!/usr/bin/env python3
"""Draws analyze's figures from OUT/plots/plot_data.json into OUT/plots/*.png (written by analyze)."""
import json
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

out = sys.argv[1]
plots = os.path.join(out, "plots")
with open(os.path.join(plots, "plot_data.json")) as f:
    data = json.load(f)
failed = []


def save(fig, name):
    fig.savefig(os.path.join(plots, name), dpi=110, bbox_inches="tight")
    plt.close(fig)


def legend_below(ax):
    """Configuration labels are long: the legend goes under the axes, one entry per line."""
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(0.0, -0.15), frameon=False)


def nan(v):
    return float("nan") if v is None else v


def guarded(name, fn):
    try:
        fn()
    except Exception as e:  # one broken figure must not cost the others
        failed.append(name)
        print(f"plots.py: {name}: {type(e).__name__}: {e}", file=sys.stderr)


def ruler():
    d = data["ruler_by_length"]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for s in d["series"]:
        ax.plot(d["lengths"], [nan(v) for v in s["scores"]], marker="o", label=s["label"])
    if len(d["lengths"]) > 1:
        ax.set_xscale("log", base=2)
    ax.set_xticks(d["lengths"])
    ax.set_xticklabels([str(x) for x in d["lengths"]])
    ax.set_xlabel("context length (tokens)")
    ax.set_ylabel("RULER average (0-100)")
    ax.set_title("RULER score vs context length")
    ax.grid(alpha=0.3)
    legend_below(ax)
    save(fig, "ruler_by_length.png")


def loss_curves():
    d = data["loss_curves"]
    stages = sorted(d, key=lambda s: (["pretrain", "extend", "sft"] + [s]).index(s))
    fig, axes = plt.subplots(1, len(stages), figsize=(6 * len(stages), 4.2), squeeze=False)
    for ax, stage in zip(axes[0], stages):
        for c in d[stage]:
            ax.plot(c["steps"], [nan(v) for v in c["loss"]], label=c["label"], lw=1)
        ax.set_title(f"{stage} loss")
        ax.set_xlabel("step")
        ax.set_ylabel("training loss (nats/token)")
        ax.grid(alpha=0.3)
        legend_below(ax)
    save(fig, "loss_curves.png")


def spikes():
    d = data["spikes"]
    configs = d["configs"]
    stages = sorted(d["scores"], key=lambda s: (["pretrain", "extend", "sft"] + [s]).index(s))
    fig, axes = plt.subplots(1, len(stages), figsize=(6 * len(stages), 4.2), squeeze=False)
    for ax, stage in zip(axes[0], stages):
        rules = list(d["scores"][stage])
        width = 0.8 / max(1, len(rules))
        for k, rule in enumerate(rules):
            vals = [nan(v) for v in d["scores"][stage][rule]]
            xs = [i + (k - (len(rules) - 1) / 2) * width for i in range(len(configs))]
            ax.bar(xs, [0 if math.isnan(v) else 100 * v for v in vals], width, label=rule)
        ax.set_xticks(range(len(configs)))
        ax.set_xticklabels(configs)
        ax.set_ylim(bottom=0, top=max([1.0] + [100 * v for r in rules for v in d["scores"][stage][r] if v is not None]) * 1.1)
        ax.set_ylabel("combined spike score (% of steps in window)")
        ax.set_title(f"spike scores at the end of {stage}")
        ax.legend(fontsize=7)
    save(fig, "spike_scores.png")


def effective_rank():
    d = data["effective_rank"]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for s in d["series"]:
        ax.plot(range(len(s["values"])), [nan(v) for v in s["values"]], marker=".", label=s["label"])
    ax.set_xlabel("layer (block output)")
    ax.set_ylabel("effective rank")
    ax.set_title("residual-stream effective rank")
    ax.grid(alpha=0.3)
    legend_below(ax)
    save(fig, "effective_rank.png")


def heatmap(h):
    grid = [[nan(v) for v in row] for row in h["scores"]]
    layers, heads = len(grid), len(grid[0]) if grid else 0
    fig, ax = plt.subplots(figsize=(max(4, 0.5 * heads + 2), max(3, 0.35 * layers + 1.5)))
    ax.set_facecolor("lightgray")  # undefined scores (no correctly answered probe) stay gray
    im = ax.imshow(grid, aspect="auto", cmap="viridis", vmin=0, vmax=1, interpolation="nearest")
    fig.colorbar(im, ax=ax, label="retrieval score (Wu et al.)")
    ax.set_xticks(range(heads))
    ax.set_yticks(range(layers))
    for l in range(layers):
        for k in range(heads):
            if not math.isnan(grid[l][k]) and grid[l][k] > h["threshold"]:
                ax.text(k, l, "R", ha="center", va="center", color="white", fontsize=7)
    ax.set_xlabel("head")
    ax.set_ylabel("layer")
    title = h["title"]
    if h["tests"] == 0:
        title += "\n(no correctly answered probe: scores undefined)"
    ax.set_title(title, fontsize=9)
    save(fig, h["file"])


def scatter(s):
    fig, ax = plt.subplots(figsize=(5.5, 4.2))
    ax.scatter(s["x"], s["y"])
    for x, y, lab in zip(s["x"], s["y"], s["labels"]):
        ax.annotate(lab, (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
    b0, b1 = s["coef"]
    lo, hi = min(s["x"]), max(s["x"])
    ax.plot([lo, hi], [b0 + b1 * lo, b0 + b1 * hi], "--", color="gray")
    ax.set_xlabel(s["x_label"])
    ax.set_ylabel(s["y_label"])
    ax.set_title(f"R² = {s['r2']:.3f} (n = {len(s['x'])})")
    ax.grid(alpha=0.3)
    save(fig, s["file"])


def probe_curves():
    d = data["probe_curves"]
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    colors = {}
    for c in d:
        colors.setdefault(c["config"], f"C{len(colors) % 10}")
    by_config = {}
    for c in d:
        col = colors[c["config"]]
        ax.plot(c["tokens"], c["token_acc"], color=col, lw=0.7, alpha=0.45)
        by_config.setdefault(c["config"], []).append(c)
    for cfg, runs in by_config.items():
        n = min(len(r["token_acc"]) for r in runs)
        mean = [sum(r["token_acc"][i] for r in runs) / len(runs) for i in range(n)]
        ax.plot(runs[0]["tokens"][:n], mean, color=colors[cfg], lw=2.2, label=f"{runs[0]['label']} ({len(runs)} seeds)")
    ax.set_xlabel("training tokens")
    ax.set_ylabel("probe answer-token accuracy")
    ax.set_title("Retrieval probe learning curves")
    ax.grid(alpha=0.3)
    legend_below(ax)
    save(fig, "probe_curves.png")


if "ruler_by_length" in data:
    guarded("ruler_by_length.png", ruler)
if "probe_curves" in data:
    guarded("probe_curves.png", probe_curves)
if "loss_curves" in data:
    guarded("loss_curves.png", loss_curves)
if "spikes" in data:
    guarded("spike_scores.png", spikes)
if "effective_rank" in data:
    guarded("effective_rank.png", effective_rank)
for h in data.get("heatmaps", []):
    guarded(h["file"], lambda h=h: heatmap(h))
for s in data.get("scatter", []):
    guarded(s["file"], lambda s=s: scatter(s))
sys.exit(1 if failed else 0)
