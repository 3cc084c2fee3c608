#!/usr/bin/python3
"""Compare a regression run's figures with the reference.

    compare.py REFERENCE_JSON FIGURES_JSON

REFERENCE_JSON: {"command": ..., "figures": {name: {"value", "rtol", "atol"}}}
(validation/reference/regression.json). FIGURES_JSON: {name: value} (extract.py OUT_DIR), or a
reference-shaped file (then its values are compared and its tolerances ignored).

A number moved when |new - ref| > atol + rtol * |ref|; anything else (strings, null, a number
against null) moved when it differs. Prints every moved figure with the reference value, the new
value, the difference (absolute and relative) and the tolerance, then every figure present on only
one side; exits 1 if there is any, else 0 with a one-line summary.
"""
import json
import math
import sys


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def moved(ref, new, rtol, atol):
    if is_number(ref) and is_number(new):
        if math.isnan(ref) or math.isnan(new):
            return not (math.isnan(ref) and math.isnan(new))
        return abs(new - ref) > atol + rtol * abs(ref)
    return ref != new


def main(argv):
    if len(argv) != 2:
        raise SystemExit("usage: compare.py REFERENCE_JSON FIGURES_JSON")
    with open(argv[0]) as f:
        reference = json.load(f)
    with open(argv[1]) as f:
        new = json.load(f)
    if isinstance(new.get("figures"), dict):
        new = {k: v["value"] for k, v in new["figures"].items()}
    ref = reference["figures"]

    problems = []
    for name in sorted(ref):
        if name not in new:
            continue
        r, n = ref[name]["value"], new[name]
        rtol, atol = ref[name].get("rtol", 0.0), ref[name].get("atol", 0.0)
        if not moved(r, n, rtol, atol):
            continue
        if is_number(r) and is_number(n):
            diff = n - r
            rel = f", relative {diff / abs(r):+.3g}" if r != 0 else ""
            problems.append(f"MOVED   {name}: reference {r!r}, now {n!r}, difference {diff:+.6g}{rel};"
                            f" tolerance atol {atol:g} + rtol {rtol:g} x |reference| = {atol + rtol * abs(r):.6g}")
        else:
            problems.append(f"MOVED   {name}: reference {r!r}, now {n!r} (must be equal)")
    for name in sorted(set(ref) - set(new)):
        problems.append(f"MISSING {name}: in the reference ({ref[name]['value']!r}) but not in the new figures")
    for name in sorted(set(new) - set(ref)):
        problems.append(f"NEW     {name}: in the new figures ({new[name]!r}) but not in the reference")

    if problems:
        print(f"compare.py: {len(problems)} of {len(set(ref) | set(new))} figures differ from {argv[0]}:")
        for p in problems:
            print("  " + p)
        print(f"If the change is intended, regenerate the reference: {reference.get('command', '?')}")
        return 1
    print(f"compare.py: all {len(ref)} figures within tolerance of {argv[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
