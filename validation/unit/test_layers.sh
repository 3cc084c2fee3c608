#!/usr/bin/env bash
# The build's layer check (cmake/CheckLayers.cmake): the tree as it is passes; the same tree with
# one upward include (config/ including data/) and with a folder outside the layer list each stop
# it with a message naming the file and the rule.
#   test_layers.sh SOURCE_DIR CMAKE
set -euo pipefail
src=$1 cmake=$2
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
check() { "$cmake" -DSRC="$1" -P "$src/cmake/CheckLayers.cmake" >"$work/out" 2>&1; }

check "$src/src" || { cat "$work/out"; echo "FAIL: the tree has an upward include"; exit 1; }
echo "ok: src/ as it is passes"

cp -r "$src/src" "$work/up"
echo '#include "data/synthetic.h"' >> "$work/up/config/keys.cpp"
if check "$work/up"; then echo "FAIL: config/ including data/ passed"; exit 1; fi
grep -q 'src/config/keys.cpp: #include "data/synthetic.h" — config/ may not include data/' "$work/out" ||
  { cat "$work/out"; echo "FAIL: the message does not name the file and the rule"; exit 1; }
echo "ok: an upward include stops the check, named"

cp -r "$src/src" "$work/new"
mkdir "$work/new/plugins" && echo '#include "util/error.h"' > "$work/new/plugins/a.cpp"
if check "$work/new"; then echo "FAIL: a folder in no layer passed"; exit 1; fi
grep -q "src/plugins/a.cpp: folder 'plugins' is in no layer" "$work/out" ||
  { cat "$work/out"; echo "FAIL: the message does not name the folder"; exit 1; }
echo "ok: a folder outside the layer list stops the check, named"
