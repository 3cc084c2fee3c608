#!/usr/bin/env python3
"""Writes mc_quiz.jsonl, the small multiple-choice set evaluate scores by log-likelihood
(lm-evaluation-harness conventions: {"query", "choices", "gold"}, each choice a continuation of
the query with its leading space).

Facts come from the bsdgames quiz files (Debian package bsdgames, /usr/share/games/bsdgames/quiz):
capitals of countries (africa, america, asia, europe) and of US states (state), and chemical
element symbols (elements); plus generated two-number arithmetic. Three distractors per item are
drawn from the same file, so every choice is a plausible answer of the right kind. Deterministic
(fixed seed): the same quiz files give the same JSONL.

    python3 inputs/eval/make_mc.py [QUIZ_DIR] [OUT_FILE]
"""
import json
import os
import random
import sys

SEED = 20240601
PER_FILE = 40  # items per capital file, and for elements and arithmetic


def expand(text):
    """The fullest reading of a quiz-file pattern: {x} optional parts included, first of a|b."""
    def seq(i, stop):
        out, alts = [], []
        while i < len(text) and text[i] not in stop:
            c = text[i]
            if c == "{":
                inner, i = seq(i + 1, "}")
                out.append(inner)
                i += 1  # the closing brace
            elif c == "|":
                alts.append("".join(out))
                out = []
                i += 1
            else:
                out.append(c)
                i += 1
        alts.append("".join(out))
        return alts[0], i
    return seq(0, "")[0]


def read_pairs(path, key_field, value_field):
    lines, cont = [], ""
    with open(path, encoding="latin-1") as f:
        for raw in f:
            raw = raw.rstrip("\n")
            if raw.endswith("\\"):
                cont += raw[:-1]
                continue
            lines.append(cont + raw)
            cont = ""
    pairs = []
    for line in lines:
        fields = line.split(":")
        if len(fields) > max(key_field, value_field):
            k, v = expand(fields[key_field]).strip(), expand(fields[value_field]).strip()
            if k and v:
                pairs.append((k, v))
    return pairs


def items_from(pairs, question, rng, n):
    values = sorted({v for _, v in pairs})
    chosen = rng.sample(pairs, min(n, len(pairs)))
    out = []
    for key, gold in chosen:
        wrong = rng.sample([v for v in values if v != gold], 3)
        choices = wrong + [gold]
        rng.shuffle(choices)
        out.append({"query": f"Question: {question.format(key)}\nAnswer:",
                    "choices": [" " + c for c in choices], "gold": choices.index(gold)})
    return out


def arithmetic(rng, n):
    out = []
    for _ in range(n):
        a, b = rng.randint(2, 49), rng.randint(2, 49)
        op, gold = rng.choice([("plus", a + b), ("minus", a - b), ("times", a * b)])
        wrong = set()
        while len(wrong) < 3:
            w = gold + rng.choice([-10, -2, -1, 1, 2, 10])
            if w != gold:
                wrong.add(w)
        choices = sorted(wrong) + [gold]
        rng.shuffle(choices)
        out.append({"query": f"Question: What is {a} {op} {b}?\nAnswer:",
                    "choices": [f" {c}" for c in choices], "gold": choices.index(gold)})
    return out


def main():
    quiz = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/games/bsdgames/quiz"
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "mc_quiz.jsonl")
    rng = random.Random(SEED)
    items = []
    for name in ("africa", "america", "asia", "europe", "state"):
        items += items_from(read_pairs(os.path.join(quiz, name), 0, 1),
                            "What is the capital of {}?", rng, PER_FILE)
    items += items_from(read_pairs(os.path.join(quiz, "elements"), 0, 3),
                        "Which chemical element has the symbol {}?", rng, PER_FILE)
    items += arithmetic(rng, PER_FILE)
    with open(out, "w") as f:
        for item in items:
            f.write(json.dumps(item, ensure_ascii=False) + "\n")
    print(f"{out}: {len(items)} items")


if __name__ == "__main__":
    main()
