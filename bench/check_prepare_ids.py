"""bench_prepare.sh's check: the ids `tokenizers` gave the first N documents (JSON, no special
tokens) are, with BOS in front, documents of the dataset prepare wrote (h5py, through
dataset.json). usage: check_prepare_ids.py IDS_JSON DATASET_DIR BOS"""
import json
import pathlib
import sys

import h5py

ids_file, dataset, bos = sys.argv[1], pathlib.Path(sys.argv[2]), int(sys.argv[3])
theirs = json.loads(pathlib.Path(ids_file).read_text())
want = {tuple([bos] + t) for t in theirs}
found = set()
index = json.loads((dataset / "dataset.json").read_text())
for split in ("train", "val"):
    for e in index["splits"][split]:
        with h5py.File(dataset / e["file"], "r") as h:
            tokens, offsets = h["tokens"], h["doc_offsets"][...]
            for a, b in zip(offsets[:-1], offsets[1:]):
                if b - a - 1 in {len(t) for t in theirs}:
                    doc = tuple(int(x) for x in tokens[a:b])
                    if doc in want:
                        found.add(doc)
        if len(found) == len(want):
            break
missing = len(want) - len(found)
print(f"ids: {len(found)} of {len(want)} documents identical to tokenizers'" + (f", {missing} differ" if missing else ""))
sys.exit(1 if missing else 0)
