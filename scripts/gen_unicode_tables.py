#!/usr/bin/env python3
"""Generates engine/text/unicode_tables.cpp: the general-category ranges and
the White_Space list the tokenizer pre-splitters need (\\p{L}, \\p{N}, \\p{P},
\\p{S}, \\p{M}, \\s), from the Unicode Character Database files that Debian's
`unicode-data` package installs.

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


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ucd", default="/usr/share/unicode",
                    help="folder holding UnicodeData.txt, PropList.txt, ReadMe.txt")
    args = ap.parse_args()

    version = read_version(args.ucd)
    cats = read_categories(args.ucd)
    white = read_white_space(args.ucd)

    # (start, category) at every change; a range runs to the next start - 1.
    starts = [(0, cats[0])]
    for cpt in range(1, MAX_CODEPOINT + 1):
        if cats[cpt] != cats[cpt - 1]:
            starts.append((cpt, cats[cpt]))

    out = sys.stdout
    out.write("// GENERATED FILE, do not edit: python3 scripts/gen_unicode_tables.py\n")
    out.write(f"// from Debian's unicode-data (/usr/share/unicode), Unicode {version}.\n")
    out.write("// General-category ranges and White_Space ranges for engine/text/unicode.cpp.\n")
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
    out.write("}  // namespace tc::text::tables\n")


if __name__ == "__main__":
    main()
