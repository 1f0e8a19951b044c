#!/usr/bin/env python3
"""Sparse decode against dense decode and llama.cpp, side by side in one run.

Issue 6's speed benchmark. On a generated sparse model of 7B layer shape
(n_embd 4096, 4 layers, n_ff 11008, 32 heads, vocab 32000, predictor rank
1024, about 10% of FFN neurons active, `make-model --sparse`, seed 1), per
weight type:
  - thermocline dense  on the GGUF-layout file (ffn_down, no predictors),
  - thermocline sparse on the PWRI-layout file of the same model (ffn_down_t,
    fc1/fc2; --sparsity relu),
  - llama.cpp dense    on the GGUF-layout file (bench/llamacpp_bench, the npm
    package's libllama),
decode only (tg), same thread count, rounds interleaved, medians over rounds.
It also reports the bytes a sparse token must read (attention + predictors
+ the FFN rows used + output head + KV, from the engine's own counters), the
bandwidth achieved on them, the fraction of the machine's read bandwidth
(bench/membw, measured in the same run) and the engine-level crossover batch
(bench/sparse_crossover).

  bench/sparse_decode.py [-b BUILD] [-m MODEL_DIR] [-t 2] [-r 5] [-n 64]
                         [--types f16,q4_0] [--shape 7b-layers|small] [--no-crossover]
                         [--active-sweep 0.05,0.1,0.2,0.4 [--svg FILE]]
Prints markdown; models are made once into MODEL_DIR (default BUILD/bench-models).

--active-sweep runs instead a whole decode token against the fraction of
FFN neurons active: one sparse model per fraction (`make-model --sparse
--sparse-active A`, PWRI layout) against our dense decode of the GGUF
layout (whose speed does not depend on A), rounds interleaved; --svg draws
it (bench/plot_svg.py's sparse-ffn plot).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

SHAPES = {
    "7b-layers": ["--n-embd", "4096", "--n-layer", "4", "--n-ff", "11008", "--n-head", "32",
                  "--n-head-kv", "32", "--n-vocab", "32000", "--predictor-rank", "1024"],
    "small": ["--n-embd", "1024", "--n-layer", "2", "--n-ff", "2816", "--n-head", "8",
              "--n-head-kv", "8", "--n-vocab", "8192", "--predictor-rank", "256"],
}


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit(f"sparse_decode: {' '.join(cmd)} failed ({r.returncode}):\n{r.stderr[-3000:]}")
    return r.stdout


def make(thermocline, path, shape, wtype, layout, threads, active=None):
    if os.path.exists(path) and os.path.getsize(path) > 0:
        return
    print(f"making {path}", file=sys.stderr)
    extra = ["--layout", "pwri"] if layout == "pwri" else ["--no-predictors"]
    if active is not None:
        extra += ["--sparse-active", str(active)]
    run([thermocline, "make-model", "--sparse", "-o", path + ".tmp", "--type", wtype, "--seed", "1",
         "-t", str(threads)] + SHAPES[shape] + extra)
    os.replace(path + ".tmp", path)


def ours(thermocline, path, sparsity, a):
    out = run([thermocline, "bench", "-m", path, "-p", "0", "-n", str(a.n_gen), "-r", "1", "-t", str(a.threads),
               "--sparsity", sparsity, "-o", "json"])
    return json.loads(out)[0]


def active_sweep(thermocline, model_dir, a):
    """Whole-token decode, sparse against dense, per active fraction."""
    fractions = [float(f) for f in a.active_sweep.split(",")]
    types = a.types.split(",")
    times = {}  # (type, fraction or None for dense) -> [ms per token]
    computed = {}
    for t in types:
        make(thermocline, os.path.join(model_dir, f"sparse-{a.shape}-{t}.gguf"), a.shape, t, "gguf", os.cpu_count() or 2)
        for f in fractions:
            make(thermocline, os.path.join(model_dir, f"sparse-{a.shape}-{t}-a{f:g}.powerinfer.gguf"), a.shape, t,
                 "pwri", os.cpu_count() or 2, f)
    for r in range(a.rounds):
        print(f"round {r + 1}/{a.rounds}", file=sys.stderr)
        for t in types:
            d = ours(thermocline, os.path.join(model_dir, f"sparse-{a.shape}-{t}.gguf"), "dense", a)
            times.setdefault((t, None), []).append(1000.0 / d["avg_ts"])
            for f in fractions:
                rec = ours(thermocline, os.path.join(model_dir, f"sparse-{a.shape}-{t}-a{f:g}.powerinfer.gguf"),
                           "relu", a)
                times.setdefault((t, f), []).append(1000.0 / rec["avg_ts"])
                computed[(t, f)] = rec["ffn_computed_fraction"]
    med = statistics.median
    lines = [f"# sparse decode by active fraction, {a.shape}, {a.threads} threads, tg{a.n_gen}, medians of "
             f"{a.rounds} interleaved rounds", "",
             "| dtype | active | computed | dense ms | sparse ms | dense t/s | sparse t/s | sparse vs dense |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for t in types:
        dense = med(times[(t, None)])
        for f in fractions:
            sparse = med(times[(t, f)])
            lines.append(f"| {t} | {100 * f:g}% | {100 * computed[(t, f)]:.1f}% | {dense:.2f} | {sparse:.2f} "
                         f"| {1000 / dense:.2f} | {1000 / sparse:.2f} | {dense / sparse:.2f}x |")
    print("\n".join(lines))
    if a.svg:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import plot_svg
        header = [c.strip() for c in lines[2].strip("|").split("|")]
        rows = [[c.strip() for c in l.strip("|").split("|")] for l in lines[4:]]
        series = plot_svg.sparse_ffn_series(header, rows)
        svg = plot_svg.sparse_ffn_svg(series, f"Sparse decode against dense, by active fraction ({a.shape})",
                                      f"{a.shape}, whole decode tokens (tg{a.n_gen}), {a.threads} threads; "
                                      f"bench/sparse_decode.py --active-sweep {a.active_sweep}",
                                      y_label="sparse decode speed over dense", dense_label="dense decode (1x)")
        with open(a.svg, "w", encoding="utf-8") as out:
            out.write(svg)
        print(f"wrote {a.svg}", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-b", "--build", default="build")
    ap.add_argument("-m", "--model-dir")
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("-r", "--rounds", type=int, default=5)
    ap.add_argument("-n", "--n-gen", type=int, default=64)
    ap.add_argument("--types", default="f16,q4_0")
    ap.add_argument("--shape", default="7b-layers", choices=sorted(SHAPES))
    ap.add_argument("--no-crossover", action="store_true")
    ap.add_argument("--active-sweep", help="comma-separated active fractions, e.g. 0.05,0.1,0.2,0.4")
    ap.add_argument("--svg", help="with --active-sweep: draw it into this SVG file")
    a = ap.parse_args()
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.chdir(repo)
    thermocline = os.path.join(a.build, "cli", "thermocline")
    llama = os.path.join(a.build, "bench", "llamacpp_bench")
    membw = os.path.join(a.build, "bench", "membw")
    crossover = os.path.join(a.build, "bench", "sparse_crossover")
    for exe in (thermocline, llama, membw, crossover):
        if not os.access(exe, os.X_OK):
            sys.exit(f"sparse_decode: no {exe}: build it first (cmake --build {a.build})")
    lib = os.environ.get("THERMOCLINE_LLAMA_LIB", os.path.join(
        repo, ".deps/npm/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libllama.v0.5.0.so"))
    model_dir = a.model_dir or os.path.join(a.build, "bench-models")
    os.makedirs(model_dir, exist_ok=True)
    if a.active_sweep:
        active_sweep(thermocline, model_dir, a)
        return
    types = a.types.split(",")
    files = {}
    for t in types:
        for layout in ("gguf", "pwri"):
            path = os.path.join(model_dir, f"sparse-{a.shape}-{t}" + (".powerinfer.gguf" if layout == "pwri" else ".gguf"))
            make(thermocline, path, a.shape, t, layout, os.cpu_count() or 2)
            files[(t, layout)] = path

    def ours(path, sparsity):
        out = run([thermocline, "bench", "-m", path, "-p", "0", "-n", str(a.n_gen), "-r", "1", "-t", str(a.threads),
                   "--sparsity", sparsity, "-o", "json"])
        return json.loads(out)[0]

    def theirs(path):
        out = run([llama, "bench", "-m", path, "-p", "0", "-n", str(a.n_gen), "-r", "1", "-t", str(a.threads),
                   "--lib", lib])
        return json.loads(out)[0]

    def read_bw():
        out = run([membw, "-t", str(a.threads)])
        m = re.search(r"\|\s*read\s*\|[^|]*\|[^|]*\|\s*([0-9.]+)", out)
        return float(m.group(1)) if m else float("nan")

    rows = {}
    bws = []
    for r in range(a.rounds):
        print(f"round {r + 1}/{a.rounds}", file=sys.stderr)
        bws.append(read_bw())
        for t in types:
            d = ours(files[(t, "gguf")], "dense")
            s = ours(files[(t, "pwri")], "relu")
            l = theirs(files[(t, "gguf")])
            rec = rows.setdefault(t, {"dense": [], "sparse": [], "llama": [], "sparse_rec": s, "dense_rec": d})
            rec["dense"].append(d["avg_ts"])
            rec["sparse"].append(s["avg_ts"])
            rec["llama"].append(l["avg_ts"])
    bw = statistics.median(bws)
    med = statistics.median
    print(f"# sparse decode, {a.shape}, {a.threads} threads, tg{a.n_gen}, medians of {a.rounds} interleaved rounds\n")
    print(f"machine read bandwidth (bench/membw -t {a.threads}, median of the rounds): {bw:.1f} GB/s\n")
    print("| type | llama.cpp dense t/s | thermocline dense t/s | thermocline sparse t/s | sparse vs own dense "
          "| sparse vs llama.cpp | FFN neurons computed | read / sparse token | sparse GB/s | % of read bw |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for t in types:
        rec = rows[t]
        d, s, l = med(rec["dense"]), med(rec["sparse"]), med(rec["llama"])
        nbytes = rec["sparse_rec"]["read_bytes_per_token"]
        gbs = nbytes * s / 1e9
        print(f"| {t} | {l:.2f} | {d:.2f} | {s:.2f} | {s / d:.2f}x | {s / l:.2f}x "
              f"| {100 * rec['sparse_rec']['ffn_computed_fraction']:.1f}% | {nbytes / 1e6:.0f} MB | {gbs:.1f} "
              f"| {100 * gbs / bw:.0f}% |")
    if not a.no_crossover:
        for t in types:
            print(f"\n## crossover, {t}\n")
            print(run([crossover, "--dense", files[(t, "gguf")], "--sparse", files[(t, "pwri")], "-t",
                       str(a.threads), "-r", str(max(3, a.rounds // 2)), "--batch", "1,2,4,8,16,32"]))


if __name__ == "__main__":
    main()
