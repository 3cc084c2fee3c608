#!/usr/bin/env python3
"""Which needle a model answers on RULER's multi-key niah tasks: the queried one, another one
(a key-matching failure), or none (a copy failure). Reads evaluate's RULER prediction files
(`--eval.ruler_pred true`: ruler_pred/<length>/<task>.jsonl, the whole prompt in `input`).

    docs/studies/toy_ruler/needle_choice.py EVALUATE_DIR [EVALUATE_DIR ...]

For niah_multikey_1 (four needles with distinct keys in essay text) and niah_multikey_2 (a
haystack of distractor needles), per length: the share of answers that are the queried value,
another needle's value exactly, and of those how many are the last needle before the question
(a model that copies the nearest needle instead of matching its key), and the rest. A model that
matches keys scores near 100 on the first column; one that copies a needle at random scores
1/needles there; one that copies the last needle puts most answers in the `last` column.
"""
import json
import os
import re
import sys

NEEDLE = re.compile(r"One of the special magic numbers for (\S+) is: (\d+)\.")
TASKS = ("niah_multikey_1", "niah_multikey_2")


def classify(sample):
    """(kind of answer, needles in the prompt)."""
    values = [v for _, v in NEEDLE.findall(sample["input"])]
    m = re.search(r"\d+", sample["pred"])
    answer = m.group(0) if m else ""
    if answer == sample["outputs"][0]:
        kind = "queried"
    elif answer in values:
        kind = "last" if values.index(answer) == len(values) - 1 else "other"
    else:
        kind = "none"
    return kind, len(values)


def table(evaluate_dir):
    rows = []
    root = os.path.join(evaluate_dir, "ruler_pred")
    for length in sorted(os.listdir(root), key=int):
        for task in TASKS:
            path = os.path.join(root, length, task + ".jsonl")
            if not os.path.exists(path):
                continue
            counts = {"queried": 0, "other": 0, "last": 0, "none": 0}
            needles = 0
            with open(path) as f:
                for line in f:
                    kind, n = classify(json.loads(line))
                    counts[kind] += 1
                    needles += n
            total = sum(counts.values())
            if total:  # an empty file (no sample fitted the length) has no shares to print
                rows.append((int(length), task, total, needles / total, counts))
    return rows


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(argv) >= 2 else 2
    for d in argv[1:]:
        if not os.path.isdir(os.path.join(d, "ruler_pred")):
            sys.exit(f"needle_choice: error: {d} has no ruler_pred/ (evaluate with --eval.ruler_pred true)")
    print("| run | length | task | samples | needles | queried | another: last | another: earlier | no needle's value |")
    print("|---|---|---|---|---|---|---|---|---|")
    for d in argv[1:]:
        for length, task, total, needles, c in table(d):
            pct = {k: 100.0 * v / total for k, v in c.items()}
            print(f"| {d} | {length} | {task} | {total} | {needles:.1f} | {pct['queried']:.0f}% | "
                  f"{pct['last']:.0f}% | {pct['other']:.0f}% | {pct['none']:.0f}% |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
