#!/usr/bin/env python3
"""Onsets and learning curves of pretraining runs (screen_pretraining.sh's, or a study's).

usage: docs/studies/toy_ruler/learning_curves.py RUN_DIR... [--out PNG] [--budgets 1500,2000,2500]
                                                  [--legend TITLE]

Each RUN_DIR holds a probe.jsonl (the retrieval probe every train.probe_every steps). Prints one
Markdown row per run: the onset (first probe step with exact answers >= 0.5), the exact share at
each budget (the last probe at or before it), and the final one; then, per budget, how many runs
had learnt by it. With --out, draws exact share against step, one line per run, coloured by the
run-directory name's group (the part before "_s<seed>": screen_pretraining.sh's kernel set, or
any name; --legend titles the groups, default "OpenBLAS kernels").
"""
import json, os, sys


def read_probe(run):
    rows = {}
    with open(os.path.join(run, "probe.jsonl")) as f:
        for line in f:
            if line.strip():
                j = json.loads(line)
                rows[j["step"]] = j
    return [rows[s] for s in sorted(rows)]


def onset(rows):
    """The first probe step with exact answers >= 0.5, or None."""
    return next((r["step"] for r in rows if r["exact"] >= 0.5), None)


def exact_at(rows, budget):
    seen = [r for r in rows if r["step"] <= budget]
    return seen[-1]["exact"] if seen else None


def main(argv):
    out, budgets, runs, legend = None, [1500, 2000, 2500], [], "OpenBLAS kernels"
    it = iter(argv)
    for a in it:
        if a == "--out": out = next(it)
        elif a == "--budgets": budgets = [int(b) for b in next(it).split(",")]
        elif a == "--legend": legend = next(it)
        elif a in ("-h", "--help"): print(__doc__); return 0
        else: runs.append(a.rstrip("/"))
    curves = {}
    for run in runs:
        if not os.path.isdir(run):
            continue  # a shell glob's log files beside the run directories
        if not os.path.exists(os.path.join(run, "probe.jsonl")):
            print(f"learning_curves: {run}: no probe.jsonl, skipped", file=sys.stderr)
            continue
        curves[os.path.basename(run)] = read_probe(run)
    if not curves:
        print("learning_curves: error: no run with a probe.jsonl", file=sys.stderr)
        return 2
    print("| run | onset (exact ≥ 0.5) | " + " | ".join(f"exact @{b}" for b in budgets) + " | last step: exact |")
    print("|---|---|" + "---|" * len(budgets) + "---|")
    learnt = {b: 0 for b in budgets}
    for name, rows in curves.items():
        first = onset(rows)
        cells = []
        for b in budgets:
            e = exact_at(rows, b) if rows[-1]["step"] >= b else None
            cells.append("—" if e is None else f"{e:.2f}")
            learnt[b] += first is not None and first <= b and rows[-1]["step"] >= b
        print(f"| {name} | {first if first is not None else '✗'} | " + " | ".join(cells) +
              f" | {rows[-1]['step']}: {rows[-1]['exact']:.2f} |")
    for b in budgets:
        reached = sum(1 for rows in curves.values() if rows[-1]["step"] >= b)
        print(f"learnt by step {b}: {learnt[b]} of {reached} runs that got there")
    if out:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        kinds = sorted({n.rsplit("_s", 1)[0] for n in curves})
        colours = {k: plt.cm.tab10(i) for i, k in enumerate(kinds)}
        fig, ax = plt.subplots(figsize=(7, 4))
        for name, rows in curves.items():
            kind = name.rsplit("_s", 1)[0]
            ax.plot([r["step"] for r in rows], [r["exact"] for r in rows], color=colours[kind], alpha=0.8,
                    label=kind if kind not in ax.get_legend_handles_labels()[1] else None)
        for b in budgets:
            ax.axvline(b, color="grey", lw=0.5, ls=":")
        ax.set_xlabel("pretraining step")
        # The probe's own task and size, as the runs logged them (niah, niah_keys, ...).
        tasks = sorted({r.get("tasks", "?") for rows in curves.values() for r in rows})
        sizes = sorted({r["examples"] for rows in curves.values() for r in rows})
        ax.set_ylabel(f"probe: exact answers ({', '.join(tasks)}, {'/'.join(map(str, sizes))} examples)")
        ax.set_ylim(-0.02, 1.02)
        ax.legend(title=legend, loc="lower right")
        fig.tight_layout()
        fig.savefig(out + ".tmp.png", dpi=110)
        os.replace(out + ".tmp.png", out)
        print(f"learning_curves: wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
