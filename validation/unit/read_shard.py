"""Reads a byte-level shard written by `prepare` with h5py alone (no Headroom code) and checks the
documented layout: attributes, dtypes, doc_offsets, and that every document decodes to the text of
one input document."""
import json
import pathlib
import sys

import h5py
import numpy as np

path, corpus = sys.argv[1], pathlib.Path(sys.argv[2])
texts = set()
for f in sorted(corpus.rglob("*.jsonl")):
    for line in f.read_text(encoding="utf-8").splitlines():
        if line.strip():
            texts.add(json.loads(line)["text"].encode("utf-8"))

with h5py.File(path, "r") as h:
    a = h.attrs
    assert a["format"] == "headroom-shard", a["format"]
    assert int(a["format_version"]) == 1
    assert a["tokenizer_id"] == "byte", a["tokenizer_id"]
    assert int(a["vocab_size"]) == 259
    tokens = h["tokens"][...]
    offsets = h["doc_offsets"][...]
    assert tokens.dtype == np.uint16, tokens.dtype
    assert offsets.dtype == np.uint64
    assert len(tokens) == int(a["n_tokens"]) and len(offsets) == int(a["n_docs"]) + 1
    assert offsets[0] == 0 and offsets[-1] == len(tokens) and np.all(np.diff(offsets) > 0)
    assert h["tokenizer/merges"].shape == (0, 2)
    assert "[" not in a["prepare_config"] or "input" in a["prepare_config"]
    for d in range(len(offsets) - 1):
        doc = tokens[offsets[d]:offsets[d + 1]]
        assert doc[0] == 256, "each document starts with BOS"
        assert np.all(doc[1:] < 256)
        assert bytes(doc[1:].astype(np.uint8)) in texts, f"document {d} is not an input document"
print(f"h5py: {path}: {len(offsets) - 1} documents, {len(tokens)} tokens, layout as documented")
