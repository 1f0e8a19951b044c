#!/usr/bin/env bash
# Builds the libFuzzer targets with clang, ASan and UBSan in build-fuzz/ and
# runs one of them. New corpus entries go to build-fuzz/fuzz-work/TARGET/corpus/,
# crash inputs to build-fuzz/fuzz-work/TARGET/artifacts/. See docs/fuzzing.md.
#   scripts/fuzz.sh [gguf|openai|template|constrained|tokenizer|model|image] [RUNS (default 1000000)] [extra libFuzzer flags...]
#   gguf      the GGUF reader, seeded with tests/data/gguf_malformed/ and a few valid files
#   openai    a request body through the OpenAI schema and the bundled chat
#             templates, seeded with fuzz/seeds/openai_request/, dictionary fuzz/openai_request.dict
#   template  a chat template source, parsed and rendered, seeded with the
#             bundled templates, dictionary fuzz/chat_template.dict
#   constrained a JSON Schema and a reply through the constrained-output
#             automata and the tool-call parser, seeded with fuzz/seeds/constrained_output/
#   tokenizer text through the bundled model's tokenizer and back, seeded
#             with fuzz/seeds/tokenizer/
#   model     a model file through load_model's checks and the weight views,
#             seeded with tiny models that `make-model` writes (THERMOCLINE_BIN,
#             default build/cli/thermocline: build it first with scripts/build.sh)
#   image     an image's bytes through the decoders (PNG, JPEG, WebP, GIF), the fit
#             and the normalisation, seeded with small images image_fuzz_seeds writes
set -euo pipefail
cd "$(dirname "$0")/.."
target=gguf
case "${1:-}" in
  gguf|openai|template|constrained|tokenizer|model|image) target=$1; shift ;;
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
  image)
    cmake --build "$build_dir" --target image_decode_fuzz image_fuzz_seeds -j "$jobs"
    mkdir -p "$work/seeds"
    "$build_dir/fuzz/image_fuzz_seeds" "$work/seeds"
    exec "$build_dir/fuzz/image_decode_fuzz" -runs="$runs" -max_len=65536 -timeout=10 -rss_limit_mb=4096 \
      -artifact_prefix="$work/artifacts/" -print_final_stats=1 "$@" "$work/corpus" "$work/seeds"
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
  constrained)
    cmake --build "$build_dir" --target constrained_output_fuzz -j "$jobs"
    exec "$build_dir/fuzz/constrained_output_fuzz" -runs="$runs" -max_len=4096 -timeout=10 \
      -artifact_prefix="$work/artifacts/" -print_final_stats=1 "$@" "$work/corpus" fuzz/seeds/constrained_output
    ;;
  tokenizer)
    cmake --build "$build_dir" --target tokenizer_fuzz -j "$jobs"
    exec "$build_dir/fuzz/tokenizer_fuzz" -runs="$runs" -max_len=4096 -timeout=10 \
      -artifact_prefix="$work/artifacts/" -print_final_stats=1 "$@" "$work/corpus" fuzz/seeds/tokenizer
    ;;
  model)
    bin=${THERMOCLINE_BIN:-build/cli/thermocline}
    [ -x "$bin" ] || { echo "fuzz.sh model: no $bin to write the seed models (scripts/build.sh, or set THERMOCLINE_BIN)" >&2; exit 1; }
    cmake --build "$build_dir" --target model_load_fuzz -j "$jobs"
    seeds="$work/seeds"
    mkdir -p "$seeds"
    # One tiny model per layout and weight family: dense GGUF (q4_0, q4_k_m), sparse PWRI
    # with f16 predictors, sparse GGUF with q8_0 predictors, gpt-oss's experts in MXFP4.
    small=(--n-embd 32 --n-ff 64 --n-head 2 --n-vocab 512)
    [ -f "$seeds/dense_q4_0.gguf" ] ||
      "$bin" make-model -o "$seeds/dense_q4_0.gguf" "${small[@]}" --n-layer 1 --n-head-kv 1 --type q4_0 --seed 1 >/dev/null
    [ -f "$seeds/dense_q4_k_m.gguf" ] ||
      "$bin" make-model -o "$seeds/dense_q4_k_m.gguf" --n-embd 256 --n-layer 1 --n-ff 256 --n-head 2 --n-head-kv 2 \
        --n-vocab 512 --type q4_k_m --seed 3 >/dev/null
    [ -f "$seeds/sparse_pwri_f16.gguf" ] ||
      "$bin" make-model --sparse --layout pwri -o "$seeds/sparse_pwri_f16.gguf" "${small[@]}" --n-layer 1 \
        --n-head-kv 1 --type f16 --predictor-rank 8 --seed 2 >/dev/null
    [ -f "$seeds/sparse_gguf_q8_0.gguf" ] ||
      "$bin" make-model --sparse -o "$seeds/sparse_gguf_q8_0.gguf" "${small[@]}" --n-layer 2 --n-head-kv 2 \
        --type q8_0 --predictor-rank 32 --seed 4 >/dev/null
    # A mixture of experts with MXFP4 experts, biases and sinks (gpt-oss).
    [ -f "$seeds/moe_gpt_oss_mxfp4.gguf" ] ||
      "$bin" make-model --arch gpt-oss -o "$seeds/moe_gpt_oss_mxfp4.gguf" --n-embd 32 --n-ff 32 --n-head 2 \
        --n-head-kv 1 --head-dim 16 --n-vocab 512 --n-layer 1 --experts 4 --experts-used 2 --type mxfp4 --seed 5 >/dev/null
    exec "$build_dir/fuzz/model_load_fuzz" -runs="$runs" -max_len=524288 -timeout=10 \
      -artifact_prefix="$work/artifacts/" -print_final_stats=1 "$@" "$work/corpus" "$seeds"
    ;;
esac
