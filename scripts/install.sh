#!/usr/bin/env bash
# Builds Thermocline and installs it under a prefix: bin/thermocline,
# lib/thermocline/libthermocline_cuda.so (the CUDA plugin, CUDA builds only;
# the binary loads it from there on --device cuda, docs/cuda.md),
# share/thermocline/models/default.{gguf,md} (the bundled model),
# share/thermocline/thermocline.example.toml, and
# share/thermocline/runtime-packages.txt (the packages the binary's shared
# libraries come from, for scripts/runtime_setup.sh). The Docker images'
# build stage runs this; tests/integration/default_model_test.cpp runs it
# with --skip-build on CI's build.
#   scripts/install.sh --prefix /usr/local [CMAKE_ARGS...]
#   scripts/install.sh --prefix DIR --skip-build      install an existing build
# The build folder is $THERMOCLINE_BUILD_DIR (default build/).
set -euo pipefail
cd "$(dirname "$0")/.."

prefix=/usr/local
build=1
cmake_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix=$2; shift ;;
    --skip-build) build=0 ;;
    *) cmake_args+=("$1") ;;
  esac
  shift
done
build_dir=${THERMOCLINE_BUILD_DIR:-build}

if [ "$build" -eq 1 ]; then
  scripts/setup.sh --no-npm
  scripts/build.sh "${cmake_args[@]}"
fi
cmake --install "$build_dir" --prefix "$prefix"
# A CUDA build's plugin must have landed where the binary looks for it, and
# the binary itself must not need the CUDA libraries.
plugin="$prefix/lib/thermocline/libthermocline_cuda.so"
runtime_files=("$prefix/bin/thermocline")
if [ -f "$build_dir/cli/libthermocline_cuda.so" ]; then
  [ -f "$plugin" ] || { echo "install: the CUDA plugin is missing: $plugin" >&2; exit 1; }
  runtime_files+=("$plugin")
fi
if readelf -d "$prefix/bin/thermocline" | grep NEEDED | grep -Eq 'libcublas|libcudart|libcuda\.so'; then
  echo "install: $prefix/bin/thermocline links a CUDA library (it should load the plugin instead)" >&2
  exit 1
fi
for f in "${runtime_files[@]}"; do
  scripts/runtime_packages.sh "$f" || exit 1
done | sort -u > "$prefix/share/thermocline/runtime-packages.txt"
plugin_note="no CUDA plugin (CPU-only build)"
[ -f "$plugin" ] && plugin_note="CUDA plugin $plugin"
echo "install: $prefix/bin/thermocline; $plugin_note; runtime packages: $(tr '\n' ' ' < "$prefix/share/thermocline/runtime-packages.txt")"
