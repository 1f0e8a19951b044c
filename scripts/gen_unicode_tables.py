#!/usr/bin/env python3
"""Generates engine/text/unicode_tables.cpp: the general-category ranges and
the White_Space list the tokenizer pre-splitters need (\\p{L}, \\p{N}, \\p{P},
\\p{S}, \\p{M}, \\s), the simple lowercase mapping and the first codepoint of
each canonical decomposition (what llama.cpp's WPM tokenizer uses), from the
Unicode Character Database files that Debian's `unicode-data` package installs.

    python3 scripts/gen_unicode_tables.py [--ucd /usr/share/unicode] \
        > engine/text/unicode_tables.cpp

Codepoints missing from UnicodeData.txt are Cn (unassigned), as in llama.cpp's
gen-unicode-data.py, so the tables agree with llama.cpp's flags.
"""
import argparse
import os
import re
import sys

MAX_CODEPOINT = 0x10FFFF

# Must match tc::text::Category in engine/text/unicode.h.
CATEGORY_CODES = {
    "Cn": 0,  # unassigned
    "L": 1, "N": 2, "P": 3, "S": 4, "M": 5, "Z": 6, "C": 7,
}
CATEGORY_NAMES = ["Unassigned", "Letter", "Number", "Punctuation", "Symbol",
                  "Mark", "Separator", "Other"]


def read_version(ucd):
    with open(os.path.join(ucd, "ReadMe.txt"), encoding="utf-8") as f:
        m = re.search(r"Version (\d+\.\d+\.\d+)", f.read())
    return m.group(1) if m else "unknown"


def read_categories(ucd):
    cats = bytearray(MAX_CODEPOINT + 1)  # 0 = Cn
    first = None
    with open(os.path.join(ucd, "UnicodeData.txt"), encoding="utf-8") as f:
        for line in f:
            fields = line.rstrip("\n").split(";")
            cpt = int(fields[0], 16)
            name, gc = fields[1], fields[2]
            code = CATEGORY_CODES["Cn"] if gc == "Cn" else CATEGORY_CODES[gc[0]]
            if name.endswith(", First>"):
                first = cpt
                continue
            if name.endswith(", Last>"):
                for c in range(first, cpt + 1):
                    cats[c] = code
                first = None
                continue
            cats[cpt] = code
    return cats


def read_white_space(ucd):
    ranges = []
    with open(os.path.join(ucd, "PropList.txt"), encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            cpts, prop = [s.strip() for s in line.split(";")]
            if prop != "White_Space":
                continue
            lo, _, hi = cpts.partition("..")
            ranges.append((int(lo, 16), int(hi or lo, 16)))
    return sorted(ranges)


def read_records(ucd):
    """(codepoint, fields) for every codepoint UnicodeData.txt lists, its
    <..., First>/<..., Last> ranges expanded (each member gets the fields of
    the range's last line, as llama.cpp's gen-unicode-data.py does)."""
    first = None
    with open(os.path.join(ucd, "UnicodeData.txt"), encoding="utf-8") as f:
        for line in f:
            fields = line.rstrip("\n").split(";")
            cpt = int(fields[0], 16)
            if fields[1].endswith(", First>"):
                first = cpt
                continue
            if fields[1].endswith(", Last>"):
                for c in range(first, cpt):
                    yield c, fields
                first = None
            yield cpt, fields


def lowercase_map(records):
    """Simple lowercase mapping (field 13): {codepoint: lowercase}."""
    return {cpt: int(f[13], 16) for cpt, f in records if f[13]}


HANGUL_S_BASE, HANGUL_S_COUNT = 0xAC00, 11172
HANGUL_L_BASE, HANGUL_N_COUNT = 0x1100, 588


def nfd_first_map(records):
    """{codepoint: first codepoint of its NFD} where that differs: the full
    canonical decomposition (field 5 without a <tag>, applied recursively;
    Hangul syllables algorithmically), canonically reordered by combining
    class (field 3), as Python's unicodedata.normalize("NFD", c)[0]."""
    decomp, ccc = {}, {}
    cpts = []
    for cpt, f in records:
        cpts.append(cpt)
        ccc[cpt] = int(f[3])
        if f[5] and not f[5].startswith("<"):
            decomp[cpt] = [int(x, 16) for x in f[5].split()]

    def full(cpt):
        if HANGUL_S_BASE <= cpt < HANGUL_S_BASE + HANGUL_S_COUNT:
            # L V or L V T; the trailing jamo never changes the first.
            s = cpt - HANGUL_S_BASE
            return [HANGUL_L_BASE + s // HANGUL_N_COUNT, 0x1161 + (s % HANGUL_N_COUNT) // 28] + (
                [0x11A7 + s % 28] if s % 28 else [])
        if cpt not in decomp:
            return [cpt]
        return [d for part in decomp[cpt] for d in full(part)]

    def reorder(seq):
        # Canonical ordering: a stable sort by combining class of each run of
        # non-starters (class 0 characters stay where they are).
        out, run = [], []
        for c in seq:
            if ccc.get(c, 0) == 0:
                out += sorted(run, key=lambda x: ccc.get(x, 0)) + [c]
                run = []
            else:
                run.append(c)
        return out + sorted(run, key=lambda x: ccc.get(x, 0))

    result = {}
    for cpt in cpts:
        first = reorder(full(cpt))[0]
        if first != cpt:
            result[cpt] = first
    return result


def lowercase_runs(lower):
    """Runs (first, last, stride, delta): every stride-th codepoint from
    first to last maps to itself + delta. Stride 1 or 2 (Latin/Greek/Cyrillic
    alternate upper, lower pairs)."""
    runs = []
    for cpt in sorted(lower):
        delta = lower[cpt] - cpt
        if runs:
            first, last, stride, d = runs[-1]
            step = cpt - last
            if d == delta and (step == stride or (first == last and step in (1, 2))):
                runs[-1] = (first, cpt, step, d)
                continue
        runs.append((cpt, cpt, 1, delta))
    return runs


def value_ranges(mapping):
    """Ranges (first, last, value) of consecutive codepoints mapping to the
    same value."""
    ranges = []
    for cpt in sorted(mapping):
        v = mapping[cpt]
        if ranges and ranges[-1][1] == cpt - 1 and ranges[-1][2] == v:
            ranges[-1] = (ranges[-1][0], cpt, v)
        else:
            ranges.append((cpt, cpt, v))
    return ranges


def write_rows(out, rows, fmt, width=118):
    """Writes fmt(row) for each row, as many to a line as fit in width."""
    line = ""
    for r in rows:
        item = fmt(r)
        if line and len(line) + 1 + len(item) > width:
            out.write(line + "\n")
            line = ""
        line = (line + " " + item) if line else "    " + item
    if line:
        out.write(line + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ucd", default="/usr/share/unicode",
                    help="folder holding UnicodeData.txt, PropList.txt, ReadMe.txt")
    args = ap.parse_args()

    version = read_version(args.ucd)
    cats = read_categories(args.ucd)
    white = read_white_space(args.ucd)
    records = list(read_records(args.ucd))
    lower = lowercase_runs(lowercase_map(records))
    nfd = value_ranges(nfd_first_map(records))

    # (start, category) at every change; a range runs to the next start - 1.
    starts = [(0, cats[0])]
    for cpt in range(1, MAX_CODEPOINT + 1):
        if cats[cpt] != cats[cpt - 1]:
            starts.append((cpt, cats[cpt]))

    out = sys.stdout
    out.write("// GENERATED FILE, do not edit: python3 scripts/gen_unicode_tables.py\n")
    out.write(f"// from Debian's unicode-data (/usr/share/unicode), Unicode {version}.\n")
    out.write("// General-category ranges, White_Space ranges, simple lowercase runs and\n"
              "// first-of-NFD ranges for engine/text/unicode.cpp.\n")
    out.write('#include "engine/text/unicode_tables.h"\n\n')
    out.write("namespace tc::text::tables {\n\n")
    out.write(f'const char* const kUnicodeVersion = "{version}";\n\n')
    out.write("// Each entry: (first codepoint << 3) | category code, sorted; a range\n")
    out.write("// ends where the next begins. Category codes:\n// "
              + ", ".join(f"{i} {n}" for i, n in enumerate(CATEGORY_NAMES)) + ".\n")
    out.write("const uint32_t kCategoryRanges[] = {\n")
    per_line = 8
    for i in range(0, len(starts), per_line):
        chunk = starts[i:i + per_line]
        out.write("    " + " ".join(f"0x{(s << 3) | c:08X}," for s, c in chunk) + "\n")
    out.write("};\n")
    out.write(f"const size_t kCategoryRangeCount = {len(starts)};\n\n")
    out.write("// White_Space (PropList.txt): inclusive [first, last] pairs, sorted.\n")
    out.write("const uint32_t kWhiteSpaceRanges[][2] = {\n")
    for lo, hi in white:
        out.write(f"    {{0x{lo:04X}, 0x{hi:04X}}},\n")
    out.write("};\n")
    out.write(f"const size_t kWhiteSpaceRangeCount = {len(white)};\n\n")
    out.write("// Simple lowercase mapping (UnicodeData.txt field 13): {first, last, stride,\n"
              "// delta}; every stride-th codepoint of [first, last] lowercases to itself + delta.\n")
    out.write("const CaseRun kLowercaseRuns[] = {\n")
    write_rows(out, lower, lambda r: f"{{0x{r[0]:X}, 0x{r[1]:X}, {r[2]}, {r[3]}}},")
    out.write("};\n")
    out.write(f"const size_t kLowercaseRunCount = {len(lower)};\n\n")
    out.write("// First codepoint of the full canonical decomposition (NFD), where it differs:\n"
              "// {first, last, value}, every codepoint of [first, last] maps to value.\n")
    out.write("const ValueRange kNfdFirstRanges[] = {\n")
    write_rows(out, nfd, lambda r: f"{{0x{r[0]:X},0x{r[1]:X},0x{r[2]:X}}},")
    out.write("};\n")
    out.write(f"const size_t kNfdFirstRangeCount = {len(nfd)};\n\n")
    out.write("}  // namespace tc::text::tables\n")


if __name__ == "__main__":
    main()
