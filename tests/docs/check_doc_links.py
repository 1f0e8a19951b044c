#!/usr/bin/env python3
"""Checks that the relative links of the repository's Markdown files resolve.

Every `[text](target)` and `![alt](target)` outside code blocks and inline
code, in every *.md file of the repository (build folders, .deps and other
ignored folders left out): the target file or folder must exist, and a
`#fragment` must name a heading of the target page (GitHub's anchors: lower
case, punctuation dropped, spaces to hyphens, `-1`, `-2` for repeats) or an
`<a id="...">` in it. Links with a scheme (https:, mailto:) are not checked.

  check_doc_links.py [--repo DIR] [--anchors FILE.md]

--anchors prints a page's anchors and exits. Exit status 1 when a link is
broken, with one line per broken link.
"""
import argparse
import os
import re
import subprocess
import sys

SKIP_DIRS = {".git", ".deps", "node_modules", "gpu-carry", "gpu-check-out", "scratch", "__pycache__"}
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^()\s]+(?:\([^()]*\))?)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
HTML_ID = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"")


def markdown_files(repo):
    # In a git checkout: the files git tracks or would track (what ignored
    # folders hold, such as built reference engines, is not the project's).
    try:
        listed = subprocess.run(["git", "-C", repo, "ls-files", "-co", "--exclude-standard", "--", "*.md"],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, check=True).stdout
        for rel in sorted(listed.splitlines()):
            if os.path.isfile(os.path.join(repo, rel)):
                yield os.path.join(repo, rel)
        return
    except (OSError, subprocess.CalledProcessError):
        pass
    for root, dirs, files in os.walk(repo):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("build"))
        for f in sorted(files):
            if f.endswith(".md"):
                yield os.path.join(root, f)


def prose_lines(text):
    """(line number, line) outside fenced code blocks."""
    in_fence = False
    for n, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        if not in_fence:
            yield n, line


def slug(heading):
    s = re.sub(r"`([^`]*)`", r"\1", heading)
    s = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", s)  # a link in a heading keeps its text
    s = s.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    seen, out = {}, set()
    for _, line in prose_lines(text):
        m = HEADING.match(line)
        if m:
            base = slug(m.group(2))
            k = seen.get(base, 0)
            out.add(base if k == 0 else f"{base}-{k}")
            seen[base] = k + 1
        out.update(HTML_ID.findall(line))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", default=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    ap.add_argument("--anchors", help="print this page's anchors and exit")
    a = ap.parse_args()
    if a.anchors:
        print("\n".join(sorted(anchors(a.anchors))))
        return 0
    cache, broken, checked = {}, [], 0
    for page in markdown_files(a.repo):
        with open(page, encoding="utf-8") as f:
            text = f.read()
        for n, line in prose_lines(text):
            line = re.sub(r"`[^`]*`", "", line)
            for m in LINK.finditer(line):
                target = m.group(1)
                if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):
                    continue
                checked += 1
                path, _, frag = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
                where = f"{os.path.relpath(page, a.repo)}:{n}: {target}"
                if not os.path.exists(dest):
                    broken.append(f"{where}: no such file")
                    continue
                if frag and dest.endswith(".md"):
                    if dest not in cache:
                        cache[dest] = anchors(dest)
                    if frag not in cache[dest]:
                        broken.append(f"{where}: no heading #{frag} in {os.path.relpath(dest, a.repo)}")
    for b in broken:
        print(b)
    print(f"check_doc_links: {checked} relative links, {len(broken)} broken", file=sys.stderr)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
