"""Writes a synthetic corpus of unique JSON-lines documents for prepare's tests and benchmarks: the
documents of a source corpus, repeated with a distinct header line each until the corpus holds the
asked-for size, spread over several files (so that MPI ranks can share them).
usage: make_corpus.py SOURCE_DIR OUT_DIR MEGABYTES FILES"""
import json
import pathlib
import sys

src, out, megabytes, n_files = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
texts = []
for f in sorted(src.rglob("*")):
    if f.suffix == ".jsonl":
        texts += [json.loads(l)["text"] for l in f.read_text(encoding="utf-8").splitlines() if l.strip()]
    elif f.suffix in (".txt", ".md", ".text"):
        texts.append(f.read_text(encoding="utf-8"))
assert texts, f"no documents under {src}"
out.mkdir(parents=True, exist_ok=True)
target = int(megabytes * 1e6)
files = [open(out / f"part-{i:03d}.jsonl", "w", encoding="utf-8") for i in range(n_files)]
written, k = 0, 0
while written < target:
    # A header makes every copy a distinct document (distinct split draw, distinct tokens).
    doc = f"Copy {k} of document {k % len(texts)}.\n" + texts[k % len(texts)]
    line = json.dumps({"text": doc}, ensure_ascii=False) + "\n"
    files[k % n_files].write(line)
    written += len(line.encode("utf-8"))
    k += 1
for f in files:
    f.close()
print(f"make_corpus: {k} documents, {written / 1e6:.1f} MB in {n_files} files under {out}")
