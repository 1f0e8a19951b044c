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
Prints markdown; models are made once into MODEL_DIR (default BUILD/bench-models).
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


def make(thermocline, path, shape, wtype, layout, threads):
    if os.path.exists(path) and os.path.getsize(path) > 0:
        return
    print(f"making {path}", file=sys.stderr)
    extra = ["--layout", "pwri"] if layout == "pwri" else ["--no-predictors"]
    run([thermocline, "make-model", "--sparse", "-o", path + ".tmp", "--type", wtype, "--seed", "1",
         "-t", str(threads)] + SHAPES[shape] + extra)
    os.replace(path + ".tmp", path)


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
