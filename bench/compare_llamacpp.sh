#!/usr/bin/env bash
# Thermocline against llama.cpp on the same files, the same thread count, in
# one run: prompt (pp) and decode (tg) tokens/s, decode bandwidth (weight bytes read per token x tokens/s)
# against the machine's read bandwidth (bench/membw, when built), and the
# peak RSS of each side during the tg test. Prints markdown tables.
#
# The two engines alternate: each of the R repetitions runs llama.cpp, then
# Thermocline, one process per test (each with its own warm-up run), so
# both see the same machine state. This VM's memory bandwidth drifts by 2x
# over minutes; back-to-back blocks of runs turned that drift into ratios.
# Reported: the median t/s of each side, its range, and the median of the
# per-repetition ratios.
#
# llama.cpp is the prebuilt CPU build of npm @node-llama-cpp/linux-x64 3.22.1
# (scripts/setup.sh), driven by bench/llamacpp_bench.cpp: libllama called
# directly, llama-bench's method (tools/llama-bench of the same release), no
# JavaScript in the timed loop. `--runner node` uses bench/llamacpp/run.mjs
# (node-llama-cpp's API) instead, as a cross-check.
#
# Models from `thermocline make-model` (seed 1), made once into MODEL_DIR and
# reused: "1b" (n_embd 2048, 16 layers, n_ff 5504, 32 heads, 8 KV heads,
# vocab 32000), "1b-k" (the same with TinyLlama-1.1B's n_ff 5632, a multiple
# of 256, so that every tensor of the k-quant and IQ4_XS types can be one)
# "7b-layers" (n_embd 4096, 4 layers, n_ff 11008, 32 heads, 32 KV heads,
# vocab 32000) and "a3b-layers" (8 layers of Qwen3-30B-A3B's shape:
# qwen3moe, n_embd 2048, 128 experts of width 768, 8 per token, 32 heads of
# 128, 4 KV heads; vocab 32000) and "oss-layers" (4 layers of
# gpt-oss-20b's shape: n_embd 2880, 32 experts of width 2880, 4 per token,
# 64 heads of 64, 8 KV heads, a 128 window on every other layer, YaRN x32
# from 4096; vocab 32000) and "mla-layers" (8 layers of DeepSeek-V2-Lite's
# widths under V3's attention form: deepseek2, n_embd 2048, 16 heads of
# 192 (64 rotated) decompressed from a 512 latent and a 1536 compressed
# query, one dense layer twice an expert's width, then 64 experts of width
# 1408, 6 per token, routed within 2 of 4 groups, one shared; vocab 32000) and
# "qwen35-layers" (8 layers near Qwen3.5-2B's: n_embd 2048, six gated delta
# net layers (4 query/key heads, 8 value heads of 128) and two of gated
# attention (16 heads of 128, 4 KV heads, RoPE on 32), n_ff 6144; vocab
# 32000) and "gemma4-layers" (6 layers near Gemma 4 E4B's widths: n_embd
# 2560, windowed layers (512) with 8 heads of 256 and 2 KV heads, global
# layers 2 and 5 with heads of 512 and 1 KV head, layers 3-5 sharing the
# caches of 1 and 2 with a double-wide FFN, n_ff 10240, per-layer inputs of 256;
# vocab 32000) and "granite4h-layers" (8 layers near Granite 4.0-H-Micro's:
# n_embd 2048, six Mamba-2 layers of 32 heads of 128 with 128 states in 2
# groups, two attention layers (32 heads, 8 KV heads, no RoPE), n_ff 8192;
# vocab 32000) and "lfm2-layers" (6 layers near LFM2-1.2B's: n_embd 2048,
# four short convolution layers and two of attention (32 heads, 8 KV
# heads), n_ff 8192; vocab 32000) and "gemma3n-e2b" (Gemma 3n E2B's
# shape: 30 layers of n_embd 2048, 8 heads of 256 and 2 KV heads, a 512
# window on four layers of five, n_ff 8192 with sparse gates in layers
# 0-9, layers 20-29 over earlier caches, per-layer inputs of 256; vocab
# 32000) and "mamba-layers" (8 of Falcon-Mamba 7B's 64 Mamba-1 layers:
# n_embd 4096, d_inner 8192, 16 states, dt_rank 256; vocab 32000), each in
# every type asked for (any `make-model --type`).
#
#   bench/compare_llamacpp.sh [-b BUILD_DIR] [-m MODEL_DIR] [-t THREADS] [-r REPS] [-p N_PROMPT] [-n N_GEN] [-d N_DEPTH]
#                             [--models 1b,1b-k,7b-layers,a3b-layers,oss-layers,mla-layers,qwen35-layers,gemma4-layers,gemma3n-e2b,mamba-layers,granite4h-layers,
#                              lfm2-layers]
#                             [--types f16,q8_0,q4_0] [--runner cpp|node]
#                             [--flash-attn off|on|auto] [--cache-type f16|q8_0]
#   defaults: build, BUILD_DIR/bench-models, 2 threads, 5 reps, pp512, tg128, every model and type, cpp, off, f16.
#   --cache-type q8_0: both engines' KV caches as q8_0 (llama.cpp's -ctk and
#   -ctv; it needs --flash-attn on for a quantized V cache; the cpp runner only).
#   -p 0 skips the prompt test (decode only). -d N: the decode test runs after N
#   tokens already in the cache (llama-bench's -d; the cpp runner only); the
#   GB/s columns still count the weights alone.
#   A quick check: bench/compare_llamacpp.sh -r 2 -p 64 -n 16 --models 1b --types q4_0
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

build=build
model_dir=
threads=2
reps=5
n_prompt=512
n_gen=128
n_depth=0
models=1b,7b-layers
types=f16,q8_0,q4_0
runner=cpp
flash_attn=off
cache_type=f16
usage() { sed -n '/^#   bench/,/^#   A quick/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    -b) build=$2; shift 2 ;;
    -m) model_dir=$2; shift 2 ;;
    -t) threads=$2; shift 2 ;;
    -r) reps=$2; shift 2 ;;
    -p) n_prompt=$2; shift 2 ;;
    -n) n_gen=$2; shift 2 ;;
    -d) n_depth=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --types) types=$2; shift 2 ;;
    --runner) runner=$2; shift 2 ;;
    --flash-attn) flash_attn=$2; shift 2 ;;
    --cache-type) cache_type=$2; shift 2 ;;
    -h|--help) usage ;;
    *) echo "compare_llamacpp.sh: unknown option $1" >&2; usage ;;
  esac
done
[ -n "$model_dir" ] || model_dir=$build/bench-models
case "$runner" in cpp|node) ;; *) echo "--runner is cpp or node" >&2; exit 2 ;; esac
[ "$n_depth" = 0 ] || [ "$runner" = cpp ] || { echo "-d needs --runner cpp" >&2; exit 2; }
case "$cache_type" in f16) ;; q8_0)
  [ "$runner" = cpp ] || { echo "--cache-type needs --runner cpp" >&2; exit 2; }
  [ "$flash_attn" = on ] || { echo "--cache-type q8_0: llama.cpp needs --flash-attn on for a quantized V cache" >&2; exit 2; } ;;
  *) echo "--cache-type is f16 or q8_0" >&2; exit 2 ;;
esac

thermocline=$build/cli/thermocline
[ -x "$thermocline" ] || { echo "no $thermocline: build it first (cmake --build $build --target thermocline)" >&2; exit 1; }
command -v node >/dev/null || { echo "node is needed (scripts/setup.sh installs it)" >&2; exit 1; }
lib=${THERMOCLINE_LLAMA_LIB:-$repo/.deps/npm/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libllama.v0.5.0.so}
[ -f "$lib" ] || { echo "no llama.cpp library at $lib: run scripts/setup.sh" >&2; exit 1; }
time_cmd=()
if /usr/bin/time -v true >/dev/null 2>&1; then time_cmd=(/usr/bin/time -v); fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The llama.cpp runner: built beside the others unless bench/CMakeLists.txt already did.
runner_bin=$build/bench/llamacpp_bench
if [ "$runner" = cpp ]; then
  src=bench/llamacpp_bench.cpp hdr=tests/oracle/llama_context_oracle.h
  if [ ! -x "$runner_bin" ] || [ "$src" -nt "$runner_bin" ] || [ "$hdr" -nt "$runner_bin" ]; then
    mkdir -p "$build/bench"
    echo "building $runner_bin" >&2
    ${CXX:-c++} -std=c++20 -O2 -Wall -Wextra -I"$repo" -DTHERMOCLINE_SOURCE_DIR="\"$repo\"" "$src" -ldl -o "$runner_bin"
  fi
fi

# --- models -----------------------------------------------------------------
mkdir -p "$model_dir"
model_args() {
  case "$1" in
    1b) echo "--n-embd 2048 --n-layer 16 --n-ff 5504 --n-head 32 --n-head-kv 8 --n-vocab 32000" ;;
    1b-k) echo "--n-embd 2048 --n-layer 16 --n-ff 5632 --n-head 32 --n-head-kv 8 --n-vocab 32000" ;;
    7b-layers) echo "--n-embd 4096 --n-layer 4 --n-ff 11008 --n-head 32 --n-head-kv 32 --n-vocab 32000" ;;
    a3b-layers) echo "--arch qwen3moe --n-embd 2048 --n-layer 8 --n-ff 768 --n-head 32 --n-head-kv 4 --head-dim 128 --experts 128 --experts-used 8 --n-vocab 32000" ;;
    oss-layers) echo "--arch gpt-oss --n-embd 2880 --n-layer 4 --n-ff 2880 --n-head 64 --n-head-kv 8 --head-dim 64 --experts 32 --experts-used 4 --n-vocab 32000 --n-ctx 131072 --rope-scale-yarn 32" ;;
    mla-layers) echo "--arch deepseek2 --n-embd 2048 --n-layer 8 --n-ff 1408 --n-head 16 --n-head-kv 1 --head-dim 192 --rope-dims 64 --kv-lora-rank 512 --q-lora-rank 1536 --experts 64 --experts-used 6 --n-vocab 32000" ;;
    qwen35-layers) echo "--arch qwen35 --n-embd 2048 --n-layer 8 --n-ff 6144 --n-head 16 --n-head-kv 4 --head-dim 128 --rope-dims 32 --n-vocab 32000" ;;
    gemma4-layers) echo "--arch gemma4 --n-embd 2560 --n-layer 6 --n-ff 10240 --n-head 8 --n-head-kv 2 --head-dim 256 --n-embd-per-layer 256 --shared-kv-layers 3 --sliding-window 512 --n-vocab 32000" ;;
    granite4h-layers) echo "--arch granitehybrid --n-embd 2048 --n-layer 8 --n-ff 8192 --n-head 32 --n-head-kv 8 --ssm-state 128 --n-vocab 32000" ;;
    lfm2-layers) echo "--arch lfm2 --n-embd 2048 --n-layer 6 --n-ff 8192 --n-head 32 --n-head-kv 8 --n-vocab 32000" ;;
    mamba-layers) echo "--arch mamba --n-embd 4096 --n-layer 8 --n-ff 128 --n-head 32 --n-head-kv 8 --ssm-dt-b-c-rms --n-vocab 32000" ;;
    gemma3n-e2b) echo "--arch gemma3n --n-embd 2048 --n-layer 30 --n-ff 8192 --n-head 8 --n-head-kv 2 --head-dim 256 --sliding-window 512 --n-vocab 32000" ;;
    *) echo "unknown model $1 (1b, 1b-k, 7b-layers, a3b-layers, oss-layers, mla-layers, qwen35-layers, gemma4-layers, gemma3n-e2b, mamba-layers, granite4h-layers, lfm2-layers)" >&2; exit 2 ;;
  esac
}
IFS=, read -r -a model_list <<< "$models"
IFS=, read -r -a type_list <<< "$types"
for m in "${model_list[@]}"; do
  for t in "${type_list[@]}"; do
    f=$model_dir/$m-$t.gguf
    if [ ! -s "$f" ]; then
      echo "making $f" >&2
      # shellcheck disable=SC2046
      "$thermocline" make-model -o "$f.tmp" $(model_args "$m") --type "$t" --seed 1 -t "$(nproc)" >/dev/null 2>&1
      mv "$f.tmp" "$f"
    fi
  done
done

# --- memory bandwidth -------------------------------------------------------
# probe_bandwidth: one bench/membw read probe (when built), appended to
# $work/membw.txt; run with every repetition, since the bandwidth drifts.
probe_bandwidth() {
  [ -x "$build/bench/membw" ] || return 0
  "$build/bench/membw" -t "$threads" | awk -F'|' '$2 ~ /read/ { gsub(/ /, "", $5); print $5 }' >> "$work/membw.txt"
}

# --- runs -------------------------------------------------------------------
# run NAME CMD...: stdout to $work/NAME.json, /usr/bin/time's report to $work/NAME.time.
run() {
  local name=$1; shift
  if [ ${#time_cmd[@]} -gt 0 ]; then
    "${time_cmd[@]}" -o "$work/$name.time" "$@" > "$work/$name.json" 2> "$work/$name.err" ||
      { cat "$work/$name.err" >&2; exit 1; }
  else
    "$@" > "$work/$name.json" 2> "$work/$name.err" || { cat "$work/$name.err" >&2; exit 1; }
    : > "$work/$name.time"
  fi
}
llama_run() {  # llama_run NAME MODEL N_PROMPT N_GEN N_DEPTH: one timed run after a warm-up
  if [ "$runner" = cpp ]; then
    run "$1" "$runner_bin" bench -m "$2" -p "$3" -n "$4" -d "$5" -r 1 -t "$threads" --flash-attn "$flash_attn" \
      --cache-type "$cache_type" --lib "$lib"
  else
    run "$1" node bench/llamacpp/run.mjs bench -m "$2" -p "$3" -n "$4" -r 1 -t "$threads"
  fi
}
ours_run() {  # ours_run NAME MODEL N_PROMPT N_GEN N_DEPTH: one timed run after a warm-up
  run "$1" "$thermocline" bench -m "$2" -p "$3" -n "$4" -d "$5" -r 1 -t "$threads" -o json \
    --cache-type-k "$cache_type" --cache-type-v "$cache_type"
}

list=
for m in "${model_list[@]}"; do
  for t in "${type_list[@]}"; do
    f=$model_dir/$m-$t.gguf
    key=$m-$t
    "$thermocline" inspect "$f" --json > "$work/$key.inspect.json"
    # pp and tg as separate processes, so that each peak RSS belongs to one
    # test; per repetition llama.cpp first, then Thermocline, on the same
    # warm page cache.
    for rep in $(seq "$reps"); do
      probe_bandwidth
      for test in pp tg; do
        np=0 ng=0 nd=0
        if [ "$test" = pp ]; then np=$n_prompt; else ng=$n_gen nd=$n_depth; fi
        [ "$np" -gt 0 ] || [ "$ng" -gt 0 ] || continue
        for side in llama ours; do
          echo "$key: $side $test (repetition $rep of $reps)" >&2
          "${side}_run" "$key.$side.$test.$rep" "$f" "$np" "$ng" "$nd"
        done
      done
    done
    list="$list $m:$t"
  done
done
grep -h "loaded CPU backend" "$work"/*.llama.*.err 2>/dev/null | head -1 | sed 's/^/llama.cpp: /' >&2 || true

# --- tables -----------------------------------------------------------------
membw_gbs=
if [ -s "$work/membw.txt" ]; then
  membw_gbs=$(sort -n "$work/membw.txt" | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.1f", m }')
  membw_range=$(sort -n "$work/membw.txt" | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%s-%s", lo, hi }')
fi
WORK=$work LIST=$list MEMBW=$membw_gbs MEMBW_RANGE=${membw_range:-} PROBES=$(wc -l < "$work/membw.txt" 2>/dev/null || echo 0) THREADS=$threads REPS=$reps NP=$n_prompt NG=$n_gen ND=$n_depth RUNNER=$runner \
FA=$flash_attn KV=$cache_type node - <<'EOF'
const fs = require("fs");
const env = process.env;
const w = (n) => `${env.WORK}/${n}`;
const read = (n) => (fs.existsSync(w(n)) ? fs.readFileSync(w(n), "utf8") : "");
const json = (n) => { const t = read(n); return t.trim() ? JSON.parse(t) : []; };
const rssKiB = (n) => { const m = /Maximum resident set size \(kbytes\): (\d+)/.exec(read(n)); return m ? Number(m[1]) : null; };
const reps = Number(env.REPS);
const median = (v) => { const s = [...v].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
// The t/s of each repetition of one side's test (null where it did not run).
const samples = (key, side, test) => {
  const out = [];
  for (let r = 1; r <= reps; ++r) { const j = json(`${key}.${side}.${test}.${r}.json`)[0]; out.push(j ? j.avg_ts : null); }
  return out.every((v) => v != null) ? out : null;
};
const testName = (key, test) => (json(`${key}.ours.${test}.1.json`)[0] ?? json(`${key}.llama.${test}.1.json`)[0])?.test;
const peakKiB = (key, side, test) => {
  let peak = null;
  for (let r = 1; r <= reps; ++r) { const k = rssKiB(`${key}.${side}.${test}.${r}.time`); if (k != null) peak = Math.max(peak ?? 0, k); }
  return peak;
};
const fmt = (v) => (v ? `${median(v).toFixed(2)} (${Math.min(...v).toFixed(2)}-${Math.max(...v).toFixed(2)})` : "-");
const gib = (b) => (b / 2 ** 30).toFixed(2) + " GiB";
const speed = [
  "| model | type | test | llama.cpp t/s, median (range) | thermocline t/s, median (range) | ratio, median of pairs |",
  "| --- | --- | --- | ---: | ---: | ---: |"];
const memory = [
  "| model | type | weights read / token | llama.cpp decode GB/s | thermocline decode GB/s | thermocline % of read bw | thermocline peak RSS (tg) | file + KV | llama.cpp peak RSS (tg) |",
  "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"];
for (const item of env.LIST.trim().split(/\s+/).filter(Boolean)) {
  const [model, type] = item.split(":");
  const key = `${model}-${type}`;
  const info = JSON.parse(read(`${key}.inspect.json`));
  // Decode reads every weight once per token, except the token embedding
  // (one row), unless the output head reuses it (tied embeddings).
  const tensors = info.tensors;
  const tied = !tensors.some((t) => t.name === "output.weight");
  const emb = tensors.find((t) => t.name === "token_embd.weight");
  // A mixture of experts reads expert_used_count of expert_count experts.
  const meta = (k) => info.metadata[k]?.value;
  const arch = meta("general.architecture");
  const expertShare = meta(`${arch}.expert_count`) ? meta(`${arch}.expert_used_count`) / meta(`${arch}.expert_count`) : 1;
  // Looked-up tables read one row a token: token_embd (unless it is the head) and Gemma 4's per-layer table.
  const perLayerEmb = tensors.find((t) => t.name === "per_layer_token_embd.weight");
  const perToken = tensors.reduce((s, t) => s + t.bytes * (t.name.endsWith("_exps.weight") ? expertShare : 1), 0) -
                   (tied ? 0 : emb.bytes - emb.bytes / emb.shape[1]) -
                   (perLayerEmb ? perLayerEmb.bytes - perLayerEmb.bytes / perLayerEmb.shape[1] : 0);
  // The tg test's cache, as `inspect` sizes it: f16 (or q8_0) rows of the
  // layers that cache their own, and recurrent layers' state.
  const kvBytes = info.model.kv_bytes_per_position * (Number(env.ND) + Number(env.NG) + 1) *
                  (env.KV === "q8_0" ? 34 / 64 : 1) + info.model.recurrent_state_bytes;
  for (const test of ["pp", "tg"]) {
    const ours = samples(key, "ours", test);
    const llama = samples(key, "llama", test);
    if (!ours && !llama) continue;
    const ratio = ours && llama ? median(ours.map((v, i) => v / llama[i])).toFixed(2) + "x" : "-";
    speed.push(`| ${model} | ${type} | ${testName(key, test)} | ${fmt(llama)} | ${fmt(ours)} | ${ratio} |`);
  }
  const tgOurs = samples(key, "ours", "tg"), tgLlama = samples(key, "llama", "tg");
  if (tgOurs || tgLlama) {
    const bw = (v) => (v ? (perToken * median(v) / 1e9).toFixed(1) : "-");
    const pct = tgOurs && env.MEMBW ? (100 * perToken * median(tgOurs) / 1e9 / Number(env.MEMBW)).toFixed(0) + "%" : "-";
    const rss = (side) => { const k = peakKiB(key, side, "tg"); return k == null ? "-" : gib(k * 1024); };
    memory.push(`| ${model} | ${type} | ${gib(perToken)} | ${bw(tgLlama)} | ${bw(tgOurs)} | ${pct} | ` +
      `${rss("ours")} | ${gib(info.file_size + kvBytes)} | ${rss("llama")} |`);
  }
}
const runner = env.RUNNER === "cpp"
  ? `bench/llamacpp_bench (libllama of @node-llama-cpp/linux-x64 3.22.1, flash-attn ${env.FA}, ${env.KV} KV cache)`
  : "bench/llamacpp/run.mjs (node-llama-cpp 3.22.1)";
console.log(`${env.THREADS} threads; ${env.REPS} repetitions alternating llama.cpp and Thermocline, each one process with a warm-up run; llama.cpp: ${runner}.\n`);
console.log(speed.join("\n"));
console.log("");
console.log(`Decode bandwidth = weight bytes read per token x median tg tokens/s; machine read bandwidth ${env.MEMBW ? `median ${env.MEMBW} GB/s (range ${env.MEMBW_RANGE}) over ${env.PROBES.trim()} bench/membw probes, ${env.THREADS} threads, one per repetition` : "not measured (bench/membw not built)"}.\n`);
console.log(memory.join("\n"));
EOF
