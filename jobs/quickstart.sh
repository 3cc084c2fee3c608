#!/usr/bin/env bash
# The main job on a fresh machine: install and build, gather the default corpus, and turn it into
# token shards with a trained byte-level BPE. Prints where everything is.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
jobs/setup.sh
jobs/fetch_corpus.sh data/corpus
if [[ -f data/shards/DONE ]]; then
  echo "quickstart: data/shards already prepared ($(cat data/shards/DONE))"
else
  build/bin/prepare --input data/corpus/train --output data/shards --tokenizer bpe --vocab-size 4096
fi
echo
echo "quickstart: corpus in data/corpus (licences: data/corpus/LICENSES.md), essay hold-out in data/corpus/essay"
echo "quickstart: shards in data/shards (train.h5, val.h5, tokenizer.txt; log: data/shards/log.txt)"
