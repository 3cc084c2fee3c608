#!/usr/bin/env python3
"""Writes the word lists of the evaluation task generators (adjectives.txt, nouns.txt, verbs.txt)
from WordNet's index files (Debian package wordnet-base, /usr/share/wordnet).

A word is kept when it is 3 to 10 lowercase ASCII letters; words are ranked by WordNet's
tagsense_cnt (how often the word's senses occur in the semantically tagged SemCor corpus, so
common words come first), ties broken alphabetically, and the top N of each part of speech are
written sorted alphabetically, one per line. Deterministic: the same WordNet gives the same files.

    python3 inputs/eval/make_words.py [WORDNET_DIR] [OUT_DIR]
"""
import os
import re
import sys

COUNTS = {"adj": ("adjectives.txt", 1000), "noun": ("nouns.txt", 2500), "verb": ("verbs.txt", 1000)}
WORD = re.compile(r"^[a-z]{3,10}$")


def ranked(path):
    words = []
    with open(path, encoding="latin-1") as f:
        for line in f:
            if line.startswith(" "):
                continue  # licence header
            fields = line.split()
            lemma, n_pointers = fields[0], int(fields[3])
            tagsense = int(fields[5 + n_pointers])
            if WORD.match(lemma):
                words.append((-tagsense, lemma))
    return [w for _, w in sorted(words)]


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/wordnet"
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.dirname(os.path.abspath(__file__))
    for pos, (name, n) in COUNTS.items():
        words = sorted(ranked(os.path.join(src, "index." + pos))[:n])
        with open(os.path.join(out, name), "w") as f:
            f.write("\n".join(words) + "\n")
        print(f"{name}: {len(words)} words")


if __name__ == "__main__":
    main()
