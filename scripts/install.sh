#!/usr/bin/env bash
# Builds Thermocline and installs it under a prefix: bin/thermocline,
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
scripts/runtime_packages.sh "$prefix/bin/thermocline" > "$prefix/share/thermocline/runtime-packages.txt"
echo "install: $prefix/bin/thermocline; runtime packages: $(tr '\n' ' ' < "$prefix/share/thermocline/runtime-packages.txt")"
