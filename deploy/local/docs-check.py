#!/usr/bin/env python3
"""make lint: the documents' references resolve.

* Every citation of a reference system's section (`cwa-server §3.4`, `cwa-satellites §1.5, §1.6`, `nhs §7`) in the
  tracked files names a row of REFERENCES.md, which says where that section is in the reference's public source.
* Every relative link of a Markdown file names a file or folder of the repository, and its `#anchor`, if any, a
  heading of that file (GitHub's anchors: lower case, punctuation dropped, spaces as hyphens, `-1`, `-2` for repeats).

Prints each problem with its file and line; exits 1 when there is one."""

import os
import re
import subprocess
import sys

KEYS = {"cwa-server": "## cwa-server", "cwa-satellites": "## cwa-satellites", "nhs": "## nhs"}
# A key, then one section or a list of them: "cwa-server §1.4, §1.6, §1.8–§1.10".
CITATION = re.compile(r"\b(cwa-server|cwa-satellites|nhs) (§[0-9]+(?:\.[0-9]+)*(?:(?:, | and |–|-)§[0-9]+(?:\.[0-9]+)*)*)")
SECTION = re.compile(r"§[0-9]+(?:\.[0-9]+)*")


def known_sections(text):
    """key → the sections its table lists."""
    known, key = {}, None
    for line in text.splitlines():
        for name, heading in KEYS.items():
            if line.startswith(heading + " ") or line == heading:
                key = name
        row = re.match(r"\| (§[0-9.]+) \|", line)
        if key and row:
            known.setdefault(key, set()).add(row.group(1))
    return known


LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchors(path, cache={}):
    """The anchors GitHub gives the headings of the Markdown file `path`."""
    if path not in cache:
        seen, found, fenced = {}, set(), False
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.startswith("```"):
                    fenced = not fenced
                if fenced or not re.match(r"#{1,6} ", line):
                    continue
                text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", line.lstrip("#").strip())
                slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
                count = seen.get(slug, 0)
                seen[slug] = count + 1
                found.add(slug if count == 0 else f"{slug}-{count}")
        cache[path] = found
    return cache[path]


def link_problems(path, lines, files):
    problems, fenced = [], False
    folder = os.path.dirname(path)
    for number, line in enumerate(lines, 1):
        if line.startswith("```"):
            fenced = not fenced
        if fenced:
            continue
        for target in LINK.findall(line):
            if re.match(r"[a-z]+:", target):
                continue  # a URL
            name, _, anchor = target.partition("#")
            resolved = os.path.normpath(os.path.join(folder, name)) if name else path
            if name and resolved not in files and not any(f.startswith(resolved + "/") for f in files):
                problems.append(f"{path}:{number}: the link {target} names no file of the repository")
            elif anchor and resolved.endswith(".md") and anchor not in anchors(resolved):
                problems.append(f"{path}:{number}: the link {target} names no heading of {resolved}")
    return problems


def main():
    with open("REFERENCES.md", encoding="utf-8") as f:
        known = known_sections(f.read())
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], capture_output=True, text=True,
                           check=True).stdout.split()
    unknown = []
    tracked = set(files)
    for path in files:
        if path == "REFERENCES.md" or path.startswith("Shared/Models/Generated/"):
            continue
        try:
            with open(path, encoding="utf-8") as f:
                lines = f.read().splitlines()
        except (UnicodeDecodeError, IsADirectoryError, FileNotFoundError):
            continue
        if path.endswith(".md"):
            unknown += link_problems(path, lines, tracked)
        for number, line in enumerate(lines, 1):
            for match in CITATION.finditer(line):
                for section in SECTION.findall(match.group(2)):
                    if section not in known.get(match.group(1), set()):
                        unknown.append(f"{path}:{number}: {match.group(1)} {section} is not in REFERENCES.md")
    for line in unknown:
        print(line)
    if unknown:
        sys.exit(1)
    print(f"docs: every cited section is in REFERENCES.md ({sum(len(v) for v in known.values())} rows), every link resolves")


if __name__ == "__main__":
    main()
