#!/usr/bin/env python3
"""SVG plots of recorded benchmark tables (standard library only).

Reads a markdown table as the bench tools print it (or as docs/*.md records
it) and draws it:

  time-split   hybrid decode, where a token's time goes: the wall time per
               token against the GPU's busy time, the CPU's time on the cold
               neurons and the host's waits on the GPU. From the table of
               bench/hybrid_modes.py (columns `type`, `mode`, `t/s`,
               `ms/token: GPU / CPU / waits`).
  sparse-decode  the same for whole decode tokens, from the table of
               bench/sparse_decode.py --active-sweep (same columns).
  peer-ratios  our speed over a peer's per weight type, one bar per test
               (prefill, decode) and a line at 1x. From a table with
               columns `type`, `pp ratio`, `tg ratio` (the CPU dense table
               of docs/benchmarks.md, as bench/peers.py dense prints it
               reshaped per type).
  sparse-ffn   the sparse FFN's speed over the dense FFN's against the
               fraction of neurons active per token. From the decode table
               of bench/sparse_ffn_bench (columns `dtype`, `active`,
               `dense ms`, `sparse ms`; a `threads` column gives one line
               per thread count).

  bench/plot_svg.py KIND TABLE.md -o OUT.svg [--after TEXT] [--title T] [--caption C]
  bench/plot_svg.py docs     redraws the plots in docs/images/ from the
                             tables recorded in docs/ (DOC_PLOTS below)

The first table in TABLE.md (after the first line containing TEXT, with
--after) whose header has the columns KIND needs is drawn. Figures are
taken as printed; the only ones computed are 1000 / t/s, the sum of the
time split's parts and, for a table without a speed-up column, dense ms /
sparse ms.
bench/hybrid_modes.py --svg calls time_split_svg() on its own results.
"""
import argparse
import decimal
import html
import math
import os
import re
import sys

FONT = 'font-family="sans-serif"'
COLORS = {"gpu": "#4c78a8", "cpu": "#f58518", "wait": "#b0b0b0", "wall": "#222222"}
LINE_COLORS = ["#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2"]


def esc(text):
    return html.escape(str(text), quote=True)


def fmt1(x):
    """x with one decimal, halves rounded up (as a reader rounds 33.25)."""
    d = decimal.Decimal(repr(round(x, 6)))
    return str(d.quantize(decimal.Decimal("0.1"), rounding=decimal.ROUND_HALF_UP))


def first_number(cell):
    m = re.search(r"-?[0-9]+(?:\.[0-9]+)?", cell.replace("*", ""))
    return float(m.group(0)) if m else None


def read_table(path, needed, after=None):
    """(header, rows) of the first markdown table whose header cells include
    (by prefix, case-insensitive) every name in `needed`."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    if after is not None:
        starts = [i for i, l in enumerate(lines) if after in l]
        if not starts:
            sys.exit(f"plot_svg: no line containing {after!r} in {path}")
        lines = lines[starts[0]:]
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        if line.startswith("|") and i + 1 < len(lines) and re.match(r"^\|[\s:|-]+\|$", lines[i + 1].strip()):
            header = [c.strip() for c in line.strip("|").split("|")]
            rows = []
            j = i + 2
            while j < len(lines) and lines[j].strip().startswith("|"):
                rows.append([c.strip() for c in lines[j].strip().strip("|").split("|")])
                j += 1
            if all(find_column(header, n) is not None for n in needed):
                return header, rows
            i = j
        else:
            i += 1
    sys.exit(f"plot_svg: no table with columns {', '.join(needed)} in {path}")


def find_column(header, *names):
    """Index of the first header cell equal to one of names (case-insensitive),
    else of the first that starts with one; None when none does."""
    cells = [h.lower() for h in header]
    for name in names:
        if name.lower() in cells:
            return cells.index(name.lower())
    for name in names:
        for k, h in enumerate(cells):
            if h.startswith(name.lower()):
                return k
    return None


def text(x, y, s, anchor="start", extra="", size=12):
    extra = f" {extra}" if extra else ""
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" {FONT} font-size="{size}"{extra}>{esc(s)}</text>'


def wrap(s, width):
    words, out, cur = s.split(), [], ""
    for w in words:
        if cur and len(cur) + 1 + len(w) > width:
            out.append(cur)
            cur = w
        else:
            cur = f"{cur} {w}" if cur else w
    if cur:
        out.append(cur)
    return out


def svg_document(width, height, body, title, caption):
    cap = wrap(caption, 104) if caption else []
    total = height + 18 * len(cap) + (10 if cap else 0)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{total}" '
           f'viewBox="0 0 {width} {total}">',
           f'<rect width="{width}" height="{total}" fill="white"/>',
           text(width / 2, 22, title, "middle", 'font-weight="bold"', 14)]
    out += body
    for k, line in enumerate(cap):
        out.append(text(12, height + 14 + 18 * k, line, extra='fill="#444"'))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def nice_step(span, target=6):
    raw = span / target
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def time_split_svg(rows, title, caption=""):
    """rows: (label, wall_ms, gpu_ms or None, cpu_ms, wait_ms). For each row a
    bar of the wall time per token and under it the three parts laid end to
    end: where their sum passes the wall bar, the parts did not overlap."""
    width, left, right, top = 760, 150, 30, 62
    group = 46
    plot_w = width - left - right
    height = top + group * len(rows) + 40
    longest = max(max(r[1], (r[2] or 0) + r[3] + r[4]) for r in rows)
    step = nice_step(longest)
    x_max = step * math.ceil(longest / step)
    sx = lambda ms: left + plot_w * ms / x_max
    body = []
    legend = [("wall time per token", COLORS["wall"]), ("GPU busy", COLORS["gpu"]),
              ("CPU: cold neurons", COLORS["cpu"]), ("host waits on the GPU", COLORS["wait"])]
    lx = left
    for name, color in legend:
        body.append(f'<rect x="{lx}" y="36" width="12" height="12" fill="{color}"/>')
        body.append(text(lx + 16, 46, name))
        lx += 30 + 7 * len(name)
    y_axis_bottom = top + group * len(rows)
    t = 0.0
    while t <= x_max + 1e-9:
        x = sx(t)
        body.append(f'<line x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{y_axis_bottom}" stroke="#e6e6e6"/>')
        body.append(text(x, y_axis_bottom + 16, f"{t:g}", "middle"))
        t += step
    body.append(text(left + plot_w / 2, y_axis_bottom + 34, "ms per token", "middle"))
    for k, (label, wall, gpu, cpu, wait) in enumerate(rows):
        y = top + group * k
        body.append(text(left - 8, y + 22, label, "end"))
        body.append(f'<rect x="{left}" y="{y:.1f}" width="{sx(wall) - left:.1f}" height="14" '
                    f'fill="{COLORS["wall"]}"/>')
        body.append(text(sx(wall) + 4, y + 11, fmt1(wall)))
        x = left
        parts = [("gpu", gpu), ("cpu", cpu), ("wait", wait)]
        for name, ms in parts:
            if ms is None:
                continue
            w = sx(ms) - left
            body.append(f'<rect x="{x:.1f}" y="{y + 17:.1f}" width="{w:.1f}" height="14" fill="{COLORS[name]}"/>')
            x += w
        total = sum(ms for _, ms in parts if ms is not None)
        body.append(text(x + 4, y + 28, fmt1(total), extra='fill="#444"'))
    return svg_document(width, height, body, title, caption)


def sparse_ffn_svg(series, title, caption="", y_label="sparse FFN speed over dense", dense_label="dense FFN (1x)"):
    """series: name -> [(active %, speed-up, label)]. Log2 y axis; the dense
    FFN is the line at 1x. Labels above the first series' points, below and
    left of the others'."""
    width, height, left, right, top, bottom = 760, 400, 70, 150, 44, 50
    plot_w, plot_h = width - left - right, height - top - bottom
    ys = [s for pts in series.values() for _, s, _ in pts]
    lo = 2 ** math.floor(math.log2(min(ys + [1.0])))
    hi = 2 ** math.ceil(math.log2(max(ys + [1.0])))
    sx = lambda a: left + plot_w * a / 100
    sy = lambda s: top + plot_h * (1 - (math.log2(s) - math.log2(lo)) / (math.log2(hi) - math.log2(lo)))
    body = []
    v = lo
    while v <= hi * 1.0001:
        y = sy(v)
        body.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" stroke="#e6e6e6"/>')
        body.append(text(left - 6, y + 4, f"{v:g}x", "end"))
        v *= 2
    for a in range(0, 101, 10):
        x = sx(a)
        body.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + plot_h}" stroke="#f0f0f0"/>')
        body.append(text(x, top + plot_h + 16, f"{a}%", "middle"))
    body.append(f'<line x1="{left}" y1="{sy(1):.1f}" x2="{left + plot_w}" y2="{sy(1):.1f}" stroke="#222" '
                f'stroke-dasharray="5,4"/>')
    body.append(text(left + plot_w + 6, sy(1) + 4, dense_label))
    body.append(text(left + plot_w / 2, height - 12, "FFN neurons active per token", "middle"))
    body.append(text(16, top + plot_h / 2, y_label, "middle",
                     f'transform="rotate(-90 16 {top + plot_h / 2:.1f})"'))
    for k, (name, pts) in enumerate(series.items()):
        color = LINE_COLORS[k % len(LINE_COLORS)]
        ly = top + 10 + 18 * k
        body.append(f'<line x1="{left + plot_w + 8}" y1="{ly - 4}" x2="{left + plot_w + 28}" y2="{ly - 4}" '
                    f'stroke="{color}" stroke-width="2"/>')
        body.append(text(left + plot_w + 32, ly, name, extra=f'fill="{color}" font-weight="bold"'))
        pts = sorted(pts)
        path = " ".join(f"{'M' if i == 0 else 'L'}{sx(a):.1f},{sy(s):.1f}" for i, (a, s, _) in enumerate(pts))
        body.append(f'<path d="{path}" fill="none" stroke="{color}" stroke-width="2"/>')
        for a, s, label in pts:
            body.append(f'<circle cx="{sx(a):.1f}" cy="{sy(s):.1f}" r="3.5" fill="{color}"/>')
            if k == 0:
                body.append(text(sx(a) + 4, sy(s) - 8, label, extra=f'fill="{color}"'))
            else:
                body.append(text(sx(a) - 5, sy(s) + 16, label, "end", f'fill="{color}"'))
    return svg_document(width, height, body, title, caption)


def peer_ratios_svg(rows, title, caption="", peer="llama.cpp"):
    """rows: (label, pp ratio, tg ratio), ratios ours / peer's. Horizontal
    bars on a log2 axis from the 1x line, prefill above decode per row."""
    width, left, right, top = 760, 110, 60, 62
    group = 44
    plot_w = width - left - right
    height = top + group * len(rows) + 40
    ratios = [r for row in rows for r in row[1:] if r]
    lo = 2 ** math.floor(math.log2(min(ratios + [1.0])))
    hi = 2 ** math.ceil(math.log2(max(ratios + [1.0])))
    sx = lambda r: left + plot_w * (math.log2(r) - math.log2(lo)) / (math.log2(hi) - math.log2(lo))
    colors = {"pp": COLORS["gpu"], "tg": COLORS["cpu"]}
    body = []
    lx = left
    for name, key in ((f"prefill (pp512): ours / {peer}", "pp"), (f"decode (tg128@d512): ours / {peer}", "tg")):
        body.append(f'<rect x="{lx}" y="36" width="12" height="12" fill="{colors[key]}"/>')
        body.append(text(lx + 16, 46, name))
        lx += 30 + 7 * len(name)
    bottom = top + group * len(rows)
    ticks = [lo * 2 ** (k / 2) for k in range(int(2 * math.log2(hi / lo)) + 1)]
    for v in ticks:
        x = sx(v)
        stroke = 'stroke="#222" stroke-dasharray="5,4"' if abs(v - 1) < 1e-9 else 'stroke="#e6e6e6"'
        body.append(f'<line x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{bottom}" {stroke}/>')
        body.append(text(x, bottom + 16, f"{v:.2f}".rstrip("0").rstrip(".") + "x", "middle"))
    body.append(text(left + plot_w / 2, bottom + 34, f"speed over {peer} (log scale; right of the dashed line: "
                     "ours faster)", "middle"))
    for k, (label, pp, tg) in enumerate(rows):
        y = top + group * k
        body.append(text(left - 8, y + 20, label, "end"))
        for j, (key, r) in enumerate((("pp", pp), ("tg", tg))):
            if not r:
                continue
            x0, x1 = sorted((sx(1.0), sx(r)))
            yy = y + 3 + 17 * j
            body.append(f'<rect x="{x0:.1f}" y="{yy:.1f}" width="{x1 - x0:.1f}" height="14" fill="{colors[key]}"/>')
            tx, anchor = (x1 + 4, "start") if r >= 1 else (x0 - 4, "end")
            body.append(text(tx, yy + 11, f"{r:.2f}x", anchor))
    return svg_document(width, height, body, title, caption)


def peer_ratio_rows(header, rows):
    c_type, c_pp, c_tg = find_column(header, "type"), find_column(header, "pp ratio"), find_column(header, "tg ratio")
    c_model = find_column(header, "model")
    out = []
    for r in rows:
        pp, tg = first_number(r[c_pp]), first_number(r[c_tg])
        if pp is None and tg is None:
            continue
        label = (f"{r[c_model]} " if c_model is not None else "") + r[c_type]
        out.append((label, pp, tg))
    return out


def time_split_rows(header, rows):
    c_type, c_mode, c_ts = find_column(header, "type"), find_column(header, "mode"), find_column(header, "t/s")
    c_split = find_column(header, "ms/token")
    out = []
    for r in rows:
        parts = [p.strip() for p in re.split(r"\s+/\s+", r[c_split])]
        if len(parts) != 3:
            continue
        ts = first_number(r[c_ts])
        cpu, wait = first_number(parts[1]), first_number(parts[2])
        if not ts or cpu is None or wait is None:
            continue
        out.append((f"{r[c_type]} {r[c_mode]}", 1000.0 / ts, first_number(parts[0]), cpu, wait))
    return out


def sparse_ffn_series(header, rows):
    """name -> [(active %, speed-up, its text)]. The speed-up is the table's
    own column (sparse_ffn_bench prints the median of the rounds' ratios,
    which is not the ratio of the median times), else dense / sparse."""
    c_type = find_column(header, "dtype")
    c_threads = find_column(header, "threads")
    c_active, c_dense, c_sparse = find_column(header, "active"), find_column(header, "dense ms"), \
        find_column(header, "sparse ms")
    c_speedup = find_column(header, "speedup", "sparse vs dense")
    series = {}
    for r in rows:
        active, dense, sparse = first_number(r[c_active]), first_number(r[c_dense]), first_number(r[c_sparse])
        if active is None or not dense or not sparse or "%" not in r[c_active]:
            continue
        if c_speedup is not None and first_number(r[c_speedup]):
            label = r[c_speedup].replace("*", "")
            speedup = first_number(label)
        else:
            speedup = dense / sparse
            label = f"{speedup:.2f}x"
        name = r[c_type] + (f", {r[c_threads]} thread(s)" if c_threads is not None else "")
        series.setdefault(name, []).append((active, speedup, label))
    return series


# The plots the docs show: (kind, output, table file, --after, title, caption),
# paths from the repository root.
DOC_PLOTS = [
    ("time-split", "docs/images/hybrid-time-split.svg", "docs/benchmarks.md", "## Hybrid mode",
     "Hybrid decode on an H100: where a token's time goes",
     "Hybrid 13b model, VRAM budget 40% of the file, tg32, 16 CPU threads; H100 machine, 2026-11-25 "
     "(docs/benchmarks.md, hybrid table). GPU, CPU and wait times are bench --time-split's; the wall time "
     "is 1000 divided by t/s."),
    ("sparse-decode", "docs/images/sparse-decode-active.svg", "docs/benchmarks.md", "### By active fraction",
     "Sparse decode against dense, by active fraction (7b-layers)",
     "7b-layers, whole decode tokens (tg64), 2 threads; Zen 3 machine, 2026-11-25, bench/sparse_decode.py "
     "--active-sweep (docs/benchmarks.md, By active fraction)."),
    ("peer-ratios", "docs/images/cpu-dense-llamacpp.svg", "docs/benchmarks.md", "### Against llama.cpp built from source",
     "CPU prefill and decode against llama.cpp built from source",
     "The 1b-k model per weight type, 2 threads, engines alternating, medians of 3; Zen 3 machine, "
     "bench/peers.py dense (docs/benchmarks.md, Against llama.cpp built from source)."),
    ("sparse-ffn", "docs/images/sparse-ffn-active.svg", "docs/benchmarks-history.md", "## Sparse FFN kernels",
     "Sparse FFN block against dense, by active fraction",
     "7B FFN shape (n_embd 4096, n_ff 11008), one token, one thread; first AVX2 machine, 2026-11-21, "
     "sparse_ffn_bench -r 9 (docs/benchmarks-history.md, Sparse FFN kernels). A preliminary run on a "
     "loaded machine."),
]


def draw(kind, table, after, title, caption):
    if kind == "peer-ratios":
        header, rows = read_table(table, ["type", "pp ratio", "tg ratio"], after)
        data = peer_ratio_rows(header, rows)
        if not data:
            sys.exit(f"plot_svg: the table in {table} has no ratio rows")
        return peer_ratios_svg(data, title or "Ours against a peer, per weight type", caption)
    if kind == "time-split":
        header, rows = read_table(table, ["type", "mode", "t/s", "ms/token"], after)
        data = time_split_rows(header, rows)
        if not data:
            sys.exit(f"plot_svg: the table in {table} has no time split rows")
        return time_split_svg(data, title or "Hybrid decode: where a token's time goes", caption)
    header, rows = read_table(table, ["dtype", "active", "dense ms", "sparse ms"], after)
    data = sparse_ffn_series(header, rows)
    if not data:
        sys.exit(f"plot_svg: the table in {table} has no sparse rows")
    if kind == "sparse-decode":
        return sparse_ffn_svg(data, title or "Sparse decode against dense, by active fraction", caption,
                              y_label="sparse decode speed over dense", dense_label="dense decode (1x)")
    return sparse_ffn_svg(data, title or "Sparse FFN against dense, by active fraction", caption)


def main():
    if sys.argv[1:] == ["docs"]:
        repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        for kind, out, table, after, title, caption in DOC_PLOTS:
            svg = draw(kind, os.path.join(repo, table), after, title, caption)
            with open(os.path.join(repo, out), "w", encoding="utf-8") as f:
                f.write(svg)
            print(f"plot_svg: {out} from {table}")
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kind", choices=["time-split", "sparse-ffn", "sparse-decode", "peer-ratios"])
    ap.add_argument("table", help="a markdown file holding the table")
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--after", help="start looking after the first line containing this text")
    ap.add_argument("--title")
    ap.add_argument("--caption", default="")
    a = ap.parse_args()
    svg = draw(a.kind, a.table, a.after, a.title, a.caption)
    with open(a.out, "w", encoding="utf-8") as f:
        f.write(svg)


if __name__ == "__main__":
    main()
