#!/usr/bin/python3
"""Compare a regression run's figures with the reference, against the noise floor of this run.

    compare.py REFERENCE_JSON FIGURES_JSON [--floor FLOOR_FIGURES_JSON ...] [--factor X]

REFERENCE_JSON: {"command": ..., "figures": {name: {"value", "check", "group", "quantum"}}}
(validation/reference/regression.json; extract.py RULES says which figure is checked how).
FIGURES_JSON: {name: value} (extract.py OUT_DIR) of the run under test; each FLOOR_FIGURES_JSON the
same runs under another OpenBLAS kernel set (check.sh), which differ from FIGURES_JSON only in
rounding.

"exact" figures must be equal. A "rel" or "abs" figure passes when its difference to the reference
(relative or absolute) is at most X (default noise_floor.DEFAULT_FACTOR) times its group's floor:
the largest such difference between FIGURES_JSON and a floor run over the group's figures, and at
least the figure's quantum (one token, example or item of a share). Prints one noise-floor line per
group (its worst figure), every figure that moved with its reference, value, difference and the
allowed difference, then every figure present on only one side; exits 1 if there is any, else 0.
"""
import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import noise_floor  # noqa: E402


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def difference(kind, ref, new):
    """The distance of two values under a check kind; NaN against NaN is 0, NaN against a number inf."""
    if math.isnan(ref) or math.isnan(new):
        return 0.0 if (math.isnan(ref) and math.isnan(new)) else math.inf
    d = abs(new - ref)
    return d / abs(ref) if kind == "rel" and ref != 0 else d


def group_floors(ref, new, floors):
    """{group: largest difference between the run and a floor run over the group's figures}."""
    out = {}
    for name, r in ref.items():
        g = r.get("group")
        if g is None or name not in new:
            continue
        out.setdefault(g, 0.0)
        for f in floors:
            if name in f and is_number(f[name]) and is_number(new[name]):
                out[g] = max(out[g], difference(r["check"], new[name], f[name]))
    return out


def load_figures(path):
    with open(path) as f:
        j = json.load(f)
    return {k: v["value"] for k, v in j["figures"].items()} if isinstance(j.get("figures"), dict) else j


def main(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("reference")
    p.add_argument("figures")
    p.add_argument("--floor", action="append", default=[])
    p.add_argument("--factor", type=float, default=noise_floor.DEFAULT_FACTOR)
    o = p.parse_args(argv)
    with open(o.reference) as f:
        reference = json.load(f)
    ref = reference["figures"]
    new = load_figures(o.figures)
    floors = [load_figures(x) for x in o.floor]
    if any(r["check"] != "exact" for r in ref.values()) and not floors:
        p.error("the reference has floating-point figures: give at least one --floor run")
    floor_of = group_floors(ref, new, floors)

    problems, worst = [], {}
    for name in sorted(set(ref) & set(new)):
        r, n = ref[name], new[name]
        if r["check"] == "exact" or not (is_number(r["value"]) and is_number(n)):
            if r["value"] != n:
                problems.append(f"MOVED   {name}: reference {r['value']!r}, now {n!r} (must be equal)")
            continue
        d = difference(r["check"], r["value"], n)
        floor = max(floor_of.get(r["group"], 0.0), r.get("quantum", 0.0))
        g = worst.setdefault(r["group"], [0.0, floor, name])
        if d >= g[0]:
            worst[r["group"]] = [d, floor, name]
        if not d <= o.factor * floor:
            unit = "relative" if r["check"] == "rel" else "absolute"
            problems.append(f"MOVED   {name}: reference {r['value']!r}, now {n!r}, {unit} difference {d:.3g};"
                            f" floor {floor:.3g} (group {r['group']!r}), allowed {o.factor:g} x floor = "
                            f"{o.factor * floor:.3g}")
    for group, (d, floor, name) in sorted(worst.items()):
        noise_floor.verdict(f"regression {group} (worst: {name})", d, floor, o.factor)
    for name in sorted(set(ref) - set(new)):
        problems.append(f"MISSING {name}: in the reference ({ref[name]['value']!r}) but not in the new figures")
    for name in sorted(set(new) - set(ref)):
        problems.append(f"NEW     {name}: in the new figures ({new[name]!r}) but not in the reference")

    if problems:
        print(f"compare.py: {len(problems)} of {len(set(ref) | set(new))} figures differ from {o.reference}:")
        for line in problems:
            print("  " + line)
        print(f"If the change is intended, regenerate the reference: {reference.get('command', '?')}")
        return 1
    print(f"compare.py: all {len(ref)} figures within {o.factor:g}x the noise floor of {len(floors)} "
          f"floor run(s), or equal, against {o.reference}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
