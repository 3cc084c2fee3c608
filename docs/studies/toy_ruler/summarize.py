#!/usr/bin/env python3
"""Tables and figures of the toy RULER study for the README, from its run directories.

usage: docs/studies/toy_ruler/summarize.py RUNS_DIR [OUT_DIR]   (RUNS_DIR: runs/toy_ruler)

Reads every <model>-s<seed>/evaluate*/results.json (evaluate: main recipe, evaluate_base: no
extension, evaluate_yarn, evaluate_frozen) and analysis/tables/{findings,diagnostics}.csv; writes
OUT_DIR/scores.csv (per model, recipe and seed), OUT_DIR/ruler_by_length.png and prints the
Markdown tables the README shows. Names the architectures by their model file, which the
analyze report's configuration labels (every differing key of the lineage) do not.
"""
import csv, glob, json, os, statistics as st, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import learning_curves  # noqa: E402  (the onset's one definition)

NIAH = [f"niah_{t}" for t in ("single_1", "single_2", "single_3", "multikey_1", "multikey_2",
                               "multikey_3", "multivalue", "multiquery")]
RECIPES = {"evaluate": "main", "evaluate_base": "none", "evaluate_yarn": "yarn", "evaluate_frozen": "frozen"}
ORDER = ["wide", "narrow", "k32_v8", "k8_v32", "wide_qknorm", "wide_qknorm_head", "wide_qknorm_post",
         "wide_gqa", "wide_swa", "wide_gqa_swa"]


def scores(evaluate_dir):
    """{length: {"ruler": evaluate's RULER average, "niah": the niah tasks' mean, "niah_tasks": n,
    <niah task>: score}} of one evaluate run directory."""
    r = json.load(open(os.path.join(evaluate_dir, "results.json")))
    cell = {(t["task"], t["length"]): t["score"] for t in r["tasks"] if t.get("score") is not None}
    out = {}
    for b in r["ruler"]["by_length"]:
        niah = [cell[(t, b["length"])] for t in NIAH if (t, b["length"]) in cell]
        out[b["length"]] = {"ruler": b["score"], "niah": sum(niah) / len(niah), "niah_tasks": len(niah),
                            **{t: cell.get((t, b["length"]), "") for t in NIAH}}
    return out


def load(root):
    rows = []
    for path in sorted(glob.glob(f"{root}/*-s*/evaluate*/results.json")):
        run = os.path.dirname(path)
        model, seed = os.path.basename(os.path.dirname(run)).rsplit("-s", 1)
        for length, sc in scores(run).items():
            rows.append({"model": model, "recipe": RECIPES[os.path.basename(run)], "seed": int(seed),
                         "length": length, **sc})
    return rows


def mean_swing(vals):
    pairs = [abs(a - b) for i, a in enumerate(vals) for b in vals[i + 1:]]
    return st.mean(pairs) if pairs else float("nan")


def main():
    root = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.dirname(os.path.abspath(__file__))
    rows = load(root)
    with open(f"{out}/scores.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    lengths = sorted({r["length"] for r in rows})
    get = lambda m, rc, L, k: [r[k] for r in rows if r["model"] == m and r["recipe"] == rc and r["length"] == L]
    print("| architecture | recipe | seeds | " + " | ".join(f"RULER {L}" for L in lengths) + " | "
          + " | ".join(f"niah {L}" for L in lengths) + f" | seed swing, RULER {lengths[-1]} |")
    print("|---|---|---|" + "---|" * (2 * len(lengths) + 1))
    for rc in ("main", "none", "yarn", "frozen"):
        for m in ORDER:
            v = get(m, rc, lengths[-1], "ruler")
            if not v:
                continue
            # A branch evaluated at fewer lengths (evaluate_base_lengths) has no score at the others.
            mean = lambda L, k: f"{st.mean(get(m, rc, L, k)):.1f}" if get(m, rc, L, k) else "–"
            cells = [mean(L, "ruler") for L in lengths] + [mean(L, "niah") for L in lengths]
            print(f"| {m} | {rc} | {len(v)} | " + " | ".join(cells) + f" | {mean_swing(v):.1f} |")
    # Range over the main recipe's architectures against the mean swing of their seed pairs.
    L = lengths[-1]
    means = {m: st.mean(get(m, "main", L, "ruler")) for m in ORDER if get(m, "main", L, "ruler")}
    swings = [abs(a - b) for m in means for i, a in enumerate(get(m, "main", L, "ruler"))
              for b in get(m, "main", L, "ruler")[i + 1:]]
    rng = max(means.values()) - min(means.values())
    print(f"\nmain recipe, RULER@{L}: range over architectures {rng:.2f} (max {max(means, key=means.get)}, "
          f"min {min(means, key=means.get)}), mean seed swing {st.mean(swings):.2f} over {len(swings)} pairs, "
          f"ratio {rng / st.mean(swings):.2f}")
    # Which of RULER's niah tasks the extended models answer, at 4L.
    print(f"\nmain recipe, niah tasks at {L} (mean over seeds):")
    print("| architecture | " + " | ".join(t[5:] for t in NIAH) + " |\n|---|" + "---|" * len(NIAH))
    for m in means:
        cells = [[r[t] for r in rows if r["model"] == m and r["recipe"] == "main" and r["length"] == L and r[t] != ""]
                 for t in NIAH]
        print(f"| {m} | " + " | ".join(f"{st.mean(c):.0f}" if c else "–" for c in cells) + " |")
    # Pretraining: did each run learn to retrieve at L (the probe's last exact share >= 0.5), and when.
    print("\npretraining at L, probe exact at the last step per seed (onset: first probe step with exact >= 0.5):")
    print("| architecture | seeds learnt | per seed: exact (onset) |\n|---|---|---|")
    learnt_all = total = 0
    for m in ORDER:
        cells, learnt = [], 0
        for run in sorted(glob.glob(f"{root}/{m}-s*/pretrain/probe.jsonl")):
            probe = learning_curves.read_probe(os.path.dirname(run))
            onset = learning_curves.onset(probe)
            learnt += probe[-1]["exact"] >= 0.5
            cells.append(f"s{run.split('-s')[-1].split('/')[0]} {probe[-1]['exact']:.2f} ({onset or '✗'})")
        if cells:
            print(f"| {m} | {learnt} of {len(cells)} | " + ", ".join(cells) + " |")
            learnt_all, total = learnt_all + learnt, total + len(cells)
    print(f"learnt: {learnt_all} of {total} pretraining runs")
    diag = f"{root}/analysis/tables/diagnostics.csv"
    if os.path.exists(diag):
        models = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../inputs/studies/toy_ruler/models")
        width = {}  # head_dim_qk, read from the model file rather than assumed
        for m in ORDER:
            for line in open(f"{models}/{m}.ini"):
                if line.split("=")[0].strip() == "head_dim_qk":
                    width[m] = int(line.split("=")[1])
        by = {}
        answering = missing = 0
        for d in csv.DictReader(open(diag)):
            chain, kind = d["run"].split("/")
            model = chain.rsplit("-s", 1)[0]
            if int(d["answered"] or 0) > 0:
                answering += 1
                missing += int(d["retrieval_heads"] or 0) == 0
            if RECIPES.get(kind) == "main" and d["retrieval_fraction"]:
                by.setdefault((width[model], model), []).append(float(d["retrieval_fraction"]))
        print(f"\nretrieval heads: {answering - missing} of {answering} runs that answer a probe have at least one")
        print("| head_dim_qk | architecture | runs | retrieval-head fraction (mean) |\n|---|---|---|---|")
        for (w, m), v in sorted(by.items(), key=lambda kv: (kv[0][0], ORDER.index(kv[0][1]))):
            print(f"| {w} | {m} | {len(v)} | {st.mean(v):.3f} |")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    for ax, rc, title in ((axes[0], "main", "extended (RoPE base), sft"), (axes[1], "none", "no extension")):
        for m in ORDER:
            xs = [x for x in lengths if get(m, rc, x, "ruler")]
            if xs:
                ax.plot(xs, [st.mean(get(m, rc, x, "ruler")) for x in xs], marker="o", label=m)
        ax.set_title(title)
        ax.set_xlabel("context length (tokens; pretrained at 128)")
        ax.set_xticks(lengths)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("RULER average (mean over seeds)")
    axes[1].legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    fig.savefig(f"{out}/ruler_by_length.png", dpi=110)


if __name__ == "__main__":
    main()
