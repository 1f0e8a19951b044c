#!/usr/bin/env bash
# Builds the libFuzzer target for the GGUF reader with clang, ASan and UBSan
# in build-fuzz/ and runs it, seeded with tests/data/gguf_malformed/ and a few
# valid files. New corpus entries go to build-fuzz/fuzz-work/corpus/, crash
# inputs to build-fuzz/fuzz-work/artifacts/. See docs/fuzzing.md.
# Usage: scripts/fuzz.sh [RUNS (default 1000000)] [extra libFuzzer flags...]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-1000000}
shift $(( $# > 0 ? 1 : 0 ))
build_dir=${THERMOCLINE_FUZZ_BUILD_DIR:-build-fuzz}

CC=clang CXX=clang++ cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTHERMOCLINE_FUZZ=ON -DTHERMOCLINE_TESTS=OFF -DTHERMOCLINE_CUDA=OFF >/dev/null
# Only the fuzz targets: the rest of the tree is not needed here.
cmake --build "$build_dir" --target gguf_reader_fuzz gguf_fuzz_seeds -j "${THERMOCLINE_FUZZ_JOBS:-2}"

work="$build_dir/fuzz-work"
mkdir -p "$work/corpus" "$work/seeds" "$work/artifacts"
"$build_dir/fuzz/gguf_fuzz_seeds" "$work/seeds"

# The first directory receives new inputs; the committed corpus stays untouched.
exec "$build_dir/fuzz/gguf_reader_fuzz" -runs="$runs" -max_len=65536 \
  -artifact_prefix="$work/artifacts/" -print_final_stats=1 "$@" \
  "$work/corpus" "$work/seeds" tests/data/gguf_malformed
