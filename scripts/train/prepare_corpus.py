#!/usr/bin/env python3
"""Extracts the King James Bible from Debian's bible-kjv package, normalises
it and splits it into a training and a held-out set, deterministically.

The text comes from the `bible` program of bible-kjv (its data file
/usr/lib/bible.data is LZW-compressed in the Bible Retrieval System's own
format; `bible -l10000 genesis1:1-revelation22:21` prints every verse, one per
line, under "Book N" chapter headings). The KJV text is public domain (the
package's copyright file: "The copyright for the King James Version text of
the Bible is expired").

Documents are chapters: a first line "Book N" and then one verse per line,
without verse numbers. Every 50th chapter (chapter index % 50 == 25, counted
over the whole Bible in canonical order) is held out, about 2% of the text.

Writes into OUT (default build-train/corpus/):
  train.jsonl, heldout.jsonl   one chapter a line: {"ref": "Genesis 1", "verses": [...]}
  train.txt, heldout.txt       the same chapters as plain text, a blank line between
  corpus_stats.json            counts and the source
"""
import argparse
import hashlib
import json
import os
import re
import subprocess
import sys

HELDOUT_EVERY = 50
HELDOUT_PHASE = 25


def read_bible():
    try:
        raw = subprocess.run(["bible", "-l10000", "genesis1:1-revelation22:21"], check=True,
                             capture_output=True, env={**os.environ, "COLUMNS": "10000"}).stdout
    except FileNotFoundError:
        sys.exit("prepare_corpus: the `bible` command is missing; run scripts/train/setup_train.sh")
    text = raw.decode("ascii")
    chapters = []
    heading = re.compile(r"^([1-3]?\s?[A-Za-z][A-Za-z ]*?) (\d+)$")
    verse = re.compile(r"^\s+(\d+) (.*)$")
    for line in text.split("\n"):
        if not line.strip():
            continue
        m = verse.match(line)
        if m:
            if not chapters:
                raise ValueError("verse before the first chapter heading: " + line)
            n = int(m.group(1))
            if n != len(chapters[-1]["verses"]) + 1:
                raise ValueError("verse %d out of order in %s" % (n, chapters[-1]["ref"]))
            chapters[-1]["verses"].append(normalise(m.group(2)))
            continue
        m = heading.match(line)
        if not m:
            raise ValueError("unexpected line from `bible`: " + repr(line))
        chapters.append({"ref": "%s %s" % (m.group(1).strip(), m.group(2)), "verses": []})
    return chapters


def normalise(s):
    # ASCII already; collapse runs of whitespace, trim.
    return re.sub(r"\s+", " ", s).strip()


def chapter_text(ch):
    return ch["ref"] + "\n" + "\n".join(ch["verses"])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="build-train/corpus")
    args = ap.parse_args()
    chapters = read_bible()
    n_verses = sum(len(c["verses"]) for c in chapters)
    if len(chapters) != 1189 or n_verses != 31102:
        sys.exit("prepare_corpus: expected 1189 chapters and 31102 verses, got %d and %d" % (len(chapters), n_verses))
    os.makedirs(args.out, exist_ok=True)
    split = {"train": [], "heldout": []}
    for i, ch in enumerate(chapters):
        split["heldout" if i % HELDOUT_EVERY == HELDOUT_PHASE else "train"].append(ch)
    stats = {"source": "King James Version, Debian package bible-kjv (`bible` command), public domain",
             "chapters": len(chapters), "verses": n_verses,
             "heldout_rule": "chapter index %% %d == %d" % (HELDOUT_EVERY, HELDOUT_PHASE)}
    for name, chs in split.items():
        with open(os.path.join(args.out, name + ".jsonl"), "w", encoding="utf-8") as f:
            for ch in chs:
                f.write(json.dumps(ch) + "\n")
        text = "\n\n".join(chapter_text(ch) for ch in chs) + "\n"
        with open(os.path.join(args.out, name + ".txt"), "w", encoding="utf-8") as f:
            f.write(text)
        stats[name] = {"chapters": len(chs), "verses": sum(len(c["verses"]) for c in chs),
                       "bytes": len(text.encode("utf-8")), "words": len(text.split()),
                       "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest()}
    stats["heldout_refs"] = [c["ref"] for c in split["heldout"]]
    with open(os.path.join(args.out, "corpus_stats.json"), "w") as f:
        json.dump(stats, f, indent=1)
    print("prepare_corpus: %d chapters, %d verses; train %d chapters (%d bytes), held-out %d chapters (%d bytes) -> %s"
          % (len(chapters), n_verses, stats["train"]["chapters"], stats["train"]["bytes"],
             stats["heldout"]["chapters"], stats["heldout"]["bytes"], args.out))


if __name__ == "__main__":
    main()
