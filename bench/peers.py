#!/usr/bin/env python3
"""Thermocline against the reference engines built from source, side by side.

The reference engines are llama.cpp and PowerInfer, from the source
tarballs and build script in a peers folder (../shared/peers in a
checkout beside it; scripts/gpu_check.sh pack copies them into
gpu-carry/peers so they travel to a GPU machine). Every comparison runs
both engines on the same file, the same thread count and the same machine
in one run, alternating engines each round, medians over rounds.

  bench/peers.py build [--mode cuda|cpu] [--src DIR] [--dest DIR]
      Builds llama.cpp (llama-bench) and PowerInfer (main) into DEST
      (default .peers/MODE, git-ignored) from the tarballs in the peers
      folder, with build_peers.sh's flags and targets but both at once; a
      finished build is kept. cuda: sm_90 (CUDA_ARCH to change), under 10
      minutes on 16 cores; cpu: about 8 minutes on 2. The libraries are
      linked in (BUILD_SHARED_LIBS=OFF; only the CUDA toolkit's stay
      shared), so the binaries run from any folder: a cuda build made on a
      machine without a GPU (nvcc compiles there) travels to one in
      scripts/gpu_check.sh pack, which saves the GPU machine the build.

  bench/peers.py dense [--device cuda|cpu] [--models 1b,13b] [--types f16,q8_0,q4_0,q4_k]
                       [-r 3] [-t THREADS] [--depths 512] [--prompts 512] [--parallel 8] [--json FILE]
      Dense decode and prefill: llama.cpp's llama-bench (-ngl 99 on cuda)
      against `thermocline bench --sparsity dense`, on files from
      `make-model` (llama GGUFs; llama.cpp runs them as SiLU models: the
      same bytes per token). Tests: ppN from an empty cache for each N of
      --prompts ("pp512"), tg128 after
      D tokens of context for each D of --depths ("tg128@d512"), and ours
      only, tg128x8@d512 (8 sequences in one step, t/s summed). Decode rows
      get the fraction of the read bandwidth (bytes a token reads x t/s /
      the probe that `thermocline bench --probe-bandwidth` measures on the
      same device). JSON (default bench/results/gpu-dense.json on cuda,
      cpu-dense.json on cpu): machine, commit, date, hbm_read_gbs (cuda) or
      read_gbs (cpu), rows {model, type, engine, test, tps, hbm_fraction}.

  bench/peers.py sparse [--device cpu|cuda] [--shape 7b-layers|13b] [--types f16,q4_0]
                        [--budget-fraction 0.4] [-r 3] [-t THREADS] [-n 128] [--json FILE]
      The sparse engines on the PWRI form of one generated sparse model
      (`make-model --sparse --layout pwri`): PowerInfer's `main` (its
      eval rate; on cuda with --vram-budget and the placement
      `thermocline place` writes as MODEL.generated.gpuidx) against
      `thermocline bench --sparsity relu` (cpu) or hybrid mode with the
      same placement (cuda). On cuda also, on the GGUF form: llama.cpp's
      layer offload (-ngl K, K the most layers our offload plan fits in
      the budget), ours with the same K ("offload") and the whole model
      on the GPU ("gpu"); and one --time-split run for the hybrid row's
      fraction of the modelled limit. JSON: bench/results/cpu-sparse.json
      or hybrid.json.

Models are made once into MODEL_DIR (-m, default BUILD/bench-models).
Prints markdown tables last.
"""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

DENSE_SHAPES = {
    "1b": ["--n-embd", "2048", "--n-layer", "16", "--n-ff", "5504", "--n-head", "32", "--n-head-kv", "8",
           "--n-vocab", "32000"],
    # 1b with TinyLlama-1.1B's n_ff, a multiple of 256: the k-quants cover every tensor.
    "1b-k": ["--n-embd", "2048", "--n-layer", "16", "--n-ff", "5632", "--n-head", "32", "--n-head-kv", "8",
             "--n-vocab", "32000"],
    "13b": ["--n-embd", "5120", "--n-layer", "40", "--n-ff", "13824", "--n-head", "40", "--n-head-kv", "40",
            "--n-vocab", "32000"],
    "tiny": ["--n-embd", "256", "--n-layer", "2", "--n-ff", "768", "--n-head", "8", "--n-head-kv", "2",
             "--n-vocab", "1024"],
}
SPARSE_SHAPES = {
    "7b-layers": ["--n-embd", "4096", "--n-layer", "4", "--n-ff", "11008", "--n-head", "32", "--n-head-kv", "32",
                  "--n-vocab", "32000", "--predictor-rank", "1024"],
    "13b": ["--n-embd", "5120", "--n-layer", "40", "--n-ff", "13824", "--n-head", "40", "--n-head-kv", "40",
            "--n-vocab", "32000", "--predictor-rank", "1024"],
    "tiny": ["--n-embd", "256", "--n-layer", "4", "--n-ff", "1024", "--n-head", "4", "--n-head-kv", "4",
             "--n-vocab", "1024", "--predictor-rank", "64"],
}
PROMPT = ("In the beginning God created the heaven and the earth. And the earth was without form, and void; "
          "and darkness was upon the face of the deep.")


def log(msg):
    print(msg, file=sys.stderr, flush=True)


class RunFailed(Exception):
    """A command failed; the message names it and holds the end of its stderr."""


def run(cmd, what, cwd=None):
    """stdout and stderr of cmd; raises RunFailed naming the command when it fails."""
    # errors="replace": a generated model's text need not be valid UTF-8.
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace", cwd=cwd)
    if r.returncode != 0:
        raise RunFailed(f"peers: {what}: {' '.join(cmd)} failed ({r.returncode}):\n{r.stderr[-3000:]}")
    return r.stdout, r.stderr


def measure(failed, key, fn):
    """fn() unless key's engine failed before; a failure is logged and marks
    it, so one engine that cannot run leaves the others' rows."""
    if key in failed:
        return
    try:
        fn()
    except (RunFailed, ValueError, KeyError, IndexError) as e:
        log(f"peers: {key} dropped: {e}")
        failed.add(key)


def find_thermocline(build):
    for path in (os.path.join(build, "cli", "thermocline"), os.path.join(build, "bin", "thermocline")):
        if os.access(path, os.X_OK):
            return path
    sys.exit(f"peers: no thermocline binary in {build} (cli/ or bin/): build it first")


def peer_bin(dest, engine, name):
    path = os.path.join(dest, engine, "build", "bin", name)
    if not os.access(path, os.X_OK):
        sys.exit(f"peers: no {path}: run `bench/peers.py build` first")
    return path


def machine(device):
    """The machine in words: CPU model and cores, and the GPU and driver on cuda."""
    cpu = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            info = f.read()
        fields = {k: re.search(rf"^{k}\s*:\s*(.+)$", info, re.M) for k in ("model name", "cpu family", "model")}
        if fields["model name"]:
            cpu = fields["model name"].group(1)
        if fields["cpu family"] and fields["model"]:
            cpu += f" (family {fields['cpu family'].group(1)}, model {fields['model'].group(1)})"
    except OSError:
        pass
    text = f"{cpu}, {os.cpu_count()} logical CPUs"
    if device == "cuda":
        try:
            gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, check=True).stdout
            text = f"{gpu.strip().splitlines()[0]}; {text}"
        except (OSError, subprocess.CalledProcessError, IndexError):
            text = f"no nvidia-smi; {text}"
    return text


def commit():
    """HEAD's short hash; BENCH_COMMIT where the checkout travelled without .git."""
    if os.environ.get("BENCH_COMMIT"):
        return os.environ["BENCH_COMMIT"]
    try:
        return subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def make_model(thermocline, path, args, what):
    if os.path.exists(path) and os.path.getsize(path) > 0:
        return
    log(f"making {path}")
    run([thermocline, "make-model", "-o", path + ".tmp", "--seed", "1", "-t", str(os.cpu_count() or 2)] + args,
        what)
    os.replace(path + ".tmp", path)


def median(values):
    return statistics.median(values) if values else float("nan")


def write_json(path, obj):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")
    log(f"wrote {path}")


# ---- build ----

def peer_configs(dest, mode, arch):
    """(engine, tarball, cmake configure args, build targets) as build_peers.sh builds them."""
    cuda = ["-DCMAKE_CUDA_ARCHITECTURES=" + arch] if mode == "cuda" else []
    return [
        ("llama.cpp", "llama.cpp-3f545be-src.tar.xz",
         ["-DLLAMA_BUILD_SERVER=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_TESTS=OFF",
          "-DLLAMA_BUILD_APP=OFF", "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF", "-DGGML_CCACHE=OFF",
          "-DBUILD_SHARED_LIBS=OFF", "-DGGML_CUDA_NCCL=OFF",  # one GPU; and libnccl need not be where it runs
          "-DGGML_CUDA=" + ("ON" if mode == "cuda" else "OFF")] + cuda,
         ["llama-bench", "llama-completion", "llama-quantize", "mtmd"], "llama-bench"),
        ("PowerInfer", "PowerInfer-d3ebd7c-src.tar.xz",
         ["-DLLAMA_BUILD_TESTS=OFF", "-DBUILD_SHARED_LIBS=OFF",
          "-DLLAMA_CUBLAS=" + ("ON" if mode == "cuda" else "OFF")] + cuda,
         ["main", "llama-bench", "quantize"], "main"),
    ]


def cmd_build(a):
    """Both engines as build_peers.sh builds them (the same flags and
    targets), but side by side: PowerInfer's CUDA code is one large file
    that one core compiles for minutes, while llama.cpp's many files take
    the other cores."""
    src = a.src or next((p for p in (os.path.join(REPO, "..", "shared", "peers"), os.path.join(REPO, "gpu-carry", "peers"))
                         if os.path.exists(os.path.join(p, "build_peers.sh"))), None)
    if src is None:
        sys.exit("peers: no peers folder (../shared/peers or gpu-carry/peers): pass --src DIR")
    nvcc = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if os.path.exists("/usr/local/cuda/bin/nvcc") else None)
    mode = a.mode or ("cuda" if nvcc else "cpu")
    if mode == "cuda" and nvcc is None:
        sys.exit("peers: cuda mode but no nvcc")
    dest = os.path.abspath(a.dest or os.path.join(REPO, ".peers", mode))
    os.makedirs(dest, exist_ok=True)
    cores = os.cpu_count() or 2
    gen = ["-G", "Ninja"] if shutil.which("ninja") else []
    started = []
    for k, (engine, tarball, flags, targets, probe) in enumerate(peer_configs(dest, mode, os.environ.get("CUDA_ARCH", "90"))):
        root = os.path.join(dest, engine)
        if os.access(os.path.join(root, "build", "bin", probe), os.X_OK):
            log(f"peers: {engine} ({mode}) already built in {root}")
            continue
        if not os.path.exists(os.path.join(root, "CMakeLists.txt")):
            os.makedirs(root, exist_ok=True)
            run(["tar", "-xJf", os.path.join(src, tarball), "-C", root], f"unpack {tarball}")
        cuda = ["-DCMAKE_CUDA_COMPILER=" + nvcc] if mode == "cuda" else []
        with open(os.path.join(dest, f"{engine}.configure.log"), "w") as out:
            r = subprocess.run(["cmake", "-S", root, "-B", os.path.join(root, "build")] + gen +
                               ["-DCMAKE_BUILD_TYPE=Release"] + flags + cuda, stdout=out, stderr=subprocess.STDOUT)
        if r.returncode != 0:
            sys.exit(f"peers: configuring {engine} failed: {dest}/{engine}.configure.log")
        # PowerInfer gets two cores (its CUDA file takes one), llama.cpp the rest.
        jobs = 2 if engine == "PowerInfer" else max(1, cores - 2)
        out = open(os.path.join(dest, f"{engine}.build.log"), "w")
        started.append((engine, out, subprocess.Popen(
            ["cmake", "--build", os.path.join(root, "build"), "-j", str(jobs), "--target"] + targets,
            stdout=out, stderr=subprocess.STDOUT)))
        log(f"peers: building {engine} ({mode}, -j{jobs}), log {out.name}")
    failed = []
    for engine, out, proc in started:
        if proc.wait() != 0:
            failed.append(f"{engine}: see {out.name}")
        out.close()
    if failed:
        sys.exit("peers: build failed: " + "; ".join(failed))
    log(f"peers: llama.cpp and PowerInfer ({mode}) ready in {dest}")


# ---- dense ----

def llama_bench(binary, path, device, threads, n_prompt, n_gen, depth):
    cmd = [binary, "-m", path, "-p", str(n_prompt), "-n", str(n_gen), "-r", "1", "-o", "json", "-t", str(threads)]
    if depth:
        cmd += ["-d", str(depth)]
    cmd += ["-ngl", "99" if device == "cuda" else "0"]
    out, _ = run(cmd, "llama-bench")
    recs = json.loads(out)
    return recs[0]["avg_ts"]


def ours_bench(thermocline, path, device, threads, extra):
    cmd = [thermocline, "bench", "-m", path, "-r", "1", "-o", "json", "-t", str(threads), "--sparsity", "dense"]
    if device == "cuda":
        cmd += ["--device", "cuda"]
    out, _ = run(cmd + extra, "thermocline bench")
    return {r["test"]: r for r in json.loads(out)}


def probe(thermocline, path, device, threads):
    cmd = [thermocline, "bench", "-m", path, "-p", "0", "-n", "1", "-r", "1", "-o", "json", "-t", str(threads),
           "--sparsity", "dense", "--probe-bandwidth"]
    if device == "cuda":
        cmd += ["--device", "cuda"]
    out, _ = run(cmd, "bandwidth probe")
    return json.loads(out)[0]["probe_read_gbs"]


def cmd_dense(a):
    thermocline = find_thermocline(a.build)
    dest = a.peers or os.path.join(REPO, ".peers", a.device)
    llama = peer_bin(dest, "llama.cpp", "llama-bench")
    threads = a.threads or os.cpu_count() or 2
    model_dir = a.model_dir or os.path.join(a.build, "bench-models")
    os.makedirs(model_dir, exist_ok=True)
    depths = [int(d) for d in a.depths.split(",") if d]
    prompts = [int(n) for n in a.prompts.split(",") if n]
    files = {}
    pairs = [tuple(p.split(":")) for p in a.pairs.split(",")] if a.pairs else \
        [(m, t) for m in a.models.split(",") for t in a.types.split(",")]
    for m, t in pairs:
        if m not in DENSE_SHAPES:
            sys.exit(f"peers: unknown model shape {m!r} (known: {', '.join(sorted(DENSE_SHAPES))})")
        path = os.path.join(model_dir, f"dense-{m}-{t}.gguf")
        make_model(thermocline, path, DENSE_SHAPES[m] + ["--type", t], "make-model")
        files[(m, t)] = path
    samples = {}  # (model, type, engine, test) -> [t/s]
    probes = []
    read_bytes = {}
    failed = set()

    def llama_runs(m, t, path):
        for n in prompts:
            samples.setdefault((m, t, "llama.cpp", f"pp{n}"), []).append(
                llama_bench(llama, path, a.device, threads, n, 0, 0))
        tg = [llama_bench(llama, path, a.device, threads, 0, 128, d) for d in depths]
        for d, v in zip(depths, tg):
            samples.setdefault((m, t, "llama.cpp", f"tg128@d{d}"), []).append(v)

    def ours_runs(m, t, path):
        for n in prompts:
            recs = ours_bench(thermocline, path, a.device, threads, ["-p", str(n), "-n", "0"])
            samples.setdefault((m, t, "thermocline", f"pp{n}"), []).append(recs[f"pp{n}"]["avg_ts"])
        for d in depths:
            extra = ["-p", "0", "-n", "128", "-d", str(d)]
            if a.parallel > 1 and d == depths[0]:
                extra += ["--parallel", str(a.parallel)]
            recs = ours_bench(thermocline, path, a.device, threads, extra)
            for test, rec in recs.items():
                samples.setdefault((m, t, "thermocline", test), []).append(rec["avg_ts"])
                read_bytes[(m, t, test)] = rec["read_bytes_per_token"]

    def save():
        """The figures so far (after every round: a run cut short keeps them)."""
        bw = median(probes)
        rows = []
        for (m, t, engine, test), v in sorted(samples.items()):
            row = {"model": m, "type": t, "engine": engine, "test": test, "tps": median(v), "samples": v}
            if test.startswith("tg") and (m, t, test) in read_bytes and "x" not in test.split("@")[0]:
                row["hbm_fraction" if a.device == "cuda" else "read_fraction"] = \
                    read_bytes[(m, t, test)] * median(v) / (bw * 1e9)
            rows.append(row)
        out = {"machine": machine(a.device), "commit": commit(),
               "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"),
               "device": a.device, "threads": threads,
               ("hbm_read_gbs" if a.device == "cuda" else "read_gbs"): bw, "rounds": a.rounds, "rows": rows}
        write_json(a.json or os.path.join(REPO, "bench", "results",
                                          "gpu-dense.json" if a.device == "cuda" else "cpu-dense.json"), out)
        return rows, bw

    for r in range(a.rounds):
        probes.append(probe(thermocline, next(iter(files.values())), a.device, threads))
        for (m, t), path in files.items():
            log(f"round {r + 1}/{a.rounds}: {m} {t}")
            order = ["llama.cpp", "thermocline"] if r % 2 == 0 else ["thermocline", "llama.cpp"]
            for engine in order:
                runs = llama_runs if engine == "llama.cpp" else ours_runs
                measure(failed, (m, t, engine), lambda: runs(m, t, path))
        save()
    rows, bw = save()
    print(f"# dense, {a.device}, {threads} threads, medians of {a.rounds} alternating rounds; "
          f"read probe {bw:.1f} GB/s\n")
    print("| model | type | test | llama.cpp t/s | thermocline t/s | ratio | thermocline of read bw |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: |")
    tests = sorted({k[3] for k in samples})
    for (m, t) in files:
        for test in tests:
            ours = samples.get((m, t, "thermocline", test))
            theirs = samples.get((m, t, "llama.cpp", test))
            if not ours:
                continue
            o = median(ours)
            l = median(theirs) if theirs else None
            frac = next((r.get("hbm_fraction", r.get("read_fraction")) for r in rows
                         if (r["model"], r["type"], r["engine"], r["test"]) == (m, t, "thermocline", test)), None)
            print(f"| {m} | {t} | {test} | {'-' if l is None else f'{l:.2f}'} | {o:.2f} | "
                  f"{'-' if l is None else f'{o / l:.2f}x'} | {'-' if frac is None else f'{100 * frac:.0f}%'} |")


# ---- sparse ----

def powerinfer_eval_tps(stderr):
    """Tokens/s of PowerInfer's decode from llama_print_timings' eval line."""
    m = None
    for m in re.finditer(r"^\s*llama_print_timings:\s+eval time =.*?([0-9.]+) tokens per second", stderr, re.M):
        pass
    if m is None:
        sys.exit(f"peers: no eval rate in PowerInfer's output:\n{stderr[-2000:]}")
    return float(m.group(1))


def cmd_sparse(a):
    thermocline = find_thermocline(a.build)
    dest = a.peers or os.path.join(REPO, ".peers", a.device)
    pi_main = peer_bin(dest, "PowerInfer", "main")
    llama = peer_bin(dest, "llama.cpp", "llama-bench") if a.device == "cuda" else None
    threads = a.threads or os.cpu_count() or 2
    # Absolute: PowerInfer runs in model_dir (it writes main.log where it runs).
    model_dir = os.path.abspath(a.model_dir or os.path.join(a.build, "bench-models"))
    os.makedirs(model_dir, exist_ok=True)
    samples = {}
    info = {}
    failed = set()

    def sparse_run(t, engine, pwri, gguf, budget):
        """One tg run of one engine on type t; its t/s into samples."""
        if engine == "powerinfer":
            cmd = [pi_main, "-m", pwri, "-p", PROMPT, "-n", str(a.n_gen), "-t", str(threads), "--seed", "1",
                   "--ignore-eos"]
            if budget is not None:
                cmd += ["--vram-budget", f"{budget / 2**30:.3f}"]
            _, err = run(cmd, "PowerInfer main", cwd=model_dir)  # it writes main.log where it runs
            tps = powerinfer_eval_tps(err)
        elif engine == "thermocline":
            cmd = [thermocline, "bench", "-m", pwri, "-p", "0", "-n", str(a.n_gen), "-r", "1", "-o", "json",
                   "-t", str(threads)]
            if a.device == "cuda":
                cmd += ["--device", "cuda", "--placement", pwri + ".generated.gpuidx", "--prefetch", "off"]
            else:
                cmd += ["--sparsity", "relu"]
            out, _ = run(cmd, "thermocline bench")
            rec = json.loads(out)[0]
            info.setdefault(t, {}).update(rec)
            tps = rec["avg_ts"]
            engine = "hybrid" if a.device == "cuda" else "thermocline-sparse"
        elif engine == "llama.cpp-offload":
            k = info[t]["offload_layers"]
            tps = llama_bench(llama, gguf, "cpu", threads, 0, a.n_gen, 0) if k == 0 else \
                llama_bench_ngl(llama, gguf, threads, a.n_gen, k)
        else:
            # Ours on the GGUF form, dense: layer offload in the same budget
            # ("offload"), or the whole model on the GPU ("gpu").
            cmd = [thermocline, "bench", "-m", gguf, "-p", "0", "-n", str(a.n_gen), "-r", "1", "-o", "json",
                   "-t", str(threads), "--device", "cuda", "--sparsity", "dense"]
            if engine == "offload":
                cmd += ["--vram-budget", str(budget)]
            out, _ = run(cmd, f"thermocline bench ({engine})")
            tps = json.loads(out)[0]["avg_ts"]
        samples.setdefault((t, engine), []).append(tps)

    def save():
        """The rows so far, written after every round (a run cut short keeps them)."""
        rows = []
        for (t, engine), v in sorted(samples.items()):
            row = {"shape": a.shape, "type": t, "mode": engine, "tps": median(v), "samples": v}
            if a.device == "cuda":
                row["budget_gib"] = round(a.budget_fraction * os.path.getsize(os.path.join(
                    model_dir, f"peers-{a.shape}-{t}.powerinfer.gguf")) / 2**30, 3)
                if engine in ("offload", "llama.cpp-offload"):
                    row["layers_on_gpu"] = info[t]["offload_layers"]
                split = info.get(t, {}).get("time_split")
                if engine == "hybrid" and split:
                    # modelled limit / measured time per token
                    row["limit_fraction"] = split["limit_ms"] / (1e3 / median(v))
                    row["time_split"] = split
            rows.append(row)
        out = {"machine": machine(a.device), "commit": commit(),
               "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"),
               "device": a.device, "threads": threads, "rounds": a.rounds, "n_gen": a.n_gen, "rows": rows}
        write_json(a.json or os.path.join(REPO, "bench", "results",
                                          "hybrid.json" if a.device == "cuda" else "cpu-sparse.json"), out)
        return rows

    for t in a.types.split(","):
        pwri = os.path.join(model_dir, f"peers-{a.shape}-{t}.powerinfer.gguf")
        make_model(thermocline, pwri, ["--sparse", "--layout", "pwri", "--type", t] + SPARSE_SHAPES[a.shape],
                   "make-model --sparse")
        gguf = None
        budget = None
        if a.device == "cuda":
            gguf = os.path.join(model_dir, f"peers-{a.shape}-{t}.gguf")
            make_model(thermocline, gguf, ["--sparse", "--type", t] + SPARSE_SHAPES[a.shape], "make-model --sparse")
            budget = int(os.path.getsize(pwri) * a.budget_fraction)
            # The placement both engines use, from the firing the predictors
            # imply (thermocline place; PowerInfer reads it beside the model).
            stats = pwri + ".stats.gguf"
            if not os.path.exists(stats):
                run([thermocline, "profile", "-m", pwri, "--corpus", os.path.join(REPO, "README.md"), "-o", stats,
                     "-n", "512", "-c", "256", "-t", str(threads)], "profile")
            run([thermocline, "place", "-m", pwri, "--stats", stats, "--vram-budget", str(budget), "-o",
                 pwri + ".generated.gpuidx"], "place")
        if gguf:
            # The most leading layers our offload plan fits in the budget;
            # llama.cpp's -ngl gets the same count.
            def offload_plan():
                _, err = run([thermocline, "bench", "-m", gguf, "-p", "0", "-n", "1", "-r", "1", "-o", "json",
                              "--device", "cuda", "--sparsity", "dense", "--vram-budget", str(budget)],
                             "offload plan")
                k = re.search(r"layer offload: the first (\d+) of", err)
                if k is None:
                    raise RunFailed(f"peers: no layer count in the offload plan's output:\n{err[-2000:]}")
                info.setdefault(t, {})["offload_layers"] = int(k.group(1))
            measure(failed, (t, "offload-plan"), offload_plan)
        for r in range(a.rounds):
            log(f"round {r + 1}/{a.rounds}: {t}")
            order = ["powerinfer", "thermocline"] + (["llama.cpp-offload", "offload", "gpu"] if gguf else [])
            if r % 2:
                order.reverse()
            for engine in order:
                measure(failed, (t, engine), lambda: sparse_run(t, engine, pwri, gguf, budget))
            save()
        if a.device == "cuda":
            # The modelled limit (bytes per token on each side over the
            # bandwidths measured now), from one run with --time-split, which
            # waits on the GPU per layer and so is not one of the timed runs.
            def time_split():
                out, _ = run([thermocline, "bench", "-m", pwri, "-p", "0", "-n", "32", "-r", "1", "-o", "json",
                              "-t", str(threads), "--device", "cuda", "--placement", pwri + ".generated.gpuidx",
                              "--prefetch", "off", "--time-split"], "thermocline bench --time-split")
                info[t]["time_split"] = json.loads(out)[0].get("time_split")
            measure(failed, (t, "time-split"), time_split)
    rows = save()
    print(f"# sparse, {a.device}, {a.shape}, {threads} threads, tg{a.n_gen}, medians of {a.rounds} alternating "
          f"rounds\n")
    print("| type | engine | t/s | vs PowerInfer | vs llama.cpp offload | FFN computed | of modelled limit |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for t in a.types.split(","):
        pi = median(samples.get((t, "powerinfer"), []))
        lo = median(samples.get((t, "llama.cpp-offload"), []))
        for row in rows:
            if row["type"] != t:
                continue
            engine, tps = row["mode"], row["tps"]
            computed = f"{100 * info[t]['ffn_computed_fraction']:.1f}%" if engine in ("hybrid", "thermocline-sparse") \
                else "-"
            limit = f"{100 * row['limit_fraction']:.0f}%" if "limit_fraction" in row else "-"
            name = engine + (f" ({row['layers_on_gpu']} layers)" if "layers_on_gpu" in row else "")
            vs_pi = f"{tps / pi:.2f}x" if samples.get((t, "powerinfer")) else "-"
            vs_lo = f"{tps / lo:.2f}x" if samples.get((t, "llama.cpp-offload")) else "-"
            print(f"| {t} | {name} | {tps:.2f} | {vs_pi} | {vs_lo} | {computed} | {limit} |")


def llama_bench_ngl(binary, path, threads, n_gen, ngl):
    out, _ = run([binary, "-m", path, "-p", "0", "-n", str(n_gen), "-r", "1", "-o", "json", "-t", str(threads),
                  "-ngl", str(ngl)], "llama-bench -ngl")
    return json.loads(out)[0]["avg_ts"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("--mode", choices=["cuda", "cpu"])
    b.add_argument("--src")
    b.add_argument("--dest")
    for name in ("dense", "sparse"):
        p = sub.add_parser(name)
        p.add_argument("-b", "--build", default="build")
        p.add_argument("-m", "--model-dir")
        p.add_argument("--peers", help="the peers' build folder (default .peers/DEVICE)")
        p.add_argument("--device", choices=["cuda", "cpu"], default="cuda" if name == "dense" else "cpu")
        p.add_argument("-r", "--rounds", type=int, default=3)
        p.add_argument("-t", "--threads", type=int, default=0)
        p.add_argument("--json")
    d = sub.choices["dense"]
    d.add_argument("--models", default="1b,13b")
    d.add_argument("--types", default="f16,q8_0,q4_0,q4_k")
    d.add_argument("--depths", default="512", help="contexts before the tg128 runs (empty: no decode runs)")
    d.add_argument("--prompts", default="512", help="prompt lengths of the pp runs (empty: none)")
    d.add_argument("--parallel", type=int, default=8)
    d.add_argument("--pairs", help="MODEL:TYPE,... instead of every --models x --types pair (e.g. 1b:f16,1b-k:q4_k)")
    s = sub.choices["sparse"]
    s.add_argument("--shape", default="7b-layers", choices=sorted(SPARSE_SHAPES))
    s.add_argument("--types", default="f16,q4_0")
    s.add_argument("--budget-fraction", type=float, default=0.4)
    s.add_argument("-n", "--n-gen", type=int, default=128)
    a = ap.parse_args()
    os.chdir(REPO)
    try:
        {"build": cmd_build, "dense": cmd_dense, "sparse": cmd_sparse}[a.cmd](a)
    except RunFailed as e:
        sys.exit(str(e))


if __name__ == "__main__":
    main()
