"""Compares two datasets written by `prepare` with h5py alone, through their dataset.json: the same
documents in each split with the same token sequences (as multisets: the shard layout and document
order may differ with the number of ranks), every shard within the size limit, every document
starting with BOS, the index's counts matching the shards.
usage: compare_datasets.py DIR_A DIR_B SHARD_MIB [BOS]   (BOS: 256, the byte tokenizer's)"""
import hashlib
import json
import pathlib
import sys

import h5py
import numpy as np


def read(d):
    d = pathlib.Path(d)
    index = json.loads((d / "dataset.json").read_text())
    assert index["format"] == "headroom-dataset", index["format"]
    out = {}
    for split in ("train", "val"):
        docs = []
        for e in index["splits"][split]:
            with h5py.File(d / e["file"], "r") as h:
                tokens, offsets = h["tokens"][...], h["doc_offsets"][...]
                assert int(h.attrs["n_tokens"]) == e["n_tokens"] == len(tokens), e
                assert int(h.attrs["n_docs"]) == e["n_docs"] == len(offsets) - 1, e
                assert h.attrs["split"] == split
                assert tokens.nbytes <= shard_bytes + max_doc_bytes(tokens, offsets), (e, tokens.nbytes)
                for a, b in zip(offsets[:-1], offsets[1:]):
                    doc = tokens[a:b]
                    assert doc[0] == bos, f"{e['file']}: a document does not start with BOS"
                    docs.append(hashlib.sha1(doc.astype(np.uint32).tobytes()).hexdigest())
        out[split] = sorted(docs)
    return index, out


def max_doc_bytes(tokens, offsets):  # a shard closes after the document that fills it
    return int(np.max(np.diff(offsets))) * tokens.itemsize if len(offsets) > 1 else 0


a_dir, b_dir, shard_bytes = sys.argv[1], sys.argv[2], int(sys.argv[3]) << 20
bos = int(sys.argv[4]) if len(sys.argv) > 4 else 256
ia, a = read(a_dir)
ib, b = read(b_dir)
assert ia["tokenizer_id"] == ib["tokenizer_id"]
for split in ("train", "val"):
    assert len(a[split]) == len(set(a[split])), "the test corpus's documents are not distinct"
    assert a[split] == b[split], f"{split}: the documents or their tokens differ ({len(a[split])} vs {len(b[split])})"
print(f"compare_datasets: {len(a['train'])} train and {len(a['val'])} val documents with identical tokens; "
      f"{len(ia['splits']['train'])} vs {len(ib['splits']['train'])} train shards")
