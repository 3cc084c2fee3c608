#!/usr/bin/env python3
"""Tables and the figure of the toy width ladder, from its run directories.

usage: docs/studies/toy_ruler_widths/summarize.py RUNS_DIR [OUT_DIR]   (RUNS_DIR: runs/toy_ruler_widths)

Reads every <model>-s<seed>/evaluate/results.json, the pretraining probes and
analysis/tables/{findings,diagnostics}.csv; writes OUT_DIR/scores.csv (per model, seed and length),
OUT_DIR/findings.csv (the report's), OUT_DIR/ruler_by_width.png (RULER against head width, one line
per evaluated length, seeds as points) and prints the Markdown tables of the study page. Partial
grids are summarized as far as they go (the seed counts say how far).
"""
import csv, glob, os, shutil, statistics as st, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "toy_ruler"))
import learning_curves  # noqa: E402  (the onset's one definition)
from summarize import scores  # noqa: E402  (evaluate's RULER and niah averages per length)

# The ladder (heads x width = 128, QK width = V width) and the QK-over-V pair at 2 heads.
LADDER = [("w8", 16, 8, 8), ("w16", 8, 16, 16), ("w32", 4, 32, 32), ("w64", 2, 64, 64)]
PAIR = [("k64_v32", 2, 64, 32), ("k32_v64", 2, 32, 64)]
MODELS = LADDER + PAIR


def mean_swing(vals):
    pairs = [abs(a - b) for i, a in enumerate(vals) for b in vals[i + 1:]]
    return st.mean(pairs) if pairs else float("nan")


def main():
    root = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else HERE
    rows = []
    for path in sorted(glob.glob(f"{root}/*-s*/evaluate/results.json")):
        chain = os.path.basename(os.path.dirname(os.path.dirname(path)))
        model, seed = chain.rsplit("-s", 1)
        for length, sc in scores(os.path.dirname(path)).items():
            rows.append({"model": model, "seed": int(seed), "length": length, **sc})
    if not rows:
        sys.exit(f"summarize: no evaluate/results.json under {root}")
    with open(f"{out}/scores.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    lengths = sorted({r["length"] for r in rows})
    get = lambda m, L, k="ruler": [r[k] for r in rows if r["model"] == m and r["length"] == L]
    fmt = lambda v: f"{st.mean(v):.1f}" if v else "–"

    print("| model | heads × QK / V width | seeds | " + " | ".join(f"RULER {L}" for L in lengths)
          + " | " + " | ".join(f"niah {L}" for L in lengths) + " | " + " | ".join(f"swing {L}" for L in lengths) + " |")
    print("|---|---|---|" + "---|" * (3 * len(lengths)))
    for m, h, qk, v in MODELS:
        n = len(get(m, lengths[-1]))
        if not n:
            continue
        cells = [fmt(get(m, L)) for L in lengths] + [fmt(get(m, L, "niah")) for L in lengths]
        cells += [f"{mean_swing(get(m, L)):.1f}" if len(get(m, L)) > 1 else "–" for L in lengths]
        print(f"| {m} | {h} × {qk} / {v} | {n} | " + " | ".join(cells) + " |")
    for L in lengths:
        sw = [abs(a - b) for m, *_ in MODELS for i, a in enumerate(get(m, L)) for b in get(m, L)[i + 1:]]
        if sw:
            print(f"mean seed swing at {L}: {st.mean(sw):.2f} over {len(sw)} seed pairs")
    print("\nper seed, RULER at each length:")
    for m, *_ in MODELS:
        for s in sorted({r["seed"] for r in rows if r["model"] == m}):
            print(f"  {m}-s{s}: " + ", ".join(f"{r['ruler']:.1f}" for L in lengths for r in rows
                                             if r["model"] == m and r["seed"] == s and r["length"] == L))

    print("\npretraining at L, probe exact at the last step per seed (onset: first probe step with exact >= 0.5):")
    print("| model | seeds learnt | per seed: exact (onset) |\n|---|---|---|")
    for m, *_ in MODELS:
        cells, learnt = [], 0
        for run in sorted(glob.glob(f"{root}/{m}-s*/pretrain/probe.jsonl")):
            probe = learning_curves.read_probe(os.path.dirname(run))
            learnt += probe[-1]["exact"] >= 0.5
            onset = learning_curves.onset(probe)
            cells.append(f"s{run.split('-s')[-1].split('/')[0]} {probe[-1]['exact']:.2f} ({onset or '✗'})")
        if cells:
            print(f"| {m} | {learnt} of {len(cells)} | " + ", ".join(cells) + " |")

    fpath = f"{root}/analysis/tables/findings.csv"
    if os.path.exists(fpath):
        shutil.copy(fpath, f"{out}/findings.csv")
        print("\nfindings (effect = A − B, [interval], verdict or seeds per configuration to resolve):")
        for f in csv.DictReader(open(fpath)):
            verdict = f["verdict"] + (f" ({f['seeds_to_resolve']} seeds)" if f["seeds_to_resolve"] else "")
            print(f"  {f['finding']:<26} {f['score']:<10} {float(f['effect']):+6.1f} "
                  f"[{float(f['ci_low']):+.1f}, {float(f['ci_high']):+.1f}]  swing {float(f['mean_seed_swing']):.1f}  "
                  f"{verdict}  A {f['runs_a']}  B {f['runs_b']}")

    diag = f"{root}/analysis/tables/diagnostics.csv"
    if os.path.exists(diag):
        by = {}
        for d in csv.DictReader(open(diag)):
            model = d["run"].split("/")[0].rsplit("-s", 1)[0]
            by.setdefault(model, []).append(d)
        print("\nretrieval heads (runs that answer a probe; count and fraction of all heads, mean over those runs):")
        print("| model | heads in all | runs answering | retrieval heads (per run) | count (mean) | fraction (mean) |")
        print("|---|---|---|---|---|---|")
        for m, h, qk, v in MODELS:
            ds = [d for d in by.get(m, []) if int(d["answered"] or 0) > 0 and d["retrieval_fraction"]]
            if m not in by:
                continue
            counts = [int(d["retrieval_heads"] or 0) for d in ds]
            fr = [float(d["retrieval_fraction"]) for d in ds]
            print(f"| {m} | {4 * h} | {len(ds)} of {len(by[m])} | {', '.join(map(str, counts)) or '–'} | "
                  f"{st.mean(counts) if counts else float('nan'):.1f} | {st.mean(fr) if fr else float('nan'):.3f} |")

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, ax = plt.subplots(figsize=(7.5, 4.6))
    widths = [qk for m, h, qk, v in LADDER if get(m, lengths[-1])]
    names = [m for m, h, qk, v in LADDER if get(m, lengths[-1])]
    for k, L in enumerate(lengths):
        colour = f"C{k}"
        ax.plot(widths, [st.mean(get(m, L)) for m in names], marker="o", color=colour, label=f"{L} tokens")
        for x, m in zip(widths, names):
            ax.scatter([x] * len(get(m, L)), get(m, L), color=colour, s=10, alpha=0.5)
    ax.set_xscale("log", base=2)
    ax.set_xticks(widths)
    ax.set_xticklabels([f"{128 // x} × {x}" for x in widths])
    ax.set_xlabel("heads × head width (QK = V; heads × width = 128, d_model 64)")
    ax.set_ylabel("RULER average (line: mean over seeds; dots: seeds)")
    ax.set_title("Toy width ladder: pretrained at 128, extended to 1024")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, title="evaluated at")
    fig.tight_layout()
    fig.savefig(f"{out}/ruler_by_width.png", dpi=110)


if __name__ == "__main__":
    main()
