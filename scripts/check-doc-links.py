#!/usr/bin/env python3
"""Checks the relative links of README.md and docs/*.md: each must name a file (or folder) of
the repository, must not leave it, and an #anchor must name a heading of its target (GitHub's
heading ids). http(s) and mailto links are citations and are not followed. docs/scenario.md is
generated from the key table (`stepcast options --markdown`); while it is absent, links to it are
reported and not counted.

    scripts/check-doc-links.py          # exit 1 and one line per broken link
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
GENERATED = {ROOT / "docs" / "scenario.md"}
LINK = re.compile(r"\]\(([^)\s]+)\)")


def strip_code(text):
    """The text without fenced code blocks and inline code spans, line numbers kept."""
    out, fenced = [], False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            out.append("")
            continue
        out.append("" if fenced else re.sub(r"`[^`]*`", "", line))
    return out


def anchors(path):
    """GitHub's ids of the headings of a Markdown file."""
    ids, seen, fenced = set(), {}, False
    for line in path.read_text(encoding="utf-8").split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if fenced or not line.startswith("#"):
            continue
        title = line.lstrip("#").strip().replace("`", "")
        slug = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        ids.add(slug if n == 0 else f"{slug}-{n}")
    return ids


def main():
    files = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
    broken, pending = 0, 0
    for md in files:
        for number, line in enumerate(strip_code(md.read_text(encoding="utf-8")), 1):
            for target in LINK.findall(line):
                if re.match(r"[a-z]+:", target):
                    continue
                where = f"{md.relative_to(ROOT)}:{number}: {target}"
                path, _, anchor = target.partition("#")
                dest = md if not path else (md.parent / path).resolve()
                if ROOT not in dest.parents and dest != ROOT:
                    print(f"{where}: leaves the repository")
                    broken += 1
                elif dest in GENERATED and not dest.exists():
                    print(f"{where}: generated file, absent (not counted)")
                    pending += 1
                elif not dest.exists():
                    print(f"{where}: no such file")
                    broken += 1
                elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                    print(f"{where}: no heading #{anchor}")
                    broken += 1
    print(f"{len(files)} files, {broken} broken links, {pending} to generated files not yet there")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
