#!/usr/bin/env bash
# Builds the libFuzzer targets with clang, ASan and UBSan in build-fuzz/ and
# runs one of them. New corpus entries go to build-fuzz/fuzz-work/TARGET/corpus/,
# crash inputs to build-fuzz/fuzz-work/TARGET/artifacts/. See docs/fuzzing.md.
#   scripts/fuzz.sh [gguf|openai|template|tokenizer] [RUNS (default 1000000)] [extra libFuzzer flags...]
#   gguf      the GGUF reader, seeded with tests/data/gguf_malformed/ and a few valid files
#   openai    a request body through the OpenAI schema and the bundled chat
#             templates, seeded with fuzz/seeds/openai_request/, dictionary fuzz/openai_request.dict
#   template  a chat template source, parsed and rendered, seeded with the
#             bundled templates, dictionary fuzz/chat_template.dict
#   tokenizer text through the bundled model's tokenizer and back, seeded
#             with fuzz/seeds/tokenizer/
set -euo pipefail
cd "$(dirname "$0")/.."
target=gguf
case "${1:-}" in
  gguf|openai|template|tokenizer) target=$1; shift ;;
esac
runs=${1:-1000000}
shift $(( $# > 0 ? 1 : 0 ))
build_dir=${THERMOCLINE_FUZZ_BUILD_DIR:-build-fuzz}

CC=clang CXX=clang++ cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTHERMOCLINE_FUZZ=ON -DTHERMOCLINE_TESTS=OFF -DTHERMOCLINE_CUDA=OFF >/dev/null
work="$build_dir/fuzz-work/$target"
mkdir -p "$work/corpus" "$work/artifacts"
# Only the fuzz targets: the rest of the tree is not needed here. The first
# corpus directory receives new inputs; the committed seeds stay untouched.
jobs=${THERMOCLINE_FUZZ_JOBS:-2}
case "$target" in
  gguf)
    cmake --build "$build_dir" --target gguf_reader_fuzz gguf_fuzz_seeds -j "$jobs"
    mkdir -p "$work/seeds"
    "$build_dir/fuzz/gguf_fuzz_seeds" "$work/seeds"
    exec "$build_dir/fuzz/gguf_reader_fuzz" -runs="$runs" -max_len=65536 \
      -artifact_prefix="$work/artifacts/" -print_final_stats=1 "$@" \
      "$work/corpus" "$work/seeds" tests/data/gguf_malformed
    ;;
  openai)
    cmake --build "$build_dir" --target openai_request_fuzz -j "$jobs"
    # -timeout: a body that takes a second to validate and render is a bug too.
    exec "$build_dir/fuzz/openai_request_fuzz" -runs="$runs" -max_len=8192 -timeout=10 \
      -dict=fuzz/openai_request.dict -artifact_prefix="$work/artifacts/" -print_final_stats=1 "$@" \
      "$work/corpus" fuzz/seeds/openai_request
    ;;
  template)
    cmake --build "$build_dir" --target chat_template_fuzz -j "$jobs"
    exec "$build_dir/fuzz/chat_template_fuzz" -runs="$runs" -max_len=16384 -timeout=10 \
      -dict=fuzz/chat_template.dict -artifact_prefix="$work/artifacts/" -print_final_stats=1 "$@" \
      "$work/corpus" tests/data/chat_templates/templates
    ;;
  tokenizer)
    cmake --build "$build_dir" --target tokenizer_fuzz -j "$jobs"
    exec "$build_dir/fuzz/tokenizer_fuzz" -runs="$runs" -max_len=4096 -timeout=10 \
      -artifact_prefix="$work/artifacts/" -print_final_stats=1 "$@" "$work/corpus" fuzz/seeds/tokenizer
    ;;
esac
