#!/usr/bin/env bash
# The C++ and CUDA sources follow .clang-format: clang-format (Debian's, installed by jobs/setup.sh)
# reports every file it would change, and the test fails naming them and the command that fixes
# them. Sources are the tracked files when the tree is a git checkout, else every file under the
# source directories.
# usage: validation/unit/clang_format.sh SOURCE_DIR
set -uo pipefail
src=${1:?usage: clang_format.sh SOURCE_DIR}
cd "$src" || exit 2
command -v clang-format >/dev/null || { echo "clang-format is not installed (jobs/setup.sh installs it)"; exit 1; }
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.cpp' '*.h' '*.cu' '*.cuh')
else
  mapfile -t files < <(find apps src kernels validation bench -name '*.cpp' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh')
fi
present=()
for f in "${files[@]}"; do [[ -f $f ]] && present+=("$f"); done
# One clang-format process checks every file (a second); only when it finds a fault is each file
# checked alone, to name them.
bad=()
if ! clang-format --dry-run --Werror "${present[@]}" >/dev/null 2>&1; then
  for f in "${present[@]}"; do
    clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
  done
  ((${#bad[@]})) || bad=("(clang-format failed on the whole set; run it by hand to see why)")
fi
if ((${#bad[@]})); then
  printf 'not formatted: %s\n' "${bad[@]}"
  echo "fix: clang-format -i ${bad[*]}"
  echo "${#bad[@]} of ${#files[@]} files not formatted"
  exit 1
fi
echo "clang-format: ${#files[@]} files formatted"
