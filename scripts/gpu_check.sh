#!/usr/bin/env bash
# The first GPU session's checklist (docs/cuda.md, "To do on the first GPU
# run") as two steps, so a lent GPU machine is used for one full call:
#
#   scripts/gpu_check.sh pack [BUILD_DIR]
#       Here (Debian, no GPU): builds BUILD_DIR (default build-gpu) with
#       CUDA for sm_90 (H100/H200) and copies into gpu-carry/ (git-ignored)
#       the binaries the checks run, the CUDA plugin libthermocline_cuda.so
#       beside them (the binaries link no CUDA library; they dlopen it), and
#       the Debian shared libraries a bare CUDA machine lacks (cpp-httplib
#       and its brotli; cuBLAS is the machine's own CUDA toolkit). Prints the
#       size to carry (limit 64 MiB).
#
#   scripts/gpu_check.sh run [OUT_DIR]
#       There, in the repository root, with gpu-carry carried: that the
#       plugin's libraries resolve, the [cuda] tests (through the plugin),
#       compute-sanitizer memcheck and racecheck on them, whole-model GPU
#       against CPU, and dense GPU and CPU decode/prefill speed on the
#       1B-class models. Each step's log goes to OUT_DIR (default $OUT, the
#       device tool's folder that comes back); a failing step does not stop
#       the others. Exit status: the number of failed steps.
#
#   scripts/gpu_check.sh hybrid [TYPES] [OUT_DIR]
#       There too, in a call of its own: issue 7's speed table,
#       bench/hybrid_modes.py on the 13B-layer shape (TYPES: q4_0 by
#       default, or f16, or f16,q4_0 when the call's time allows): CPU
#       only, layer offload, hybrid without and with prefetch, and the
#       whole model on the GPU, at 40% of the model's bytes, with the
#       hybrid time split; the table to OUT_DIR/hybrid_modes.md.
#
# Example (the device tool's `run`, ~10 minutes):
#   command: scripts/gpu_check.sh run    carry: ["gpu-carry"]
set -uo pipefail
cd "$(dirname "$0")/.."

carry=gpu-carry

pack() {
  local build=${1:-build-gpu}
  set -e
  if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90
  fi
  cmake --build "$build" -j"$(nproc)" --target thermocline tc_tests_cuda tc_tests_model
  rm -rf "$carry"
  mkdir -p "$carry/bin" "$carry/lib"
  cp "$build/cli/thermocline" "$build/cli/libthermocline_cuda.so" "$build/tests/tc_tests_cuda" \
     "$build/tests/tc_tests_model" "$carry/bin/"
  if readelf -d "$carry/bin/thermocline" | grep NEEDED | grep -Eq 'libcublas|libcudart|libcuda\.so'; then
    echo "gpu_check: thermocline links a CUDA library; it should dlopen the plugin" >&2
    exit 1
  fi
  # Shared libraries from Debian packages (not glibc/libstdc++, which the
  # machine's newer Ubuntu has, nor the CUDA toolkit's).
  for bin in "$carry"/bin/*; do
    ldd "$bin" | awk '$3 ~ /^\// { print $3 }'
  done | sort -u | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libstdc++.so*|libgcc_s.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*) ;;
      libcublas*|libcudart*|libcuda.so*) ;;
      libssl.so*|libcrypto.so*|libz.so*) ;;  # in the CUDA image's Ubuntu
      *) cp -L "$lib" "$carry/lib/" ;;
    esac
  done
  echo "$carry: $(du -sh "$carry" | cut -f1) to carry:"
  ls -la "$carry/bin" "$carry/lib"
}

# One check: its name, then the command; output to OUT_DIR/NAME.log.
failed=0
step() {
  local name=$1
  shift
  echo "== $name: $*"
  local start=$SECONDS
  if "$@" > "$out_dir/$name.log" 2>&1; then
    echo "   ok ($((SECONDS - start)) s)"
  else
    echo "   FAILED ($((SECONDS - start)) s), exit $?; last lines:"
    tail -n 15 "$out_dir/$name.log" | sed 's/^/   | /'
    failed=$((failed + 1))
  fi
}

run_checks() {
  out_dir=${1:-${OUT:-gpu-check-out}}
  mkdir -p "$out_dir"
  local bin=$PWD/$carry/bin
  # The test binaries were built elsewhere: point them at this tree, and
  # everything at the carried CUDA plugin (thermocline would find it beside
  # itself anyway; the test binaries' build-tree path is not here).
  carried_env
  export THERMOCLINE_TEST_SOURCE_DIR=$PWD THERMOCLINE_TEST_BINARY=$bin/thermocline
  local work
  work=$(mktemp -d)
  cd "$work" || exit 1  # the tests' scratch folders go here

  step gpu nvidia-smi
  step plugin_libraries bash -c "ldd '$THERMOCLINE_CUDA_PLUGIN' && ! ldd '$THERMOCLINE_CUDA_PLUGIN' | grep 'not found'"
  step tests_cuda "$bin/tc_tests_cuda" --durations yes
  step tests_model_cuda "$bin/tc_tests_model" "[cuda]" --durations yes
  if command -v compute-sanitizer > /dev/null; then
    step memcheck compute-sanitizer --tool memcheck --error-exitcode 9 "$bin/tc_tests_cuda"
    step racecheck compute-sanitizer --tool racecheck --error-exitcode 9 "$bin/tc_tests_cuda"
  else
    echo "compute-sanitizer not found" > "$out_dir/memcheck.log"
    failed=$((failed + 1))
  fi

  # Dense speed, GPU against the CPU of the same machine, on the issue-3
  # 1B-class shapes (seed 1, as bench/compare_llamacpp.sh makes them).
  local shape="--n-embd 2048 --n-layer 16 --n-ff 5504 --n-head 32 --n-head-kv 8 --n-vocab 32000 --seed 1"
  for type in f16 q8_0 q4_0; do
    # shellcheck disable=SC2086
    step "make_1b_$type" "$bin/thermocline" make-model -o "$work/1b-$type.gguf" $shape --type "$type"
    step "bench_1b_${type}_cuda" "$bin/thermocline" bench -m "$work/1b-$type.gguf" --device cuda -p 512 -n 128 -r 3
    step "bench_1b_${type}_cpu" "$bin/thermocline" bench -m "$work/1b-$type.gguf" -p 512 -n 128 -r 3
  done
  # The same greedy text on the GPU and the CPU (generated weights keep
  # logits apart, so the tokens must agree).
  for device in cuda cpu; do
    step "generate_$device" bash -c "'$bin/thermocline' generate -m '$work/1b-q8_0.gguf' --device $device \
      -p 'Once upon a time' -n 48 --temp 0 2> '$out_dir/generate_$device.err'"
  done
  if ! cmp -s "$out_dir/generate_cuda.log" "$out_dir/generate_cpu.log"; then
    echo "generate: the GPU's and the CPU's greedy texts differ (generate_cuda.log, generate_cpu.log)"
    failed=$((failed + 1))
  fi
  for f in "$out_dir"/bench_*.log; do
    echo "-- $(basename "$f" .log)"
    grep -E '^\| .*(pp|tg)[0-9]' "$f"
  done | tee "$out_dir/bench_summary.md"
  rm -rf "$work"
  echo "$failed step(s) failed; logs in $out_dir"
  return "$failed"
}

# The carried binaries' environment (as run_checks sets it).
carried_env() {
  export LD_LIBRARY_PATH="$PWD/$carry/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}"
  export THERMOCLINE_CUDA_PLUGIN=$PWD/$carry/bin/libthermocline_cuda.so
}

hybrid_table() {
  local types=${1:-q4_0}
  local out_dir=${2:-${OUT:-gpu-check-out}}
  mkdir -p "$out_dir"
  carried_env
  set -o pipefail
  PYTHONUNBUFFERED=1 python3 bench/hybrid_modes.py -b "$carry" -m /tmp/hybrid-models --types "$types" \
    --shape 13b -n 32 -r 3 2> "$out_dir/hybrid_modes.err" | tee "$out_dir/hybrid_modes.md"
}

case "${1:-}" in
  pack) shift; pack "$@" ;;
  run) shift; run_checks "$@"; exit $? ;;
  hybrid) shift; hybrid_table "$@"; exit $? ;;
  *) sed -n '2,32p' "$0"; exit 2 ;;
esac
