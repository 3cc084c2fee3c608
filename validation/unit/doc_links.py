#!/usr/bin/env python3
"""Every relative link in README.md, CONTRIBUTING.md, CHANGELOG.md and docs/**/*.md resolves: the
file or directory exists, and a #fragment into a Markdown file names one of its headings (GitHub's
anchors).
usage: doc_links.py SOURCE_DIR"""
import pathlib, re, sys

args = sys.argv[1:]
root = pathlib.Path(args[0] if args else ".").resolve()
pages = [root / n for n in ("README.md", "CONTRIBUTING.md", "CHANGELOG.md") if (root / n).exists()]
pages += sorted((root / "docs").rglob("*.md"))
link = re.compile(r"\]\(([^)\s]+)\)")


def anchors(path):
    out, seen = set(), {}
    in_code = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
        if in_code or not line.startswith("#"):
            continue
        text = line.lstrip("#").strip().lower()
        slug = re.sub(r"[^\w\- ]", "", text).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


bad = []
for page in pages:
    in_code = False
    for no, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("```"):
            in_code = not in_code
        if in_code:
            continue
        for target in link.findall(line):
            if re.match(r"[a-z]+:", target):
                continue  # http:, https:, mailto:
            path, _, frag = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            where = f"{page.relative_to(root)}:{no}: {target}"
            if not dest.exists():
                bad.append(f"{where}: no such file")
            elif frag and dest.suffix == ".md" and frag not in anchors(dest):
                bad.append(f"{where}: no heading with anchor #{frag} in {dest.relative_to(root)}")
for b in bad:
    print(b)
print(f"doc links: {len(pages)} pages, {len(bad)} broken")
sys.exit(1 if bad else 0)
