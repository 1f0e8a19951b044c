#!/usr/bin/env python3
"""Image encoding against llama.cpp's, side by side: the same vision
projector file, the same image, the same threads, one run.

  bench/vision_peers.py [-b BUILD] [--peers DIR] [-r 3] [-t THREADS] [--shape gemma3|small]
                        [--flash-attn off|on|auto] [--default-once] [--json FILE]

Makes (once, into BUILD/bench-models) a gemma3 text model of Gemma 3 4B's
width (2560, one layer: only its width matters here), a random gemma3
projector (`thermocline make-mmproj`, Gemma 3's shape: 896-pixel images,
27 layers of 1152, f16; `--shape small` a 2-layer one for a quick check)
and a 640x480 PNG. llama.cpp's side is bench/llamacpp/mtmd_embed.cpp
with the encoder's flash attention --flash-attn (default off: on this
CPU its flash attention over 4096 patches is many times slower; auto,
llama.cpp's default, picks it), plus one run with llama.cpp's default
(auto) after the rounds with --default-once,
compiled here against the peers' llama.cpp build (`bench/peers.py build
--mode cpu` builds its libmtmd); ours is BUILD/bench/vision_bench. Rounds
alternate the engines; each process encodes twice and the second encode
counts (the first pays llama.cpp's graph set-up; --encodes 1 times one).
The embeddings of both
are compared (max difference over the output's RMS, cosine per row), and
llama.cpp's token layout of the prompt "<__media__>" is printed beside the
image's token count. JSON (default bench/results/vision-cpu.json):
machine, commit, date, threads, rows {engine, shape, median_s, seconds},
max_abs_diff, output_rms, min_cosine.
"""
import argparse
import datetime
import glob
import json
import math
import os
import struct
import subprocess
import sys
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402  (the shared helpers: run, log, machine, commit, ...)

SHAPES = {
    "gemma3": [],
    "small": ["--n-layer", "2", "--image-size", "224"],
}


def write_png(path, w, h):
    """A w x h RGB PNG of a smooth pattern with seeded noise (no imaging library needed)."""
    rows = bytearray()
    state = 12345
    for y in range(h):
        rows.append(0)
        for x in range(w):
            state = (state * 1103515245 + 12345) & 0x7FFFFFFF
            noise = state % 17
            rows += bytes(((x * 255 // w + noise) % 256, (y * 255 // h + noise) % 256, ((x ^ y) + noise) % 256))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(bytes(rows), 9)) + chunk(b"IEND", b""))


def build_mtmd_embed(llama_root, out):
    """bench/llamacpp/mtmd_embed.cpp against the peers' static libraries."""
    if os.access(out, os.X_OK):
        return out
    libs = []
    for pattern in ("tools/mtmd/libmtmd.a", "common/libllama-common.a", "common/libllama-common-base.a",
                    "src/libllama.a", "ggml/src/libggml.a", "ggml/src/libggml-cpu.a", "ggml/src/libggml-base.a",
                    "vendor/hash/libvendor-hash.a"):
        libs += sorted(glob.glob(os.path.join(llama_root, "build", pattern)))
    if not any(l.endswith("libmtmd.a") for l in libs):
        sys.exit(f"vision_peers: no libmtmd.a under {llama_root}/build: run `bench/peers.py build --mode cpu`")
    src = os.path.join(peers.REPO, "bench", "llamacpp", "mtmd_embed.cpp")
    inc = [os.path.join(llama_root, d) for d in ("include", "tools/mtmd", "ggml/include")]
    peers.run(["g++", "-O2", "-std=c++17", src, "-o", out] + [f"-I{d}" for d in inc] + libs +
              ["-fopenmp", "-lpthread", "-ldl"], "compile mtmd_embed")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-b", "--build", default="build-cpu")
    ap.add_argument("--peers", help="the peers' build folder (default .peers/cpu)")
    ap.add_argument("-r", "--rounds", type=int, default=3)
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("--shape", choices=sorted(SHAPES), default="gemma3")
    ap.add_argument("--flash-attn", choices=["off", "on", "auto"], default="off")
    ap.add_argument("--default-once", action="store_true")
    ap.add_argument("--encodes", type=int, default=2, help="encodes per process; the last one counts")
    ap.add_argument("--json")
    a = ap.parse_args()
    os.chdir(peers.REPO)
    build = os.path.abspath(a.build)
    thermocline = peers.find_thermocline(build)
    bench = os.path.join(build, "bench", "vision_bench")
    if not os.access(bench, os.X_OK):
        sys.exit(f"vision_peers: no {bench}: build the vision_bench target")
    dest = os.path.abspath(a.peers or os.path.join(peers.REPO, ".peers", "cpu"))
    mtmd_embed = build_mtmd_embed(os.path.join(dest, "llama.cpp"), os.path.join(dest, "mtmd_embed"))
    models = os.path.join(build, "bench-models")
    os.makedirs(models, exist_ok=True)
    text = os.path.join(models, "gemma3-2560-text.gguf")
    peers.make_model(thermocline, text, ["--arch", "gemma3", "--n-embd", "2560", "--n-layer", "1", "--n-ff", "256",
                                         "--n-head", "8", "--n-head-kv", "4", "--n-vocab", "1024", "--type", "f16"],
                     "make-model")
    mmproj = os.path.join(models, f"mmproj-{a.shape}.gguf")
    if not os.path.exists(mmproj):
        peers.log(f"making {mmproj}")
        peers.run([thermocline, "make-mmproj", "-o", mmproj, "--n-embd-text", "2560", "--seed", "1"] + SHAPES[a.shape],
                  "make-mmproj")
    image = os.path.join(models, "vision-640x480.png")
    write_png(image, 640, 480)
    ours_dump, theirs_dump = os.path.join(models, "vision-ours.f32"), os.path.join(models, "vision-llamacpp.f32")
    times = {"thermocline": [], "llama.cpp": []}
    layout = None
    for r in range(a.rounds):
        order = ["llama.cpp", "thermocline"] if r % 2 == 0 else ["thermocline", "llama.cpp"]
        for engine in order:
            if engine == "thermocline":
                out, _ = peers.run([bench, "--mmproj", mmproj, "--image", image, "-t", str(a.threads), "-r",
                                    str(a.encodes), "--dump", ours_dump], "vision_bench")
            else:
                out, _ = peers.run([mtmd_embed, text, mmproj, image, str(a.threads), str(a.encodes), theirs_dump,
                                    a.flash_attn], "mtmd_embed")
            rec = json.loads(out)
            times[engine].append(rec["seconds"][-1])
            layout = rec.get("layout", layout)
            peers.log(f"round {r + 1}: {engine} {rec['seconds'][-1]:.3f} s")
    default_s = None
    if a.default_once:
        out, _ = peers.run([mtmd_embed, text, mmproj, image, str(a.threads), "1", theirs_dump + ".auto", "auto"],
                           "mtmd_embed (default flash attention)")
        default_s = json.loads(out)["seconds"][-1]
        peers.log(f"llama.cpp with its default (flash attention auto): {default_s:.3f} s")
    n = os.path.getsize(ours_dump) // 4
    if os.path.getsize(theirs_dump) // 4 != n:
        sys.exit(f"vision_peers: the embeddings differ in size: {n} against {os.path.getsize(theirs_dump) // 4} floats")
    with open(ours_dump, "rb") as f:
        ours = struct.unpack(f"<{n}f", f.read())
    with open(theirs_dump, "rb") as f:
        theirs = struct.unpack(f"<{n}f", f.read())
    width = 2560
    max_abs = max(abs(x - y) for x, y in zip(ours, theirs))
    rms = math.sqrt(sum(y * y for y in theirs) / n)
    min_cos = 1.0
    for t in range(n // width):
        xs, ys = ours[t * width:(t + 1) * width], theirs[t * width:(t + 1) * width]
        dot = sum(x * y for x, y in zip(xs, ys))
        min_cos = min(min_cos, dot / math.sqrt(sum(x * x for x in xs) * sum(y * y for y in ys)))
    rows = [{"engine": e, "shape": a.shape, "median_s": peers.median(v), "seconds": v} for e, v in times.items()]
    rows[1]["flash_attn"] = a.flash_attn
    if default_s is not None:
        rows.append({"engine": "llama.cpp", "shape": a.shape, "flash_attn": "auto", "median_s": default_s,
                     "seconds": [default_s]})
    result = {"machine": peers.machine("cpu"), "commit": peers.commit(),
              "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
              "threads": a.threads, "rows": rows, "max_abs_diff": max_abs, "output_rms": rms, "min_cosine": min_cos,
              "llamacpp_layout": layout}
    peers.write_json(a.json or os.path.join(peers.REPO, "bench", "results", "vision-cpu.json"), result)
    ratio = peers.median(times["llama.cpp"]) / peers.median(times["thermocline"])
    print(f"| engine | encode s (median of the runs) | runs |\n| --- | ---: | ---: |")
    for row in rows:
        fa = f" (flash attention {row['flash_attn']})" if "flash_attn" in row else ""
        print(f"| {row['engine']}{fa} | {row['median_s']:.3f} | {len(row['seconds'])} |")
    print(f"\nours {ratio:.2f}x llama.cpp's speed; embeddings: max |diff| {max_abs:.3g} over RMS {rms:.3g}, "
          f"min cosine {min_cos:.6f}; llama.cpp's layout of \"<__media__>\": {layout}")


if __name__ == "__main__":
    main()
