#!/usr/bin/env bash
# The GPU checks (docs/cuda.md, "Tests"): built on a Debian machine without
# a GPU, run on a GPU machine that has the NVIDIA driver and CUDA toolkit but
# no Debian packages.
#
#   scripts/gpu_check.sh pack [BUILD_DIR]
#       On the build machine: builds BUILD_DIR (default build-gpu) with CUDA
#       for sm_90 (H100/H200) and copies into gpu-carry/ (git-ignored) the
#       binaries the checks run, the CUDA plugin libthermocline_cuda.so
#       beside them (the binaries link no CUDA library; they dlopen it), and
#       the Debian shared libraries a bare CUDA machine lacks (cpp-httplib
#       and its brotli; cuBLAS is the machine's own CUDA toolkit), and the
#       peers' sources, or their CUDA binaries where bench/peers.py built
#       them here (.peers/cuda). The carry must stay under 64 MiB: the
#       binaries and libraries travel xz-compressed (gpu-carry/bin-lib.tar.xz
#       and peers-cuda-bin.tar.xz), unpacked by the first step that runs
#       there. Prints the folder's size.
#
#   scripts/gpu_check.sh [-o OUT_DIR] STEP...
#       On the GPU machine, in the repository root with gpu-carry/ copied
#       into it: the steps in the order given; a failing step does not stop
#       the others. OUT_DIR (default gpu-check-out/) receives the tables and
#       the logs.
#         tests       the plugin's libraries resolve; the [cuda] kernel tests,
#                     the whole-model and hybrid [cuda] tests, and the
#                     models folder on the GPU (VRAM shared and freed)
#         agree       hybrid mode against the CPU's sparse pass on a small
#                     generated sparse model: greedy text and perplexity
#         sanitizers  compute-sanitizer memcheck and racecheck over both
#         dense       1B-class models: dense GPU and CPU decode/prefill
#                     speed, the greedy texts of both, and the GPU's Q8_0
#                     perplexity against the CPU's on the same weights as
#                     F32 (within 0.1%); the speed table to
#                     OUT_DIR/bench_summary.md
#         drafts      what a pass over 1 + k tokens (a lookup draft's
#                     verification) costs on the GPU against a decode
#                     step, k = 1, 4, 8, 16, 1B-class F16 and Q4_0 at 512
#                     tokens of context; the table to OUT_DIR/drafts.md
#         hybrid      the hybrid speed table, bench/hybrid_modes.py
#                     (HYBRID_SHAPE, default 13b; HYBRID_TYPES, default
#                     q4_0, or f16, or f16,q4_0; HYBRID_OVERLAPS, default
#                     0, e.g. 0,0.6 for a model with temporal locality
#                     too): CPU only, layer offload, hybrid with prefetch
#                     off, on and auto, the whole model on the GPU, at 40%
#                     of the model's bytes, with the hybrid time split;
#                     the table to OUT_DIR/hybrid_SHAPE_TYPES.md
#                     and its time split drawn in OUT_DIR/hybrid_SHAPE_TYPES.svg
#         peers       builds llama.cpp and PowerInfer with CUDA from the
#                     copies of their sources that pack put in
#                     gpu-carry/peers (bench/peers.py build; about 10
#                     minutes on 16 cores, kept for the machine's life)
#         versus      ours against them, bench/peers.py: versus_dense
#                     (llama.cpp CUDA, VERSUS_MODELS default 1b,
#                     VERSUS_TYPES default q4_0,q8_0,f16,q4_k, or
#                     VERSUS_PAIRS e.g. 1b:f16,1b-k:q4_k; VERSUS_DEPTHS
#                     default 512) then versus_sparse (PowerInfer, our
#                     hybrid, llama.cpp's -ngl K and ours at 40% of the
#                     file, and the whole model on the GPU; VERSUS_SHAPE
#                     default 13b, VERSUS_SPARSE_TYPES default f16,q4_0);
#                     tables to OUT_DIR/versus_*.md, figures to
#                     OUT_DIR/gpu-dense.json and OUT_DIR/hybrid.json
#         run         tests, agree, sanitizers, dense
#         one-call    what issues 33 and 34 ask a GPU run for, in one device
#                     call of at most 600 s: peers, versus_sparse (13b
#                     Q4_0), versus_dense (1b Q4_0, Q8_0, F16; 1b-k Q4_K),
#                     tests, each under a timeout (ONE_CALL_TIMEOUTS,
#                     default "40 250 180 95" s) so a slow part cannot
#                     take the others' time; alone on the command line
#       The steps' logs are packed into one file, OUT_DIR/gpu-logs-STEPS.tgz.
#       Exit status: the number of failed steps.
#
# Example, on the GPU machine (about 10 minutes):
#   scripts/gpu_check.sh -o /tmp/gpu-check-out run
set -uo pipefail
start_dir=$PWD  # a relative OUT_DIR is taken from here
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
cd "$(dirname "$0")/.."

carry=gpu-carry

# Copies into $carry/lib the shared libraries the binaries BIN... need from
# Debian packages: not glibc/libstdc++, which the machine's newer Ubuntu
# has, nor the CUDA toolkit's or driver's.
carry_libraries() {
  for bin in "$@"; do
    ldd "$bin" | awk '$3 ~ /^\// { print $3 }'
  done | sort -u | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libstdc++.so*|libgcc_s.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*) ;;
      libcublas*|libcudart*|libcuda.so*) ;;
      libssl.so*|libcrypto.so*|libz.so*) ;;  # in the CUDA image's Ubuntu
      *) cp -L "$lib" "$carry/lib/" ;;
    esac
  done
}

pack() {
  local build=${1:-build-gpu}
  set -e
  if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90
  fi
  cmake --build "$build" -j"$(nproc)" --target thermocline tc_tests_cuda tc_tests_model tc_tests_integration
  rm -rf "$carry"
  mkdir -p "$carry/bin" "$carry/lib"
  cp "$build/cli/thermocline" "$build/cli/libthermocline_cuda.so" "$build/tests/tc_tests_cuda" \
     "$build/tests/tc_tests_model" "$build/tests/tc_tests_integration" "$carry/bin/"
  if readelf -d "$carry/bin/thermocline" | grep NEEDED | grep -Eq 'libcublas|libcudart|libcuda\.so'; then
    echo "gpu_check: thermocline links a CUDA library; it should dlopen the plugin" >&2
    exit 1
  fi
  carry_libraries "$carry"/bin/*
  # The reference engines' sources and build script (bench/peers.py builds
  # them on the GPU machine), from the peers folder beside the checkout.
  local peers=${PEERS_SRC:-../shared/peers}
  # Their CUDA binaries, when built here already (bench/peers.py build
  # --mode cuda: static, sm_90): the peers step then unpacks them instead
  # of spending about 10 minutes of the GPU machine on the build, and the
  # sources stay behind (5 MB of the carry).
  local built=${PEERS_BUILT:-.peers/cuda}
  local peer_bins=("$built/llama.cpp/build/bin/llama-bench" "$built/PowerInfer/build/bin/main")
  local have_bins=0
  [ -x "${peer_bins[0]}" ] && [ -x "${peer_bins[1]}" ] && have_bins=1
  if [ -f "$peers/build_peers.sh" ]; then
    mkdir -p "$carry/peers"
    cp "$peers"/build_peers.sh "$carry/peers/"
    [ "$have_bins" = 1 ] || cp "$peers"/*.tar.xz "$carry/peers/"
  else
    echo "gpu_check: no peers folder at $peers (PEERS_SRC): the peers and versus steps will not run" >&2
  fi
  if [ "$have_bins" = 1 ]; then
    tar -cJf "$carry/peers-cuda-bin.tar.xz" -C "$built" llama.cpp/build/bin/llama-bench PowerInfer/build/bin/main
    echo "gpu_check: carrying the peers' CUDA binaries from $built ($(du -h "$carry/peers-cuda-bin.tar.xz" | cut -f1))"
    carry_libraries "${peer_bins[@]}"  # libgomp
  fi
  ls -la "$carry/bin" "$carry/lib"
  tar -cJf "$carry/bin-lib.tar.xz" -C "$carry" bin lib
  rm -rf "${carry:?}/bin" "${carry:?}/lib"
  echo "$carry: $(du -sh "$carry" | cut -f1) to carry:"
  ls -la "$carry"
  # What travels is the tracked and untracked-not-ignored files plus the
  # carry, 64 MiB in all.
  local tree carried
  tree=$(git ls-files -co --exclude-standard -z | xargs -0 stat -c %s 2>/dev/null | awk '{ s += $1 } END { print s + 0 }')
  carried=$(du -sb "$carry" | cut -f1)
  echo "gpu_check: the tree ($((tree >> 20)) MiB) and the carry ($((carried >> 20)) MiB) travel: $(((tree + carried) >> 20)) MiB of 64"
  if [ $((tree + carried)) -gt $((64 << 20)) ]; then
    echo "gpu_check: over 64 MiB: move models/default.gguf (11 MiB, no GPU check reads it) out of the tree for the call" >&2
  fi
}

# One check: its name, then the command, run in $work (the tests' scratch
# folders go there); output to $log_dir/NAME.log.
failed=0
step() {
  local name=$1
  shift
  echo "== $name: $*"
  local start=$SECONDS rc=0
  (cd "$work" && "$@") > "$log_dir/$name.log" 2>&1 || rc=$?
  if [ "$rc" = 0 ]; then
    echo "   ok ($((SECONDS - start)) s)"
  else
    echo "   FAILED ($((SECONDS - start)) s), exit $rc; last lines:"
    tail -n 15 "$log_dir/$name.log" | sed 's/^/   | /'
    failed=$((failed + 1))
  fi
}

# Everything below runs on the GPU machine, with gpu-carry/ in the
# repository root. Logs go to $log_dir (one file per step); `finish` packs
# them into $out_dir/gpu-logs-STEPS.tgz, one file to copy back.
setup_there() {
  log_dir=$out_dir/logs
  mkdir -p "$log_dir"
  repo=$PWD
  if [ -f "$carry/bin-lib.tar.xz" ] && [ ! -x "$carry/bin/thermocline" ]; then
    tar -xJf "$carry/bin-lib.tar.xz" -C "$carry" || { echo "gpu_check: cannot unpack $carry/bin-lib.tar.xz" >&2; exit 1; }
  fi
  bin=$PWD/$carry/bin
  # The test binaries were built elsewhere: point them at this tree, and
  # everything at gpu-carry/'s CUDA plugin (thermocline would find it beside
  # itself anyway; the test binaries' build-tree path is not here).
  carried_env
  export THERMOCLINE_TEST_SOURCE_DIR=$PWD THERMOCLINE_TEST_BINARY=$bin/thermocline
  work=/tmp/gpu-check-work
  mkdir -p "$work"
}

# 1. The [cuda] tests through the plugin.
check_tests() {
  step gpu nvidia-smi
  step plugin_libraries bash -c "ldd '$THERMOCLINE_CUDA_PLUGIN' && ! ldd '$THERMOCLINE_CUDA_PLUGIN' | grep 'not found'"
  step tests_cuda "$bin/tc_tests_cuda" --durations yes
  step tests_model_cuda "$bin/tc_tests_model" "[cuda]" --durations yes
  step tests_integration_cuda "$bin/tc_tests_integration" "[cuda]" --durations yes
}

# 1b. Hybrid mode against the CPU's sparse pass on a small generated sparse
# model (f16, 4 layers): greedy text and perplexity (prompt chunks of 8
# tokens, run sparse too), with the solver's placement at 75% of the file
# and prefetch on.
check_hybrid_agreement() {
  local m=$work/agree.gguf corpus=$work/agree-corpus.txt
  cat "$repo"/docs/*.md > "$corpus"
  step make_agree "$bin/thermocline" make-model --sparse -o "$m" --type f16 --seed 1 --n-embd 1024 --n-layer 4 \
    --n-ff 4096 --n-head 16 --n-head-kv 16 --n-vocab 32000 --predictor-rank 128
  step profile_agree "$bin/thermocline" profile -m "$m" --corpus "$corpus" -o "$m.stats" -n 512 -c 256
  local budget=$(( $(stat -c %s "$m") * 3 / 4 ))
  # shellcheck disable=SC2034  # read through the nameref below
  local -a hybrid=(--device cuda --placement auto --stats "$m.stats" --vram-budget "$budget" --prefetch on -b 8)
  # shellcheck disable=SC2034
  local -a cpu=(--sparsity relu -b 8)
  local side
  for side in hybrid cpu; do
    local -n args=$side
    step "generate_agree_$side" bash -c "'$bin/thermocline' generate -m '$m' ${args[*]} -p 'The engine' -n 64 \
      --temp 0 2> '$log_dir/generate_agree_$side.err'"
    step "perplexity_agree_$side" "$bin/thermocline" perplexity -m "$m" "${args[@]}" -f "$corpus" -c 256 --chunks 4 \
      --sparse-max-tokens 8
  done
  texts_report generate_agree_hybrid generate_agree_cpu
  ppl_agree perplexity_agree_hybrid perplexity_agree_cpu
}

# 2. compute-sanitizer memcheck and racecheck over the kernel tests and the
# whole-model and hybrid tests.
check_sanitizers() {
  if ! command -v compute-sanitizer > /dev/null; then
    echo "compute-sanitizer not found" > "$log_dir/memcheck.log"
    failed=$((failed + 1))
    return
  fi
  local tool
  for tool in memcheck racecheck; do
    step "${tool}_kernels" compute-sanitizer --tool "$tool" --error-exitcode 9 "$bin/tc_tests_cuda"
    step "${tool}_model" compute-sanitizer --tool "$tool" --error-exitcode 9 "$bin/tc_tests_model" "[cuda]"
  done
}

# 3. Dense speed, GPU against the CPU of the same machine, on the issue-3
# 1B-class shapes (seed 1, as bench/compare_llamacpp.sh makes them), and the
# same greedy text on both.
check_dense() {
  local shape="--n-embd 2048 --n-layer 16 --n-ff 5504 --n-head 32 --n-head-kv 8 --n-vocab 32000 --seed 1"
  local type
  for type in f16 q8_0 q4_0; do
    # shellcheck disable=SC2086
    step "make_1b_$type" "$bin/thermocline" make-model -o "$work/1b-$type.gguf" $shape --type "$type"
    step "bench_1b_${type}_cuda" "$bin/thermocline" bench -m "$work/1b-$type.gguf" --device cuda -p 512 -n 128 -r 3
    # The same decode with every kernel launched on its own (no step graphs).
    step "bench_1b_${type}_cuda_nographs" env THERMOCLINE_CUDA_GRAPHS=0 "$bin/thermocline" bench \
      -m "$work/1b-$type.gguf" --device cuda -p 0 -n 128 -r 3
    step "bench_1b_${type}_cpu" "$bin/thermocline" bench -m "$work/1b-$type.gguf" -p 512 -n 128 -r 3
  done
  local device
  for device in cuda cpu; do
    step "generate_$device" bash -c "'$bin/thermocline' generate -m '$work/1b-q8_0.gguf' --device $device \
      -p 'Once upon a time' -n 48 --temp 0 2> '$log_dir/generate_$device.err'"
  done
  texts_report generate_cuda generate_cpu
  # Whole-model agreement that near-tied greedy tokens cannot blur: the
  # perplexity of the same text on both. The CPU's Q8_0 kernels round the
  # activations to int8 (as llama.cpp's do), the GPU's take them in f16, so
  # the two Q8_0 runs differ by that rounding (0.26% on this text at
  # 44be034). The GPU's Q8_0 run is held to the CPU's run of the same
  # weights dequantized to F32 (`convert --to-f32`: f32 activations); the
  # CPU's own Q8_0 figure is logged beside them.
  step "dequantize_1b_q8_0" "$bin/thermocline" convert --to-f32 "$work/1b-q8_0.gguf" -o "$work/1b-q8_0.f32.gguf"
  step "perplexity_1b_cuda" "$bin/thermocline" perplexity -m "$work/1b-q8_0.gguf" --device cuda \
    -f "$repo/docs/engine.md" -c 256 --chunks 4
  step "perplexity_1b_cpu_f32" "$bin/thermocline" perplexity -m "$work/1b-q8_0.f32.gguf" \
    -f "$repo/docs/engine.md" -c 256 --chunks 4
  step "perplexity_1b_cpu" "$bin/thermocline" perplexity -m "$work/1b-q8_0.gguf" \
    -f "$repo/docs/engine.md" -c 256 --chunks 4
  ppl_agree perplexity_1b_cuda perplexity_1b_cpu_f32
  echo "perplexity: the CPU's Q8_0 path (int8 activations): $(sed -n 's/^ppl = \([0-9.]*\).*/\1/p' "$log_dir/perplexity_1b_cpu.log")"
  rm -f "$work/1b-q8_0.f32.gguf"
  local f
  for f in "$log_dir"/bench_*.log; do
    echo "-- $(basename "$f" .log)"
    grep -E '^\| .*(pp|tg)[0-9]|^step graphs' "$f"
  done | tee "$out_dir/bench_summary.md"
}

# Lookup drafts on the GPU (docs/api.md, "Lookup drafts"): a drafted step
# runs 1 + k tokens of one sequence; against a decode step, what does it
# cost? (docs/benchmarks.md has the CPU's figures.)
check_drafts() {
  local shape="--n-embd 2048 --n-layer 16 --n-ff 5504 --n-head 32 --n-head-kv 8 --n-vocab 32000 --seed 1"
  local type p
  for type in f16 q4_0; do
    # shellcheck disable=SC2086
    [ -f "$work/1b-$type.gguf" ] || \
      step "make_1b_$type" "$bin/thermocline" make-model -o "$work/1b-$type.gguf" $shape --type "$type"
    step "drafts_1b_${type}_tg" "$bin/thermocline" bench -m "$work/1b-$type.gguf" --device cuda -p 0 -n 64 -d 512 -r 3
    for p in 2 5 9 17; do
      step "drafts_1b_${type}_pp$p" "$bin/thermocline" bench -m "$work/1b-$type.gguf" --device cuda \
        -p "$p" -n 0 -d 512 -r 5
    done
  done
  local f
  for f in "$log_dir"/drafts_*.log; do
    grep -E '^\| .*(pp|tg)[0-9]' "$f"
  done | tee "$out_dir/drafts.md"
}

# Fails the run unless the perplexities in two steps' logs agree within
# 0.1% (the GPU sums in other orders; a wrong kernel moves it far more).
# Greedy texts of generated models may part at a near tie, so they are
# only reported.
ppl_agree() {
  local a b
  a=$(sed -n 's/^ppl = \([0-9.]*\).*/\1/p' "$log_dir/$1.log")
  b=$(sed -n 's/^ppl = \([0-9.]*\).*/\1/p' "$log_dir/$2.log")
  echo "perplexity: $1 $a, $2 $b"
  if [ -z "$a" ] || [ -z "$b" ] || ! awk -v a="$a" -v b="$b" 'BEGIN { d = (a - b) / b; exit !(d < 1e-3 && d > -1e-3) }'; then
    echo "   FAILED: the perplexities differ by more than 0.1%"
    failed=$((failed + 1))
  fi
}

texts_report() {
  if cmp -s "$log_dir/$1.log" "$log_dir/$2.log"; then
    echo "greedy text: $1 and $2 equal"
  else
    echo "greedy text: $1 and $2 differ (first differing byte: $(cmp "$log_dir/$1.log" "$log_dir/$2.log" 2>&1 | awk '{print $5}'))"
  fi
}

# The logs of this run's steps, packed under a name listing them (several
# runs into one OUT_DIR each leave their own).
finish() {
  local name
  name=gpu-logs-$(IFS=-; echo "$*").tgz
  tar czf "$out_dir/$name" -C "$out_dir" logs && rm -rf "$log_dir"
  echo "$failed step(s) failed; logs in $out_dir/$name"
}

# The environment of gpu-carry/'s binaries.
carried_env() {
  export LD_LIBRARY_PATH="$PWD/$carry/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}"
  export THERMOCLINE_CUDA_PLUGIN=$PWD/$carry/bin/libthermocline_cuda.so
}

hybrid_table() {
  local types=${1:-q4_0} shape=${2:-13b}
  local name=hybrid_${shape}_${types//,/_}
  set -o pipefail
  PYTHONUNBUFFERED=1 python3 bench/hybrid_modes.py -b "$carry" -m /tmp/hybrid-models --types "$types" \
    --shape "$shape" --overlaps "${HYBRID_OVERLAPS:-0}" -n 32 -r 3 --svg "$out_dir/$name.svg" 2> >(tee "$log_dir/$name.err" >&2) | tee "$out_dir/$name.md"
}

# The reference engines, built once per machine into /tmp/peers (outside
# the checkout: the next call on the same machine finds them there).
peers_build() {
  if [ -f "$repo/$carry/peers-cuda-bin.tar.xz" ] && [ ! -x /tmp/peers/llama.cpp/build/bin/llama-bench ]; then
    mkdir -p /tmp/peers
    step peers_unpack tar -xJf "$repo/$carry/peers-cuda-bin.tar.xz" -C /tmp/peers
  fi
  step peers_build python3 "$repo/bench/peers.py" build --mode cuda --src "$repo/$carry/peers" --dest /tmp/peers
}

versus_dense() {
  local models=${VERSUS_MODELS:-1b} types=${VERSUS_TYPES:-q4_0,q8_0,f16,q4_k} depths=${VERSUS_DEPTHS:-512}
  local pairs=()
  [ -n "${VERSUS_PAIRS:-}" ] && pairs=(--pairs "$VERSUS_PAIRS")
  set -o pipefail
  PYTHONUNBUFFERED=1 python3 bench/peers.py dense -b "$carry" -m /tmp/versus-models --peers /tmp/peers \
    --device cuda --models "$models" --types "$types" "${pairs[@]}" --depths "$depths" -r 3 \
    --json "$out_dir/gpu-dense.json" 2> >(tee "$log_dir/versus_dense.err" >&2) | tee "$out_dir/versus_dense.md" \
    || failed=$((failed + 1))
}

versus_sparse() {
  local shape=${VERSUS_SHAPE:-13b} types=${VERSUS_SPARSE_TYPES:-f16,q4_0}
  set -o pipefail
  PYTHONUNBUFFERED=1 python3 bench/peers.py sparse -b "$carry" -m /tmp/versus-models --peers /tmp/peers \
    --device cuda --shape "$shape" --types "$types" -r 3 --json "$out_dir/hybrid.json" \
    2> >(tee "$log_dir/versus_sparse.err" >&2) | tee "$out_dir/versus_sparse.md" || failed=$((failed + 1))
}

usage() {
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
}

# On the GPU machine: the steps named on the command line, in order (e.g.
# `tests hybrid sanitizers`; `run` = tests agree sanitizers dense), then the
# logs packed. `hybrid` takes its types and shape from HYBRID_TYPES /
# HYBRID_SHAPE.
if [ "${1:-}" = pack ]; then
  shift
  pack "$@"
  exit
fi
out_dir=$PWD/gpu-check-out
while [ $# -gt 0 ]; do
  case "$1" in
    -o|--out)
      [ $# -ge 2 ] || { echo "gpu_check: $1 needs a folder" >&2; exit 2; }
      case "$2" in
        /*) out_dir=$2 ;;
        *) out_dir=$start_dir/$2 ;;
      esac
      shift 2
      ;;
    -h|--help) usage; exit 0 ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || { usage; exit 2; }
mkdir -p "$out_dir" && out_dir=$(cd "$out_dir" && pwd)
if [ "$1" = one-call ]; then
  # Each part under its own timeout, so a slow one cannot take the others'
  # time and the call returns within 600 s with what finished.
  read -r t_peers t_sparse t_dense t_tests <<< "${ONE_CALL_TIMEOUTS:-40 250 180 95}"
  export VERSUS_PAIRS=${VERSUS_PAIRS:-1b:q4_0,1b:q8_0,1b:f16,1b-k:q4_k}
  export VERSUS_SPARSE_TYPES=${VERSUS_SPARSE_TYPES:-q4_0} VERSUS_SHAPE=${VERSUS_SHAPE:-13b}
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
  rc=0
  for part in "peers $t_peers" "versus_sparse $t_sparse" "versus_dense $t_dense" "tests $t_tests"; do
    read -r name limit <<< "$part"
    echo "== one-call: $name (at most $limit s), $(date -u +%H:%M:%S)"
    timeout "$limit" "$self" -o "$out_dir" "$name" || { echo "   $name: exit $?"; rc=$((rc + 1)); }
  done
  exit "$rc"
fi
setup_there
for what in "$@"; do
  case "$what" in
    run) check_tests; check_hybrid_agreement; check_sanitizers; check_dense ;;
    tests) check_tests ;;
    peers) peers_build ;;
    versus) versus_dense; versus_sparse ;;
    versus_dense) versus_dense ;;
    versus_sparse) versus_sparse ;;
    agree) check_hybrid_agreement ;;
    sanitizers) check_sanitizers ;;
    dense) check_dense ;;
    drafts) check_drafts ;;
    hybrid) hybrid_table "${HYBRID_TYPES:-q4_0}" "${HYBRID_SHAPE:-13b}" || failed=$((failed + 1)) ;;
    *) echo "gpu_check: unknown step $what" >&2; failed=$((failed + 1)) ;;
  esac
done
finish "$@"
exit "$failed"
