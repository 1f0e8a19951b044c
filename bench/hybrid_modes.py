#!/usr/bin/env python3
"""Hybrid mode against layer offload, the CPU and the whole model on the GPU.

Issue 7's speed benchmark, side by side in one run. On a generated sparse
model (`make-model --sparse`, GGUF layout with predictors, seed 1; the
13B-layer shape by default: n_embd 5120, 40 layers, n_ff 13824, 40 heads,
vocab 32000, predictor rank 1024, about 10% of FFN neurons active), per
weight type, with the VRAM budget set to a fraction (default 0.4) of the
model file's bytes:

  cpu         the sparse FFN on the CPU alone (--sparsity relu)
  offload     layer offload: the largest k of leading layers that fits the
              budget on the GPU, the rest on the CPU, dense (llama.cpp -ngl)
  hybrid      --placement auto --vram-budget B --prefetch off: the hottest
              neurons that fit on the GPU, the cold ones on the CPU
  hybrid+pf   the same with --prefetch on
  hybrid+auto the same with --prefetch auto (on only where the cost model
              says it pays)
  gpu         the whole model on the GPU, dense (skipped unless the file
              fits in the GPU's free memory)

decode (tg) tokens/s, each mode's median over `bench -r R` repetitions of
one load, and the ratios the issue sets targets for: hybrid / offload
(>= 8x) and hybrid / gpu (>= 0.7x). For the hybrid modes also the time
split per token (`bench --time-split`: GPU busy, CPU on the cold neurons,
host waits on the GPU, bus bytes) and the fraction achieved of the
modelled limit max(GPU bytes / GPU bandwidth, CPU bytes / DRAM bandwidth,
bus bytes / PCIe bandwidth), the bandwidths measured by the run (a second
table gives the bytes and bandwidths). The placement's statistics come from
`thermocline profile` on the model over docs/*.md (-n tokens). A mode the
machine cannot run (no CUDA device) is reported with the reason, so the
script also runs, CPU mode only, on a machine without a GPU.

--overlaps 0,0.6 also makes models with temporal locality (`make-model
--sparse-overlap`: that fraction of a token's active neurons were active for
the previous token; 0 is the model of independent tokens) and runs the
hybrid modes (--overlap-modes) on them: what prefetching gains where firing
repeats, and what it costs where it does not.

  bench/hybrid_modes.py [-b BUILD|gpu-carry] [-m MODEL_DIR] [--types f16,q4_0]
                        [--shape 13b|7b-layers|tiny] [--budget-fraction 0.4] [--overlaps 0,0.6]
                        [-n 32] [-r 3] [--batch 8] [--profile-tokens 1024] [-t THREADS]
                        [--svg FILE]
Prints markdown; models and stats are made once into MODEL_DIR (default
BUILD/bench-models). With --svg, the hybrid modes' time split is also drawn
(bench/plot_svg.py; `bench/plot_svg.py time-split` draws it again from the
printed table).
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot_svg  # noqa: E402 (bench/plot_svg.py, beside this script)

SHAPES = {
    "13b": ["--n-embd", "5120", "--n-layer", "40", "--n-ff", "13824", "--n-head", "40",
            "--n-head-kv", "40", "--n-vocab", "32000", "--predictor-rank", "1024"],
    "7b-layers": ["--n-embd", "4096", "--n-layer", "4", "--n-ff", "11008", "--n-head", "32",
                  "--n-head-kv", "32", "--n-vocab", "32000", "--predictor-rank", "1024"],
    "tiny": ["--n-embd", "256", "--n-layer", "4", "--n-ff", "1024", "--n-head", "4",
             "--n-head-kv", "4", "--n-vocab", "1024", "--predictor-rank", "64"],
}

MODES = ["cpu", "offload", "hybrid", "hybrid+pf", "hybrid+auto", "gpu"]
PREFETCH = {"hybrid": "off", "hybrid+pf": "on", "hybrid+auto": "auto"}


def run(cmd, what):
    """stdout and stderr of cmd; exits naming the command when it fails."""
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit(f"hybrid_modes: {what}: {' '.join(cmd)} failed ({r.returncode}):\n{r.stderr[-3000:]}")
    return r.stdout, r.stderr


def make_model(thermocline, path, shape, wtype, overlap, threads):
    if os.path.exists(path) and os.path.getsize(path) > 0:
        return
    print(f"making {path}", file=sys.stderr)
    locality = ["--sparse-overlap", str(overlap)] if overlap > 0 else []
    run([thermocline, "make-model", "--sparse", "-o", path + ".tmp", "--type", wtype, "--seed", "1",
         "-t", str(threads)] + SHAPES[shape] + locality, "make-model")
    os.replace(path + ".tmp", path)


def make_stats(thermocline, model, stats, corpus, tokens, threads):
    if os.path.exists(stats) and os.path.getsize(stats) > 0:
        return
    print(f"profiling {model} over {tokens} tokens", file=sys.stderr)
    run([thermocline, "profile", "-m", model, "--corpus", corpus, "-o", stats + ".tmp", "-n", str(tokens),
         "-c", "256", "-t", str(threads)], "profile")
    os.replace(stats + ".tmp", stats)


def mode_args(mode, stats, budget):
    if mode == "cpu":
        return ["--sparsity", "relu"]
    if mode == "offload":
        return ["--device", "cuda", "--sparsity", "dense", "--vram-budget", str(budget)]
    if mode in PREFETCH:
        return ["--device", "cuda", "--placement", "auto", "--stats", stats, "--vram-budget", str(budget),
                "--prefetch", PREFETCH[mode], "--time-split"]
    return ["--device", "cuda", "--sparsity", "dense"]  # gpu


def bench(thermocline, model, mode, stats, budget, a):
    """(record, setup lines) of one mode, or (None, reason) when it cannot run here."""
    cmd = [thermocline, "bench", "-m", model, "-p", "0", "-n", str(a.n_gen), "-r", str(a.reps), "-o", "json",
           "-b", str(a.batch)]
    if a.threads:
        cmd += ["-t", str(a.threads)]
    r = subprocess.run(cmd + mode_args(mode, stats, budget), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    if r.returncode != 0:
        lines = [l for l in r.stderr.strip().splitlines() if l.strip()]
        return None, (lines[-1] if lines else f"exit {r.returncode}")
    setup = [l for l in r.stderr.splitlines() if re.match(r"(sparsity|hybrid|prefetch|layer offload):", l)]
    return json.loads(r.stdout)[0], setup


def gpu_free_bytes():
    """Free memory of GPU 0 per nvidia-smi, or None without one."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=memory.free", "--format=csv,noheader,nounits"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, check=True).stdout
        return int(out.split()[0]) << 20
    except (OSError, subprocess.CalledProcessError, ValueError, IndexError):
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-b", "--build", default="build")
    ap.add_argument("-m", "--model-dir")
    ap.add_argument("--types", default="f16,q4_0")
    ap.add_argument("--shape", default="13b", choices=sorted(SHAPES))
    ap.add_argument("--budget-fraction", type=float, default=0.4)
    ap.add_argument("-n", "--n-gen", type=int, default=32)
    ap.add_argument("-r", "--reps", type=int, default=3)
    ap.add_argument("--batch", type=int, default=8,
                    help="tokens per step, every mode: sizes the step buffers and GPU scratch both the layer "
                         "offload plan and the placement count in the budget (decode needs 1)")
    ap.add_argument("--profile-tokens", type=int, default=1024)
    ap.add_argument("-t", "--threads", type=int, default=0, help="CPU threads (0: physical cores)")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--overlaps", default="0",
                    help="temporal locality of the models, comma-separated (make-model --sparse-overlap; 0: none)")
    ap.add_argument("--overlap-modes", default=",".join(PREFETCH),
                    help="the modes run on the models of overlap > 0")
    ap.add_argument("--svg", help="also draw the hybrid modes' time split per token into this SVG file")
    a = ap.parse_args()
    svg_path = os.path.abspath(a.svg) if a.svg else None
    if not 0 < a.budget_fraction < 1:
        sys.exit("hybrid_modes: --budget-fraction must be in (0, 1)")
    modes = a.modes.split(",")
    overlap_modes = a.overlap_modes.split(",")
    for m in modes + overlap_modes:
        if m not in MODES:
            sys.exit(f"hybrid_modes: unknown mode {m} (modes: {', '.join(MODES)})")
    try:
        overlaps = [float(x) for x in a.overlaps.split(",")]
        if any(not 0 <= x <= 0.99 for x in overlaps):
            raise ValueError
    except ValueError:
        sys.exit(f"hybrid_modes: --overlaps takes numbers in [0, 0.99], got {a.overlaps}")
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.chdir(repo)
    thermocline = os.path.join(a.build, "cli", "thermocline")
    if not os.access(thermocline, os.X_OK):  # scripts/gpu_check.sh pack's layout
        thermocline = os.path.join(a.build, "bin", "thermocline")
    if not os.access(thermocline, os.X_OK):
        sys.exit(f"hybrid_modes: no {thermocline}: build it first (cmake --build {a.build})")
    model_dir = a.model_dir or os.path.join(a.build, "bench-models")
    os.makedirs(model_dir, exist_ok=True)
    corpus = os.path.join(model_dir, "hybrid-corpus.txt")
    with open(corpus, "w", encoding="utf-8") as out:
        for path in sorted(glob.glob(os.path.join(repo, "docs", "*.md"))):
            with open(path, encoding="utf-8") as f:
                out.write(f.read())
    threads = a.threads or os.cpu_count() or 2
    free = gpu_free_bytes()

    print(f"# hybrid modes, {a.shape}, tg{a.n_gen}, VRAM budget {a.budget_fraction:.0%} of the model file, "
          f"steps of at most {a.batch} tokens (-b) in every mode, median of {a.reps} repetitions per mode\n")
    print(f"GPU free memory: {free / 2**30:.1f} GiB\n" if free is not None else "GPU: none found (nvidia-smi)\n")
    print("| type | overlap | model GiB | budget GiB | mode | t/s | vs offload | vs gpu | FFN computed "
          "| ms/token: GPU / CPU / waits | bus MB/token | of limit | setup |")
    print("| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    limits = []
    for t, overlap in [(t, ov) for t in a.types.split(",") for ov in overlaps]:
        suffix = f"-overlap{overlap:g}" if overlap > 0 else ""
        model = os.path.join(model_dir, f"hybrid-{a.shape}-{t}{suffix}.gguf")
        stats = model + ".stats.gguf"
        make_model(thermocline, model, a.shape, t, overlap, threads)
        make_stats(thermocline, model, stats, corpus, a.profile_tokens, threads)
        size = os.path.getsize(model)
        budget = int(size * a.budget_fraction)
        results = {}
        run_modes = modes if overlap == 0 else overlap_modes
        for mode in run_modes:
            if mode == "gpu" and (free is None or size >= free):
                results[mode] = (None, "skipped: the model does not fit the GPU's free memory" if free is not None
                                 else "skipped: no GPU")
                continue
            print(f"{t}, overlap {overlap:g}: {mode}", file=sys.stderr)
            results[mode] = bench(thermocline, model, mode, stats, budget, a)
        ts = {m: r[0]["avg_ts"] for m, r in results.items() if r[0] is not None}
        for mode in run_modes:
            rec, info = results[mode]
            if rec is None:
                print(f"| {t} | {overlap:g} | {size / 2**30:.2f} | {budget / 2**30:.2f} | {mode} | - | - | - | - | - "
                      f"| - | - | {info} |")
                continue
            vs = lambda other: f"{ts[mode] / ts[other]:.2f}x" if other in ts and other != mode else "-"
            split, times, bus, limit = rec.get("time_split"), "-", "-", "-"
            if split:
                gpu = "n/a" if split["gpu_ms"] is None else f"{split['gpu_ms']:.2f}"
                times = f"{gpu} / {split['cpu_ms']:.2f} / {split['wait_ms']:.2f}"
                bus = f"{split['bus_bytes'] / 1e6:.3f}"
                limit = f"{100 * split['limit_fraction']:.0f}%"
            print(f"| {t} | {overlap:g} | {size / 2**30:.2f} | {budget / 2**30:.2f} | {mode} | {rec['avg_ts']:.2f} "
                  f"| {vs('offload')} | {vs('gpu')} | {100 * rec['ffn_computed_fraction']:.1f}% "
                  f"| {times} | {bus} | {limit} | {'; '.join(info)} |")
            if split:
                limits.append((f"{t}, overlap {overlap:g}" if len(overlaps) > 1 else t, mode, split))
    if svg_path and not limits:
        print(f"hybrid_modes: no hybrid mode ran, so no time split to draw in {svg_path}", file=sys.stderr)
    if svg_path and limits:
        rows = [(f"{t} {mode}", sp["wall_ms"], sp["gpu_ms"], sp["cpu_ms"], sp["wait_ms"]) for t, mode, sp in limits]
        with open(svg_path, "w", encoding="utf-8") as f:
            f.write(plot_svg.time_split_svg(
                rows, f"Hybrid decode, {a.shape}: where a token's time goes",
                f"bench/hybrid_modes.py --shape {a.shape} -n {a.n_gen} -r {a.reps}, budget "
                f"{a.budget_fraction:.0%} of the file; wall time per token and bench --time-split's parts."))
    if limits:
        # The modelled limit's terms: bytes a token needs on each side and
        # the bandwidths the run measured on this machine.
        print("\n| type | mode | GPU MB/token | CPU MB/token | bus MB/token | GPU GB/s | host DRAM GB/s "
              "| PCIe GB/s | limit ms | wall ms |")
        print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for t, mode, sp in limits:
            print(f"| {t} | {mode} | {sp['gpu_bytes'] / 1e6:.1f} | {sp['cpu_bytes'] / 1e6:.1f} "
                  f"| {sp['bus_bytes'] / 1e6:.3f} | {sp['gpu_bw'] / 1e9:.0f} | {sp['dram_bw'] / 1e9:.1f} "
                  f"| {sp['pcie_bw'] / 1e9:.1f} | {sp['limit_ms']:.2f} | {sp['wall_ms']:.2f} |")


if __name__ == "__main__":
    main()
